"""The strike rule's verdict (issue 52 items 2, 3, 4 and 8, and its property test).

The verdict (:func:`~ax_kernel_discovery.surrogate.strike.batch_improved`) is checked
against Ax's own best feasible point and feasible Pareto front on small random Ax
experiments; Client runs check that every round of kernel discovery uses it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from ax.adapter.adapter_utils import _get_adapter_training_data, pareto_frontier
from ax.api import Client
from ax.api.utils.instantiation.from_string import optimization_config_from_string
from ax.core.arm import Arm
from ax.core.data import Data
from ax.core.experiment import Experiment
from ax.core.metric import Metric
from ax.core.optimization_config import OptimizationConfig
from ax.core.parameter import ParameterType, RangeParameter
from ax.core.search_space import SearchSpace
from ax.service.utils.best_point import (
    get_best_raw_objective_point_with_trial_index,
    get_tensor_converter_adapter,
)

from ax_kernel_discovery import kernel_discovery_generation_strategy, surrogate_of
from ax_kernel_discovery.surrogate.strike import batch_improved
from ax_kernel_discovery.surrogate.trial_rows import FitRows, RowKey, raw_goal
from ax_kernel_discovery.testing import TINY_ACQUISITION, unit_box_client

torch.set_num_threads(1)

DIM = 3
METRICS = ("a", "b", "c")


# --- Client runs: every round judges by the one verdict ------------------------------


def _client(objective: str, constraints: list[str] | None = None) -> Client:
    config = {
        "population_size": 3,
        "proposals_per_round": 0,
        "fit_maxiter": 5,
        "guard_rounds": 0,
        "background_fits": "off",
    }
    strategy = kernel_discovery_generation_strategy(config, num_sobol=4, **TINY_ACQUISITION)
    client = unit_box_client(DIM, strategy, objective=objective)
    if constraints:
        client.configure_optimization(objective, outcome_constraints=constraints)
    return client


def _complete(client: Client, trials: dict[int, Any], values: list[dict[str, float]]) -> None:
    for index, raw in zip(trials, values, strict=True):
        client.complete_trial(index, raw_data=raw)


def _judged(client: Client) -> dict[str, Any]:
    """The records of the last round, by outcome, and last round's choices."""
    history = surrogate_of(client).history
    last = max(r.round for r in history)
    return {r.outcome: r for r in history if r.round == last}


def _chosen(client: Client) -> dict[str, str | None]:
    return {k: r.chosen for k, r in _judged(client).items()}


def test_a_retested_incumbent_is_the_best_row_it_set() -> None:
    """Item 2: trial 1 tested again at 5.0 is the best row; a batch at 4.0 did not beat it
    (found by its parameters, the best row was trial 1's first test, 2.0)."""
    client = _client("f")
    sobol = client.get_next_trials(max_trials=4)
    _complete(client, sobol, [{"f": v} for v in (1.0, 2.0, 0.5, 0.2)])
    again = client.attach_trial(parameters=dict(client._experiment.trials[1].arm.parameters))
    client.complete_trial(again, raw_data={"f": 5.0})
    batch = client.get_next_trials(max_trials=2)  # round 0 chooses
    chosen = _chosen(client)["f"]
    _complete(client, batch, [{"f": 4.0}, {"f": 3.9}])
    client.get_next_trials(max_trials=1)  # round 1 judges round 0's batch
    rec = _judged(client)["f"]
    assert rec.round == 1
    assert (rec.previous_improved, rec.struck) == (False, chosen)


def test_the_best_value_is_the_best_feasible_one() -> None:
    """Item 3 (one objective) and item 4 for a constraint: an infeasible loss of 0.1 is not
    the best; a batch that takes the best feasible loss from 3.0 to 1.0 improved, and the
    constraint's choice is judged by that verdict too."""
    client = _client("-loss", ["c <= 1.0"])
    sobol = client.get_next_trials(max_trials=4)
    losses = [(3.0, 0.5), (0.1, 2.0), (4.0, 0.2), (5.0, 0.9)]  # trial 1 is infeasible
    _complete(client, sobol, [{"loss": v, "c": c} for v, c in losses])
    batch = client.get_next_trials(max_trials=2)
    _complete(client, batch, [{"loss": 1.0, "c": 0.5}, {"loss": 6.0, "c": 0.5}])
    client.get_next_trials(max_trials=1)
    records = _judged(client)
    assert set(records) == {"loss", "c"}
    for outcome in ("loss", "c"):
        rec = records[outcome]
        assert (rec.previous_improved, rec.struck) == (True, None), outcome


