"""Selection criteria: pure math on the noisy *prior* covariance of a fitted GP.

The criteria by name, each with what it decides in a round, are the rules of
:mod:`ax_kernel_discovery.selection_rules`; this module holds their maths.

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

LBO-CRPS (``lbo_crps``, leave-batch-out) scores where BO goes next rather than where
it has been: each of the last BO batches :math:`B` is left out in turn and predicted
jointly from all other points, in closed form with :math:`P = K^{-1}`:

.. math::

    \\mu_{B} = y_B - (P_{BB})^{-1} [P y]_B, \\qquad \\Sigma_{B} = (P_{BB})^{-1}

and the marginal CRPS of its points is averaged. A batch is the set of points one
acquisition chose, so its points are where the model that chose them was (over-)confident;
plain LOO leaves out one point and keeps its batch neighbours, which flatters kernels
that interpolate and extrapolate badly (see ``docs/results.md``, selection diagnostics).

The K must be the prior covariance (train mode), not an eval-mode posterior.

**Prequential** scoring (``criterion="prequential"``, Dawid 1984) is honestly held out:
each member is scored on a BO batch :math:`B` by the forecast it made *before* the batch
existed, with the hyperparameters :math:`\\theta^{(t)}` it was fitted to on the earlier
data :math:`D_t` (which the batch never influenced):

.. math::

    \\mathrm{LS}_B = -\\frac{1}{|B|} \\sum_{i \\in B}
    \\log \\mathcal N\\big(y_i;\\ \\mu_{i \\mid D_t}, \\sigma^2_{i \\mid D_t}\\big)

(:func:`heldout_predictive` gives the forecast). The log score grows quadratically in the
standardized error :math:`z`, CRPS only linearly, so the log score punishes an
overconfident forecast more. Several members' held-out log densities on the same points
also give **mixture weights**: :func:`stacking_weights` (Yao, Vehtari, Simpson and Gelman
2018) maximize the held-out log score of the mixture, :func:`pseudo_bma_weights` are
:math:`\\propto \\exp(-|B| \\, \\mathrm{LS})`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

_SQRT_PI_INV = 1.0 / math.sqrt(math.pi)


def gaussian_crps(mean: Tensor, std: Tensor, y: Tensor) -> Tensor:
    """Elementwise CRPS of N(mean, std^2) at observations ``y``."""
    z = (y - mean) / std
    normal = torch.distributions.Normal(torch.zeros_like(z), torch.ones_like(z))
    return std * (z * (2.0 * normal.cdf(z) - 1.0) + 2.0 * normal.log_prob(z).exp() - _SQRT_PI_INV)


def gaussian_log_density(mean: Tensor, std: Tensor, y: Tensor) -> Tensor:
    """Elementwise log density of N(mean, std^2) at observations ``y``."""
    z = (y - mean) / std
    return -0.5 * z * z - torch.log(std) - 0.5 * math.log(2.0 * math.pi)


def heldout_predictive(K: Tensor, y: Tensor, block: Tensor) -> tuple[Tensor, Tensor]:
    """Marginal predictive of the points ``block`` given all other points (closed form).

    Prequential use: ``K`` is the noisy prior covariance of *all* points at the
    hyperparameters fitted before ``block`` was observed, ``y`` the centred targets in the
    units of that fit, and ``block`` the newest points; the result is the forecast the
    fitted model made for them.

    Returns:
        ``(mu, var)`` of the block's points, each of shape ``len(block)``.
    """
    _, mu, var = leave_blocks_out_predictive(K, y, [block])
    return mu, var.clamp_min(1e-12)


def stacking_weights(log_density: Tensor, iterations: int = 500, tol: float = 1e-10) -> Tensor:
    """Stacking weights of predictive distributions (Yao et al. 2018).

    Maximizes the mean held-out log score of the mixture,
    :math:`\\frac1n \\sum_i \\log \\sum_k w_k p_k(y_i)` over the simplex, by EM (each step
    increases the objective; it is concave in :math:`w`).

    Args:
        log_density: ``k x n`` held-out log densities of ``k`` models at ``n`` points.

    Returns:
        ``k`` non-negative weights summing to 1.

    Example:
        >>> ld = torch.tensor([[0.0, 0.0], [-9.0, -9.0]], dtype=torch.float64)
        >>> stacking_weights(ld)[0] > 0.99
        tensor(True)
    """
    if log_density.dim() != 2 or log_density.shape[0] < 1:
        raise ValueError(f"log_density must be k x n, got shape {tuple(log_density.shape)}")
    k = log_density.shape[0]
    w = torch.full((k,), 1.0 / k, dtype=log_density.dtype, device=log_density.device)
    last = -math.inf
    for _ in range(iterations):
        joint = log_density + torch.log(w.clamp_min(1e-300)).unsqueeze(-1)
        total = torch.logsumexp(joint, dim=0)
        objective = float(total.mean())
        w = torch.exp(joint - total).mean(dim=-1)
        w = w / w.sum()
        if objective - last < tol:
            break
        last = objective
    return w


def pseudo_bma_weights(log_density: Tensor) -> Tensor:
    """Pseudo-BMA weights: :math:`w_k \\propto \\exp(\\sum_i \\log p_k(y_i))` (``k x n`` input)."""
    return torch.softmax(log_density.sum(dim=-1), dim=0)


def mixture_counts(weights: Sequence[float], slots: int) -> list[int]:
    """Integer shares of ``slots`` proportional to ``weights`` (largest remainders).

    An equal-weight mixture over a multiset of members with these counts is the weighted
    mixture with weights rounded to multiples of ``1 / slots``.

    Example:
        >>> mixture_counts([0.5, 0.3, 0.2], 10)
        [5, 3, 2]
        >>> mixture_counts([0.62, 0.38], 4)
        [3, 1]
    """
    if slots < 1:
        raise ValueError(f"slots must be >= 1, got {slots}")
    total = float(sum(weights))
    if not weights or total <= 0:
        raise ValueError("weights must be non-empty with a positive sum")
    raw = [slots * w / total for w in weights]
    counts = [math.floor(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: (-(raw[i] - counts[i]), i))
    for i in order[: slots - sum(counts)]:
        counts[i] += 1
    return counts


def within_noise(best: Tensor, other: Tensor, z: float = 1.0, bound: float | None = None) -> bool:
    """Whether ``other``'s per-point losses are within ``z`` paired standard errors of ``best``'s.

    Both are per-point losses (lower is better) on the same held-out points; the paired
    difference :math:`d_i = \\ell^{other}_i - \\ell^{best}_i` is within noise when
    :math:`\\bar d \\le z \\, s_d / \\sqrt n` and, with ``bound``, :math:`\\bar d \\le`
    ``bound``. The bound matters: one point worse by any amount :math:`x` and the others
    equal give :math:`\\bar d = x / n = s_d / \\sqrt n`, within one standard error
    however large :math:`x` is.
    """
    if best.shape != other.shape or best.numel() < 2:
        return bool(torch.equal(best, other))
    d = other - best
    mean = float(d.mean())
    if bound is not None and mean > bound:
        return False
    se = float(d.std(unbiased=True)) / math.sqrt(d.numel())
    return mean <= z * se


def loo_predictive(K: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """Closed-form leave-one-out means and variances from the noisy prior covariance.

    Args:
        K: ``n x n`` noisy prior covariance (positive definite).
        y: ``n`` targets with the prior mean already removed.

    Returns:
        ``(mu, var)``, each of shape ``n``.
    """
    K_inv, alpha = _precision(K, y)
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


def leave_blocks_out_predictive(
    K: Tensor, y: Tensor, blocks: Sequence[Tensor]
) -> tuple[Tensor, Tensor, Tensor]:
    """Closed-form predictive of each block given all other points (marginals).

    Args:
        K: ``n x n`` noisy prior covariance (positive definite).
        y: ``n`` targets with the prior mean already removed.
        blocks: Disjoint index tensors; each is left out in turn.

    Returns:
        ``(index, mu, var)``: the points of all blocks, concatenated, with their
        leave-block-out means and marginal variances.
    """
    if not blocks:
        raise ValueError("leave_blocks_out_predictive needs at least one block")
    P, alpha = _precision(K, y)
    idx, mus, variances = [], [], []
    for block in blocks:
        block = torch.as_tensor(block, dtype=torch.long, device=K.device)
        if block.numel() == 0:
            continue
        cov = torch.linalg.inv(P[block][:, block])
        idx.append(block)
        mus.append(y[block] - cov @ alpha[block])
        variances.append(torch.diagonal(cov))
    return torch.cat(idx), torch.cat(mus), torch.cat(variances)


def lbo_crps(K: Tensor, y: Tensor, blocks: Sequence[Tensor]) -> Tensor:
    """Mean CRPS of the leave-block-out Gaussians over the blocks' points (lower is better).

    With one-point blocks this is :func:`loo_crps` on those points.

    Example:
        >>> K = torch.eye(4, dtype=torch.float64) * 2
        >>> y = torch.zeros(4, dtype=torch.float64)
        >>> bool(torch.isclose(lbo_crps(K, y, [torch.tensor([2, 3])]), loo_crps(K, y)))
        True
    """
    idx, mu, var = leave_blocks_out_predictive(K, y, blocks)
    return gaussian_crps(mu, var.clamp_min(1e-12).sqrt(), y[idx]).mean()


def log_marginal_likelihood(K: Tensor, y: Tensor) -> Tensor:
    """Exact Gaussian log marginal likelihood log N(y; 0, K)."""
    _check(K, y)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y.unsqueeze(-1), L).squeeze(-1)
    n = y.shape[-1]
    return -0.5 * (y @ alpha) - torch.log(torch.diagonal(L)).sum() - 0.5 * n * math.log(2 * math.pi)


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


def _precision(K: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """``(K^-1, K^-1 y)`` through a Cholesky factor (shapes checked)."""
    _check(K, y)
    L = torch.linalg.cholesky(K)
    eye = torch.eye(K.shape[-1], dtype=K.dtype, device=K.device)
    K_inv = torch.cholesky_solve(eye, L)
    return K_inv, K_inv @ y


def _check(K: Tensor, y: Tensor) -> None:
    if K.dim() != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"K must be a square n x n matrix, got shape {tuple(K.shape)}")
    if y.dim() != 1 or y.shape[0] != K.shape[0]:
        raise ValueError(f"y must have shape ({K.shape[0]},), got {tuple(y.shape)}")
