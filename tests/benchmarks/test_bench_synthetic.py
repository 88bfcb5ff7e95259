"""Synthetic embedded problems reach their known optima at the known locations."""

from __future__ import annotations

import numpy as np
import pytest

from ax_kernel_discovery.benchmarks import get_problem
from ax_kernel_discovery.benchmarks.synthetic import Ackley, Branin, Hartmann6, Levy

NAMES = ["branin100", "hartmann6_100", "ackley100", "levy100"]


@pytest.mark.parametrize("name", NAMES)
def test_optimum_reached_at_known_location(name: str) -> None:
    problem = get_problem(name)
    assert problem.dim == 100 and problem.minimize and problem.optimum is not None
    value = problem.evaluate_one(problem.optimal_point())
    assert value == pytest.approx(problem.optimum, abs=1e-8)
    X = np.random.default_rng(0).uniform(size=(64, 100))
    assert np.all(problem.evaluate(X) >= problem.optimum - 1e-12)


def test_known_values() -> None:
    assert Branin.OPTIMUM == pytest.approx(0.397887, abs=1e-6)
    b = Branin()
    for z in ([-np.pi, 12.275], [np.pi, 2.275], [9.42478, 2.475]):
        assert b.function(np.array([z]))[0] == pytest.approx(0.397887, abs=1e-6)
    h = Hartmann6()
    ref = np.array([[0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]])
    assert h.function(ref)[0] == pytest.approx(-3.32237, abs=1e-5)
    # Ackley at z = 1 (every coordinate): 20 + e - 20 exp(-0.2) - e
    a = Ackley(effective_dim=3)
    assert a.function(np.ones((1, 3)))[0] == pytest.approx(20.0 - 20.0 * np.exp(-0.2), abs=1e-12)
    assert Levy(effective_dim=4).function(np.ones((1, 4)))[0] == pytest.approx(0.0, abs=1e-15)


def test_only_active_dims_matter() -> None:
    problem = Hartmann6(dim=120, seed=5)
    assert len(set(problem.active_dims.tolist())) == 6
    x = np.random.default_rng(1).uniform(size=120)
    y = x.copy()
    inactive = np.setdiff1d(np.arange(120), problem.active_dims)
    y[inactive] = np.random.default_rng(2).uniform(size=inactive.size)
    assert problem.evaluate_one(x) == problem.evaluate_one(y)
    y[problem.active_dims[0]] = 1.0 - y[problem.active_dims[0]]
    assert problem.evaluate_one(x) != problem.evaluate_one(y)


def test_seed_chooses_active_dims() -> None:
    a, b = Branin(seed=0), Branin(seed=1)
    np.testing.assert_array_equal(a.active_dims, Branin(seed=0).active_dims)
    assert not np.array_equal(a.active_dims, b.active_dims)
    assert str(a.active_dims.tolist()) in a.description


def test_names_and_bad_effective_dim() -> None:
    assert Ackley(dim=50, effective_dim=5).name == "ackley5_50"
    assert Levy().name == "levy100"
    with pytest.raises(ValueError, match="effective_dim"):
        Ackley(dim=4, effective_dim=10)


def test_batch_matches_single_points() -> None:
    problem = Levy()
    X = np.random.default_rng(3).uniform(size=(5, 100))
    np.testing.assert_allclose(problem.evaluate(X), [problem.evaluate_one(x) for x in X])


@pytest.mark.parametrize(
    ("problem", "botorch_name"),
    [(Branin(), "Branin"), (Hartmann6(), "Hartmann"), (Ackley(), "Ackley"), (Levy(), "Levy")],
)
def test_the_functions_are_botorchs_with_its_bounds_and_optima(problem, botorch_name) -> None:
    """Issue 53 item 3: BoTorch's test functions, same names, bounds and optima."""
    import torch
    from botorch.test_functions import synthetic

    fn = problem.test_function
    assert type(fn) is getattr(synthetic, botorch_name) and not fn.negate
    bounds = fn.bounds.numpy()
    np.testing.assert_array_equal(problem.fn_lower, bounds[0])
    np.testing.assert_array_equal(problem.fn_upper, bounds[1])
    assert problem.optimum == pytest.approx(fn.optimal_value, abs=1e-5)
    # BoTorch's own minimisers reach the optimum, through the embedding too
    for z in fn._optimizers:
        x = np.full(problem.dim, 0.5)
        x[problem.active_dims] = (np.array(z) - problem.fn_lower) / (
            problem.fn_upper - problem.fn_lower
        )
        assert problem.evaluate_one(x) == pytest.approx(fn.optimal_value, abs=1e-5)
    # float64 constants: BoTorch's tensor in float64 gives the same values to round-off
    Z = problem.to_function_domain(np.random.default_rng(3).uniform(size=(16, problem.dim)))
    ref = fn.evaluate_true(torch.as_tensor(Z, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(problem.function(Z), ref, rtol=1e-7, atol=1e-9)
    assert torch.get_default_dtype() == torch.float32  # the float64 build left it as it was


def test_hartmann6_constants_are_exact_in_float64() -> None:
    """BoTorch builds Hartmann's constants in the default dtype; built in float32 they
    would move its values by up to 4e-8. At the minimiser to 8 digits, the value is the
    minimum to 1e-12 only with float64 constants."""
    h = Hartmann6()
    assert h.test_function.A.dtype.is_floating_point
    assert float(h.test_function.A[1, 0]) == 0.05  # exact double, not float32's 0.0500000007
    assert h.function(h.fn_minimizer[None])[0] == pytest.approx(-3.32236801141551, abs=1e-8)
