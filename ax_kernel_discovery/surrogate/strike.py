"""The strike rule's verdict: did the batch that arrived since a choice improve the best?

The kernel chosen in a round is struck in the next one when the batch it proposed did not
improve (:meth:`~.round.RoundSteps.strike`). The verdict is computed here, once, from the
experiment's rows and Ax's optimization config, in Ax's own terms:

* the rows are arm pulls, keyed by ``(trial index, arm name)`` (:class:`~.trial_rows.FitRows`):
  a status quo in every batch trial, or an incumbent tested again, is a row of its own,
  and the rows *before* the choice are those an earlier fit saw, whatever order trials
  complete in;
* a row takes part when it has every metric of the optimization config (Ax's best point
  skips trials with incomplete metric data); a row that misses a constraint metric counts
  only once that metric arrives;
* **one objective** (a single metric or a scalarized one, such as ``-a - b``): the batch
  improved when the best *feasible* value of the rows after the choice is strictly
  better than the best feasible value before it. Values and feasibility are Ax's best
  raw point's (:func:`ax.service.utils.best_point.get_trace_by_arm_pull_from_data`: a
  row is infeasible when the 95% interval of a constrained metric lies outside its
  bound, and an infeasible row's value is the worst possible);
* **several objectives**: the batch improved when Ax's feasible observed Pareto front of
  all rows (:func:`ax.generators.torch.botorch_moo_utils.pareto_frontier_evaluator`, the
  function behind Ax's ``observed_pareto_frontier``: feasible rows within the objective
  thresholds, not dominated) holds a new row that no row of the front before the choice
  weakly dominates; such a row adds hypervolume for every reference point the earlier
  front dominates.

Ax decides feasibility differently in the two cases (the 95% interval for the best point,
the observed means for the Pareto front); each case follows Ax's own function, and both
agree when the SEMs are zero or unknown.
"""

from __future__ import annotations

import math
from collections.abc import Container, Mapping

import numpy as np
import pandas as pd
import torch
from ax.adapter.adapter_utils import (
    extract_objective_thresholds,
    extract_objective_weight_matrix,
    extract_outcome_constraints,
)
from ax.core.optimization_config import MultiObjectiveOptimizationConfig, OptimizationConfig
from ax.generators.torch.botorch_moo_utils import pareto_frontier_evaluator
from ax.service.utils.best_point import get_trace_by_arm_pull_from_data

from ax_kernel_discovery.surrogate.trial_rows import FitRows, RowKey

__all__ = ["batch_improved", "goal_metrics"]


def goal_metrics(goal: OptimizationConfig) -> dict[str, str]:
    """The metrics of ``goal`` (its objectives and constraints): ``{name: signature}``."""
    mapping = goal.metric_name_to_signature
    return {name: mapping.get(name, name) for name in sorted(goal.metric_names)}


def batch_improved(
    rows: Mapping[str, FitRows], before: Container[RowKey], goal: OptimizationConfig
) -> bool | None:
    """Whether the rows not in ``before`` improved on those in it, under ``goal``.

    Args:
        rows: The fit's rows by metric signature (their raw values are used).
        before: The rows known when the choice was made.
        goal: Ax's optimization config in the metrics' own units, with no relative
            constraint or threshold (Ax's ``Derelativize`` with the raw status quo).

    Returns:
        The verdict (see the module docstring), or ``None`` when there is nothing to
        judge: a metric of ``goal`` has no rows, a constraint is still relative, no
        row is known from before the choice, or no row with every metric arrived since.
    """
    if any(c.relative for c in goal.all_constraints):
        return None
    metrics = goal_metrics(goal)
    if not all(sig in rows for sig in metrics.values()):
        return None
    if not any(key in before for r in rows.values() for key in r.keys):
        return None  # no row is known from before the choice (a state without them)
    keys = _complete_keys([rows[sig] for sig in metrics.values()])
    old = [k for k in keys if k in before]
    new = [k for k in keys if k not in before]
    if not new:
        return None
    if goal.is_moo_problem:
        return _front_improved(rows, metrics, old, new, goal)
    return _best_improved(rows, metrics, old, new, goal)


