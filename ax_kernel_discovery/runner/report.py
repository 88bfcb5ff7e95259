"""Reports of benchmark results: rank table, learning curves, per-phase timings.

:func:`write_report` reads the result JSONs of :mod:`ax_kernel_discovery.runner` from a
folder and writes

* ``report.md``: the paper's Table 1 form (rows methods, columns problems, mean ± std
  over seeds of the best value found, in each problem's direction, best mean in bold,
  plus each method's average rank across problems, rank 1 = best), a per-phase timing
  table in the form of the paper's Table 6 (mean seconds per BO round), the kernels the
  searching methods chose, failure counts and the settings the numbers come from;
* ``curves_<problem>.png``: the median over seeds of the best value so far against the
  number of evaluations, one line per method, in a band from the 25th to the 75th
  percentile of the seeds (matplotlib, Agg backend).

Runs of one method made with different settings (budget, batch, kd config, ...) are
never pooled: each setting gets a row of its own (:func:`split_by_settings`), and the
report says which settings differ, between the rows too.

Example:
    >>> path = write_report("results/", "report/")  # doctest: +SKIP
"""

from __future__ import annotations

import collections
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ax_kernel_discovery.runner import PHASES
from ax_kernel_discovery.runner.run_config import identity_of_result

PHASE_TITLES: dict[str, str] = {
    "fit": "GP fit + selection",
    "propose": "proposal (LLM / operator)",
    "validate": "validation",
    "acquisition": "acquisition opt.",
    "evaluate": "oracle evaluation",
    "overhead": "Ax + checkpoint",
}


