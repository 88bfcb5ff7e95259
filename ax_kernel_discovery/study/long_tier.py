"""The lead at 400 evaluations (issue 50 item 4): kd's default against stock Ax, by seed.

``benchmarks/results/long400b/PROTOCOL.md`` fixes the runs before any of them: fresh
seeds 6000-6009, 400 evaluations, 20 Sobol points and joint batches of q = 20, kd's
default against stock ``ax_default``. This module reads the folder's complete result
files and writes what the protocol reports (``python -m
ax_kernel_discovery.study.long_tier``): ``REPORT.md`` and ``summary.json`` beside the runs
and one learning-curve PNG per problem under ``img/`` (drawn from the seeds both methods
have completed).

For each problem and each of :data:`EVALUATIONS`, the best value found within that many
evaluations is paired by seed over the seeds whose runs are complete for both methods
(:func:`~ax_kernel_discovery.study.statistics.paired_comparison`: wins, ties and losses
of kd, the mean difference with its 95% t-interval, the exact sign and sign-flip
permutation p-values; positive differences mean kd found the better value). A run still
under way counts nowhere, so a table never mixes finished and unfinished seeds.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ax_kernel_discovery.runner.report import format_value, load_results, plot_curves
from ax_kernel_discovery.study.resumes import resumed_runs
from ax_kernel_discovery.study.statistics import checkpoint_comparison, format_p

__all__ = [
    "EVALUATIONS",
    "LONG_TIER",
    "complete_runs",
    "long_tier_markdown",
    "long_tier_summary",
    "write_report",
]

LONG_TIER = "long400b"
"""The tier's folder under ``benchmarks/results``."""

EVALUATIONS: tuple[int, ...] = (170, 250, 400)
"""The evaluation counts at which the protocol compares the best values found."""

METHODS: tuple[str, str] = ("kd", "ax_default")
"""kd's default, then its baseline (stock Ax, ``Client()`` with no plugin)."""


def complete_runs(folder: str | Path) -> list[dict[str, Any]]:
    """``folder``'s complete runs of kd and ``ax_default`` (none when it has no result)."""
    try:
        return [r for r in load_results(folder) if r["method"] in METHODS]
    except FileNotFoundError:
        return []