def _complete_keys(per_metric: list[FitRows]) -> list[RowKey]:
    """The rows that have a finite value of every metric, in the first metric's order."""
    out = []
    for key in per_metric[0].keys:
        values = [r.raw_mean[r.index[key]] if key in r.index else math.nan for r in per_metric]
        if all(math.isfinite(v) for v in values):
            out.append(key)
    return out


def _label(key: RowKey) -> str:
    """A name of its own for each arm pull: Ax's feasibility is decided per arm name, and
    an arm tested in several trials has several rows."""
    return f"{key[0]}:{key[1]}"


def _best_improved(
    rows: Mapping[str, FitRows],
    metrics: Mapping[str, str],
    old: list[RowKey],
    new: list[RowKey],
    goal: OptimizationConfig,
) -> bool:
    """One objective: the best feasible value after the choice beats the one before."""
    records = [
        {
            "trial_index": key[0],
            "arm_name": _label(key),
            "metric_name": name,
            "metric_signature": sig,
            "mean": float(rows[sig].raw_mean[rows[sig].index[key]]),
            "sem": float(rows[sig].raw_sem[rows[sig].index[key]]),
        }
        for key in [*old, *new]
        for name, sig in metrics.items()
    ]
    trace = get_trace_by_arm_pull_from_data(
        pd.DataFrame.from_records(records), goal, use_cumulative_best=False
    )
    value = dict(zip(trace["arm_name"], trace["value"].astype(float), strict=True))
    objective = goal.objective
    sign = 1.0 if objective.is_scalarized_objective or not objective.minimize else -1.0
    best_old = max((sign * value[_label(k)] for k in old), default=-math.inf)
    best_new = max(sign * value[_label(k)] for k in new)
    return bool(best_new > best_old)


def _front_improved(
    rows: Mapping[str, FitRows],
    metrics: Mapping[str, str],
    old: list[RowKey],
    new: list[RowKey],
    goal: OptimizationConfig,
) -> bool:
    """Several objectives: a new row on Ax's feasible front that no earlier front point
    weakly dominates."""
    outcomes = list(metrics.values())
    keys = [*old, *new]
    Y = torch.tensor(
        [[float(rows[s].raw_mean[rows[s].index[k]]) for s in outcomes] for k in keys],
        dtype=torch.float64,
    ).reshape(len(keys), len(outcomes))
    weights = torch.as_tensor(
        extract_objective_weight_matrix(goal.objective, outcomes), dtype=torch.float64
    )
    bounds = extract_outcome_constraints(goal.outcome_constraints, outcomes)
    constraints = (
        None
        if bounds is None
        else tuple(torch.as_tensor(np.asarray(b), dtype=torch.float64) for b in bounds)
    )
    thresholds = None
    if isinstance(goal, MultiObjectiveOptimizationConfig):
        t = extract_objective_thresholds(goal.objective_thresholds, goal.objective, outcomes)
        if t is not None:  # an objective without a threshold: no bound on it
            thresholds = torch.as_tensor(np.nan_to_num(t, nan=-np.inf), dtype=torch.float64)

    def front(index: list[int]) -> torch.Tensor:
        if not index:
            return torch.zeros(0, dtype=torch.long)
        _, _, on = pareto_frontier_evaluator(
            model=None,
            objective_weights=weights,
            objective_thresholds=thresholds,
            Y=Y[index],
            Yvar=torch.zeros(len(index), len(outcomes), len(outcomes), dtype=torch.float64),
            outcome_constraints=constraints,  # type: ignore[arg-type]
        )
        return torch.tensor([index[i] for i in on.tolist()], dtype=torch.long)

    values = Y @ weights.T  # each row's objectives, maximized
    before = front(list(range(len(old))))
    after = [int(i) for i in front(list(range(len(keys)))) if int(i) >= len(old)]
    if not after:
        return False
    if not len(before):
        return True
    old_front, candidates = values[before], values[after]
    dominated = (old_front[None, :, :] >= candidates[:, None, :]).all(-1).any(-1)
    return bool((~dominated).any())