def test_an_infeasible_point_off_the_front_is_no_improvement() -> None:
    """Item 3 (several objectives): a batch of non-dominated but infeasible points did not
    improve the feasible Pareto front; every modelled outcome's choice is struck."""
    client = _client("-a, -b", ["c <= 1.0"])
    sobol = client.get_next_trials(max_trials=4)
    front = [{"a": 1.0 + k, "b": 4.0 - k, "c": 0.5} for k in range(4)]
    _complete(client, sobol, front)
    batch = client.get_next_trials(max_trials=2)
    chosen = _chosen(client)
    infeasible = [{"a": 0.5, "b": 0.5, "c": 2.0}, {"a": 0.2, "b": 0.9, "c": 3.0}]
    _complete(client, batch, infeasible)
    client.get_next_trials(max_trials=1)
    records = _judged(client)
    assert set(records) == {"a", "b", "c"}
    for outcome, rec in records.items():
        assert (rec.previous_improved, rec.struck) == (False, chosen[outcome]), outcome


def test_a_scalarized_objective_judges_every_outcome_by_the_sum() -> None:
    """Item 4: objective -a - b; a batch that takes a + b to a new best while a gets worse
    improved, for a's choice as for b's."""
    client = _client("-a - b")
    sobol = client.get_next_trials(max_trials=4)
    _complete(
        client,
        sobol,
        [{"a": a, "b": b} for a, b in ((1.0, 5.0), (3.0, 4.0), (2.0, 6.0), (4.0, 4.0))],
    )
    batch = client.get_next_trials(max_trials=2)
    _complete(client, batch, [{"a": 2.0, "b": 2.0}, {"a": 5.0, "b": 5.0}])  # 4 < 6, a > 1
    client.get_next_trials(max_trials=1)
    records = _judged(client)
    assert set(records) == {"a", "b"}
    for outcome, rec in records.items():
        assert (rec.previous_improved, rec.struck) == (True, None), outcome


def test_a_trial_without_a_constraint_metric_is_new_only_once() -> None:
    """Item 8: a trial that reported the objectives but not the constraint metric is known
    once a fit has seen it; a later batch that improves nothing strikes every outcome's
    choice, the constraint's too (it stayed "new" for outcome c, which was never struck)."""
    client = _client("-a, -b", ["c <= 1.0"])
    sobol = client.get_next_trials(max_trials=4)
    front = [{"a": 1.0 + k, "b": 4.0 - k, "c": 0.5} for k in range(3)] + [{"a": 0.5, "b": 0.5}]
    _complete(client, sobol, front)  # trial 3: no c, off every front
    batch = client.get_next_trials(max_trials=2)  # round 0 sees trial 3
    chosen = _chosen(client)
    _complete(client, batch, [{"a": 9.0, "b": 9.0, "c": 0.5}] * len(batch))  # dominated
    client.get_next_trials(max_trials=1)
    records = _judged(client)
    assert set(records) == {"a", "b", "c"}
    for outcome, rec in records.items():
        assert (rec.previous_improved, rec.struck) == (False, chosen[outcome]), outcome


def test_a_relative_constraint_reaches_the_verdict_in_the_metrics_units() -> None:
    """The fit's goal is Ax's optimization config with relative bounds made absolute by
    the raw status quo (as Ax's best point does); without it, no verdict."""
    goal = optimization_config_from_string("-a", ["c <= 1.1 * baseline"])
    space = SearchSpace([RangeParameter("x0", ParameterType.FLOAT, 0.0, 1.0)])
    sq = Arm({"x0": 0.5}, name="sq")
    exp = Experiment(search_space=space, status_quo=sq, optimization_config=goal)
    trial = exp.new_batch_trial(should_add_status_quo_arm=True)
    trial.add_arm(Arm({"x0": 0.1}))
    trial.mark_running(no_runner_required=True).mark_completed()
    values = {"sq": {"a": 1.0, "c": 2.0}, "0_0": {"a": 0.5, "c": 3.0}}
    records = [
        {"trial_index": 0, "arm_name": arm, "metric_name": m, "metric_signature": m}
        | {"mean": v, "sem": 0.0}
        for arm, row in values.items()
        for m, v in row.items()
    ]
    exp.attach_data(Data(df=pd.DataFrame.from_records(records)))
    absolute = raw_goal(get_tensor_converter_adapter(exp, exp.lookup_data()))
    assert absolute is not None
    (constraint,) = absolute.outcome_constraints
    assert not constraint.relative and constraint.bound == pytest.approx(2.2)
    # the arm 0_0 (a = 0.5, c = 3.0 > 2.2) is infeasible: no improvement on the status quo
    rows = _rows(exp)
    assert batch_improved(rows, {(0, "sq")}, absolute) is False
    assert batch_improved(rows, {(0, "sq")}, goal) is None  # still relative: not judged
    assert batch_improved(rows, set(), absolute) is None  # no row known from before


