"""Input validation, worker pools and the registry (data files: test_bench_datasets.py)."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest

from ax_kernel_discovery.benchmarks import (
    PROBLEMS,
    BlackBoxProblem,
    UnknownProblemError,
    get_problem,
)
from ax_kernel_discovery.benchmarks.base import BOUNDS_TOLERANCE
from ax_kernel_discovery.benchmarks.rover import Rover
from ax_kernel_discovery.benchmarks.synthetic import Branin


class _Quadratic(BlackBoxProblem):
    """A tiny problem on [-1, 2]^3 (picklable: defined at module level)."""

    def __init__(self, **kwargs):
        super().__init__(
            name="quad3", dim=3, lower=-1.0, upper=2.0, minimize=True, optimum=0.0, **kwargs
        )

    def _evaluate_point(self, x: np.ndarray) -> float:
        return float(np.sum(x**2))


class _Unpicklable(_Quadratic):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._lock = threading.Lock()


# ------------------------------------------------------------------- validation
def test_evaluate_returns_1d_array() -> None:
    problem = _Quadratic()
    y = problem.evaluate([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]])
    assert y.shape == (2,)
    np.testing.assert_allclose(y, [5.0, 3.0])
    assert problem.evaluate_one(np.array([1.0, 0.0, 0.0])) == 1.0
    assert problem.bounds.shape == (2, 3)


@pytest.mark.parametrize("shape", [(2, 4), (3,), (1, 2, 3), (0,)])
def test_wrong_dimension_raises(shape: tuple[int, ...]) -> None:
    problem = _Quadratic()
    with pytest.raises(ValueError, match=r"quad3: expected an array of shape \(n, 3\)") as info:
        problem.evaluate(np.zeros(shape))
    assert str(shape) in str(info.value)


def test_evaluate_one_wrong_dimension() -> None:
    with pytest.raises(
        ValueError, match=r"quad3: expected one point of shape \(3,\), got shape \(4,\)"
    ):
        _Quadratic().evaluate_one(np.zeros(4))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_raise(bad: float) -> None:
    X = np.zeros((3, 3))
    X[2, 1] = bad
    with pytest.raises(ValueError, match=r"quad3: input contains NaN or inf at index \(2, 1\)"):
        _Quadratic().evaluate(X)


def test_out_of_bounds_raises_with_index_and_bounds() -> None:
    X = np.zeros((2, 3))
    X[1, 2] = 2.5
    with pytest.raises(ValueError) as info:
        _Quadratic().evaluate(X)
    msg = str(info.value)
    assert msg.startswith("quad3: input out of bounds at index (1, 2)")
    assert "2.5" in msg and "[-1.0, 2.0]" in msg


def test_out_of_bounds_below() -> None:
    X = np.zeros((1, 3))
    X[0, 0] = -1.0 - 1e-6
    with pytest.raises(ValueError, match=re.escape("index (0, 0)")):
        _Quadratic().evaluate(X)


def test_values_within_tolerance_are_clipped() -> None:
    problem = _Quadratic()
    X = np.array([[2.0 + 0.5 * BOUNDS_TOLERANCE, -1.0 - 0.5 * BOUNDS_TOLERANCE, 0.0]])
    clipped = problem.validate(X)
    np.testing.assert_array_equal(clipped, [[2.0, -1.0, 0.0]])
    assert problem.evaluate(X)[0] == 5.0


def test_non_numeric_input_raises() -> None:
    with pytest.raises(ValueError, match="quad3: input must be a numeric array"):
        _Quadratic().evaluate([["a", "b", "c"]])


def test_bad_n_workers() -> None:
    with pytest.raises(ValueError, match="n_workers must be >= 1"):
        _Quadratic(n_workers=0)
    with pytest.raises(ValueError, match="n_workers must be >= 1"):
        _Quadratic().evaluate(np.zeros((2, 3)), n_workers=0)


# ---------------------------------------------------------------------- workers
def test_worker_pool_matches_sequential() -> None:
    problem = _Quadratic(mp_context="fork")
    X = np.random.default_rng(0).uniform(-1, 2, size=(7, 3))
    try:
        parallel = problem.evaluate(X, n_workers=2)
        again = problem.evaluate(X, n_workers=2)  # the pool is reused
        assert problem._executor is not None
    finally:
        problem.close()
    assert problem._executor is None
    np.testing.assert_array_equal(parallel, problem.evaluate(X))
    np.testing.assert_array_equal(again, parallel)


def test_worker_pool_matches_sequential_rover() -> None:
    problem = Rover(n_waypoints=30, n_workers=2)
    problem.mp_context = "fork"
    with problem:
        X = np.random.default_rng(1).uniform(size=(6, 60))
        parallel = problem.evaluate(X)
    np.testing.assert_allclose(parallel, problem.evaluate(X, n_workers=1), rtol=0, atol=0)


@pytest.mark.slow
def test_worker_pool_spawn() -> None:
    """The default start method (spawn) re-imports the package in each worker."""
    with Rover(n_waypoints=30, n_workers=2) as problem:
        X = np.random.default_rng(2).uniform(size=(4, 60))
        parallel = problem.evaluate(X)
    np.testing.assert_array_equal(parallel, problem.evaluate(X, n_workers=1))


def test_unpicklable_problem_falls_back_to_sequential() -> None:
    problem = _Unpicklable(mp_context="fork")
    X = np.ones((3, 3))
    with pytest.warns(RuntimeWarning, match="quad3: cannot be pickled"):
        y = problem.evaluate(X, n_workers=2)
    np.testing.assert_array_equal(y, [3.0, 3.0, 3.0])


# --------------------------------------------------------------------- registry
def test_registry_names() -> None:
    expected = {
        "rover100",
        "rover60",
        "lasso_dna",
        "svm",
        "humanoid",
        "mopta08",
        "branin100",
        "hartmann6_100",
        "ackley100",
        "levy100",
    }
    assert expected <= set(PROBLEMS)


def test_get_problem_unknown_name_lists_valid_names() -> None:
    with pytest.raises(UnknownProblemError) as info:
        get_problem("rover1000")
    msg = str(info.value)
    assert "unknown benchmark problem 'rover1000'" in msg
    for name in PROBLEMS:
        assert name in msg
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)


def test_get_problem_builds_with_kwargs() -> None:
    rover = get_problem("rover60")
    assert (rover.name, rover.dim, rover.minimize) == ("rover60", 60, False)
    branin = get_problem("Branin100", seed=3)
    assert isinstance(branin, Branin) and branin.dim == 100 and branin.seed == 3
