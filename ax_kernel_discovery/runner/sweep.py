"""Sweeps: many runs of :mod:`ax_kernel_discovery.runner` in parallel, resumable.

:func:`sweep` runs problems x methods x seeds, :func:`run_configs` any list of run
configs, on an executor from :mod:`ax_kernel_discovery.runner.executors` (local processes by
default, or Dask). Each worker runs :func:`run_task`, which never raises: a failed run
is reported (its traceback written beside the results) and the sweep goes on. Finished
runs are skipped, so a stopped sweep continues where it was when started again.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ax_kernel_discovery.runner import (
    RunConfig,
    UserInputError,
    check_before_evaluations,
    finished_result,
    make_problem,
    make_run_config,
    run_experiment,
)
from ax_kernel_discovery.runner.executors import make_executor


def sweep_configs(
    problems: Iterable[str],
    methods: Iterable[str],
    seeds: Iterable[int],
    **settings: Any,
) -> list[RunConfig]:
    """All run configs of a sweep, checked up front (:class:`UserInputError` on bad input)."""
    problems, methods, seeds = list(problems), list(methods), list(seeds)
    if not problems or not methods or not seeds:
        raise UserInputError("a sweep needs at least one problem, one method and one seed")
    cfgs = [
        make_run_config(problem=p, method=m, seed=s, **settings)
        for p in problems
        for m in methods
        for s in seeds
    ]
    for p in dict.fromkeys(c.problem for c in cfgs):  # each problem's data/dependencies once
        make_problem(next(c for c in cfgs if c.problem == p)).close()
    return cfgs


def run_task(cfg_json: Mapping[str, Any]) -> dict[str, Any]:
    """Worker entry point: one run from a JSON config; never raises (errors are returned)."""
    import torch

    torch.set_num_threads(1)
    cfg = RunConfig.model_validate(dict(cfg_json))
    t0 = time.perf_counter()
    try:
        result = run_experiment(cfg)
        return {
            "run_id": cfg.run_id,
            "status": result["status"],
            "skipped": bool(result.get("skipped")),
            "best_value": result.get("best_value"),
            "wall_time": time.perf_counter() - t0,
            "path": str(cfg.result_path),
        }
    except Exception as e:  # noqa: BLE001 - one failed run must not stop a sweep
        tb = traceback.format_exc()
        err_path = Path(cfg.out) / f"{cfg.run_id}.error.txt"
        with contextlib.suppress(OSError):
            err_path.parent.mkdir(parents=True, exist_ok=True)
            err_path.write_text(tb)
        return {
            "run_id": cfg.run_id,
            "status": "failed",
            "error": f"{type(e).__name__}: {e}",
            "wall_time": time.perf_counter() - t0,
            "path": str(err_path),
        }


def sweep(
    problems: Iterable[str],
    methods: Iterable[str],
    seeds: Iterable[int],
    *,
    workers: int = 1,
    executor: str | Any = "local",
    scheduler_address: str | None = None,
    progress: bool = False,
    **settings: Any,
) -> list[dict[str, Any]]:
    """Run problems x methods x seeds, in parallel on an executor.

    Args:
        problems, methods, seeds: What to run (every combination).
        workers: Parallel runs (processes or Dask workers); each uses one torch thread.
        executor: ``"local"`` (processes, default), ``"dask"`` (a Dask cluster: the one at
            ``scheduler_address``, else a local one with ``workers`` processes), or an
            :class:`~ax_kernel_discovery.runner.executors.RunExecutor` instance.
        scheduler_address: Address of an existing Dask scheduler (``tcp://host:8786``).
        progress: Show a progress bar over the runs.
        **settings: :class:`RunConfig` fields shared by all runs (``budget``, ``batch``, ``out``...).

    Returns:
        One summary per run (``run_id``, ``status`` complete/failed, ``best_value``,
        ``wall_time``, ``path``), in completion order.
    """
    cfgs = sweep_configs(problems, methods, seeds, **settings)
    return run_configs(
        cfgs,
        workers=workers,
        executor=executor,
        scheduler_address=scheduler_address,
        progress=progress,
    )


def run_configs(
    cfgs: Sequence[RunConfig],
    *,
    workers: int = 1,
    executor: str | Any = "local",
    scheduler_address: str | None = None,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """Run the given configs (finished ones are skipped) on an executor, as :func:`sweep`."""
    for cfg in cfgs:  # device and LLM of every run still to do, before any of them starts
        if finished_result(cfg.result_path, cfg.budget) is None:
            check_before_evaluations(cfg)
    ex = make_executor(executor, workers=workers, scheduler_address=scheduler_address)
    summaries: list[dict[str, Any]] = []
    bar = None
    if progress:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
        )
        bar.start()
        task = bar.add_task(f"sweep ({len(cfgs)} runs, {ex.describe()})", total=len(cfgs))
    try:
        with ex:
            for summary in ex.map_unordered(run_task, [c.model_dump(mode="json") for c in cfgs]):
                summaries.append(summary)
                if bar is not None:
                    mark = {"complete": "done", "failed": "FAILED"}.get(
                        summary["status"], summary["status"]
                    )
                    if summary.get("skipped"):
                        mark = "skipped (complete)"
                    bar.console.print(f"{summary['run_id']}: {mark} ({summary['wall_time']:.0f} s)")
                    bar.update(task, advance=1)
    finally:
        if bar is not None:
            bar.stop()
    return summaries


__all__ = ["run_configs", "run_task", "sweep", "sweep_configs"]
