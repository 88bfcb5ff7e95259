"""LOO-CRPS and the other criteria against brute force and BoTorch."""

from __future__ import annotations

import pytest
import torch
from botorch.cross_validation import efficient_loo_cv
from botorch.models import SingleTaskGP

from ax_kernel_discovery import loo_crps
from ax_kernel_discovery.selection import (
    gaussian_crps,
    gaussian_log_density,
    heldout_predictive,
    lbo_crps,
    leave_blocks_out_predictive,
    log_marginal_likelihood,
    loo_predictive,
    mixture_counts,
    prior_covariance,
    pseudo_bma_weights,
    stacking_weights,
    within_noise,
)


def _spd(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 3, generator=g, dtype=torch.float64)
    K = torch.exp(-0.5 * torch.cdist(X, X).pow(2) / 0.3**2) + 0.05 * torch.eye(
        n, dtype=torch.float64
    )
    y = torch.randn(n, generator=g, dtype=torch.float64)
    return K, y


def _crps_numeric(mu: float, sigma: float, y: float) -> float:
    """CRPS = int_{-inf}^{y} F^2 dt + int_{y}^{inf} (1 - F)^2 dt, by the trapezoid rule."""
    normal = torch.distributions.Normal(
        torch.tensor(mu, dtype=torch.float64), torch.tensor(sigma, dtype=torch.float64)
    )
    lo = torch.linspace(mu - 15 * sigma, y, 100001, dtype=torch.float64)
    hi = torch.linspace(y, mu + 15 * sigma, 100001, dtype=torch.float64)
    return float(
        torch.trapezoid(normal.cdf(lo) ** 2, lo) + torch.trapezoid((1 - normal.cdf(hi)) ** 2, hi)
    )


def test_loo_crps_equals_brute_force_leave_one_out() -> None:
    K, y = _spd(15)
    n = len(y)
    crps = []
    for i in range(n):
        keep = [j for j in range(n) if j != i]
        Kk, ki = K[keep][:, keep], K[keep, i]
        mu = ki @ torch.linalg.solve(Kk, y[keep])
        var = K[i, i] - ki @ torch.linalg.solve(Kk, ki)
        crps.append(gaussian_crps(mu, var.sqrt(), y[i]))
    brute = torch.stack(crps).mean()
    assert float(loo_crps(K, y)) == pytest.approx(float(brute), abs=1e-8)


def test_gaussian_crps_closed_form_matches_integral() -> None:
    for mu, sigma, y in [(0.0, 1.0, 0.3), (1.5, 0.4, -0.2), (-2.0, 2.5, 1.0)]:
        t = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
        closed = float(gaussian_crps(t(mu), t(sigma), t(y)))
        assert closed == pytest.approx(_crps_numeric(mu, sigma, y), abs=1e-6)


def test_loo_crps_uses_the_prior_of_a_fitted_model_like_botorch() -> None:
    g = torch.Generator().manual_seed(1)
    X = torch.rand(12, 4, generator=g, dtype=torch.float64)
    Y = torch.sin(5 * X.sum(-1, keepdim=True))
    model = SingleTaskGP(X, Y, outcome_transform=None)  # as Ax builds it
    model.eval()  # the helper must switch to the prior (train mode) itself
    K, yc = prior_covariance(model)
    assert not model.training
    mu, var = loo_predictive(K, yc)
    cv = efficient_loo_cv(model)
    mean_b = cv.posterior.mean.reshape(-1)
    var_b = cv.posterior.variance.reshape(-1)
    prior_mean = float(model.mean_module.constant)
    assert torch.allclose(mu + prior_mean, mean_b, atol=1e-8)
    assert torch.allclose(var, var_b, atol=1e-8)


def test_eval_mode_posterior_would_give_a_different_score() -> None:
    g = torch.Generator().manual_seed(2)
    X = torch.rand(10, 2, generator=g, dtype=torch.float64)
    Y = torch.cos(4 * X.sum(-1, keepdim=True))
    model = SingleTaskGP(X, Y)
    K, yc = prior_covariance(model)
    model.eval()
    post = model.likelihood(model(X)).covariance_matrix.detach()
    assert float(loo_crps(K, yc)) != pytest.approx(float(loo_crps(post, yc)), rel=1e-3)


