"""The benchmark-problem interface shared by every problem module.

A problem knows its search box, its direction and how to evaluate a batch of points;
it knows nothing about kernels, GPs or Ax. Every problem takes inputs as ``numpy``
arrays of shape ``(n, dim)`` inside ``[lower, upper]`` and returns an ``(n,)`` array.

Settings read from the environment (read here and nowhere else in this package):

* ``AXKD_DATA_DIR``: a folder of benchmark data files that override the copies bundled
  with the package (see :mod:`ax_kernel_discovery.benchmarks.datasets`).
* ``AXKD_MOPTA08_BINARY``: path of a user-supplied Mopta08 executable.
"""

from __future__ import annotations

import abc
import concurrent.futures
import multiprocessing
import os
import pickle
import warnings
import weakref
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "BOUNDS_TOLERANCE",
    "DATA_DIR_ENV",
    "MOPTA08_BINARY_ENV",
    "BlackBoxProblem",
    "MissingDependencyError",
    "setting_path",
]

DATA_DIR_ENV = "AXKD_DATA_DIR"
"""Environment variable naming a folder of data files that override the bundled ones."""

MOPTA08_BINARY_ENV = "AXKD_MOPTA08_BINARY"
"""Environment variable naming a user-supplied Mopta08 executable."""

BOUNDS_TOLERANCE = 1e-9
"""Inputs this far outside the bounds are clipped; farther ones are rejected."""


class MissingDependencyError(ImportError):
    """An optional package a benchmark needs is not installed."""


def setting_path(explicit: str | Path | None, env_var: str) -> Path | None:
    """A path setting: ``explicit`` if given, else the environment variable, else None.

    The one place where this package reads its ``AXKD_*`` environment variables.
    """
    if explicit is not None:
        return Path(explicit).expanduser()
    value = os.environ.get(env_var)
    if value:
        return Path(value).expanduser()
    return None


# --------------------------------------------------------------------------- workers
_WORKER_PROBLEM: BlackBoxProblem | None = None


def _init_worker(problem: BlackBoxProblem) -> None:
    global _WORKER_PROBLEM
    _WORKER_PROBLEM = problem


def _worker_evaluate(x: np.ndarray) -> float:
    assert _WORKER_PROBLEM is not None, "worker not initialised"
    return float(_WORKER_PROBLEM._evaluate_point(x))


def _shutdown(executor: concurrent.futures.Executor) -> None:
    executor.shutdown(wait=False, cancel_futures=True)


