"""Tests of the per-round search and selection diagnostics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ax_kernel_discovery.runner.diagnostics import (
    boundary_hit_ratio,
    next_batch_scores,
    path_length,
    target_map,
    to_unit_cube,
)


def test_boundary_hit_ratio_and_unit_cube() -> None:
    X = np.array([[-1.0, 0.0, 1.0], [0.5, 1.0 - 1e-6, -0.2]])
    U = to_unit_cube(X, np.array([-1.0, -1.0, -1.0]), np.array([1.0, 1.0, 1.0]))
    np.testing.assert_allclose(U[0], [0.0, 0.5, 1.0])
    assert boundary_hit_ratio(U) == pytest.approx(3 / 6)
    assert math.isnan(boundary_hit_ratio(np.zeros((0, 3))))


def test_path_length_in_query_order() -> None:
    U = np.array([[0.0, 0.0], [3.0, 4.0], [3.0, 0.0]])
    assert path_length(U) == pytest.approx(5.0 + 4.0)
    assert path_length(U, previous=np.array([0.0, 0.0])) == pytest.approx(0.0 + 5.0 + 4.0)
    assert path_length(U[:1]) == 0.0


def test_target_map_recovers_standardization_and_winsorization() -> None:
    rng = np.random.default_rng(0)
    raw = rng.normal(size=20) * 3 + 7
    mean, std = raw.mean(), raw.std(ddof=1)
    targets = (raw - mean) / std
    forward = target_map(raw[rng.permutation(20)], targets)  # order does not matter
    assert forward is not None
    np.testing.assert_allclose(forward(np.array([7.0, 10.0])), (np.array([7.0, 10.0]) - mean) / std)
    # Ax winsorizes the bad tail: the two lowest targets are clipped to one value
    clipped = targets.copy()
    low = np.argsort(targets)[:2]
    clipped[low] = targets[np.argsort(targets)[2]] - 0.1
    forward = target_map(raw, clipped)
    assert forward is not None
    assert forward(np.array([raw.min() - 100]))[0] == pytest.approx(clipped.min())
    assert forward(np.array([raw.max() + 3]))[0] == pytest.approx((raw.max() + 3 - mean) / std)
    assert target_map(raw[:5], targets) is None  # counts differ


def test_next_batch_scores_match_a_hand_computed_posterior() -> None:
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.mlls import ExactMarginalLogLikelihood

    torch.manual_seed(0)
    X = torch.rand(15, 2, dtype=torch.float64)
    raw = (X.sum(-1) * 4.0 + 1.0).numpy()
    y = (raw - raw.mean()) / raw.std(ddof=1)
    model = SingleTaskGP(X, torch.as_tensor(y).unsqueeze(-1), outcome_transform=None)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    Xn = np.random.default_rng(1).random((4, 2))
    raw_new = Xn.sum(-1) * 4.0 + 1.0
    values = [*raw_new.tolist(), None]  # a failed evaluation is skipped
    out = next_batch_scores({"rbf": model}, np.vstack([Xn, Xn[:1]]), values, raw.tolist())
    post = model.posterior(torch.as_tensor(Xn), observation_noise=True)
    m, s = post.mean.reshape(-1), post.variance.reshape(-1).sqrt()
    target = torch.as_tensor((raw_new - raw.mean()) / raw.std(ddof=1))
    ll = torch.distributions.Normal(m, s).log_prob(target).mean().detach()
    assert out["rbf"]["log_lik"] == pytest.approx(float(ll), rel=1e-6)
    assert out["rbf"]["crps"] > 0
    assert next_batch_scores({"rbf": model}, Xn, [None] * 4, raw.tolist()) == {}