def test_log_marginal_likelihood_is_the_gaussian_log_density() -> None:
    K, y = _spd(10, seed=3)
    n = 10
    lml = float(log_marginal_likelihood(K, y))
    expected = float(
        torch.distributions.MultivariateNormal(torch.zeros(n, dtype=torch.float64), K).log_prob(y)
    )
    assert lml == pytest.approx(expected, abs=1e-9)


def test_bad_shapes_are_clear_errors() -> None:
    K, y = _spd(4)
    with pytest.raises(ValueError, match="square"):
        loo_crps(K[:3], y)
    with pytest.raises(ValueError, match=r"y must have shape \(4,\)"):
        loo_crps(K, y[:3])


def test_best_points_scores_the_top_k_subset_only() -> None:
    from ax_kernel_discovery.selection import best_points, loo_crps

    gen = torch.Generator().manual_seed(3)
    A = torch.randn(8, 8, generator=gen, dtype=torch.float64)
    K = A @ A.T + 0.5 * torch.eye(8, dtype=torch.float64)
    y = torch.randn(8, generator=gen, dtype=torch.float64)
    values = -y  # minimisation: the best points have the smallest y
    K3, y3 = best_points(K, y, values, 3)
    idx = torch.argsort(y)[:3].sort().values
    assert torch.equal(y3, y[idx]) and torch.equal(K3, K[idx][:, idx])
    assert float(loo_crps(K3, y3)) != pytest.approx(float(loo_crps(K, y)))
    assert best_points(K, y, values, 8)[0] is K  # k >= n keeps every point


def test_leave_blocks_out_predictive_equals_conditioning_on_the_other_points() -> None:
    K, y = _spd(12, seed=3)
    blocks = [torch.tensor([4, 5, 6]), torch.tensor([9, 10, 11])]
    idx, mu, var = leave_blocks_out_predictive(K, y, blocks)
    assert idx.tolist() == [4, 5, 6, 9, 10, 11]
    for block in blocks:
        rest = torch.tensor([i for i in range(12) if i not in block.tolist()])
        K_ro = K[block][:, rest]
        solve = torch.linalg.solve(K[rest][:, rest], K_ro.T)
        mu_bf = K_ro @ torch.linalg.solve(K[rest][:, rest], y[rest])
        var_bf = torch.diagonal(K[block][:, block] - K_ro @ solve)
        pos = [idx.tolist().index(i) for i in block.tolist()]
        assert torch.allclose(mu[pos], mu_bf, atol=1e-9)
        assert torch.allclose(var[pos], var_bf, atol=1e-9)
    expected = gaussian_crps(mu, var.sqrt(), y[idx]).mean()
    assert float(lbo_crps(K, y, blocks)) == pytest.approx(float(expected), rel=1e-12)