# --- the property test: the verdict against Ax's best point and Pareto front ----------


_OBJECTIVES = ("a", "-a", "-a - b", "a + 2 * b", "-a, -b", "a, -b", "-a, -b, c")
_CONSTRAINTS = ("c <= 0.5", "b >= -0.3", "c >= -0.6")


def _random_experiment(rng: np.random.Generator) -> tuple[Experiment, OptimizationConfig]:
    """A small experiment: batch trials with a status quo, arms tested again, one-arm
    trials, outcome constraints, SEMs known or not, and trials missing a metric."""
    objective = str(rng.choice(_OBJECTIVES))
    used = {m for m in METRICS if m in objective}
    free = [c for c in _CONSTRAINTS if c.split()[0] not in used]
    constraints = list(rng.choice(free, size=rng.integers(0, len(free) + 1), replace=False))
    goal = optimization_config_from_string(objective, constraints)
    space = SearchSpace([RangeParameter(f"x{i}", ParameterType.FLOAT, 0.0, 1.0) for i in range(2)])
    exp = Experiment(search_space=space, status_quo=Arm({"x0": 0.5, "x1": 0.5}, name="sq"))
    exp.add_tracking_metrics([Metric(m) for m in METRICS])
    pool = [Arm({"x0": float(v[0]), "x1": float(v[1])}) for v in rng.random((4, 2))]
    records = []
    for _ in range(int(rng.integers(2, 6))):
        if rng.random() < 0.5:
            trial = exp.new_batch_trial(should_add_status_quo_arm=True)
            k = int(rng.integers(1, 3))
            trial.add_arms_and_weights([pool[i] for i in rng.choice(len(pool), k, replace=False)])
        else:
            trial = exp.new_trial().add_arm(pool[int(rng.integers(len(pool)))])
        trial.mark_running(no_runner_required=True).mark_completed()
        missing = str(rng.choice(METRICS)) if rng.random() < 0.2 else None
        sem_kind = rng.choice(["none", "zero", "some"])
        for arm in trial.arms:
            for m in METRICS:
                if m == missing:
                    continue
                sem = {"none": math.nan, "zero": 0.0, "some": float(rng.choice([0.0, 0.2]))}
                records.append(
                    {
                        "trial_index": trial.index,
                        "arm_name": arm.name,
                        "metric_name": m,
                        "metric_signature": m,
                        "mean": float(np.round(rng.normal(), 1)),  # ties happen
                        "sem": sem[str(sem_kind)],
                    }
                )
    exp.attach_data(Data(df=pd.DataFrame.from_records(records)))
    return exp, goal


def _rows(exp: Experiment) -> dict[str, FitRows]:
    """The experiment's rows by metric, as a fit hands them over (raw values)."""
    df = exp.lookup_data().df
    out = {}
    for m, part in df.groupby("metric_name"):
        keys: list[RowKey] = [
            (int(t), str(a)) for t, a in zip(part.trial_index, part.arm_name, strict=True)
        ]
        mean = part["mean"].to_numpy(dtype=float)
        out[str(m)] = FitRows(keys, mean, part["sem"].to_numpy(dtype=float), mean)
    return out


def _complete_trials(exp: Experiment, goal: OptimizationConfig, trials: list[int]) -> list[int]:
    df = exp.lookup_data(trial_indices=trials).df
    return [t for t in trials if goal.metric_names <= set(df[df.trial_index == t].metric_name)]


