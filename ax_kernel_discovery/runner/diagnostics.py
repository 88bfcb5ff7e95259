"""Why kernels work: the paper's search diagnostics and selection diagnostics per BO round.

Search behaviour (the paper's "understanding" analyses), computed from the queried points
in the unit cube (each input scaled by the problem's bounds):

* **boundary hit ratio** of a batch: the share of its coordinates within ``tol`` of a
  bound, :math:`\\frac{1}{qD}\\sum_{i,j} [x_{ij} \\le tol \\lor x_{ij} \\ge 1 - tol]`;
* **observation travelling-salesman distance** (OTSD): the length of the path through
  the queried points in query order, :math:`\\sum_t \\lVert x_{t} - x_{t-1} \\rVert_2`.
  :func:`path_length` gives a batch's increment (from the previous query on), the report
  sums the increments into the curve over iterations.

Selection diagnostics ask whether the criterion picks the kernel that predicts best
where BO goes next: :func:`next_batch_scores` scores each member's fitted GP (its
posterior at the round's data) on the batch that the round's acquisition chose, once it
is evaluated: mean Gaussian CRPS and mean log predictive density (observation noise
included), both in the model's standardized units, which are the same for every member,
so rankings across members are meaningful.

Example:
    >>> import numpy as np
    >>> boundary_hit_ratio(np.array([[0.0, 0.5], [1.0, 1.0]]))
    0.75
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ax_kernel_discovery.selection import gaussian_crps

BOUNDARY_TOL = 1e-4
"""Distance to a bound (in the unit cube) under which a coordinate counts as at the bound."""


def to_unit_cube(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``X`` scaled into :math:`[0, 1]^D` by the bounds."""
    return (np.asarray(X, dtype=float) - lower) / np.where(upper > lower, upper - lower, 1.0)


def boundary_hit_ratio(U: np.ndarray, tol: float = BOUNDARY_TOL) -> float:
    """Share of the coordinates of the unit-cube points ``U`` (n x D) at a bound."""
    U = np.asarray(U, dtype=float)
    if U.size == 0:
        return math.nan
    return float(np.mean((U <= tol) | (U >= 1.0 - tol)))


def path_length(U: np.ndarray, previous: np.ndarray | None = None) -> float:
    """Length of the path through the rows of ``U`` in order, starting at ``previous``."""
    U = np.asarray(U, dtype=float)
    if previous is not None:
        U = np.vstack([np.asarray(previous, dtype=float).reshape(1, -1), U])
    if len(U) < 2:
        return 0.0
    return float(np.linalg.norm(np.diff(U, axis=0), axis=1).sum())


def target_map(raw: Sequence[float], targets: Sequence[float]) -> Any | None:
    """The map from raw objective values to a model's training targets, or ``None``.

    Ax transforms the objective before BoTorch sees it (winsorization of the bad tail,
    then standardization): a monotone map, affine except where values were clipped. It
    is recovered by pairing the sorted raw values with the sorted targets, fitting the
    affine part on the unclipped pairs and clipping on the side that Ax clipped. Returns
    ``None`` when the pairing does not hold (different counts, or no affine fit).
    """
    r = np.sort(np.asarray(raw, dtype=float))
    t = np.sort(np.asarray(targets, dtype=float))
    if len(r) != len(t) or len(r) < 3 or np.ptp(r) == 0:
        return None
    lo_clip = np.isclose(t, t[0], rtol=0, atol=1e-9)
    hi_clip = np.isclose(t, t[-1], rtol=0, atol=1e-9)
    keep = np.ones(len(t), dtype=bool)
    lo, hi = -math.inf, math.inf
    if lo_clip.sum() > 1 and np.ptp(r[lo_clip]) > 0:
        keep &= ~lo_clip
        lo = float(t[0])
    if hi_clip.sum() > 1 and np.ptp(r[hi_clip]) > 0:
        keep &= ~hi_clip
        hi = float(t[-1])
    if keep.sum() < 2 or np.ptp(r[keep]) == 0:
        return None
    a, b = np.polyfit(r[keep], t[keep], 1)
    if a <= 0 or np.max(np.abs(a * r[keep] + b - t[keep])) > 1e-6 * max(1.0, np.ptp(t)):
        return None

    def forward(y: np.ndarray) -> np.ndarray:
        return np.clip(a * np.asarray(y, dtype=float) + b, lo, hi)

    return forward


def next_batch_scores(
    models: Mapping[str, Any],
    X_new: np.ndarray,
    y_new: Sequence[float | None],
    y_train: Sequence[float | None],
) -> dict[str, dict[str, float]]:
    """Each fitted model's mean CRPS and log predictive density on the next batch.

    Args:
        models: Fitted BoTorch models by kernel name (trained on the round's data).
        X_new: The batch's inputs in the search space's own units (q x D).
        y_new: The batch's raw values (``None`` for failed evaluations).
        y_train: The raw values the models were trained on (any order).

    Returns:
        ``{name: {"crps": ..., "log_lik": ...}}`` for every model that could be scored
        (lower CRPS, higher log-likelihood is better); empty when the transform from raw
        values to the models' targets cannot be recovered.
    """
    import torch

    mask = np.array([v is not None and math.isfinite(v) for v in y_new], dtype=bool)
    train = [float(v) for v in y_train if v is not None and math.isfinite(v)]
    if not mask.any() or not models:
        return {}
    out: dict[str, dict[str, float]] = {}
    for name, model in models.items():
        try:
            forward = target_map(train, model.train_targets.detach().cpu().reshape(-1).tolist())
            if forward is None:
                continue
            ref = next(model.parameters())
            X = torch.as_tensor(np.asarray(X_new, dtype=float)[mask], dtype=ref.dtype)
            y = torch.as_tensor(
                forward(np.array([v for v, m in zip(y_new, mask, strict=True) if m])),
                dtype=ref.dtype,
            )
            with torch.no_grad():
                post = model.posterior(X.to(ref.device), observation_noise=True)
                mean = post.mean.reshape(-1).cpu()
                std = post.variance.reshape(-1).clamp_min(1e-12).sqrt().cpu()
            crps = gaussian_crps(mean, std, y).mean()
            log_lik = torch.distributions.Normal(mean, std).log_prob(y).mean()
            if math.isfinite(float(crps)) and math.isfinite(float(log_lik)):
                out[name] = {"crps": float(crps), "log_lik": float(log_lik)}
        except Exception:  # noqa: BLE001 - diagnostics never break a run
            continue
    return out
