"""Paired statistics of the quality study: kd against a baseline, seed by seed.

:func:`paired_comparison` counts wins, ties and losses, bootstraps the mean paired
difference and runs the Wilcoxon signed-rank test; :func:`standard_error` and
:func:`spearman` are the small statistics the study report and its diagnostics use. The
report (:mod:`ax_kernel_discovery.study_report`) re-exports them.

Paired differences are signed so that a positive value means ``kd`` found the better
value (lower for minimization, higher for maximization).

Example:
    >>> paired_comparison({0: 1.0, 1: 2.0, 2: 3.0}, {0: 2.0, 1: 2.0, 2: 4.0}, minimize=True)[
    ...     "wins"
    ... ]
    2
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

TIE_TOLERANCE = 1e-9
"""Relative difference under which two best values count as a tie."""


def paired_comparison(
    kd: Mapping[int, float],
    baseline: Mapping[int, float],
    minimize: bool,
    n_boot: int = 10_000,
    seed: int = 0,
) -> dict[str, Any]:
    """``kd`` against one baseline on the seeds both have.

    Returns:
        ``n``, ``wins``/``ties``/``losses`` of ``kd``, ``mean_diff`` (positive: ``kd``
        better), its bootstrap 95% interval ``ci`` (percentile, ``n_boot`` resamples of
        the seeds) and the two-sided Wilcoxon signed-rank ``p_value`` (``None`` when every
        difference is zero or there are fewer than two seeds).
    """
    from scipy.stats import wilcoxon

    seeds = sorted(set(kd) & set(baseline))
    sign = -1.0 if minimize else 1.0
    diff = np.array([sign * (kd[s] - baseline[s]) for s in seeds], dtype=float)
    scale = np.maximum(np.abs([kd[s] for s in seeds]), np.abs([baseline[s] for s in seeds]))
    tie = np.abs(diff) <= TIE_TOLERANCE * np.maximum(scale, 1.0)
    out: dict[str, Any] = {
        "n": len(seeds),
        "seeds": seeds,
        "wins": int(((diff > 0) & ~tie).sum()),
        "ties": int(tie.sum()),
        "losses": int(((diff < 0) & ~tie).sum()),
        "mean_diff": float(diff.mean()) if len(diff) else None,
        "ci": None,
        "p_value": None,
    }
    if len(diff) >= 2:
        rng = np.random.default_rng(seed)
        boot = diff[rng.integers(0, len(diff), size=(n_boot, len(diff)))].mean(axis=1)
        out["ci"] = [float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))]
        if (~tie).any():
            out["p_value"] = float(wilcoxon(np.where(tie, 0.0, diff), zero_method="zsplit").pvalue)
    return out


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman rank correlation (``None`` for fewer than 3 pairs or a constant side)."""
    from scipy.stats import spearmanr

    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(spearmanr(a, b).statistic)


def standard_error(values: Sequence[float]) -> float:
    """Standard error of the mean (0 for one value)."""
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else 0.0


__all__ = ["TIE_TOLERANCE", "paired_comparison", "spearman", "standard_error"]
