"""Report: rank table (known values), timing table, curves, errors. Synthetic results, fast."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from ax_kernel_discovery.runner import PHASES, best_so_far
from ax_kernel_discovery.runner.report import (
    load_results,
    rank_table,
    rank_table_markdown,
    timing_table,
    write_report,
)

torch.set_num_threads(1)


def _result(
    problem: str, method: str, seed: int, values: list[float], minimize: bool = True
) -> dict:
    best = best_so_far(values, minimize)
    timings = dict.fromkeys(PHASES, 1.0)
    return {
        "format": 1,
        "status": "complete",
        "problem": problem,
        "problem_label": f"{problem} label",
        "direction": "minimize" if minimize else "maximize",
        "method": method,
        "seed": seed,
        "budget": len(values),
        "batch": 2,
        "num_sobol": 2,
        "config": {
            "num_restarts": 2,
            "raw_samples": 32,
            "maxiter": 30,
            "sample_around_best": True,
            "kd_config": None,
        },
        "n_evaluations": len(values),
        "values": values,
        "best_so_far": best,
        "best_value": best[-1],
        "chosen_kernels": [{"round": 1, "chosen": "off_r0_1:(rbf+sl)"}] if method == "kd" else [],
        "rounds": [{"round": 1, "kind": "bo", "population": ["RBF", "SL"]}]
        if method == "kd"
        else [],
        "failures": [{"kind": "rejection", "stage": "duplicate"}] if method == "kd" else [],
        "timings": {"mean_per_bo_round": timings, "bo_rounds": 1, "total": timings},
        "wall_time": 10.0,
        "versions": {"ax-platform": "1.3.1"},
        "device": {"torch_device": "cpu"},
        "torch_threads": 1,
    }


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    runs = [
        # minimize problem "a": kd best (mean 1.0), rbf (mean 2.0), sobol (mean 3.0)
        _result("a", "kd", 0, [5.0, 1.5, 0.5]),
        _result("a", "kd", 1, [4.0, 1.5, 2.0]),
        _result("a", "rbf", 0, [5.0, 2.0, 3.0]),
        _result("a", "rbf", 1, [2.0, 4.0, 6.0]),
        _result("a", "sobol", 0, [3.0, 4.0, 5.0]),
        _result("a", "sobol", 1, [3.0, 3.5, 9.0]),
        # maximize problem "b": rbf best (mean 8), kd (mean 5), sobol (mean 5): tie
        _result("b", "kd", 0, [1.0, 5.0, 4.0], minimize=False),
        _result("b", "kd", 1, [5.0, 2.0, 1.0], minimize=False),
        _result("b", "rbf", 0, [7.0, 2.0, 1.0], minimize=False),
        _result("b", "rbf", 1, [1.0, 9.0, 1.0], minimize=False),
        _result("b", "sobol", 0, [5.0, 2.0, 1.0], minimize=False),
        _result("b", "sobol", 1, [1.0, 5.0, 1.0], minimize=False),
    ]
    for r in runs:
        (folder / f"{r['problem']}__{r['method']}__seed{r['seed']}.json").write_text(json.dumps(r))
    running = _result("a", "kd", 2, [0.0, 0.0, 0.0]) | {"status": "running"}
    (folder / "a__kd__seed2.json").write_text(json.dumps(running))
    (folder / "checkpoints").mkdir()
    (folder / "checkpoints" / "a__kd__seed0.json").write_text("{}")
    (folder / "notes.json").write_text("[1, 2]")
    return folder


def test_rank_table_known_values(results_dir: Path) -> None:
    results = load_results(results_dir)
    assert len(results) == 12  # running run, checkpoints and other JSON left out
    table = rank_table(results, methods=["kd", "rbf", "sobol"])
    assert table.problems == ["a", "b"]
    kd_a = table.cells["kd"]["a"]
    assert kd_a.mean == pytest.approx(1.0)
    assert kd_a.std == pytest.approx(math.sqrt(0.5))  # sample std of (0.5, 1.5)
    assert table.cells["rbf"]["b"].mean == pytest.approx(8.0)
    assert table.ranks["kd"] == {"a": 1.0, "b": 2.5}
    assert table.ranks["rbf"] == {"a": 2.0, "b": 1.0}
    assert table.ranks["sobol"] == {"a": 3.0, "b": 2.5}
    assert table.average_rank == pytest.approx({"kd": 1.75, "rbf": 1.5, "sobol": 2.75})
    assert table.best_method("a") == "kd" and table.best_method("b") == "rbf"


def test_rank_table_markdown_shape(results_dir: Path) -> None:
    table = rank_table(load_results(results_dir), problems=["b", "a"], methods=["sobol", "kd"])
    text = rank_table_markdown(table)
    lines = text.splitlines()
    assert len(lines) == 2 + 2  # header, separator, 2 methods
    assert lines[0].split("|")[2].strip() == "b label (max)"
    assert all(line.count("|") == 5 for line in lines)  # method + 2 problems + avg. rank
    kd_row = next(line for line in lines if line.startswith("| kd"))
    assert "**1.000 ± 0.707**" in kd_row


def test_timing_table(results_dir: Path) -> None:
    t = timing_table(load_results(results_dir), ["kd", "rbf"])
    assert set(t) == {"kd", "rbf"}
    assert t["kd"]["total"] == pytest.approx(len(PHASES))


def test_write_report(results_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    path = write_report(results_dir, out, title="Test")
    text = path.read_text()
    assert text.startswith("# Test")
    assert (out / "curves_a.png").stat().st_size > 1000
    assert (out / "curves_b.png").is_file()
    assert "avg. rank" in text and "Time per BO round" in text
    assert "1 incomplete run(s)" in text
    assert "(rbf+sl)" in text  # chosen kernels of kd
    assert "| kd | rejection | duplicate | 4 |" in text


def test_report_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_report(tmp_path / "missing", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no complete result"):
        write_report(tmp_path / "empty", tmp_path / "out")
