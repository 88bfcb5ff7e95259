"""Where the runs of a sweep execute: local processes (default) or a Dask cluster.

A sweep is a list of independent runs (problem x method x seed), each a pure function
of its JSON config that writes its own files, so any engine that maps a function over
a list will do. Two are provided:

* :class:`LocalExecutor`: ``concurrent.futures.ProcessPoolExecutor`` with ``workers``
  processes (``spawn`` start method: torch and BLAS threads do not survive ``fork``
  well), each set to one torch thread; ``workers=1`` runs in the calling process.
* :class:`DaskExecutor`: Dask ``distributed``. Connects to an existing scheduler
  (``scheduler_address="tcp://host:8786"``, e.g. started with ``dask scheduler`` /
  ``dask worker`` on a few machines, or by ``dask-jobqueue`` on a SLURM/PBS cluster),
  or starts a ``LocalCluster`` of ``workers`` processes with one thread each. Runs are
  submitted with ``pure=False`` and resources are not oversubscribed: one run per
  worker thread.

Why Dask rather than Ray: it installs from PyPI as pure Python (``dask[distributed]``,
no object store or raylet binaries), starts a local cluster in a second on two
cores, its workers are plain Python processes that inherit the environment, and
``dask-jobqueue`` reaches the batch schedulers on which BO benchmarks are usually run.
Ray would do the same job (``ray.remote`` + ``ray.wait``) but brings a heavier runtime
(a GCS server, raylets, a shared-memory object store) that buys nothing for a few
dozen independent CPU-bound runs.

Example:
    >>> with make_executor("local", workers=2) as ex:  # doctest: +SKIP
    ...     for out in ex.map_unordered(run_task, configs):
    ...         print(out["run_id"], out["status"])
"""

from __future__ import annotations

import abc
import concurrent.futures
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

EXECUTORS: tuple[str, ...] = ("local", "dask")


def _init_worker() -> None:
    """Worker set-up: one torch thread (two threads on two shared cores are 25-50x slower)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)


def _call_in_worker(fn: Callable[[Any], Any], item: Any) -> Any:
    _init_worker()
    return fn(item)


class RunExecutor(abc.ABC):
    """Maps a picklable function over items; a context manager that owns its workers."""

    workers: int = 1

    @abc.abstractmethod
    def map_unordered(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
        """Yield ``fn(item)`` for every item, in completion order."""

    def describe(self) -> str:
        return f"{type(self).__name__}({self.workers} workers)"

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the workers."""

    def __enter__(self) -> RunExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalExecutor(RunExecutor):
    """Local processes (``ProcessPoolExecutor``, spawn), one torch thread each.

    Args:
        workers: Number of processes; ``1`` runs in the calling process.
    """

    def __init__(self, workers: int = 1) -> None:
        if int(workers) < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = int(workers)

    def describe(self) -> str:
        return f"local, {self.workers} process{'es' if self.workers > 1 else ''}"

    def map_unordered(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
        if self.workers == 1 or len(items) <= 1:
            _init_worker()
            for item in items:
                yield fn(item)
            return
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=min(self.workers, len(items)), mp_context=ctx, initializer=_init_worker
        ) as pool:
            futures = [pool.submit(fn, item) for item in items]
            try:
                for fut in concurrent.futures.as_completed(futures):
                    yield fut.result()
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise


class DaskExecutor(RunExecutor):
    """Dask ``distributed``: an existing scheduler, or a ``LocalCluster`` started here.

    Args:
        workers: Worker processes of the local cluster (ignored with an address).
        scheduler_address: ``tcp://host:port`` of a running scheduler.
        dashboard: Serve the local cluster's dashboard (off by default).
    """

    def __init__(
        self, workers: int = 2, scheduler_address: str | None = None, dashboard: bool = False
    ) -> None:
        try:
            import distributed  # noqa: F401
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError(
                "the Dask executor needs dask.distributed: pip install 'dask[distributed]'"
            ) from e
        if int(workers) < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = int(workers)
        self.scheduler_address = scheduler_address
        self.dashboard = dashboard
        self._cluster: Any = None
        self._client: Any = None

    def describe(self) -> str:
        where = self.scheduler_address or f"local cluster, {self.workers} processes"
        return f"dask, {where}"

    def _ensure_client(self) -> Any:
        if self._client is not None:
            return self._client
        from distributed import Client, LocalCluster

        if self.scheduler_address:
            self._client = Client(self.scheduler_address)
        else:
            self._cluster = LocalCluster(
                n_workers=self.workers,
                processes=True,
                threads_per_worker=1,
                host="127.0.0.1",
                dashboard_address=":0" if self.dashboard else None,
                env={"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
            )
            self._client = Client(self._cluster)
        return self._client

    def map_unordered(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
        from distributed import as_completed

        client = self._ensure_client()
        futures = [client.submit(_call_in_worker, fn, item, pure=False) for item in items]
        try:
            for fut in as_completed(futures):
                yield fut.result()
        except BaseException:
            client.cancel(futures)
            raise

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def make_executor(
    kind: str | RunExecutor = "local", workers: int = 1, scheduler_address: str | None = None
) -> RunExecutor:
    """An executor by name (``"local"`` or ``"dask"``), or ``kind`` itself if it is one.

    Raises:
        ValueError: Unknown name or ``workers < 1``.
    """
    if isinstance(kind, RunExecutor):
        return kind
    name = str(kind).strip().lower()
    if name == "local":
        if scheduler_address:
            raise ValueError("--scheduler-address needs --executor dask")
        return LocalExecutor(workers)
    if name == "dask":
        return DaskExecutor(workers, scheduler_address=scheduler_address)
    raise ValueError(f"unknown executor {kind!r}; choose from {', '.join(EXECUTORS)}")


__all__ = ["EXECUTORS", "DaskExecutor", "LocalExecutor", "RunExecutor", "make_executor"]
