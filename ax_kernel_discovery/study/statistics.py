"""Paired statistics of the quality study: kd against a baseline, seed by seed.

:func:`paired_comparison` counts wins, ties and losses, gives the mean paired difference
with its paired t-interval, and runs two exact tests that need no distributional
assumption: the sign test (binomial, ties left out) and the sign-flip permutation test of
the mean difference (all :math:`2^n` sign patterns). With 5 seeds the smallest two-sided
p-value either can reach is :math:`2/32 = 0.0625`, so 5 pairs can show a consistent
direction (5/5 seeds) but never significance at 5%: say "5/5 seeds", not "significant".

A percentile bootstrap of so few pairs under-covers (83% for a nominal 95% with 5 pairs
in simulation, see :func:`bootstrap_coverage`), and with 2 pairs its interval is just the
range of the two differences: it is not used.

:func:`standard_error` and :func:`spearman` are the small statistics the study report and
its diagnostics use. The report (:mod:`ax_kernel_discovery.study.report`) re-exports them.

Paired differences are signed so that a positive value means ``kd`` found the better
value (lower for minimization, higher for maximization).

Example:
    >>> paired_comparison({0: 1.0, 1: 2.0, 2: 3.0}, {0: 2.0, 1: 2.0, 2: 4.0}, minimize=True)[
    ...     "wins"
    ... ]
    2
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

TIE_TOLERANCE = 1e-9
"""Relative difference under which two best values count as a tie."""


def format_p(p: float | None) -> str:
    """A p-value for a table: three decimals, or two significant digits below 0.001 (so
    that 15 of 15 seeds, p = 6.1e-05, does not read as p = 0).

    Example:
        >>> format_p(0.0625), format_p(2 / 2**15), format_p(None)
        ('0.062', '6.1e-05', '–')
    """
    if p is None:
        return "–"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def paired_comparison(
    kd: Mapping[int, float],
    baseline: Mapping[int, float],
    minimize: bool,
    level: float = 0.95,
) -> dict[str, Any]:
    """``kd`` against one baseline on the seeds both have.

    Returns:
        ``n``, ``seeds``, ``wins``/``ties``/``losses`` of ``kd``, the per-seed ``diffs``
        (positive: ``kd`` better; a tie is 0), ``mean_diff``, its paired t-interval ``ci``
        at ``level`` (``None`` for fewer than two seeds), the exact two-sided sign-test
        ``p_sign`` (ties left out) and the exact two-sided sign-flip permutation ``p_perm``
        of the mean difference (both ``None`` when no difference is non-zero).
    """
    seeds = sorted(set(kd) & set(baseline))
    sign = -1.0 if minimize else 1.0
    diff = np.array([sign * (kd[s] - baseline[s]) for s in seeds], dtype=float)
    scale = np.maximum(np.abs([kd[s] for s in seeds]), np.abs([baseline[s] for s in seeds]))
    tie = np.abs(diff) <= TIE_TOLERANCE * np.maximum(scale, 1.0)
    diff = np.where(tie, 0.0, diff)
    wins, losses = int(((diff > 0) & ~tie).sum()), int(((diff < 0) & ~tie).sum())
    out: dict[str, Any] = {
        "n": len(seeds),
        "seeds": seeds,
        "wins": wins,
        "ties": int(tie.sum()),
        "losses": losses,
        "diffs": diff.tolist(),
        "mean_diff": float(diff.mean()) if len(diff) else None,
        "ci": paired_t_interval(diff, level) if len(diff) >= 2 else None,
        "p_sign": sign_test(wins, losses) if wins + losses else None,
        "p_perm": permutation_test(diff) if (~tie).any() else None,
    }
    return out


def paired_t_interval(diff: Sequence[float] | np.ndarray, level: float = 0.95) -> list[float]:
    """Student-t interval of the mean of paired differences (``n - 1`` degrees of freedom).

    Example:
        >>> [round(v, 3) for v in paired_t_interval([1.0, 2.0, 3.0])]
        [-0.484, 4.484]
    """
    from scipy.stats import t

    d = np.asarray(diff, dtype=float)
    if d.size < 2:
        raise ValueError("a t-interval needs at least two differences")
    half = float(t.ppf(0.5 + level / 2, d.size - 1)) * float(d.std(ddof=1)) / math.sqrt(d.size)
    return [float(d.mean()) - half, float(d.mean()) + half]


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test: P(a split at least this uneven | no difference).

    Example:
        >>> sign_test(5, 0)
        0.0625
    """
    from scipy.stats import binomtest

    return float(binomtest(wins, wins + losses, 0.5).pvalue)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (valid under any dependence).

    The :math:`k`-th smallest of the :math:`m` p-values becomes
    :math:`\\max_{j \\le k} \\min(1, (m - j + 1)\\, p_{(j)})`; ``None`` (no test) stays
    ``None`` and does not count in :math:`m`.

    Example:
        >>> [round(p, 3) for p in holm([0.01, 0.04, 0.03, 0.2])]
        [0.04, 0.09, 0.09, 0.2]
    """
    tested = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * p))
        out[i] = running
    return out


def permutation_test(diff: Sequence[float] | np.ndarray) -> float:
    """Exact two-sided sign-flip permutation test of the mean paired difference.

    Under "no difference" each pair's sign is equally likely to be flipped; the p-value
    is the share of the :math:`2^n` sign patterns whose mean is at least as far from 0 as
    the observed one. Up to 20 pairs the patterns are enumerated; up to 40 they are
    counted exactly by meeting in the middle: the :math:`2^{n/2}` signed sums of each half,
    one half sorted, and for each sum of the other the number of partners that reach the
    observed distance from 0.

    Example:
        >>> permutation_test([1.0, 2.0, 3.0, 4.0, 5.0])
        0.0625
    """
    d = np.asarray(diff, dtype=float)
    if d.size > 40:
        raise ValueError(
            f"the exact permutation test counts 2^n sign patterns: n <= 40, got {d.size}"
        )
    observed = abs(float(d.sum()))
    threshold = observed - 1e-12 * max(1.0, observed)
    if d.size <= 20:
        return float(np.mean(np.abs(_signed_sums(d)) >= threshold))
    half = d.size // 2
    left, right = _signed_sums(d[:half]), np.sort(_signed_sums(d[half:]))
    # |l + r| >= t  <=>  r >= t - l  or  r <= -t - l
    upper = right.size - np.searchsorted(right, threshold - left, side="left")
    lower = np.searchsorted(right, -threshold - left, side="right")
    count = int(np.sum(upper + lower)) if threshold > 0 else left.size * right.size
    return count / 2.0**d.size


def _signed_sums(d: np.ndarray) -> np.ndarray:
    """The :math:`2^n` sums of ``d`` under every sign pattern."""
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
    return signs @ d


def bootstrap_coverage(
    n_pairs: int = 5, level: float = 0.95, trials: int = 2000, n_boot: int = 2000, seed: int = 0
) -> dict[str, float]:
    """Simulated coverage of the percentile bootstrap and of the t-interval on ``n_pairs``
    normal differences (why the report uses the t-interval: the bootstrap under-covers).
    """
    rng = np.random.default_rng(seed)
    hits_boot = hits_t = 0
    for _ in range(trials):
        d = rng.normal(0.0, 1.0, n_pairs)
        boot = d[rng.integers(0, n_pairs, size=(n_boot, n_pairs))].mean(axis=1)
        lo, hi = np.percentile(boot, [50 * (1 - level), 50 * (1 + level)])
        hits_boot += lo <= 0.0 <= hi
        t_lo, t_hi = paired_t_interval(d, level)
        hits_t += t_lo <= 0.0 <= t_hi
    return {"bootstrap": hits_boot / trials, "t": hits_t / trials}


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman rank correlation (``None`` for fewer than 3 pairs or a constant side)."""
    from scipy.stats import spearmanr

    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(spearmanr(a, b).statistic)


