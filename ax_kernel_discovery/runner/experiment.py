"""One run, resumable: :func:`run_experiment` drives the rounds and writes the result."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.progress import ProgressColumn, Task
from rich.text import Text

from ax_kernel_discovery._upstream.ax import client_experiment, client_generation_strategy
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.devices import resolve_device
from ax_kernel_discovery.runner.ax_client import (
    load_client,
    new_client,
    restore_full_precision,
    trial_values,
)
from ax_kernel_discovery.runner.environment import (
    device_info,
    package_versions,
    source_commit,
    utc_now,
)
from ax_kernel_discovery.runner.results import (
    PHASES,
    RESULT_VERSION,
    atomic_write_json,
    best_so_far,
    finished_result,
    load_result,
)
from ax_kernel_discovery.runner.rounds import run_one_round
from ax_kernel_discovery.runner.run_config import (
    KD_METHODS,
    RunConfig,
    check_before_evaluations,
    check_run_config,
    make_problem,
    make_run_config,
)
from ax_kernel_discovery.strategy import surrogate_of

__all__ = ["llm_rounds", "run_experiment"]


def run_experiment(
    problem: str | RunConfig,
    method: str | None = None,
    *,
    progress: bool | Any = False,
    on_round: Callable[[dict[str, Any]], None] | None = None,
    verbose: bool = False,
    **settings: Any,
) -> dict[str, Any]:
    """Run (or resume, or skip) one problem x method x seed; returns the result dict.

    Args:
        problem: Problem name, or a complete :class:`RunConfig`.
        method: Method name (when ``problem`` is a name).
        progress: Show a progress bar of the rounds (True), or a ``rich.progress.Progress``
            to add the task to.
        on_round: Called with each round's record after its checkpoint is written
            (e.g. for live monitoring; an exception raised there stops the run).
        verbose: Keep Ax's INFO log lines (default: warnings only).
        **settings: Fields of :class:`RunConfig` (``seed``, ``budget``, ``batch``,
            ``num_sobol``, ``out``, ``num_restarts``, ``raw_samples``, ``maxiter``,
            ``kd_config``...).

    Returns:
        The result (also written to ``<out>/<problem>__<method>__seed<k>.json``).

    Raises:
        UserInputError: Unknown problem/method, ``budget < num_sobol``, missing data,
            or a checkpoint made with different settings.
    """
    import torch
    from ax.utils.common.logger import set_ax_logger_levels

    cfg = (
        problem
        if isinstance(problem, RunConfig)
        else make_run_config(problem=problem, method=method, **settings)
    )
    check_run_config(cfg)
    torch.set_num_threads(1)
    set_ax_logger_levels(logging.INFO if verbose else logging.WARNING)

    finished = finished_result(cfg.result_path, cfg.budget)
    if finished is not None:
        finished["skipped"] = True
        return finished
    check_before_evaluations(cfg)
    previous = load_result(cfg.result_path)

    prob = make_problem(cfg)
    started = time.perf_counter()
    client = load_client(cfg)
    resumed = client is not None
    if client is not None and previous:
        restore_full_precision(client, previous.get("rounds", []))
    if client is None:
        client = new_client(cfg, prob)
    gs = client_generation_strategy(client)

    surrogate = surrogate_of(gs)

    rounds: list[dict[str, Any]] = []
    sessions: list[dict[str, Any]] = []
    if resumed and previous:
        n_ckpt = len(client_experiment(client).trials)
        rounds = [
            r for r in previous.get("rounds", []) if max(r.get("trials", [-1]), default=-1) < n_ckpt
        ]
        sessions = list(previous.get("sessions", []))
        covered = {t for r in rounds for t in r.get("trials", [])}
        lost = [t for t in range(n_ckpt) if t not in covered]
        if lost:  # the result lagged the checkpoint by a round: keep what Ax knows
            rounds.append(
                {
                    "round": len(rounds),
                    "trials": lost,
                    "q": len(lost),
                    "recovered": True,
                    "timings": {},
                }
            )
    session = {
        "started_at": utc_now(),
        "n_start": len(client_experiment(client).trials),
        "resumed": resumed,
    }
    sessions.append(session)

    result: dict[str, Any] = {}
    code = source_commit()
    resolved_kd_config = (
        surrogate.config.model_dump(mode="json")
        if isinstance(getattr(surrogate, "config", None), KernelDiscoveryConfig)
        else None
    )

    def write(status: str) -> dict[str, Any]:
        values, statuses = trial_values(client)
        for r in rounds:  # full precision (Ax's JSON keeps 10 digits of the data it stores)
            for t, v in zip(r.get("trials", []), r.get("values") or [], strict=False):
                if t < len(values) and v is not None and statuses[t] == "completed":
                    values[t] = float(v)
        best = best_so_far(values, prob.minimize)
        failures = [f for r in rounds for f in r.get("failures", [])]
        totals = {
            p: float(sum(r.get("timings", {}).get(p, 0.0) or 0.0 for r in rounds)) for p in PHASES
        }
        bo_rounds = [r for r in rounds if r.get("kind") == "bo"]
        per_round = {
            p: (
                float(np.mean([r["timings"].get(p, 0.0) for r in bo_rounds])) if bo_rounds else None
            )
            for p in PHASES
        }
        best_idx = None
        finite = [(v, i) for i, v in enumerate(values) if v is not None]
        if finite:
            best_idx = (min if prob.minimize else max)(finite)[1]
        result.clear()
        result.update(
            {
                "format": RESULT_VERSION,
                "status": status,
                "problem": cfg.problem,
                "problem_label": prob.name,
                "problem_description": prob.description,
                "dim": prob.dim,
                "direction": "minimize" if prob.minimize else "maximize",
                "method": cfg.method_label,
                "seed": cfg.seed,
                "budget": cfg.budget,
                "batch": cfg.batch,
                "num_sobol": cfg.num_sobol,
                "config": cfg.model_dump(mode="json"),
                "resolved_kd_config": resolved_kd_config,
                "code": code,
                "n_evaluations": len(values),
                "values": values,
                "trial_status": statuses,
                "best_so_far": best,
                "best_value": best[-1] if best else None,
                "best_trial": best_idx,
                "best_parameters": (
                    list(client_experiment(client).trials[best_idx].arm.parameters.values())
                    if best_idx is not None
                    else None
                ),
                "chosen_kernels": [
                    {
                        "round": r["round"],
                        "chosen": r.get("chosen"),
                        "formula": r.get("chosen_formula"),
                        "score": r.get("chosen_score"),
                    }
                    for r in rounds
                    if r.get("kind") == "bo"
                ],
                "rounds": rounds,
                "llm_rounds": llm_rounds(rounds),
                "failures": failures,
                "timings": {
                    "total": totals,
                    "mean_per_bo_round": per_round,
                    "bo_rounds": len(bo_rounds),
                },
                "wall_time": float(sum(s.get("wall", 0.0) for s in sessions)),
                "sessions": sessions,
                "versions": package_versions(),
                "device": device_info(_resolved_device(cfg)),
                "torch_threads": torch.get_num_threads(),
                "result_path": str(cfg.result_path),
                "checkpoint_path": str(cfg.checkpoint_path),
                "updated_at": utc_now(),
            }
        )
        atomic_write_json(cfg.result_path, result)
        return result

    n_done = len(client_experiment(client).trials)
    bar, task, own_bar = _round_bar(progress, cfg, n_done, surrogate)
    try:
        if resumed and bar is not None:
            bar.console.print(
                f"{cfg.run_id}: resuming at {n_done}/{cfg.budget} evaluations "
                f"(checkpoint {cfg.checkpoint_path})"
            )
        while n_done < cfg.budget:
            record = run_one_round(cfg, client, gs, surrogate, prob, n_done, len(rounds))
            rounds.append(record)
            t0 = time.perf_counter()
            client.save_to_json_file(str(_tmp_checkpoint(cfg)))
            os.replace(_tmp_checkpoint(cfg), cfg.checkpoint_path)
            n_done = len(client_experiment(client).trials)
            session["n_end"] = n_done
            session["wall"] = time.perf_counter() - started
            record["timings"]["overhead"] += time.perf_counter() - t0
            record["timings"]["round_wall"] += time.perf_counter() - t0
            write("running")
            if bar is not None:
                bar.update(task, completed=n_done, description=_bar_text(cfg, record))
            if on_round is not None:
                on_round(record)
        session["n_end"] = len(client_experiment(client).trials)
        session["wall"] = time.perf_counter() - started
        session["finished_at"] = utc_now()
        return write("complete")
    finally:
        prob.close()
        if surrogate is not None and hasattr(surrogate, "close"):
            surrogate.close()  # stops a local LLM server the proposer started
        if own_bar and bar is not None:
            bar.stop()


def llm_rounds(rounds: list[dict[str, Any]]) -> dict[str, int] | None:
    """How many BO rounds really used an LLM's proposals (``None``: no LLM proposer)."""
    flags = [r["llm_used"] for r in rounds if r.get("llm_used") is not None]
    if not flags:
        return None
    used = sum(bool(f) for f in flags)
    return {"rounds": len(flags), "used_llm": used, "without_llm": len(flags) - used}


