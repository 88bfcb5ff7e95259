"""Lasso-DNA against LassoBench's published value."""

from __future__ import annotations

import numpy as np
import pytest

from ax_kernel_discovery.benchmarks.lasso_dna import VALUE_AT_ZERO_LASSOBENCH, LassoDNA


@pytest.fixture
def lasso() -> LassoDNA:
    return LassoDNA()


def test_metadata(lasso: LassoDNA) -> None:
    assert (lasso.name, lasso.dim, lasso.minimize) == ("lasso_dna", 180, True)
    np.testing.assert_array_equal(lasso.lower, -np.ones(180))
    np.testing.assert_array_equal(lasso.upper, np.ones(180))


def test_value_at_zero_matches_lassobench(lasso: LassoDNA) -> None:
    value = lasso.evaluate_one(np.zeros(180))
    assert value == pytest.approx(VALUE_AT_ZERO_LASSOBENCH, abs=1e-3)
    assert value == pytest.approx(0.304675, abs=1e-5)  # the converged solve


def test_penalty_scaling(lasso: LassoDNA) -> None:
    """x = 1 puts alpha_max (of the whole training split) on every feature: nearly every
    coefficient is zero in every fold, so the loss is close to the MSE of predicting 0."""
    lo, hi = lasso.log_alpha_min, lasso.log_alpha_max
    assert hi - lo == pytest.approx(np.log(1e5))
    np.testing.assert_allclose(lasso.log_penalties(np.ones(180)), hi)
    np.testing.assert_allclose(lasso.log_penalties(-np.ones(180)), lo)
    y_val = np.concatenate([fold[4] for fold in lasso._folds])
    mean_sq = np.mean([np.mean(fold[4] ** 2) for fold in lasso._folds])
    assert len(y_val) == 1700
    value = lasso.evaluate_one(np.ones(180))
    assert value <= mean_sq and value == pytest.approx(mean_sq, rel=0.01)


def test_deterministic_and_in_range(lasso: LassoDNA) -> None:
    X = np.random.default_rng(0).uniform(-1, 1, size=(2, 180))
    y1 = lasso.evaluate(X)
    np.testing.assert_array_equal(y1, lasso.evaluate(X))
    assert np.all((y1 > 0.25) & (y1 < 1.0))


def test_out_of_bounds_named(lasso: LassoDNA) -> None:
    x = np.zeros((1, 180))
    x[0, 7] = 1.5
    with pytest.raises(ValueError, match=r"lasso_dna: input out of bounds at index \(0, 7\)"):
        lasso.evaluate(x)


@pytest.mark.slow  # a cross-check against an optional solver, not in any extra of the package
def test_celer_solver_reproduces_lassobench() -> None:
    pytest.importorskip("celer")
    value = LassoDNA(solver="celer").evaluate_one(np.zeros(180))
    assert value == pytest.approx(VALUE_AT_ZERO_LASSOBENCH, abs=1e-4)
