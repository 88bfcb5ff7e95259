"""The cheap default's non-inferiority rule on the tuning seeds (issue 51).

``benchmarks/results/cost/PROTOCOL.md`` fixes the rule before any run it governs: for each
problem p, with d(v, p) the mean over the tuning seeds 0-9 of the paired difference of the
best value found (variant v minus stock ``ax_default``, positive where v is better) and
sd(p) the standard deviation of stock ``ax_default``'s best values over those seeds,

    candidate c is non-inferior on p  iff  d(c, p) >= d(saas_full, p) - 0.25 * sd(p).

A candidate that ran on fewer than the ten seeds of a problem cannot pass. This module
computes the rule's numbers from the committed result files and writes the report
(``python -m ax_kernel_discovery.study.cost_rule``: ``benchmarks/results/cost/REPORT.md``
and ``summary.json`` beside it). The cost half of the rule (``nox -s user_pays``) is
reported by that benchmark's own output.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ax_kernel_discovery.runner.report import format_value, load_results
from ax_kernel_discovery.study.protocol import COST_CANDIDATES, HOLDOUT
from ax_kernel_discovery.study.statistics import format_p, paired_comparison

__all__ = ["MARGIN_SD", "REFERENCES", "cost_summary", "cost_markdown", "write_report"]

COST_OUT = Path("benchmarks/results/cost")
"""The cost protocol's folder (``PROTOCOL.md``, ``tuning/<candidate>/``)."""

MARGIN_SD = 0.25
"""The non-inferiority margin, in standard deviations of ``ax_default``'s best values."""

TUNING_SEEDS: tuple[int, ...] = tuple(range(10))

REFERENCES: dict[str, str] = {
    "ax_default": "holdout/tuning",
    "saas_full": "holdout3/tuning/saas_full",
    "preq_fixed": "holdout/tuning/preq_fixed",
}
"""The committed reference runs (folders under ``benchmarks/results``), not rerun."""


def _bests(runs: Sequence[Mapping[str, Any]], problem: str, method: str) -> dict[int, float]:
    return {
        int(r["seed"]): float(r["best_value"])
        for r in runs
        if r["problem"] == problem
        and r["method"] == method
        and r.get("status") == "complete"
        and int(r["seed"]) in TUNING_SEEDS
    }


def _load(folder: Path) -> list[dict[str, Any]]:
    try:
        return load_results(folder)
    except FileNotFoundError:  # no folder, or no complete run in it yet
        return []


def cost_summary(results: str | Path = "benchmarks/results") -> dict[str, Any]:
    """The rule's numbers per problem for every candidate and reference.

    Returns:
        A dict with ``problems`` (per problem: ``sd``, ``minimize``, ``bar`` and
        ``variants``, each a :func:`~.statistics.paired_comparison` against
        ``ax_default`` plus, for a candidate, ``margin_ok``: the rule on that problem,
        ``None`` without ten seeds) and ``candidates`` (per candidate: ``complete``,
        ``passes``, ``fields`` and ``short_by``, how far below the bar its d is on each
        problem, 0 where it clears it).
    """
    root = Path(results)
    axd = [r for r in _load(root / REFERENCES["ax_default"]) if r["method"] == "ax_default"]
    runs = {
        v: [r for r in _load(root / folder) if r["method"] == "kd"]
        for v, folder in REFERENCES.items()
        if v != "ax_default"
    }
    for name in COST_CANDIDATES:
        runs[name] = [r for r in _load(root / "cost" / "tuning" / name) if r["method"] == "kd"]
    problems: dict[str, Any] = {}
    candidates: dict[str, Any] = {
        c: {"complete": True, "passes": None, "short_by": {}, "fields": COST_CANDIDATES[c]}
        for c in COST_CANDIDATES
    }
    for p in HOLDOUT.problems:
        base = _bests(axd, p, "ax_default")
        minimize = next((r["direction"] == "minimize" for r in axd if r["problem"] == p), True)
        sd = float(np.std(list(base.values()), ddof=1)) if len(base) >= 2 else math.nan
        rows: dict[str, Any] = {}
        for v, vr in runs.items():
            cmp = paired_comparison(_bests(vr, p, "kd"), base, minimize)
            rows[v] = cmp
        bar = None
        ref = rows.get("saas_full")
        if ref and ref["n"] == len(TUNING_SEEDS) and math.isfinite(sd):
            bar = ref["mean_diff"] - MARGIN_SD * sd
        for c in COST_CANDIDATES:
            cmp = rows[c]
            full = cmp["n"] == len(TUNING_SEEDS) and bar is not None
            cmp["margin_ok"] = (cmp["mean_diff"] >= bar) if full else None
            if not full:
                candidates[c]["complete"] = False
            elif cmp["mean_diff"] is not None:
                candidates[c]["short_by"][p] = max(0.0, bar - cmp["mean_diff"])
        problems[p] = {"sd": sd, "minimize": minimize, "bar": bar, "variants": rows}
    for c, info in candidates.items():
        if info["complete"]:
            info["passes"] = all(problems[p]["variants"][c]["margin_ok"] for p in problems)
    return {"problems": problems, "candidates": candidates, "margin_sd": MARGIN_SD}


