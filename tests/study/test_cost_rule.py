"""The cost protocol's non-inferiority rule (``study.cost_rule``) on result files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ax_kernel_discovery.study import cost_rule
from ax_kernel_discovery.study.protocol import HOLDOUT

CANDIDATE = "converge_chosen_50"


def _write(folder: Path, problem: str, method: str, seed: int, best: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    run = {
        "problem": problem,
        "method": method,
        "seed": seed,
        "status": "complete",
        "direction": "minimize",
        "best_value": best,
        "best_so_far": [best],
    }
    (folder / f"{problem}__{method}__seed{seed}.json").write_text(json.dumps(run))


def _study(root: Path, candidate_shift: dict[str, float], seeds: int = 10) -> None:
    """ax_default's bests b_s = s; saas_full 1 better on every seed (d = 1); the
    candidate's d is 1 - 0.25 sd(b) + shift on each problem."""
    base = np.arange(10.0)
    sd = float(np.std(base, ddof=1))
    for p in HOLDOUT.problems:
        for s in range(10):
            _write(root / "holdout" / "tuning", p, "ax_default", s, base[s])
            _write(root / "holdout3" / "tuning" / "saas_full", p, "kd", s, base[s] - 1.0)
            _write(root / "holdout" / "tuning" / "preq_fixed", p, "kd", s, base[s] + 0.5)
        for s in range(seeds):
            d = 1.0 - 0.25 * sd + candidate_shift.get(p, 0.0)
            _write(root / "cost" / "tuning" / CANDIDATE, p, "kd", s, base[s] - d)


def test_a_candidate_at_the_bar_on_every_problem_passes(tmp_path: Path) -> None:
    _study(tmp_path, {p: 1e-6 for p in HOLDOUT.problems})
    summary = cost_rule.cost_summary(tmp_path)
    info = summary["candidates"][CANDIDATE]
    assert info["complete"] and info["passes"]
    rover = summary["problems"]["rover100"]
    assert rover["variants"]["saas_full"]["mean_diff"] == 1.0
    assert abs(rover["bar"] - (1.0 - 0.25 * np.std(np.arange(10.0), ddof=1))) < 1e-12


def test_a_candidate_below_the_bar_on_one_problem_fails_by_that_much(tmp_path: Path) -> None:
    _study(tmp_path, {p: (-0.1 if p == "svm" else 1e-6) for p in HOLDOUT.problems})
    info = cost_rule.cost_summary(tmp_path)["candidates"][CANDIDATE]
    assert info["complete"] and info["passes"] is False
    assert abs(info["short_by"]["svm"] - 0.1) < 1e-9
    assert all(info["short_by"][p] == 0.0 for p in HOLDOUT.problems if p != "svm")
    report = cost_rule.cost_markdown(cost_rule.cost_summary(tmp_path))
    assert "fails the rule: short on svm by 0.1" in report


def test_a_candidate_with_fewer_than_ten_seeds_has_no_verdict(tmp_path: Path) -> None:
    _study(tmp_path, {p: 5.0 for p in HOLDOUT.problems}, seeds=9)
    summary = cost_rule.cost_summary(tmp_path)
    info = summary["candidates"][CANDIDATE]
    assert not info["complete"] and info["passes"] is None
    assert summary["problems"]["svm"]["variants"][CANDIDATE]["margin_ok"] is None
    assert "incomplete (9/10 seeds)" in cost_rule.cost_markdown(summary)


def test_the_committed_report_is_the_generated_one() -> None:
    root = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    committed = (root / "cost" / "REPORT.md").read_text()
    assert committed == cost_rule.cost_markdown(cost_rule.cost_summary(root))
