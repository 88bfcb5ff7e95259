"""Benchmark problems, one per module; they know nothing about kernels or Ax.

:data:`PROBLEMS` lists them by name (the docs' table of problems is made from it); each
problem's class says what it is and what it needs (packages, data, a binary).

The data files ship with the package; a folder given as ``data_dir=...`` or
``AXKD_DATA_DIR`` overrides them file by file (see
:mod:`~ax_kernel_discovery.benchmarks.datasets`). Optional packages are imported only
when a problem that needs them is built.

Example:
    >>> from ax_kernel_discovery.benchmarks import get_problem
    >>> problem = get_problem("rover100")
    >>> values = problem.evaluate(np.random.rand(4, problem.dim))
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from ax_kernel_discovery.benchmarks.base import BlackBoxProblem, MissingDependencyError
from ax_kernel_discovery.benchmarks.datasets import data_dir, data_file, data_status
from ax_kernel_discovery.benchmarks.humanoid import Humanoid
from ax_kernel_discovery.benchmarks.lasso_dna import LassoDNA
from ax_kernel_discovery.benchmarks.mopta08 import Mopta08
from ax_kernel_discovery.benchmarks.rover import Rover
from ax_kernel_discovery.benchmarks.svm import SVM
from ax_kernel_discovery.benchmarks.synthetic import Ackley, Branin, Hartmann6, Levy

__all__ = [
    "PROBLEMS",
    "SVM",
    "Ackley",
    "BlackBoxProblem",
    "Branin",
    "Hartmann6",
    "Humanoid",
    "LassoDNA",
    "Levy",
    "MissingDependencyError",
    "Mopta08",
    "Rover",
    "UnknownProblemError",
    "data_dir",
    "data_file",
    "data_status",
    "get_problem",
]

PROBLEMS: dict[str, Callable[..., BlackBoxProblem]] = {
    "rover100": partial(Rover, n_waypoints=50),
    "rover60": partial(Rover, n_waypoints=30),
    "lasso_dna": LassoDNA,
    "svm": SVM,
    "humanoid": Humanoid,
    "mopta08": Mopta08,
    "branin100": partial(Branin, dim=100),
    "hartmann6_100": partial(Hartmann6, dim=100),
    "ackley100": partial(Ackley, dim=100, effective_dim=10),
    "levy100": partial(Levy, dim=100, effective_dim=10),
}
"""Problem factories by name; keyword arguments go to the problem's constructor."""


class UnknownProblemError(KeyError, ValueError):
    """``get_problem`` got a name that is not in :data:`PROBLEMS`."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def get_problem(name: str, **kwargs: Any) -> BlackBoxProblem:
    """Build a registered problem.

    Args:
        name: A key of :data:`PROBLEMS` (case-insensitive).
        **kwargs: Passed to the problem's constructor (e.g. ``data_dir``,
            ``n_workers``, ``binary`` for Mopta08).

    Raises:
        UnknownProblemError: Unknown name (a ``KeyError`` and a ``ValueError``); the
            message lists the valid names.
    """
    key = name.strip().lower()
    if key not in PROBLEMS:
        valid = ", ".join(sorted(PROBLEMS))
        raise UnknownProblemError(f"unknown benchmark problem {name!r}; valid names: {valid}")
    return PROBLEMS[key](**kwargs)