def cost_markdown(summary: Mapping[str, Any]) -> str:
    """The report: every candidate beside ``saas_full`` and ``preq_fixed``, losers included."""
    lines = [
        "# The cheap default: non-inferiority on the tuning seeds",
        "",
        "Generated by `python -m ax_kernel_discovery.study.cost_rule` from the committed "
        "result files; the rule is `PROTOCOL.md`'s: on every problem, d(candidate) >= "
        f"d(saas_full) - {summary['margin_sd']} sd(ax_default), each on tuning seeds 0-9, d the "
        "mean paired difference to stock `ax_default` (positive: better). A candidate with "
        "fewer than ten seeds on a problem cannot pass; the cost half of the rule is "
        "`nox -s user_pays`'s output.",
        "",
        "| problem | variant | seeds | W/T/L vs ax_default | d [95% t-interval] | sign p | bar | "
        "non-inferior |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p, info in summary["problems"].items():
        bar = info["bar"]
        for v, c in info["variants"].items():
            ci = c["ci"]
            d = "—" if c["mean_diff"] is None else format_value(c["mean_diff"])
            interval = f" [{format_value(ci[0])}, {format_value(ci[1])}]" if ci else ""
            ok = c.get("margin_ok")
            verdict = (
                "reference"
                if v in ("saas_full", "preq_fixed")
                else (f"incomplete ({c['n']}/10 seeds)" if ok is None else ("yes" if ok else "no"))
            )
            lines.append(
                f"| {p} | {v} | {c['n']} | {c['wins']}/{c['ties']}/{c['losses']} | {d}{interval} "
                f"| {format_p(c['p_sign'])} | {'—' if bar is None else format_value(bar)} "
                f"| {verdict} |"
            )
    lines += ["", "## Candidates", ""]
    for c, info in summary["candidates"].items():
        fields = json.dumps(info["fields"], sort_keys=True)
        if not info["complete"]:
            state = "not complete: no verdict yet"
        elif info["passes"]:
            state = "non-inferior on all four problems"
        else:
            short = ", ".join(
                f"{p} by {format_value(x)}" for p, x in info["short_by"].items() if x > 0
            )
            state = f"fails the rule: short on {short}"
        lines.append(f"- `{c}` (`{fields}`): {state}.")
    return "\n".join(lines) + "\n"


def write_report(results: str | Path = "benchmarks/results") -> Path:
    """Write ``cost/REPORT.md`` and ``cost/summary.json`` under ``results``."""
    summary = cost_summary(results)
    out = Path(results) / "cost"
    (out / "REPORT.md").write_text(cost_markdown(summary))
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return out / "REPORT.md"


if __name__ == "__main__":  # pragma: no cover - a command
    print(write_report(*sys.argv[1:2]))
