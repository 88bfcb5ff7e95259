"""What a user pays per BO round: kd against Ax's default, by phase, from run files.

Reads the result JSONs of a study folder (the committed default runs in
``benchmarks/results/study`` unless ``--study`` says otherwise) and of any variant
subfolder named with ``--variants`` (e.g. ``preq_keep``, whose ``kd`` runs are compared
with the ``ax_default`` runs of the study folder itself). Per problem it prints the mean
seconds per BO round of

* ``fit``: GP fits + kernel selection (everything the surrogate does in ``fit``: for kd
  the whole round of the method minus proposing and validating);
* ``acquisition``: the qLogNEI optimization of the round's joint batch;
* ``round``: the round's wall time (all phases, oracle and checkpoint included);

for the searching method (``kd`` by default) and for ``ax_default``, and the ratio of
their round times. Each run's mean per BO round is taken from its own phase timings
(``timings.mean_per_bo_round``); the table shows the mean over runs (seeds). With
``--by-family`` it also prints the mean acquisition time of the method's BO rounds by
the family of the kernel the round chose (a start kernel, or ``evolved[...]``).

No run is started: this only reads finished result files.

    python benchmarks/round_cost.py
    python benchmarks/round_cost.py --variants preq_keep guard1 --by-family
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ax_kernel_discovery.runner.report import load_results, timing_table
from ax_kernel_discovery.study.diagnostics import kernel_family

STUDY = Path(__file__).resolve().parent / "results" / "study"
PROBLEMS = ("rover100", "hartmann6_100", "lasso_dna", "svm")
REFERENCE = "ax_default"


@dataclass(frozen=True)
class RoundCost:
    """Mean seconds per BO round of one method on one problem (mean over runs).

    Attributes:
        fit: GP fits and kernel selection.
        acquisition: Acquisition optimization.
        round: Wall time of the round (the sum of all phases).
        runs: Number of runs (seeds) averaged.
    """

    fit: float
    acquisition: float
    round: float
    runs: int


def round_cost(runs: Sequence[dict[str, Any]], method: str) -> RoundCost | None:
    """The mean per-round cost of ``method``'s ``runs`` (``None`` when none has a BO round).

    The means are the report's (:func:`~ax_kernel_discovery.runner.report.timing_table`).
    """
    t = timing_table(runs, [method]).get(method)
    if t is None:
        return None
    timed = sum(1 for r in runs if r["method"] == method and r["timings"].get("bo_rounds"))
    return RoundCost(fit=t["fit"], acquisition=t["acquisition"], round=t["total"], runs=timed)


def _runs(folder: Path) -> list[dict[str, Any]]:
    try:
        return load_results(folder)
    except FileNotFoundError:  # no such folder, or no complete run in it
        return []


def cost_table(
    study: Path, variant: str | None = None, method: str = "kd"
) -> dict[str, tuple[RoundCost, RoundCost]]:
    """Per problem: (``method``'s cost, ``ax_default``'s cost), where both have runs.

    ``method`` is read from ``study/variant`` when a variant is given, ``ax_default``
    always from ``study``.
    """
    reference = _runs(study)
    searched = _runs(study / variant) if variant else reference
    out: dict[str, tuple[RoundCost, RoundCost]] = {}
    problems = sorted({r["problem"] for r in searched}, key=_problem_order)
    for problem in problems:
        mine = round_cost([r for r in searched if r["problem"] == problem], method)
        ref = round_cost([r for r in reference if r["problem"] == problem], REFERENCE)
        if mine is not None and ref is not None:
            out[problem] = (mine, ref)
    return out


def acquisition_by_family(runs: Sequence[dict[str, Any]]) -> dict[str, tuple[float, int]]:
    """Mean acquisition seconds of BO rounds by the chosen kernel's family, and the count."""
    seconds: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        for x in run["rounds"]:
            if x.get("kind") == "bo":
                family = "AxDefault" if x.get("guarded") else kernel_family(x.get("chosen"))
                seconds[family].append(float(x["timings"].get("acquisition", 0.0)))
    return {k: (float(np.mean(v)), len(v)) for k, v in sorted(seconds.items())}


def _problem_order(problem: str) -> tuple[int, str]:
    return (PROBLEMS.index(problem) if problem in PROBLEMS else len(PROBLEMS), problem)


def print_table(table: dict[str, tuple[RoundCost, RoundCost]], method: str) -> None:
    print(
        f"| problem | {method} fit+selection | {method} acquisition | {method} round | "
        f"{REFERENCE} fit | {REFERENCE} acquisition | {REFERENCE} round | ratio | runs |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for problem, (a, b) in table.items():
        print(
            f"| {problem} | {a.fit:.2f} | {a.acquisition:.2f} | {a.round:.2f} | {b.fit:.2f} | "
            f"{b.acquisition:.2f} | {b.round:.2f} | **{a.round / b.round:.2f}** | "
            f"{a.runs}/{b.runs} |"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--study", type=Path, default=STUDY, help="study folder (ax_default runs)")
    parser.add_argument(
        "--variants", nargs="*", default=[], help="subfolders of --study with more kd runs"
    )
    parser.add_argument("--method", default="kd", help="the method compared with ax_default")
    parser.add_argument(
        "--by-family", action="store_true", help="acquisition seconds by chosen kernel family"
    )
    args = parser.parse_args(argv)
    for variant in [None, *args.variants]:
        label = f"{args.study}/{variant}" if variant else str(args.study)
        table = cost_table(args.study, variant, args.method)
        print(f"\n{args.method} runs of {label} (mean seconds per BO round, mean over runs)")
        if not table:
            print(f"no complete {args.method} and {REFERENCE} runs of the same problem")
            continue
        print_table(table, args.method)
        if args.by_family:
            runs = _runs(args.study / variant) if variant else _runs(args.study)
            for problem in table:
                mine = [r for r in runs if (r["problem"], r["method"]) == (problem, args.method)]
                parts = [
                    f"{family} {s:.1f} s ({n})"
                    for family, (s, n) in acquisition_by_family(mine).items()
                ]
                print(f"{problem} acquisition by chosen family: " + ", ".join(parts))


if __name__ == "__main__":
    main()