def _objective_value(goal: OptimizationConfig, means: dict[str, float]) -> float:
    """The objective of Ax's best point, maximized."""
    objective = goal.objective
    if objective.is_scalarized_objective:
        return sum(
            w * means[m]
            for m, w in zip(
                objective.metric_names, [w for _, w in objective.metric_weights], strict=True
            )
        )
    value = means[objective.metric_names[0]]
    return -value if objective.minimize else value


def _best(exp: Experiment, goal: OptimizationConfig, trials: list[int]) -> float:
    """Ax's best feasible raw value among ``trials``, trial by trial (Ax decides
    feasibility per arm name; an arm tested in several trials is several arm pulls)."""
    best = -math.inf
    for t in trials:
        try:
            _, _, (means, _) = get_best_raw_objective_point_with_trial_index(
                exp, goal, trial_indices=[t]
            )
        except ValueError:  # nothing feasible (or complete) in this trial
            continue
        best = max(best, _objective_value(goal, means))
    return best


def _fronts(
    exp: Experiment, goal: OptimizationConfig, subsets: list[list[int]]
) -> list[np.ndarray]:
    """Ax's observed feasible Pareto front (``observed_pareto_frontier``'s computation) of
    each subset of trials, its objectives maximized. Only trials with every metric take
    part, as in Ax's best point (the front would hold a row without an objective)."""
    names = goal.objective.metric_names
    signs = [w for _, w in goal.objective.metric_weights]
    empty = np.zeros((0, len(names)))
    complete = _complete_trials(exp, goal, sorted(exp.trials))
    if not complete:
        return [empty for _ in subsets]
    adapter = get_tensor_converter_adapter(exp, exp.lookup_data(trial_indices=complete))
    if not goal.metric_names <= set(adapter.outcomes):
        return [empty for _ in subsets]
    features, data, arms = _get_adapter_training_data(adapter, in_design_only=True)
    out = []
    for subset in subsets:
        keep = [i for i, f in enumerate(features) if f.trial_index in subset]
        if not keep:
            out.append(empty)
            continue
        front = pareto_frontier(
            adapter,
            observation_features=[features[i] for i in keep],
            observation_data=[data[i] for i in keep],
            optimization_config=goal,  # type: ignore[arg-type]
            arm_names=[arms[i] for i in keep],
            use_model_predictions=False,
        )
        values = [
            [s * o.data.means_dict[m] for m, s in zip(names, signs, strict=True)] for o in front
        ]
        out.append(np.array(values).reshape(-1, len(names)))
    return out


def _reference(exp: Experiment, goal: OptimizationConfig, before: list[int]) -> bool | None:
    """The verdict computed from Ax's own best point or Pareto front."""
    trials = sorted(exp.trials)
    new = [t for t in _complete_trials(exp, goal, trials) if t not in before]
    if not new:
        return None
    if not goal.is_moo_problem:
        return _best(exp, goal, new) > _best(exp, goal, before)
    old_front, all_front = _fronts(exp, goal, [before, trials])
    new_points = [p for p in all_front if not any((p == q).all() for q in old_front)]
    return any(not (old_front >= p).all(-1).any() for p in new_points)


def test_the_verdict_is_axs_best_feasible_point_and_pareto_front() -> None:
    """The property test: on random small experiments (repeated arms, a status quo in
    batch trials, outcome constraints, infeasible rows, trials missing a metric, rows
    before the choice that are not a prefix, one, scalarized and several objectives)
    the verdict is the one Ax's best feasible point / feasible Pareto front gives."""
    rng = np.random.default_rng(52)
    verdicts: dict[Any, int] = {}
    for _ in range(60):
        exp, goal = _random_experiment(rng)
        trials = sorted(exp.trials)
        before = sorted(
            int(t) for t in rng.choice(trials, rng.integers(1, len(trials)), replace=False)
        )
        keys = {(t, a.name) for t in before for a in exp.trials[t].arms}
        got = batch_improved(_rows(exp), keys, goal)
        want = _reference(exp, goal, before)
        assert got == want, (goal, before, exp.lookup_data().df)
        verdicts[(goal.is_moo_problem, got)] = verdicts.get((goal.is_moo_problem, got), 0) + 1
    # every kind of verdict was exercised
    assert set(verdicts) == {(m, v) for m in (False, True) for v in (True, False, None)}
