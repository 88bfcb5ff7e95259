"""One round of a run: generate a batch, evaluate it, record phases and diagnostics."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ax_kernel_discovery._upstream.ax import client_experiment, generation_node_name, generator_key
from ax_kernel_discovery.runner.ax_client import (
    chosen_from_metadata,
    split_generator_run,
    trial_values,
)
from ax_kernel_discovery.runner.diagnostics import (
    boundary_hit_ratio,
    next_batch_scores,
    path_length,
    to_unit_cube,
)
from ax_kernel_discovery.runner.results import PHASES
from ax_kernel_discovery.runner.run_config import METRIC, RunConfig
from ax_kernel_discovery.strategy import BO_NODE_NAME
from ax_kernel_discovery.surrogate.core import KernelDiscoverySurrogate

__all__ = ["run_one_round", "trial_point"]


def _seed_everything(seed: int) -> None:
    import torch

    torch.manual_seed(seed)
    np.random.seed(seed % (2**32))


def run_one_round(
    cfg: RunConfig, client: Any, gs: Any, surrogate: Any, prob: Any, n_done: int, round_index: int
) -> dict[str, Any]:
    """Generate one joint batch, evaluate it, complete the trials; returns the round record."""
    experiment = client_experiment(client)
    q = cfg.num_sobol - n_done if n_done < cfg.num_sobol else min(cfg.batch, cfg.budget - n_done)
    q = min(q, cfg.budget - n_done)
    _seed_everything(cfg.seed * 1_000_003 + n_done)
    kd = surrogate if isinstance(surrogate, KernelDiscoverySurrogate) else None
    history_before = kd.state.round_index if kd is not None else None
    t_round = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        grs = gs.gen(experiment=experiment, n=q)
        t_gen = time.perf_counter() - t0
    gr = grs[0][0]
    node = generation_node_name(gr)
    is_bo = node == BO_NODE_NAME
    record: dict[str, Any] = {
        "round": round_index,
        "kind": "bo" if is_bo else "init",
        "node": node,
        "generator": generator_key(gr),
        "n_before": n_done,
        "q": len(gr.arms),
        "trials": [],
        "chosen": None,
        "chosen_formula": None,
        "chosen_score": None,
        "failures": [],
        "timings": dict.fromkeys(PHASES, 0.0),
    }
    fit_time = float(gr.fit_time or 0.0) if is_bo else 0.0
    kd_records = []
    if kd is not None and history_before is not None and is_bo:
        kd_records = [h for h in kd.history if h.round >= history_before]
    if kd is not None and kd_records:
        objective = [h for h in kd_records if kd.state.objective_weights.get(h.outcome)]
        objective = objective or kd_records
        main = objective[-1]
        record["chosen"], record["chosen_formula"], record["chosen_score"] = (
            main.chosen,
            main.chosen_formula,
            main.chosen_score,
        )
        record["population"] = list(main.population)
        record["accepted"] = list(main.accepted)
        record["kd_scores"] = dict(main.scores)
        if main.fit_scores:
            record["kd_fit_scores"] = dict(main.fit_scores)
        if main.mixture:
            record["mixture"] = dict(main.mixture)
        if main.portfolio:  # the batch portfolio: shares, points per member, rewards
            record["portfolio"] = dict(main.portfolio)
            record["portfolio_points"] = dict(main.portfolio_points)
        if main.portfolio_rewards:
            record["portfolio_rewards"] = dict(main.portfolio_rewards)
        if main.guarded:
            record["guarded"] = True
        if main.llm_used is not None:
            record["llm_used"] = main.llm_used
            if main.llm_failure:
                record["llm_failure"] = main.llm_failure
        record["population_diversity"] = main.population_diversity
        record["accepted_diversity"] = main.accepted_diversity
        for h in kd_records:
            for rej in h.rejected:
                record["failures"].append(
                    {
                        "round": round_index,
                        "kind": "rejection",
                        "name": rej.name,
                        "stage": rej.stage,
                        "reason": rej.reason[:300],
                    }
                )
        propose = sum(h.timings.get("propose", 0.0) for h in kd_records)
        validate = sum(h.timings.get("validate", 0.0) for h in kd_records)
        selection_total = sum(h.timings.get("total", 0.0) for h in kd_records)
        record["timings"]["propose"] = propose
        record["timings"]["validate"] = validate
        record["timings"]["fit"] = max(selection_total - propose - validate, 0.0)
        background = [
            h.timings["background_fits"] for h in kd_records if "background_fits" in h.timings
        ]
        if background:  # in a worker, during the acquisition (background_fits)
            record["timings"]["background_fits"] = sum(background)
            record["timings"]["background_wait"] = sum(
                h.timings.get("background_wait", 0.0) for h in kd_records
            )
        fit_time = max(fit_time, selection_total)
        record["llm_usage"] = {k: v for h in kd_records for k, v in h.proposer_usage.items()}
    elif is_bo:
        record["chosen"] = chosen_from_metadata(gr)
        record["timings"]["fit"] = fit_time
    record["timings"]["acquisition"] = max(t_gen - fit_time, 0.0)
    record["warnings"] = _warning_lines(caught)

    train_values = trial_values(client)[0] if kd_records else []
    previous_point = trial_point(experiment.trials[n_done - 1]) if n_done > 0 else None
    trials = []
    for part in split_generator_run(gr):
        trial = experiment.new_trial(generator_run=part)
        trial.mark_running(no_runner_required=True)
        trials.append(trial)
    record["trials"] = [t.index for t in trials]
    X = np.array([trial_point(t) for t in trials])
    t0 = time.perf_counter()
    values = _evaluate(prob, X, record)
    record["timings"]["evaluate"] = time.perf_counter() - t0
    for trial, value in zip(trials, values, strict=True):
        if value is None:
            client.mark_trial_failed(trial.index, failed_reason="evaluation failed")
        else:
            client.complete_trial(trial.index, raw_data={METRIC: value})
    record["values"] = values
    _search_diagnostics(record, prob, X, previous_point)
    if kd_records:
        models = surrogate.fitted_models.get(kd_records[-1].outcome, {})
        record["next_batch"] = next_batch_scores(models, X, values, train_values)
    total = time.perf_counter() - t_round
    accounted = sum(record["timings"][p] for p in PHASES if p != "overhead")
    record["timings"]["overhead"] = max(total - accounted, 0.0)
    record["timings"]["round_wall"] = total
    return record


def trial_point(trial: Any) -> np.ndarray:
    """A trial's parameters as a float vector, in the search space's order."""
    return np.array([float(v) for v in trial.arm.parameters.values()])


def _search_diagnostics(
    record: dict[str, Any], prob: Any, X: np.ndarray, previous: np.ndarray | None
) -> None:
    """The batch's boundary hit ratio and path-length increment (the paper's OTSD)."""
    lower, upper = np.asarray(prob.lower, dtype=float), np.asarray(prob.upper, dtype=float)
    U = to_unit_cube(X, lower, upper)
    record["boundary_hit"] = boundary_hit_ratio(U)
    prev = None if previous is None else to_unit_cube(previous, lower, upper)
    record["path_length"] = path_length(U, prev)


_IGNORED_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


def _warning_lines(caught: Sequence[warnings.WarningMessage], limit: int = 5) -> list[str]:
    """Distinct model/optimizer warnings of a round (deprecations and pandas noise left out)."""
    lines = []
    for w in caught:
        if issubclass(w.category, _IGNORED_WARNINGS) or "pandas" in w.category.__module__.lower():
            continue
        if "Pandas" in w.category.__name__:
            continue
        line = f"{w.category.__name__}: {str(w.message)[:160]}"
        if line not in lines:
            lines.append(line)
    return lines[:limit]


def _evaluate(prob: Any, X: np.ndarray, record: dict[str, Any]) -> list[float | None]:
    """Values of a batch; a point that fails (exception or non-finite) is ``None``."""
    try:
        values = [float(v) for v in prob.evaluate(X, n_workers=1)]
    except Exception:  # noqa: BLE001 - fall back to one point at a time to isolate failures
        values = []
        for i, x in enumerate(X):
            try:
                values.append(float(prob.evaluate_one(x)))
            except Exception as e:  # noqa: BLE001 - an oracle failure is recorded, not raised
                values.append(math.nan)
                record["failures"].append(
                    {
                        "round": record["round"],
                        "kind": "evaluation",
                        "trial": record["trials"][i],
                        "reason": f"{type(e).__name__}: {e}"[:300],
                    }
                )
    out: list[float | None] = []
    for i, v in enumerate(values):
        if math.isfinite(v):
            out.append(v)
        else:
            out.append(None)
            if not any(f.get("trial") == record["trials"][i] for f in record["failures"]):
                record["failures"].append(
                    {
                        "round": record["round"],
                        "kind": "evaluation",
                        "trial": record["trials"][i],
                        "reason": "non-finite value",
                    }
                )
    return out