def standard_error(values: Sequence[float]) -> float:
    """Standard error of the mean (0 for one value)."""
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else 0.0


def best_at_evaluation(
    results: Sequence[dict[str, Any]], problem: str, method: str, evaluations: int
) -> dict[int, float]:
    """Best value so far after ``evaluations`` evaluations, by seed (runs that got there)."""
    out = {}
    for r in results:
        if r["problem"] != problem or r["method"] != method:
            continue
        best = r.get("best_so_far") or []
        if len(best) >= evaluations and best[evaluations - 1] is not None:
            out[int(r["seed"])] = float(best[evaluations - 1])
    return out


def checkpoint_comparison(
    runs: Sequence[dict[str, Any]],
    reference: Sequence[dict[str, Any]],
    problem: str,
    method: str,
    reference_method: str,
    minimize: bool,
    checkpoints: Sequence[int],
) -> list[dict[str, Any]]:
    """``method`` (in ``runs``) against ``reference_method`` (in ``reference``), checkpoint by
    checkpoint: each side's mean ± SE best-so-far on the seeds both have reached it, and
    the paired comparison by seed."""
    rows = []
    for e in checkpoints:
        a = best_at_evaluation(runs, problem, method, e)
        b = best_at_evaluation(reference, problem, reference_method, e)
        common = sorted(set(a) & set(b))
        if not common:
            continue
        a, b = {s: a[s] for s in common}, {s: b[s] for s in common}
        rows.append(
            {
                "evaluations": e,
                "mean": float(np.mean(list(a.values()))),
                "se": standard_error(list(a.values())),
                "reference_mean": float(np.mean(list(b.values()))),
                "reference_se": standard_error(list(b.values())),
                "paired": paired_comparison(a, b, minimize),
            }
        )
    return rows


__all__ = [
    "TIE_TOLERANCE",
    "best_at_evaluation",
    "bootstrap_coverage",
    "checkpoint_comparison",
    "format_p",
    "holm",
    "paired_comparison",
    "paired_t_interval",
    "permutation_test",
    "sign_test",
    "spearman",
    "standard_error",
]