class BlackBoxProblem(abc.ABC):
    """A black-box test problem on a box.

    Subclasses call ``super().__init__`` with their metadata and implement
    :meth:`_evaluate_point` (one validated point to one float); they may override
    :meth:`_evaluate_batch` when a vectorised evaluation is cheaper.

    Attributes:
        name: Short label used in outputs (sample-data variants say so in it).
        dim: Input dimension ``D``.
        lower: Lower bounds, shape ``(D,)``.
        upper: Upper bounds, shape ``(D,)``.
        minimize: ``True`` for a minimisation problem, ``False`` to maximise.
        optimum: Global optimum value when it is known exactly, else ``None``.
        best_known: Best value reported in the literature when no exact optimum is
            known (documented per problem), else ``None``.
        description: One paragraph saying what the problem is and which variant.
        n_workers: Default worker processes for :meth:`evaluate`.

    Example:
        >>> from ax_kernel_discovery.benchmarks import get_problem
        >>> problem = get_problem("branin100")
        >>> y = problem.evaluate(problem.lower + 0.5 * (problem.upper - problem.lower)[None])
    """

    def __init__(
        self,
        *,
        name: str,
        dim: int,
        lower: np.ndarray | float,
        upper: np.ndarray | float,
        minimize: bool,
        optimum: float | None = None,
        best_known: float | None = None,
        description: str = "",
        n_workers: int = 1,
        mp_context: str = "spawn",
    ) -> None:
        """Args:
        name: Short label.
        dim: Input dimension.
        lower: Lower bound(s), a scalar or shape ``(dim,)``.
        upper: Upper bound(s), a scalar or shape ``(dim,)``.
        minimize: Direction.
        optimum: Exact global optimum value, if known.
        best_known: Best literature value, if no exact optimum is known.
        description: What the problem is.
        n_workers: Default number of worker processes for batches (1: sequential).
        mp_context: ``multiprocessing`` start method for the workers. ``"spawn"``
            (default) is safe in processes that hold threads (torch, BLAS);
            ``"fork"`` starts faster on Linux.
        """
        self.name = name
        self.dim = int(dim)
        self.lower = np.broadcast_to(np.asarray(lower, dtype=float), (self.dim,)).copy()
        self.upper = np.broadcast_to(np.asarray(upper, dtype=float), (self.dim,)).copy()
        if np.any(self.lower >= self.upper):
            raise ValueError(f"{name}: every lower bound must be below its upper bound")
        self.minimize = bool(minimize)
        self.optimum = optimum
        self.best_known = best_known
        self.description = description
        if int(n_workers) < 1:
            raise ValueError(f"{name}: n_workers must be >= 1, got {n_workers}")
        self.n_workers = int(n_workers)
        self.mp_context = mp_context
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None
        self._executor_workers = 0

    # ------------------------------------------------------------------ metadata
    @property
    def bounds(self) -> np.ndarray:
        """Bounds as a ``(2, dim)`` array: row 0 lower, row 1 upper."""
        return np.stack([self.lower, self.upper])

    def __repr__(self) -> str:
        direction = "minimize" if self.minimize else "maximize"
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim}, {direction})"

    # ---------------------------------------------------------------- validation
    def validate(self, X: Any) -> np.ndarray:
        """Check a batch and return it as a float array, clipped into the bounds.

        Raises:
            ValueError: Wrong shape, NaN/inf, or a value more than
                :data:`BOUNDS_TOLERANCE` outside the bounds; the message names the
                problem, the expected shape or bounds and the offending index.
        """
        try:
            X = np.array(X, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{self.name}: input must be a numeric array of shape (n, {self.dim}): {exc}"
            ) from exc
        if X.ndim != 2 or X.shape[1] != self.dim:
            raise ValueError(
                f"{self.name}: expected an array of shape (n, {self.dim}), got shape {X.shape}"
            )
        bad = ~np.isfinite(X)
        if bad.any():
            i, j = (int(v) for v in np.argwhere(bad)[0])
            raise ValueError(
                f"{self.name}: input contains NaN or inf at index ({i}, {j}) (value {float(X[i, j])})"
            )
        below = X < self.lower - BOUNDS_TOLERANCE
        above = X > self.upper + BOUNDS_TOLERANCE
        out = below | above
        if out.any():
            i, j = (int(v) for v in np.argwhere(out)[0])
            raise ValueError(
                f"{self.name}: input out of bounds at index ({i}, {j}): value {float(X[i, j])!r} "
                f"is outside [{float(self.lower[j])!r}, {float(self.upper[j])!r}] "
                f"(tolerance {BOUNDS_TOLERANCE:g}); {int(out.sum())} value(s) out of bounds"
            )
        return np.clip(X, self.lower, self.upper)

    # ---------------------------------------------------------------- evaluation
    def evaluate(self, X: Any, n_workers: int | None = None) -> np.ndarray:
        """Evaluate a batch.

        Args:
            X: Points, shape ``(n, dim)``.
            n_workers: Worker processes (defaults to ``self.n_workers``). With more
                than one, points are spread over a
                :class:`concurrent.futures.ProcessPoolExecutor` that stays up for
                later calls (see :meth:`close`); a problem that cannot be pickled
                falls back to sequential evaluation with a warning. Starting the pool
                costs a few seconds with ``mp_context="spawn"`` (each worker imports
                the package), a fraction of a second with ``"fork"``.

        Returns:
            Values, shape ``(n,)``, in the problem's own direction (see ``minimize``).
        """
        X = self.validate(X)
        workers = self.n_workers if n_workers is None else int(n_workers)
        if workers < 1:
            raise ValueError(f"{self.name}: n_workers must be >= 1, got {workers}")
        if workers > 1 and len(X) > 1:
            executor = self._get_executor(workers)
            if executor is not None:
                values = list(executor.map(_worker_evaluate, list(X)))
                return np.asarray(values, dtype=float)
        return np.asarray(self._evaluate_batch(X), dtype=float).reshape(len(X))

    def evaluate_one(self, x: Any) -> float:
        """Evaluate one point of shape ``(dim,)`` and return a float."""
        arr = np.asarray(x, dtype=float) if not isinstance(x, np.ndarray) else x
        if arr.ndim != 1 or arr.shape[0] != self.dim:
            raise ValueError(
                f"{self.name}: expected one point of shape ({self.dim},), got shape {arr.shape}"
            )
        return float(self.evaluate(arr[None, :], n_workers=1)[0])

    __call__ = evaluate

    def _evaluate_batch(self, X: np.ndarray) -> np.ndarray:
        """Evaluate validated points sequentially; override to vectorise."""
        return np.array([self._evaluate_point(x) for x in X], dtype=float)

    @abc.abstractmethod
    def _evaluate_point(self, x: np.ndarray) -> float:
        """Evaluate one validated point of shape ``(dim,)``."""

    # ------------------------------------------------------------------- workers
    def _get_executor(self, workers: int) -> concurrent.futures.ProcessPoolExecutor | None:
        if self._executor is not None and self._executor_workers == workers:
            return self._executor
        self.close()
        try:
            pickle.dumps(self)
        except Exception as exc:  # any pickling failure means sequential evaluation
            warnings.warn(
                f"{self.name}: cannot be pickled for worker processes ({exc}); "
                "evaluating sequentially",
                RuntimeWarning,
                stacklevel=3,
            )
            return None
        executor = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context(self.mp_context),
            initializer=_init_worker,
            initargs=(self,),
        )
        self._executor = executor
        self._executor_workers = workers
        self._finalizer = weakref.finalize(self, _shutdown, executor)
        return executor

    def close(self) -> None:
        """Shut down the worker pool, if one is running."""
        if self._executor is not None:
            self._finalizer.detach()
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
            self._executor_workers = 0

    def __enter__(self) -> BlackBoxProblem:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_executor"] = None
        state["_executor_workers"] = 0
        state.pop("_finalizer", None)
        return state
