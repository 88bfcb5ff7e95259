"""The LLM tables of docs/llm.md, printed from the study's committed result files.

Reads the study's LLM variants in ``benchmarks/results/study`` (``llm_local``: kd and
cake with the local model; ``llm_local_overlap``; ``llm_local_followup``) and, as "kd,
offline", the kd runs made with the same selection rules and the offline operator (the
``lbo`` variant: the previous default, LBO-CRPS, with which the LLM runs were made), and
prints, per problem:

1. quality: best value (mean ± standard error over seeds) of kd with the LLM, kd with
   the offline operator and cake, and the paired wins/ties/losses between them;
2. proposals of each run set (accepted / asked, rejections, chosen share, Gram
   diversity, LLM latency per call, round time), as in the study report;
3. one line per run of a seed (default 0) for the overlap and follow-up comparison:
   acceptance, duplicates, LLM calls and follow-ups, latency, wait for proposals,
   acquisition and round time, best value;
4. the LLM time of rounds with and without a follow-up call (follow-up runs).

No run is started: this only reads finished result files.

    python benchmarks/llm_study_tables.py
    python benchmarks/llm_study_tables.py --study benchmarks/results/study --seed 0
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ax_kernel_discovery.runner.report import load_results
from ax_kernel_discovery.study.report import run_set_proposals
from ax_kernel_discovery.study.statistics import paired_comparison, standard_error

PROBLEMS = ("rover100", "hartmann6_100")

#: The kd runs with the offline operator under the LLM runs' selection rules (LBO-CRPS).
OFFLINE = "lbo"


def _runs(folder: Path, problem: str, method: str) -> list[dict[str, Any]]:
    try:
        results = load_results(folder)
    except FileNotFoundError:  # no such folder, or no result files in it
        return []
    return [r for r in results if r["problem"] == problem and r["method"] == method]


def _by_seed(runs: Sequence[dict[str, Any]]) -> dict[int, float]:
    return {int(r["seed"]): float(r["best_value"]) for r in runs}


def _bo_rounds(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [x for x in run["rounds"] if x.get("kind") == "bo"]


def _mean_timing(run: dict[str, Any], key: str) -> float:
    return float(np.mean([x["timings"].get(key, 0.0) for x in _bo_rounds(run)]))


def quality(study: Path, problem: str) -> None:
    sets = {
        "kd, local LLM": _runs(study / "llm_local", problem, "kd"),
        "kd, offline": _runs(study / OFFLINE, problem, "kd"),
        "cake, local LLM": _runs(study / "llm_local", problem, "cake"),
    }
    if not all(sets.values()):
        print(f"{problem}: no complete set of kd-LLM, kd and cake runs")
        return
    minimize = sets["kd, offline"][0]["direction"] == "minimize"
    print(f"\n{problem} ({'lower' if minimize else 'higher'} is better)")
    values = {name: _by_seed(runs) for name, runs in sets.items()}
    for name, by in values.items():
        v = list(by.values())
        print(f"  {name:16s} {np.mean(v):9.4g} ± {standard_error(v):.3g}  seeds {sorted(by)}")
    for a, b in [
        ("kd, local LLM", "kd, offline"),
        ("kd, local LLM", "cake, local LLM"),
        ("cake, local LLM", "kd, offline"),
    ]:
        c = paired_comparison(values[a], values[b], minimize)
        p = "–" if c["p_sign"] is None else f"{c['p_sign']:.3f}"
        print(f"  {a} vs {b}: {c['wins']}/{c['ties']}/{c['losses']} (n={c['n']}, sign-test p={p})")


def proposals(study: Path, problem: str) -> None:
    print(f"\n{problem}: proposals per run set")
    for name, folder, method in [
        ("kd, local LLM", study / "llm_local", "kd"),
        ("kd, offline", study / OFFLINE, "kd"),
        ("cake, local LLM", study / "llm_local", "cake"),
    ]:
        runs = _runs(folder, problem, method)
        if not runs:
            continue
        d = run_set_proposals(runs)
        latency = "–" if d["llm_latency_s"] is None else f"{d['llm_latency_s']:.1f} s"
        print(
            f"  {name:16s} {d['accepted']}/{d['asked']} ({d['acceptance']:.0%}) "
            f"{d['rejections']} chosen {d['chosen_proposed']:.0%} "
            f"diversity {d['accepted_diversity']:.2f} latency {latency} "
            f"round {d['round_s']:.1f} s"
        )


def per_run(study: Path, problem: str, seed: int) -> None:
    print(f"\n{problem}, seed {seed}: one run per variant")
    for variant in ("llm_local", "llm_local_overlap", "llm_local_followup"):
        runs = [r for r in _runs(study / variant, problem, "kd") if int(r["seed"]) == seed]
        if not runs:
            continue
        run = runs[0]
        d = run_set_proposals(runs)
        followups = sum(
            (x.get("llm_usage") or {}).get("llm_followups", 0.0) for x in _bo_rounds(run)
        )
        print(
            f"  {variant:19s} accepted {d['accepted']}/{d['asked']} ({d['acceptance']:.0%}) "
            f"duplicates {d['rejections'].get('duplicate', 0)} calls {d['llm_calls']:.0f} "
            f"follow-ups {followups:.0f} latency {d['llm_latency_s']:.1f} s "
            f"wait {d['propose_s']:.1f} s acquisition {_mean_timing(run, 'acquisition'):.1f} s "
            f"round {d['round_s']:.1f} s chosen {d['chosen_proposed']:.0%} "
            f"diversity {d['accepted_diversity']:.2f} best {run['best_value']:.4g}"
        )


def followup_time(study: Path) -> None:
    with_f: list[float] = []
    without: list[float] = []
    for problem in PROBLEMS:
        for run in _runs(study / "llm_local_followup", problem, "kd"):
            for x in _bo_rounds(run):
                usage = x.get("llm_usage") or {}
                (with_f if usage.get("llm_followups") else without).append(usage["llm_latency_s"])
    if with_f and without:
        print(
            f"\nfollow-up runs: LLM time per round with a follow-up median "
            f"{np.median(with_f):.0f} s (range {min(with_f):.0f}-{max(with_f):.0f}, "
            f"{len(with_f)} rounds), without median {np.median(without):.0f} s "
            f"(range {min(without):.0f}-{max(without):.0f}, {len(without)} rounds)"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--study", type=Path, default=Path("benchmarks/results/study"))
    parser.add_argument("--seed", type=int, default=0, help="seed of the per-run lines")
    args = parser.parse_args(argv)
    for problem in PROBLEMS:
        quality(args.study, problem)
        proposals(args.study, problem)
        per_run(args.study, problem, args.seed)
    followup_time(args.study)


if __name__ == "__main__":
    main()
