"""The quality study's report: tables, paired statistics and the paper's analyses.

:func:`write_study_report` reads the study's committed result files
(:mod:`ax_kernel_discovery.study`) and writes

* a Markdown report (``docs/results.md`` in the repository) with, per problem and method,
  the mean ± standard error of the best value found, the average rank, ``kd`` against
  each baseline paired by seed (wins/ties/losses, the mean paired difference with its
  paired t-interval, exact sign and permutation tests), learning curves, the
  search diagnostics (boundary hit ratio, OTSD), ``kd``'s chosen-kernel timeline and
  Gram diversity, the selection diagnostics (does the criterion pick the kernel that
  predicts the next batch best?) and every ``kd`` variant against the default;
* ``summary.json`` beside the result files: the same numbers, machine-readable.

Paired differences are signed so that a positive value means ``kd`` found the better
value (lower for minimization, higher for maximization).

The pieces live in focused modules, re-exported here: the paired statistics in
:mod:`ax_kernel_discovery.study.statistics`, the search and selection diagnostics in
:mod:`ax_kernel_discovery.study.diagnostics` and the Markdown in
:mod:`ax_kernel_discovery.study.markdown`; this module computes the summary and writes
the files.

Example:
    >>> paired_comparison({0: 1.0, 1: 2.0, 2: 3.0}, {0: 2.0, 1: 2.0, 2: 4.0}, minimize=True)[
    ...     "wins"
    ... ]
    2
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.proposers.cake import CAKE_BASE_KERNELS
from ax_kernel_discovery.runner.report import load_results, plot_curves, rank_table
from ax_kernel_discovery.study.diagnostics import (
    BASE_KERNELS,
    chosen_timeline,
    kernel_family,
    proposal_diagnostics,
    search_diagnostics,
    selection_diagnostics,
)
from ax_kernel_discovery.study.holdout import holdout_markdown, holdout_summary
from ax_kernel_discovery.study.markdown import study_markdown
from ax_kernel_discovery.study.protocol import HOLDOUT_ROUNDS, STUDY, StudyProtocol
from ax_kernel_discovery.study.statistics import (
    TIE_TOLERANCE,
    checkpoint_comparison,
    paired_comparison,
    spearman,
    standard_error,
)


def _by_seed(results: Sequence[dict[str, Any]], problem: str, method: str) -> dict[int, float]:
    return {
        int(r["seed"]): float(r["best_value"])
        for r in results
        if r["problem"] == problem and r["method"] == method and r.get("best_value") is not None
    }


def _paired_by_problem(
    values: Mapping[str, Mapping[int, float]],
    results: Sequence[dict[str, Any]],
    reference_method: str,
    minimize: Mapping[str, bool],
) -> dict[str, Any]:
    """Best values by problem and seed against ``reference_method``'s in ``results``."""
    out = {}
    for p, by_seed in values.items():
        if reference := _by_seed(results, p, reference_method):
            out[p] = paired_comparison(by_seed, reference, minimize.get(p, True))
    return out


def _common_seeds(results: Sequence[dict[str, Any]], problem: str) -> set[int]:
    """The seeds that every method with results on ``problem`` has finished."""
    methods = {r["method"] for r in results if r["problem"] == problem}
    seeds = [set(by) for m in methods if (by := _by_seed(results, problem, m))]
    return set.intersection(*seeds) if seeds else set()


CHECKPOINTS: tuple[int, ...] = (50, 80, 110, 140, 170)
"""Evaluations at which the report compares best-so-far values (Sobol points included)."""

VARIANT_REFERENCE = "preq_fixed"
"""The variant the other variants are paired with: the default they were screened against
(issue 21 until the hold-out study's round 4; its runs were the study's ``kd`` rows until
then). Without it the variants are paired with the study's ``kd`` rows."""

LONG_FOLDER = "long400"
"""Sub-folder of the study holding the longer-budget runs (not a variant)."""

LONG_CHECKPOINTS: tuple[int, ...] = (50, 110, 170, 230, 290, 350, 400)
"""Evaluations at which the longer-budget table compares best-so-far values."""