def load_results(source: str | Path, include_incomplete: bool = False) -> list[dict[str, Any]]:
    """Result dicts from ``source``: a folder's ``*.json`` (checkpoints and other JSON
    files are ignored), or one result JSON.

    Raises:
        FileNotFoundError: ``source`` does not exist, or holds no (complete) result JSON.
    """
    path = Path(source)
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(path.glob("*.json"))
    else:
        raise FileNotFoundError(
            f"results {str(path)!r} does not exist (give a folder of result JSONs, or one "
            "result JSON)"
        )
    results = []
    for file in files:
        try:
            data = json.loads(file.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if not isinstance(data, dict) or "problem" not in data or "best_so_far" not in data:
            continue
        if data.get("status") != "complete" and not include_incomplete:
            continue
        results.append(data)
    if not results:
        what = (
            "is not a complete result JSON" if path.is_file() else "holds no complete result JSON"
        )
        raise FileNotFoundError(
            f"{str(path)!r} {what} (expected <problem>__<method>__seed<k>.json, written by "
            "`ax-kernel-discovery run`)"
        )
    return results


def run_settings(result: dict[str, Any]) -> dict[str, Any]:
    """What a result's run was made with, beyond its problem, method and seed: the
    budget and the run's identity (:meth:`~ax_kernel_discovery.runner.RunConfig.identity`;
    kd config fields as ``kd_config.<field>``)."""
    identity = identity_of_result(result) or {}
    settings = {
        k: v for k, v in identity.items() if k not in ("problem", "method", "seed", "kd_config")
    }
    kd = identity.get("kd_config")
    if isinstance(kd, dict):  # its seed is the run's
        settings.update({f"kd_config.{k}": v for k, v in kd.items() if k != "seed"})
    for key in ("budget", "batch", "num_sobol"):
        if key in result:
            settings[key] = result[key]
    return settings


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def split_by_settings(results: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """Give each method's runs of different settings a row of their own.

    Runs of one method whose settings (:func:`run_settings`) differ are relabelled
    ``method [setting=value, ...]``, naming the settings that tell the groups apart, so
    that no row pools them. Changes ``results`` in place.

    Returns:
        For each method that was split, the settings that differ between its rows.
    """
    by_method: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in results:
        by_method[r["method"]].append(r)
    split: dict[str, list[str]] = {}
    for method, runs in by_method.items():
        settings = [run_settings(r) for r in runs]
        keys = sorted({k for s in settings for k in s})
        differ = [k for k in keys if len({_text(s.get(k)) for s in settings}) > 1]
        if not differ:
            continue
        split[method] = differ
        for r, s in zip(runs, settings, strict=True):
            shown = ", ".join(f"{k.removeprefix('kd_config.')}={_text(s.get(k))}" for k in differ)
            r["method"] = f"{method} [{shown}]"
    return split


def settings_between_rows(results: Sequence[dict[str, Any]]) -> list[str]:
    """``"setting: value (rows), value (rows)"`` for each setting that differs between
    the rows (methods), beyond what a method's own configuration is."""
    by_row: dict[str, dict[str, str]] = {}
    for r in results:
        s = run_settings(r)
        by_row.setdefault(r["method"], {}).update(
            {k: _text(v) for k, v in s.items() if not k.startswith("kd_config.")}
        )
    keys = sorted({k for s in by_row.values() for k in s})
    lines = []
    for key in keys:
        values: dict[str, list[str]] = collections.defaultdict(list)
        for row, s in by_row.items():
            if key in s:
                values[s[key]].append(row)
        if len(values) > 1:
            lines.append(
                f"{key}: " + "; ".join(f"{v} ({', '.join(rows)})" for v, rows in values.items())
            )
    return lines


@dataclass
class Cell:
    """Best values of one method on one problem, one per seed."""

    values: list[float] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if self.values else math.nan

    @property
    def std(self) -> float:
        """Sample standard deviation over seeds (0 for one seed)."""
        return float(np.std(self.values, ddof=1)) if len(self.values) > 1 else 0.0


@dataclass
class RankTable:
    """Table 1: ``cells[method][problem]``, average ranks, problem labels and directions."""

    methods: list[str]
    problems: list[str]
    labels: dict[str, str]
    minimize: dict[str, bool]
    cells: dict[str, dict[str, Cell]]
    ranks: dict[str, dict[str, float]]
    average_rank: dict[str, float]

    def best_method(self, problem: str) -> str | None:
        """Method with the best mean on ``problem``."""
        ranked = {m: r[problem] for m, r in self.ranks.items() if problem in r}
        return min(ranked, key=lambda m: ranked[m]) if ranked else None


def _ordered(found: Iterable[str], wanted: Sequence[str] | None) -> list[str]:
    found = list(dict.fromkeys(found))
    if wanted is None:
        return found
    return [w for w in wanted if w in found]


def _rankdata(values: Sequence[float]) -> list[float]:
    """Ranks starting at 1, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def rank_table(
    results: Sequence[dict[str, Any]],
    problems: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
) -> RankTable:
    """Mean ± std of the best value per method and problem, per-problem ranks, average rank.

    Ranks order the methods' mean best values in each problem's direction (rank 1 =
    best); the average is over the problems a method has results on.
    """
    probs = _ordered((r["problem"] for r in results), problems)
    meths = _ordered((r["method"] for r in results), methods)
    labels: dict[str, str] = {}
    minimize: dict[str, bool] = {}
    cells: dict[str, dict[str, Cell]] = {m: {} for m in meths}
    for r in results:
        if r["problem"] not in probs or r["method"] not in meths or r.get("best_value") is None:
            continue
        labels.setdefault(r["problem"], r.get("problem_label") or r["problem"])
        minimize.setdefault(r["problem"], r.get("direction", "minimize") == "minimize")
        cell = cells[r["method"]].setdefault(r["problem"], Cell())
        cell.values.append(float(r["best_value"]))
        cell.seeds.append(int(r.get("seed", 0)))
    ranks: dict[str, dict[str, float]] = {m: {} for m in meths}
    for p in probs:
        present = [m for m in meths if p in cells[m]]
        sign = 1.0 if minimize.get(p, True) else -1.0
        for m, rank in zip(
            present, _rankdata([sign * cells[m][p].mean for m in present]), strict=True
        ):
            ranks[m][p] = rank
    average = {m: float(np.mean(list(ranks[m].values()))) for m in meths if ranks[m]}
    return RankTable(meths, probs, labels, minimize, cells, ranks, average)


def format_value(value: float | None, scale: float | None = None) -> str:
    """Four significant digits of ``scale`` (default: the value itself); ``n/a`` for none."""
    if value is None or not math.isfinite(value):
        return "n/a"
    ref = abs(scale if scale is not None else value)
    decimals = 2 if ref == 0 else min(6, max(2, 3 - math.floor(math.log10(ref))))
    return f"{value:.{decimals}f}"


def rank_table_markdown(table: RankTable) -> str:
    """Markdown of Table 1 (best mean per column in bold)."""
    header = ["method"] + [
        f"{table.labels.get(p, p)} ({'min' if table.minimize.get(p, True) else 'max'})"
        for p in table.problems
    ]
    header.append("avg. rank")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    best = {p: table.best_method(p) for p in table.problems}
    for m in table.methods:
        row = [m]
        for p in table.problems:
            cell = table.cells[m].get(p)
            if cell is None:
                row.append("–")
                continue
            text = f"{format_value(cell.mean)} ± {format_value(cell.std, cell.mean)}"
            if len(cell.values) == 1:
                text = f"{format_value(cell.mean)} (1 seed)"
            if best[p] == m:
                text = f"**{text}**"
            row.append(text)
        row.append(f"{table.average_rank[m]:.2f}" if m in table.average_rank else "–")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def timing_table(
    results: Sequence[Mapping[str, Any]], methods: Sequence[str]
) -> dict[str, dict[str, float]]:
    """Mean seconds per BO round per phase per method (mean over runs of each run's mean)."""
    out: dict[str, dict[str, float]] = {}
    for m in methods:
        per_run = [
            r["timings"]["mean_per_bo_round"]
            for r in results
            if r["method"] == m and r["timings"].get("bo_rounds")
        ]
        if not per_run:
            continue
        out[m] = {p: float(np.mean([t.get(p) or 0.0 for t in per_run])) for p in PHASES}
        out[m]["total"] = sum(out[m][p] for p in PHASES)
    return out


def timing_markdown(timings: dict[str, dict[str, float]]) -> str:
    cols = [*PHASES, "total"]
    header = ["method"] + [PHASE_TITLES.get(c, c) for c in cols]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for m, t in timings.items():
        lines.append("| " + " | ".join([m] + [f"{t[c]:.2f}" for c in cols]) + " |")
    return "\n".join(lines)


def _curve_label(method: str, seeds: int) -> str:
    """``kd (median of 5 seeds)``, ``kd (1 seed)``."""
    return f"{method} (1 seed)" if seeds == 1 else f"{method} (median of {seeds} seeds)"


def plot_curves(
    results: Sequence[dict[str, Any]], problem: str, methods: Sequence[str], path: str | Path
) -> Path:
    """Median over seeds of best-so-far vs evaluations, one line per method, with a band
    from the 25th to the 75th percentile of the seeds (none for one seed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in results if r["problem"] == problem]
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    label = runs[0].get("problem_label", problem) if runs else problem
    direction = runs[0].get("direction", "minimize") if runs else "minimize"
    for m in methods:
        curves = [r["best_so_far"] for r in runs if r["method"] == m]
        curves = [[math.nan if v is None else float(v) for v in c] for c in curves if c]
        if not curves:
            continue
        n = min(len(c) for c in curves)
        Y = np.array([c[:n] for c in curves])
        x = np.arange(1, n + 1)
        med = np.nanmedian(Y, axis=0)
        q1, q3 = np.nanpercentile(Y, 25, axis=0), np.nanpercentile(Y, 75, axis=0)
        (line,) = ax.plot(x, med, label=_curve_label(m, len(curves)), lw=1.6)
        if len(curves) > 1:
            ax.fill_between(x, q1, q3, color=line.get_color(), alpha=0.18, lw=0)
    sobol = runs[0].get("num_sobol") if runs else None
    if sobol:
        ax.axvline(sobol, color="grey", lw=0.8, ls=":", label="end of Sobol design")
    ax.set_xlabel("evaluations")
    ax.set_ylabel(f"best value so far ({direction})")
    ax.set_title(label)
    ax.text(
        0.99,
        0.01,
        "line: median over seeds; band: 25th-75th percentile",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=7,
        color="0.4",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _chosen_summary(
    results: Sequence[dict[str, Any]], problems: Sequence[str], methods: Sequence[str]
) -> str:
    """Most chosen kernels of the methods that search (kernel population) or switch kernels."""
    lines = []
    for m in methods:
        for p in problems:
            names = collections.Counter(
                _short_kernel(c["chosen"])
                for r in results
                if r["method"] == m and r["problem"] == p
                for c in r.get("chosen_kernels", [])
                if c.get("chosen")
            )
            searching = any(
                "population" in rd
                for r in results
                if r["method"] == m
                for rd in r.get("rounds", [])
            )
            if names and (searching or len(names) > 1):
                top = ", ".join(f"{k} ({v})" for k, v in names.most_common(4))
                lines.append(f"| {m} | {p} | {top} |")
    if not lines:
        return ""
    return "| method | problem | most chosen kernels (rounds) |\n|---|---|---|\n" + "\n".join(lines)


def _short_kernel(name: str) -> str:
    return name.split(":", 1)[1] if ":" in name and not name.startswith("(") else name


def _settings_text(results: Sequence[dict[str, Any]]) -> str:
    def values(key: Any) -> list[Any]:
        return sorted({json.dumps(key(r), sort_keys=True, default=str) for r in results})

    def one(key: Any, name: str) -> str:
        vals = values(key)
        shown = vals[0] if len(vals) == 1 else "varies: " + ", ".join(vals)
        return f"- {name}: {shown.strip(chr(34))}"

    seeds = sorted({int(r.get("seed", 0)) for r in results})
    lines = [
        one(lambda r: r["budget"], "budget (evaluations per run, Sobol included)"),
        one(lambda r: r["batch"], "batch size q (joint batch per round)"),
        one(lambda r: r["num_sobol"], "Sobol points"),
        f"- seeds: {', '.join(map(str, seeds))}",
        one(
            lambda r: {
                k: r["config"].get(k)
                for k in ("num_restarts", "raw_samples", "maxiter", "sample_around_best")
            },
            "acquisition optimizer (qLogNEI)",
        ),
        one(lambda r: r["config"].get("kd_config"), "kernel-discovery config overrides"),
        one(lambda r: r.get("torch_threads"), "torch threads per run"),
        one(
            lambda r: {k: r["device"].get(k) for k in ("torch_device", "processor", "cpu_count")},
            "device",
        ),
        one(
            lambda r: {
                k: r["versions"].get(k)
                for k in ("ax-platform", "botorch", "gpytorch", "torch", "ax-kernel-discovery")
            },
            "versions",
        ),
    ]
    walls = [float(r.get("wall_time") or 0.0) for r in results]
    lines.append(
        f"- wall time per run: median {np.median(walls):.0f} s, max {max(walls):.0f} s, sum {sum(walls) / 60:.1f} min"
    )
    return "\n".join(lines)


def _unlike_rows_note(
    results: Sequence[dict[str, Any]], split: dict[str, list[str]], table: RankTable
) -> list[str]:
    """What the reader must know before comparing the rows: runs of one method split
    into rows by their settings, settings that differ between rows, unequal seeds."""
    lines = []
    for method, keys in split.items():
        lines.append(
            f"- **{method} ran with different settings** ({', '.join(keys)} differ): each "
            "setting has a row of its own."
        )
    between = settings_between_rows(results)
    if between:
        lines.append(
            "- **The rows' runs differ in settings**, so their ranks compare unlike runs: "
            + "; ".join(between)
            + "."
        )
    for p in table.problems:
        seeds = {m: sorted(table.cells[m][p].seeds) for m in table.methods if p in table.cells[m]}
        if len({tuple(v) for v in seeds.values()}) > 1:
            lines.append(
                f"- **{table.labels.get(p, p)}: the rows have different seeds**: "
                + "; ".join(f"{m}: {', '.join(map(str, v))}" for m, v in seeds.items())
                + "."
            )
    return [*lines, ""] if lines else []


def write_report(
    results_dir: str | Path,
    out_dir: str | Path,
    problems: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
    title: str | None = None,
) -> Path:
    """Write ``report.md`` and ``curves_<problem>.png`` into ``out_dir``; returns the ``.md`` path.

    Args:
        results_dir: Folder with result JSONs (``<problem>__<method>__seed<k>.json``),
            or one result JSON.
        out_dir: Report folder (created).
        problems: Problems to show, in this column order (default: all, as found).
        methods: Methods to show, in this row order (default: all, as found).
        title: Heading of the report.

    Raises:
        FileNotFoundError: No results folder or no complete result in it.
    """
    results = load_results(results_dir)
    if problems is not None:
        unknown = sorted(set(problems) - {r["problem"] for r in results})
        if unknown:
            raise FileNotFoundError(
                f"no complete results for problem(s) {unknown} in {str(results_dir)!r}"
            )
    results = [r for r in results if problems is None or r["problem"] in problems]
    if methods is not None:
        results = [r for r in results if r["method"] in methods]
    order = {m: i for i, m in enumerate(methods or _ordered((r["method"] for r in results), None))}
    split = split_by_settings(results)
    rows = sorted(
        dict.fromkeys(r["method"] for r in results),
        key=lambda label: order.get(label.split(" [", 1)[0], len(order)),
    )
    table = rank_table(results, problems, rows)
    results = [
        r for r in results if r["problem"] in table.problems and r["method"] in table.methods
    ]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    incomplete = len(load_results(results_dir, include_incomplete=True)) - len(
        load_results(results_dir)
    )

    parts = [f"# {title or 'Benchmark results'}", ""]
    parts += [
        "Best value found per run: mean ± sample std over seeds, in each problem's direction "
        "(min: lower is better, max: higher is better); bold: best mean per problem. "
        "avg. rank: mean over problems of each method's rank by mean best value (1 = best).",
        "",
    ]
    parts += _unlike_rows_note(results, split, table)
    parts += [rank_table_markdown(table), ""]
    if incomplete:
        parts += [f"({incomplete} incomplete run(s) in {results_dir} left out.)", ""]
    parts += ["## Settings", "", _settings_text(results), ""]
    parts += [
        "## Learning curves",
        "",
        "Each line is the median over a method's seeds of the best value found so far; the "
        "shaded band spans the middle half of the seeds (25th to 75th percentile; none for "
        "one seed). The dotted line marks the end of the Sobol design.",
        "",
    ]
    for p in table.problems:
        png = plot_curves(results, p, table.methods, out / f"curves_{p}.png")
        parts.append(f"![{table.labels.get(p, p)}]({png.name})")
    parts.append("")
    timings = timing_table(results, table.methods)
    if timings:
        parts += [
            "## Time per BO round (seconds, mean over runs and rounds)",
            "",
            "Phases: GP fit + kernel selection (all fits of the round), proposal of new kernels "
            "(offline operator or LLM calls), validation of proposals, acquisition optimization "
            "(joint q-batch), oracle evaluation of the batch, Ax bookkeeping and checkpointing.",
            "",
            timing_markdown(timings),
            "",
        ]
    chosen = _chosen_summary(results, table.problems, table.methods)
    if chosen:
        parts += ["## Kernels chosen", "", chosen, ""]
    fails: collections.Counter[tuple[str, str, str]] = collections.Counter()
    for r in results:
        for f in r.get("failures", []):
            fails[(r["method"], f.get("kind", "failure"), f.get("stage", ""))] += 1
    if fails:
        parts += [
            "## Failures and rejections (count over all runs)",
            "",
            "| method | kind | stage | count |",
            "|---|---|---|---|",
        ]
        parts += [f"| {m} | {k} | {s or '–'} | {n} |" for (m, k, s), n in sorted(fails.items())]
        parts.append("")
    path = out / "report.md"
    path.write_text("\n".join(parts))
    return path


__all__ = [
    "Cell",
    "RankTable",
    "format_value",
    "load_results",
    "plot_curves",
    "rank_table",
    "rank_table_markdown",
    "run_settings",
    "settings_between_rows",
    "split_by_settings",
    "timing_table",
    "write_report",
]