def test_lbo_crps_with_one_point_blocks_is_loo_crps_on_those_points() -> None:
    K, y = _spd(10, seed=4)
    mu, var = loo_predictive(K, y)
    pts = [2, 7, 8]
    expected = gaussian_crps(mu[pts], var[pts].sqrt(), y[pts]).mean()
    got = lbo_crps(K, y, [torch.tensor([i]) for i in pts])
    assert float(got) == pytest.approx(float(expected), rel=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_leaving_a_block_out_never_shrinks_a_points_predictive_variance(seed: int) -> None:
    # Conditioning on fewer points cannot reduce a Gaussian's conditional variance, so
    # each point's leave-block-out variance is at least its leave-one-out variance
    # (whatever the targets: a score of the means, CRPS included, has no such order).
    K, y = _spd(10, seed=seed)
    _, var_loo = loo_predictive(K, y)
    block = torch.tensor([2, 7, 8])
    idx, _, var_block = leave_blocks_out_predictive(K, y, [block])
    assert torch.all(var_block >= var_loo[idx] - 1e-12)
    assert torch.any(var_block > var_loo[idx] * (1 + 1e-6))  # the neighbours carried information


def test_heldout_predictive_is_the_forecast_from_the_earlier_points() -> None:
    K, y = _spd(14, seed=6)
    block = torch.arange(10, 14)
    mu, var = heldout_predictive(K, y, block)
    K_old = K[:10, :10]
    cross = K[10:, :10]
    mu_bf = cross @ torch.linalg.solve(K_old, y[:10])
    var_bf = torch.diagonal(K[10:, 10:] - cross @ torch.linalg.solve(K_old, cross.T))
    assert torch.allclose(mu, mu_bf, atol=1e-10) and torch.allclose(var, var_bf, atol=1e-10)
    normal = torch.distributions.Normal(mu_bf, var_bf.sqrt())
    assert torch.allclose(
        gaussian_log_density(mu, var.sqrt(), y[10:]), normal.log_prob(y[10:]), atol=1e-10
    )


def _mixture_log_score(log_density: torch.Tensor, w: torch.Tensor) -> float:
    return float(torch.logsumexp(log_density + torch.log(w).unsqueeze(-1), dim=0).mean())


def test_stacking_weights_maximize_the_mixtures_held_out_log_score() -> None:
    g = torch.Generator().manual_seed(7)
    # three forecasters of 40 points: each is good on a different part
    log_density = -torch.rand(3, 40, generator=g, dtype=torch.float64) * 4
    log_density[0, :15] += 3.0
    log_density[1, 15:30] += 3.0
    w = stacking_weights(log_density)
    assert w.sum() == pytest.approx(1.0) and bool((w >= 0).all())
    best = _mixture_log_score(log_density, w.clamp_min(1e-300))
    steps = 40
    for i in range(steps + 1):  # brute force over a grid of the simplex
        for j in range(steps + 1 - i):
            grid = torch.tensor([i, j, steps - i - j], dtype=torch.float64) / steps
            assert _mixture_log_score(log_density, grid.clamp_min(1e-300)) <= best + 1e-9
    assert 0.2 < float(w[0]) < 0.8 and 0.2 < float(w[1]) < 0.8  # complementary: both kept


def test_stacking_drops_a_forecaster_that_is_worse_everywhere() -> None:
    g = torch.Generator().manual_seed(8)
    good = -torch.rand(30, generator=g, dtype=torch.float64)
    w = stacking_weights(torch.stack([good, good - 5.0]))
    assert float(w[0]) > 0.999


def test_pseudo_bma_weights_are_the_softmax_of_summed_log_densities() -> None:
    ld = torch.tensor([[-1.0, -2.0], [-1.5, -1.0], [-4.0, -4.0]], dtype=torch.float64)
    expected = torch.exp(ld.sum(-1)) / torch.exp(ld.sum(-1)).sum()
    assert torch.allclose(pseudo_bma_weights(ld), expected)


def test_mixture_counts_round_weights_to_the_slots() -> None:
    assert mixture_counts([0.5, 0.3, 0.2], 10) == [5, 3, 2]
    assert mixture_counts([1.0, 1.0, 1.0], 12) == [4, 4, 4]
    assert mixture_counts([0.98, 0.01, 0.01], 12) == [12, 0, 0]
    assert sum(mixture_counts([0.4, 0.35, 0.25], 12)) == 12
    with pytest.raises(ValueError, match="slots"):
        mixture_counts([1.0], 0)


def test_within_noise_is_a_paired_one_standard_error_rule() -> None:
    g = torch.Generator().manual_seed(9)
    best = torch.rand(30, generator=g, dtype=torch.float64)
    noise = 0.5 * torch.randn(30, generator=g, dtype=torch.float64)
    assert within_noise(best, best + noise - noise.mean() + 0.01)  # far below one s.e.
    assert not within_noise(best, best + 0.5 + 0.01 * noise)  # clearly worse, little noise


def test_one_point_worse_by_any_amount_is_within_one_standard_error_but_not_the_bound() -> None:
    best = torch.tensor([0.8, 0.85, 0.78, 0.86], dtype=torch.float64)
    for x in (0.5, 80.0):  # d = (x, 0, 0, 0): mean x / 4 = s.e.
        other = best + torch.tensor([x, 0.0, 0.0, 0.0], dtype=torch.float64)
        assert within_noise(best, other)
        assert not within_noise(best, other, bound=0.1)
    assert within_noise(best, best + 0.01 * torch.tensor([1.0, -1, 2, 0]), bound=0.1)
