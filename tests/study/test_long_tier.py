"""The 400-evaluation tier's report (``study.long_tier``) on result files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ax_kernel_discovery.study import long_tier

ROOT = Path(__file__).resolve().parents[2]


def _write(
    folder: Path,
    method: str,
    seed: int,
    curve: list[float],
    status: str = "complete",
    sessions: int = 1,
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    run = {
        "problem": "svm",
        "problem_label": "svm",
        "direction": "minimize",
        "method": method,
        "seed": seed,
        "status": status,
        "budget": 400,
        "batch": 20,
        "num_sobol": 20,
        "best_so_far": curve,
        "best_value": curve[-1],
        "wall_time": 100.0 if method == "kd" else 40.0,
        "code": {"commit": "a" * 40, "dirty": False},
        "sessions": [{"n_start": 20 * i, "resumed": i > 0} for i in range(sessions)],
    }
    (folder / f"svm__{method}__seed{seed}.json").write_text(json.dumps(run))


def _curve(at_170: float, at_250: float, at_400: float) -> list[float]:
    return [at_170] * 170 + [at_250] * 80 + [at_400] * 150


def test_best_values_are_paired_at_each_evaluation_count(tmp_path: Path) -> None:
    # kd better on both seeds at 170, a tie on seed 1 at 250, worse on seed 0 at 400.
    _write(tmp_path, "kd", 6000, _curve(0.2, 0.2, 0.2))
    _write(tmp_path, "ax_default", 6000, _curve(0.3, 0.25, 0.1))
    _write(tmp_path, "kd", 6001, _curve(0.4, 0.3, 0.1), sessions=2)
    _write(tmp_path, "ax_default", 6001, _curve(0.5, 0.3, 0.2))
    svm = long_tier.long_tier_summary(tmp_path)["svm"]
    assert svm["paired_seeds"] == [6000, 6001] and svm["resumed"] == 1
    at = {row["evaluations"]: row["paired"] for row in svm["at"]}
    assert tuple(at) == long_tier.EVALUATIONS
    assert (at[170]["wins"], at[170]["ties"], at[170]["losses"]) == (2, 0, 0)
    assert at[170]["mean_diff"] == pytest.approx(0.1)
    assert (at[250]["wins"], at[250]["ties"], at[250]["losses"]) == (1, 1, 0)
    assert (at[400]["wins"], at[400]["losses"]) == (1, 1)
    assert at[400]["mean_diff"] == pytest.approx(0.0, abs=1e-12)
    assert (svm["at"][-1]["mean"], svm["at"][-1]["reference_mean"]) == pytest.approx((0.15, 0.15))


def test_a_run_under_way_counts_nowhere(tmp_path: Path) -> None:
    _write(tmp_path, "kd", 6000, _curve(0.2, 0.2, 0.2))
    _write(tmp_path, "ax_default", 6000, _curve(0.3, 0.3, 0.3))
    _write(tmp_path, "kd", 6001, _curve(0.1, 0.1, 0.1)[:300], status="running")
    _write(tmp_path, "ax_default", 6001, _curve(0.5, 0.5, 0.5))
    svm = long_tier.long_tier_summary(tmp_path)["svm"]
    assert svm["paired_seeds"] == [6000]
    assert svm["complete"] == {"kd": [6000], "ax_default": [6000, 6001]}
    assert all(row["paired"]["n"] == 1 for row in svm["at"])
    report = long_tier.long_tier_markdown({"svm": svm})
    assert "| svm | 170 | 1 | 0.2000 | 0.3000 | 1/0/0 | 0.1000 |" in report


def test_a_problem_with_no_paired_seed_gets_no_curves(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    folder = tmp_path / long_tier.LONG_TIER
    _write(folder, "ax_default", 6000, _curve(0.3, 0.3, 0.3))
    _write(folder, "kd", 6000, _curve(0.2, 0.2, 0.2)[:300], status="running")
    long_tier.write_report(tmp_path)
    report = (folder / "REPORT.md").read_text()
    assert "svm: no seed is complete for both methods yet, so no curves." in report
    assert "![svm]" not in report and not (folder / "img").exists()
    _write(folder, "kd", 6000, _curve(0.2, 0.2, 0.2))
    long_tier.write_report(tmp_path)
    assert "![svm](img/curves_svm.png)" in (folder / "REPORT.md").read_text()
    assert (folder / "img" / "curves_svm.png").stat().st_size > 0


def test_an_empty_tier_says_so(tmp_path: Path) -> None:
    assert long_tier.long_tier_summary(tmp_path / "none") == {}
    assert "No run is complete yet." in long_tier.long_tier_markdown({})


def test_the_committed_report_is_the_generated_one() -> None:
    folder = ROOT / "benchmarks" / "results" / long_tier.LONG_TIER
    committed = (folder / "REPORT.md").read_text()
    summary = long_tier.long_tier_summary(folder)
    assert committed == long_tier.long_tier_markdown(summary)
    assert json.loads((folder / "summary.json").read_text()) == json.loads(
        json.dumps(summary, sort_keys=True)
    )


def test_the_readme_sentence_tallies_the_complete_seeds(tmp_path: Path) -> None:
    from ax_kernel_discovery.study.holdout import _long_tier_sentence

    assert "none complete yet" in _long_tier_sentence(tmp_path)
    folder = tmp_path / long_tier.LONG_TIER
    _write(folder, "kd", 6000, _curve(0.2, 0.2, 0.2))
    _write(folder, "ax_default", 6000, _curve(0.3, 0.25, 0.1))
    said = _long_tier_sentence(tmp_path)
    assert "svm (1 seed) 170: 1/0/0 (p 1.000), 250: 1/0/0 (p 1.000), 400: 0/0/1 (p 1.000)" in said