def long_tier_summary(
    folder: str | Path, runs: Sequence[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The paired comparison per problem and evaluation count, from ``folder``'s runs.

    Args:
        folder: The tier's folder of result files.
        runs: Its :func:`complete_runs`, when the caller has loaded them already.

    Returns:
        Per problem (in the order the runs were first found): ``label``, ``direction``,
        ``budget``, ``batch``, ``num_sobol``, ``complete`` (the complete seeds of each
        method), ``paired_seeds`` (those complete for both), ``commits`` (the code each
        method's runs were made from), ``wall_time`` (mean seconds per run, each method),
        ``resumed`` (the number of resumed runs) and ``at`` (per evaluation count: the
        rows of :func:`~ax_kernel_discovery.study.statistics.checkpoint_comparison`: the
        evaluation count, kd's ``mean`` and ``ax_default``'s ``reference_mean`` with their
        standard errors, and the paired comparison). Empty when no run is complete.
    """
    root = Path(folder)
    runs = complete_runs(root) if runs is None else runs
    if not runs:
        return {}
    resumed = resumed_runs(root)
    out: dict[str, Any] = {}
    for problem in dict.fromkeys(r["problem"] for r in runs):
        mine = {
            m: [r for r in runs if r["problem"] == problem and r["method"] == m] for m in METHODS
        }
        first = next(r for m in METHODS for r in mine[m])
        minimize = first["direction"] == "minimize"
        by_seed = {m: {int(r["seed"]): r for r in mine[m]} for m in METHODS}
        paired = sorted(set(by_seed["kd"]) & set(by_seed["ax_default"]))
        out[problem] = {
            "label": first.get("problem_label", problem),
            "direction": first["direction"],
            "budget": max(int(r["budget"]) for m in METHODS for r in mine[m]),
            "batch": first.get("batch"),
            "num_sobol": first.get("num_sobol"),
            "complete": {m: sorted(by_seed[m]) for m in METHODS},
            "paired_seeds": paired,
            "commits": {
                m: sorted({(r.get("code") or {}).get("commit") or "unknown" for r in mine[m]})
                for m in METHODS
            },
            "wall_time": {
                m: (float(np.mean([r["wall_time"] for r in mine[m]])) if mine[m] else None)
                for m in METHODS
            },
            "resumed": sum(1 for r in resumed if r["run"].startswith(f"{problem} ")),
            "at": checkpoint_comparison(
                runs, runs, problem, "kd", "ax_default", minimize, EVALUATIONS
            ),
        }
    return out


def long_tier_markdown(
    summary: Mapping[str, Any], shown: str | Path = f"benchmarks/results/{LONG_TIER}"
) -> str:
    """The report: one table of every problem and evaluation count, then the curves."""
    lines = [
        "# The lead at 400 evaluations: kd's default against stock Ax",
        "",
        "Generated by `python -m ax_kernel_discovery.study.long_tier` from the complete result "
        f"files in `{shown}` (the protocol: `PROTOCOL.md`). Best value found within 170, 250 "
        "and 400 evaluations, paired by seed over the seeds complete for both methods; Δ is "
        "kd minus stock `ax_default`, signed so that positive means kd found the better "
        "value, with its 95% paired t-interval; p: exact two-sided sign test / sign-flip "
        "permutation test. A run still under way is left out.",
        "",
    ]
    if not summary:
        return "\n".join(lines + ["No run is complete yet.", ""])
    lines += [
        "| problem | evaluations | seeds | kd mean | ax_default mean | W/T/L (kd) | "
        "Δ [95% t-interval] | p sign / perm |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for problem, info in summary.items():
        for row in info["at"]:
            c = row["paired"]
            ci = c["ci"]
            interval = f" [{format_value(ci[0])}, {format_value(ci[1])}]" if ci else ""
            lines.append(
                f"| {problem} | {row['evaluations']} | {c['n']} | {format_value(row['mean'])} | "
                f"{format_value(row['reference_mean'])} | "
                f"{c['wins']}/{c['ties']}/{c['losses']} | {format_value(c['mean_diff'])}"
                f"{interval} | {format_p(c['p_sign'])} / {format_p(c['p_perm'])} |"
            )
    lines += ["", "## Runs", ""]
    for problem, info in summary.items():
        seeds = {m: ", ".join(str(s) for s in info["complete"][m]) or "none" for m in METHODS}
        wall = {m: format_value(info["wall_time"][m]) for m in METHODS}
        commits = {m: ", ".join(c[:7] for c in info["commits"][m]) or "none" for m in METHODS}
        lines.append(
            f"- {problem} ({info['direction']}; {info['budget']} evaluations, q = "
            f"{info['batch']}, {info['num_sobol']} Sobol points): kd complete on seeds "
            f"{seeds['kd']} (code {commits['kd']}; {wall['kd']} s per run on average), "
            f"`ax_default` on {seeds['ax_default']} (code {commits['ax_default']}; "
            f"{wall['ax_default']} s per run); {info['resumed']} resumed runs "
            "(`RUNS.md` lists them)."
        )
    lines += ["", "## Learning curves", ""]
    lines += [
        f"![{p}](img/curves_{p}.png)"
        if info["paired_seeds"]
        else f"{p}: no seed is complete for both methods yet, so no curves."
        for p, info in summary.items()
    ]
    return "\n".join(lines) + "\n"


def write_report(results: str | Path = "benchmarks/results", tier: str = LONG_TIER) -> Path:
    """Write ``<tier>/REPORT.md``, ``<tier>/summary.json`` and ``<tier>/img/curves_*.png``
    under ``results`` (the curves from the paired seeds' complete runs only, so that both
    lines stand on the same seeds; none for a problem with no paired seed yet)."""
    folder = Path(results) / tier
    complete = complete_runs(folder)
    summary = long_tier_summary(folder, complete)
    for problem, info in summary.items():
        if not info["paired_seeds"]:
            continue  # a curve of one method alone would not be a comparison
        runs = [
            r
            for r in complete
            if r["problem"] == problem and int(r["seed"]) in info["paired_seeds"]
        ]
        plot_curves(runs, problem, list(METHODS), folder / "img" / f"curves_{problem}.png")
    (folder / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    (folder / "REPORT.md").write_text(long_tier_markdown(summary, f"benchmarks/results/{tier}"))
    return folder / "REPORT.md"


if __name__ == "__main__":  # pragma: no cover - a command
    print(write_report(*sys.argv[1:2]))
