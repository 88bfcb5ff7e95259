"""Benchmark problems, one per module; they know nothing about kernels or Ax.

=================  ====  =========  ==============================================
name               D     direction  module
=================  ====  =========  ==============================================
``rover100``       100   maximise   :mod:`.rover` (50 waypoints)
``rover60``        60    maximise   :mod:`.rover` (30 waypoints, the original)
``lasso_dna``      180   minimise   :mod:`.lasso_dna` (needs scikit-learn)
``svm``            388   minimise   :mod:`.svm` (needs scikit-learn)
``humanoid``       6392  maximise   :mod:`.humanoid` (needs gymnasium[mujoco])
``mopta08``        124   minimise   :mod:`.mopta08` (needs a user-supplied binary)
``branin100``      100   minimise   :mod:`.synthetic` (Branin, 2 active dims)
``hartmann6_100``  100   minimise   :mod:`.synthetic` (Hartmann-6, 6 active dims)
``ackley100``      100   minimise   :mod:`.synthetic` (Ackley-10, 10 active dims)
``levy100``        100   minimise   :mod:`.synthetic` (Levy-10, 10 active dims)
=================  ====  =========  ==============================================

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

from ax_kernel_discovery.benchmarks.base import BenchmarkProblem, MissingDependencyError
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
    "BenchmarkProblem",
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

PROBLEMS: dict[str, Callable[..., BenchmarkProblem]] = {
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


def get_problem(name: str, **kwargs: Any) -> BenchmarkProblem:
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