def _resolved_device(cfg: RunConfig) -> str:
    """The torch device the BO step runs on: ``--device``, else kd's config (``device``),
    else the CPU (:func:`resolve_device` of ``None``, as in Ax)."""
    if cfg.device is None and cfg.method in KD_METHODS:
        return KernelDiscoveryConfig.model_validate(cfg.kd_config or {}).resolved_device()
    return resolve_device(cfg.device)


def _tmp_checkpoint(cfg: RunConfig) -> Path:
    path = cfg.checkpoint_path
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(path.name + ".tmp")


def _bar_text(cfg: RunConfig, record: dict[str, Any] | None = None) -> str:
    text = f"{cfg.run_id}"
    if record and record.get("chosen"):
        text += f" [{record['chosen'][:28]}]"
    return text


def _round_bar(
    progress: bool | Any, cfg: RunConfig, n_done: int = 0, surrogate: Any = None
) -> tuple[Any, Any, bool]:
    """The run's progress bar: evaluations done, elapsed, ETA, and what a round waits for.

    The ETA is estimated from this session's rounds only (a resumed run's first
    evaluations were done before), over the last hour of progress.
    """
    if progress is False or progress is None:
        return None, None, False
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    own = progress is True
    bar: Any = progress
    if own:
        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            WaitingColumn(surrogate),
            speed_estimate_period=3600.0,
        )
        bar.start()
    description = _bar_text(cfg)
    if n_done:
        description += f" resuming at {n_done}/{cfg.budget}"
    task = bar.add_task(description, total=cfg.budget, completed=n_done)
    return bar, task, own


class WaitingColumn(ProgressColumn):
    """Shows "waiting for the LLM (model, stage, seconds)" while a round blocks on it."""

    def __init__(self, surrogate: Any) -> None:
        super().__init__()
        self.surrogate = surrogate

    def render(self, task: Task) -> Text:
        waiting = getattr(self.surrogate, "llm_waiting", None)
        text = waiting() if callable(waiting) else None
        return Text(f"waiting for the LLM ({text})" if text else "", style="yellow")
