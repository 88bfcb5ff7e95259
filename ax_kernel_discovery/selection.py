"""Selection criteria: pure math on the noisy *prior* covariance of a fitted GP.

LOO-CRPS (the paper's criterion) uses the closed-form leave-one-out predictive of a GP
with noisy prior covariance :math:`K = K_f + \\sigma^2 I` and centred targets :math:`y`:

.. math::

    \\mu_{-i} = y_i - \\frac{[K^{-1} y]_i}{[K^{-1}]_{ii}}, \\qquad
    \\sigma^2_{-i} = \\frac{1}{[K^{-1}]_{ii}}

and scores it with the CRPS of a Gaussian (lower is better):

.. math::

    \\mathrm{CRPS}(\\mathcal N(\\mu, \\sigma^2), y) =
    \\sigma \\left[ z (2\\Phi(z) - 1) + 2 \\varphi(z) - \\tfrac{1}{\\sqrt{\\pi}} \\right],
    \\quad z = \\frac{y - \\mu}{\\sigma}

The K must be the prior covariance (train mode), not an eval-mode posterior.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import torch
from torch import Tensor

Criterion = Literal["loo_crps", "loo_crps_bic", "mll", "bic"]
CRITERIA: tuple[str, ...] = ("loo_crps", "loo_crps_bic", "mll", "bic")

_SQRT_PI_INV = 1.0 / math.sqrt(math.pi)


def gaussian_crps(mean: Tensor, std: Tensor, y: Tensor) -> Tensor:
    """Elementwise CRPS of N(mean, std^2) at observations ``y``."""
    z = (y - mean) / std
    normal = torch.distributions.Normal(torch.zeros_like(z), torch.ones_like(z))
    return std * (z * (2.0 * normal.cdf(z) - 1.0) + 2.0 * normal.log_prob(z).exp() - _SQRT_PI_INV)


def loo_predictive(K: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """Closed-form leave-one-out means and variances from the noisy prior covariance.

    Args:
        K: ``n x n`` noisy prior covariance (positive definite).
        y: ``n`` targets with the prior mean already removed.

    Returns:
        ``(mu, var)``, each of shape ``n``.
    """
    _check(K, y)
    L = torch.linalg.cholesky(K)
    eye = torch.eye(K.shape[-1], dtype=K.dtype, device=K.device)
    K_inv = torch.cholesky_solve(eye, L)
    alpha = K_inv @ y
    diag = torch.diagonal(K_inv)
    return y - alpha / diag, 1.0 / diag


def loo_crps(K: Tensor, y: Tensor) -> Tensor:
    """Mean CRPS of the closed-form leave-one-out Gaussians (lower is better).

    Args:
        K: ``n x n`` noisy *prior* covariance of the training targets.
        y: ``n`` training targets with the prior mean already removed.

    Returns:
        A scalar tensor.

    Example:
        >>> K = torch.eye(3, dtype=torch.float64) * 2
        >>> float(loo_crps(K, torch.zeros(3, dtype=torch.float64)))  # doctest: +ELLIPSIS
        0.33...
    """
    mu, var = loo_predictive(K, y)
    return gaussian_crps(mu, var.sqrt(), y).mean()


def log_marginal_likelihood(K: Tensor, y: Tensor) -> Tensor:
    """Exact Gaussian log marginal likelihood log N(y; 0, K)."""
    _check(K, y)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y.unsqueeze(-1), L).squeeze(-1)
    n = y.shape[-1]
    return -0.5 * (y @ alpha) - torch.log(torch.diagonal(L)).sum() - 0.5 * n * math.log(2 * math.pi)


def score(criterion: str, K: Tensor, y: Tensor, num_params: int) -> float:
    """Score a fitted GP by ``criterion`` (lower is better).

    * ``loo_crps``: :func:`loo_crps`.
    * ``loo_crps_bic``: LOO-CRPS plus ``|theta| log n / n`` (for D >> n).
    * ``mll``: negative log marginal likelihood per data point.
    * ``bic``: ``|theta| log n - 2 log p(y)``.

    Args:
        criterion: One of :data:`CRITERIA`.
        K: Noisy prior covariance.
        y: Centred targets.
        num_params: Number of scalar hyperparameters of the kernel.
    """
    n = y.shape[-1]
    fn = _CRITERIA.get(criterion)
    if fn is None:
        raise ValueError(f"unknown criterion {criterion!r}; choose from {CRITERIA}")
    return float(fn(K, y, num_params, n))


_CRITERIA: dict[str, Callable[[Tensor, Tensor, int, int], Tensor | float]] = {
    "loo_crps": lambda K, y, k, n: loo_crps(K, y),
    "loo_crps_bic": lambda K, y, k, n: loo_crps(K, y) + k * math.log(n) / n,
    "mll": lambda K, y, k, n: -log_marginal_likelihood(K, y) / n,
    "bic": lambda K, y, k, n: k * math.log(n) - 2.0 * log_marginal_likelihood(K, y),
}


def best_points(K: Tensor, y: Tensor, values: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """``K`` and ``y`` restricted to the ``k`` points with the largest ``values``.

    The leave-one-out criteria computed on the result score a kernel on the region that
    BO exploits (``values`` are the targets times the objective's sign).

    Example:
        >>> K = torch.eye(3, dtype=torch.float64)
        >>> best_points(K, torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 5.0, 1.0]), 2)[1]
        tensor([2., 3.])
    """
    if k >= y.shape[-1]:
        return K, y
    idx = torch.topk(values, k).indices.sort().values
    return K[idx][:, idx], y[idx]


def prior_covariance(model: Any) -> tuple[Tensor, Tensor]:
    """Noisy prior covariance and centred targets of a fitted single-output GPyTorch model.

    Evaluates the model in *train* mode (the prior, with input transforms applied by
    BoTorch's ``forward``) and adds the likelihood noise. The model's mode is restored.

    Returns:
        ``(K, y - m(X))``.
    """
    was_training = model.training
    model.train()
    try:
        with torch.no_grad():
            X = model.train_inputs[0]
            prior = model(X)
            noisy = model.likelihood(prior, [X])
            K = noisy.covariance_matrix
            y = model.train_targets - prior.mean
    finally:
        model.train(was_training)
    return K, y


def num_hyperparameters(module: torch.nn.Module) -> int:
    """Number of scalar trainable parameters of ``module``."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def _check(K: Tensor, y: Tensor) -> None:
    if K.dim() != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"K must be a square n x n matrix, got shape {tuple(K.shape)}")
    if y.dim() != 1 or y.shape[0] != K.shape[0]:
        raise ValueError(f"y must have shape ({K.shape[0]},), got {tuple(y.shape)}")