def round_time(runs: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """Mean seconds per BO round over the runs' rounds: fit (+ selection), acquisition, round."""

    def mean(key: str) -> float | None:
        values = [
            x["timings"][key]
            for r in runs
            for x in r["rounds"]
            if x.get("kind") == "bo" and key in x.get("timings", {})
        ]
        return float(np.mean(values)) if values else None

    return {"fit": mean("fit"), "acquisition": mean("acquisition"), "round": mean("round_wall")}


def long_budget_summary(
    runs: Sequence[dict[str, Any]], checkpoints: Sequence[int] = LONG_CHECKPOINTS
) -> dict[str, Any]:
    """kd against ax_default at a longer budget, per problem, checkpoint by checkpoint."""
    out: dict[str, Any] = {}
    for p in dict.fromkeys(r["problem"] for r in runs):
        mine = [r for r in runs if r["problem"] == p]
        if not {"kd", "ax_default"} <= {r["method"] for r in mine}:
            continue
        minimize = mine[0]["direction"] == "minimize"
        out[p] = {
            "label": mine[0].get("problem_label", p),
            "direction": mine[0]["direction"],
            "budget": max(int(r["budget"]) for r in mine),
            "kd_config": next(
                (r["config"].get("kd_config") for r in mine if r["method"] == "kd"), None
            ),
            "complete": {
                m: sorted(
                    int(r["seed"])
                    for r in mine
                    if r["method"] == m and r.get("status") == "complete"
                )
                for m in ("kd", "ax_default")
            },
            "checkpoints": checkpoint_comparison(
                mine, mine, p, "kd", "ax_default", minimize, checkpoints
            ),
            "round_time": {
                m: round_time([r for r in mine if r["method"] == m]) for m in ("kd", "ax_default")
            },
        }
    return out


def _variant_named(
    kd_config: Mapping[str, Any] | None, variants: Mapping[str, Sequence[dict[str, Any]]]
) -> str:
    """The study variant whose runs had ``kd_config`` (``kd``: the study's default then)."""
    for name, runs in variants.items():
        if runs and all(r["config"].get("kd_config") == kd_config for r in runs):
            return name
    return "kd" if not kd_config else "kd with " + json.dumps(kd_config, sort_keys=True)


def _values_on_seeds(variant: Mapping[int, float], kd: Mapping[int, float]) -> dict[str, Any]:
    """A variant's mean ± SE best value, and the default kd's mean on the same seeds."""
    seeds = sorted(variant)
    shared = [s for s in seeds if s in kd]
    values = [variant[s] for s in seeds]
    return {
        "seeds": seeds,
        "mean": float(np.mean(values)),
        "se": standard_error(values),
        "kd_mean": float(np.mean([kd[s] for s in shared])) if shared else None,
        "kd_seeds": shared,
    }


def run_set_proposals(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """:func:`proposal_diagnostics` of one method's runs on one problem, with its settings."""
    kd_config = runs[0]["config"].get("kd_config") or {}
    asked = kd_config.get(
        "proposals_per_round", KernelDiscoveryConfig.model_fields["proposals_per_round"].default
    )
    start = CAKE_BASE_KERNELS if runs[0]["method"] == "cake" else BASE_KERNELS
    return proposal_diagnostics(runs, int(asked), list(start))


def study_summary(
    results: Sequence[dict[str, Any]],
    variants: Mapping[str, Sequence[dict[str, Any]]] | None = None,
    protocol: StudyProtocol = STUDY,
    reference: str = VARIANT_REFERENCE,
) -> dict[str, Any]:
    """Everything the report shows, as plain data (written as ``summary.json``).

    Args:
        results: The study's runs (every method; ``kd`` rows: runs of today's default).
        variants: The variants' runs by name.
        protocol: The study's protocol.
        reference: The variant the others are paired with (:data:`VARIANT_REFERENCE`);
            the study's ``kd`` rows when ``variants`` has no such variant.
    """
    problems = [p for p in protocol.problems if any(r["problem"] == p for r in results)]
    methods = [m for m in protocol.methods if any(r["method"] == m for r in results)]
    table = rank_table(results, problems, methods)
    # ranks compare methods on the same seeds: those every method of the problem has
    common = {p: _common_seeds(results, p) for p in problems}
    ranked = rank_table(
        [r for r in results if r.get("seed") in common[r["problem"]]], problems, methods
    )
    summary: dict[str, Any] = {
        "protocol": protocol.model_dump(mode="json"),
        "n_runs": len(results),
        "n_planned": len(protocol.problems) * len(protocol.methods) * len(protocol.seeds),
        "average_rank": ranked.average_rank,
        "rank_seeds": {p: sorted(common[p]) for p in problems},
        "problems": {},
        "paired": {},
        "search": {},
        "selection": {},
        "timeline": {},
        "variants": {},
        "variant_reference": reference if reference in (variants or {}) else "kd",
        "proposals": {},
        "checkpoints": {},
        "round_time": {},
    }
    for p in table.problems:
        summary["problems"][p] = {
            "label": table.labels.get(p, p),
            "direction": "minimize" if table.minimize.get(p, True) else "maximize",
            "methods": {},
        }
        for m in table.methods:
            cell = table.cells[m].get(p)
            if cell is None:
                continue
            runs = [r for r in results if r["problem"] == p and r["method"] == m]
            summary["problems"][p]["methods"][m] = {
                "n_seeds": len(cell.values),
                "seeds": sorted(cell.seeds),
                "budget": max(int(r["budget"]) for r in runs),
                "mean": cell.mean,
                "se": standard_error(cell.values),
                "rank": ranked.ranks[m].get(p),
            }
            summary["search"].setdefault(p, {})[m] = search_diagnostics(runs)
        kd = _by_seed(results, p, "kd")
        if kd:
            summary["paired"][p] = {
                m: paired_comparison(kd, _by_seed(results, p, m), table.minimize.get(p, True))
                for m in table.methods
                if m != "kd" and _by_seed(results, p, m)
            }
            kd_runs = [r for r in results if r["problem"] == p and r["method"] == "kd"]
            summary["selection"][p] = selection_diagnostics(kd_runs)
            summary["proposals"].setdefault("kd", {})[p] = run_set_proposals(kd_runs)
            summary["timeline"][p] = chosen_timeline(kd_runs)
            summary["checkpoints"][p] = checkpoint_comparison(
                results, results, p, "kd", "ax_default", table.minimize.get(p, True), CHECKPOINTS
            )
        summary["round_time"][p] = {
            m: round_time([r for r in results if r["problem"] == p and r["method"] == m])
            for m in table.methods
        }
    base = (
        [{**r, "method": "kd"} for r in (variants or {})[reference]]
        if summary["variant_reference"] != "kd"
        else results
    )
    for name, variant_runs in (variants or {}).items():
        method = variant_runs[0]["method"] if variant_runs else "kd"
        mine = {p: v for p in table.problems if (v := _by_seed(variant_runs, p, method))}
        paired_with = [] if name == summary["variant_reference"] else base

        summary["variants"][name] = {
            "method": method,
            "config": variant_runs[0]["config"].get("kd_config") if variant_runs else None,
            "problems": _paired_by_problem(mine, paired_with, "kd", table.minimize),
            "vs_ax_default": _paired_by_problem(mine, results, "ax_default", table.minimize),
            "values": {
                p: _values_on_seeds(v, _by_seed(paired_with, p, "kd")) for p, v in mine.items()
            },
            "checkpoints": {
                p: checkpoint_comparison(
                    variant_runs,
                    results,
                    p,
                    method,
                    "ax_default",
                    table.minimize.get(p, True),
                    CHECKPOINTS,
                )
                for p in mine
            },
            "round_time": {
                p: round_time([r for r in variant_runs if r["problem"] == p]) for p in mine
            },
            "selection": {
                p: selection_diagnostics([r for r in variant_runs if r["problem"] == p])
                for p in table.problems
                if any(r["problem"] == p for r in variant_runs)
            },
        }
        for p in table.problems:
            if runs := [r for r in variant_runs if r["problem"] == p]:
                summary["proposals"].setdefault(name, {})[p] = run_set_proposals(runs)
    return summary


def transfer_summary(
    transfer_dir: str | Path, results: Sequence[dict[str, Any]]
) -> dict[str, Any] | None:
    """The transfer experiment: a kernel found on one problem, fixed on others.

    Reads ``kernels.json`` and the runs in ``transfer_dir`` (``benchmarks/transfer.py``)
    and compares, per target problem and on the seeds both have, the transferred kernel
    with RBF (from ``transfer_dir``) and with the study's Ax default and start kernels.
    ``None`` when there is no finished transfer run.
    """
    transfer_dir = Path(transfer_dir)
    library = transfer_dir / "kernels.json"
    try:
        runs = load_results(transfer_dir)
        kernel = json.loads(library.read_text())["kernels"][0]
    except (FileNotFoundError, KeyError, IndexError, json.JSONDecodeError):
        return None
    # a fixed-kernel run records its method as "fixed:<kernel name>"
    fixed = [{**r, "method": "fixed"} for r in runs if r["method"].split(":")[0] == "fixed"]
    out: dict[str, Any] = {"kernel": kernel.get("name"), "formula": kernel.get("formula")}
    out["problems"] = {}
    for p in dict.fromkeys(r["problem"] for r in fixed):
        minimize = next(r["direction"] == "minimize" for r in fixed if r["problem"] == p)
        mine = _by_seed(fixed, p, "fixed")
        rows: dict[str, Any] = {}
        for label, pool, method in [
            ("transferred", fixed, "fixed"),
            ("rbf", runs, "rbf"),
            *[(m, results, m) for m in ("ax_default", "matern52", "bock", "sl", "kd")],
        ]:
            other = {s: v for s, v in _by_seed(pool, p, method).items() if s in mine}
            if not other:
                continue
            rows[label] = {
                "n_seeds": len(other),
                "mean": float(np.mean(list(other.values()))),
                "se": standard_error(list(other.values())),
                "transferred_vs": None
                if label == "transferred"
                else paired_comparison(mine, other, minimize),
            }
        out["problems"][p] = rows
    return out


def write_study_report(
    results_dir: str | Path, markdown: str | Path, protocol: StudyProtocol = STUDY
) -> Path:
    """Write the study report to ``markdown`` and ``summary.json`` into ``results_dir``.

    Curves go to ``img/`` beside the Markdown file. Variants are the sub-folders of
    ``results_dir`` that hold ``kd`` results.

    Raises:
        FileNotFoundError: No results folder or no complete result in it.
    """
    results_dir = Path(results_dir)
    results = [
        r
        for r in load_results(results_dir)
        if r["problem"] in protocol.problems and r["method"] in protocol.methods
    ]
    variants = {}
    skip = {"checkpoints", LONG_FOLDER}
    for sub in sorted(p for p in results_dir.iterdir() if p.is_dir() and p.name not in skip):
        try:
            runs = load_results(sub)
        except FileNotFoundError:
            continue
        for method in ("kd", "cake"):  # a variant's LLM settings may also run cake
            chosen = [r for r in runs if r["method"] == method]
            if chosen:
                variants[sub.name if method == "kd" else f"{sub.name}:{method}"] = chosen
    summary = study_summary(results, variants, protocol)
    summary["transfer"] = transfer_summary(results_dir.parent / "transfer", results)
    try:
        summary["long"] = long_budget_summary(load_results(results_dir / LONG_FOLDER))
    except FileNotFoundError:
        summary["long"] = {}
    for entry in summary["long"].values():  # named by what it ran, not "kd"
        entry["ran"] = _variant_named(entry["kd_config"], variants)
    (results_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=float) + "\n")

    markdown = Path(markdown)
    img = markdown.parent / "img"
    curves = []
    for p in summary["problems"]:
        png = plot_curves(results, p, list(protocol.methods), img / f"study_curves_{p}.png")
        curves.append(f"![{p}](img/{png.name})")
    try:
        shown = results_dir.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        shown = results_dir
    text = study_markdown(summary, results, protocol, shown, markdown, curves)
    rounds = []  # the hold-out study's rounds come first; this study follows as the earlier one
    for round_ in HOLDOUT_ROUNDS:
        folder = round_.under(results_dir.parent)
        if not folder.is_dir():
            continue
        held = holdout_summary(folder, round_)
        (folder / "summary.json").write_text(json.dumps(held, indent=1, default=float) + "\n")
        try:
            where: Path = folder.resolve().relative_to(Path.cwd().resolve())
        except ValueError:
            where = folder
        rounds += holdout_markdown(held, where, round_)
    if rounds:
        head, sep, rest = text.partition("## Protocol")
        text = "\n".join(
            [
                head.rstrip(),
                "",
                *rounds,
                "## The earlier study (seeds 0-4; the defaults before the hold-out study)",
                "",
                "### Protocol" + rest if sep else rest,
            ]
        )
    markdown.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_text(text)
    return markdown


__all__ = [
    "BASE_KERNELS",
    "CHECKPOINTS",
    "LONG_CHECKPOINTS",
    "LONG_FOLDER",
    "TIE_TOLERANCE",
    "VARIANT_REFERENCE",
    "checkpoint_comparison",
    "long_budget_summary",
    "round_time",
    "chosen_timeline",
    "kernel_family",
    "paired_comparison",
    "run_set_proposals",
    "search_diagnostics",
    "selection_diagnostics",
    "spearman",
    "standard_error",
    "study_summary",
    "transfer_summary",
    "write_study_report",
]
