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


def test_runs_of_other_settings_get_rows_of_their_own(tmp_path: Path) -> None:
    """Two kd configs and two budgets are never pooled; the report says what differs."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    small = {"population_size": 5, "criterion": "loo_crps"}
    runs = []
    for seed, kd_config, budget in [(0, None, 3), (1, None, 3), (0, small, 3), (0, None, 4)]:
        values = [5.0, 2.0 + seed, 1.0 + seed, 1.0][:budget]
        r = _result("a", "kd", seed, values)
        r["config"] = {**r["config"], "problem": "a", "method": "kd", "seed": seed}
        r["config"]["kd_config"] = kd_config
        runs.append(r)
    runs.append(_result("a", "rbf", 0, [5.0, 4.0, 3.0]))
    for i, r in enumerate(runs):
        (folder / f"run{i}.json").write_text(json.dumps(r))
    text = write_report(folder, tmp_path / "report").read_text()
    rank_table = text.split("| method |", 1)[1].split("\n\n", 1)[0]
    table_rows = [ln for ln in rank_table.splitlines() if ln.startswith("| kd")]
    assert len(table_rows) == 3, table_rows  # default (2 seeds), small config, budget 4
    assert any("±" in ln and "population_size=10" in ln for ln in table_rows)
    assert any("population_size=5" in ln and 'criterion="loo_crps"' in ln for ln in table_rows)
    assert any("budget=4" in ln for ln in table_rows)
    assert "**kd ran with different settings** (budget, kd_config.criterion" in text
    assert "kd_config.population_size" in text
    assert "**The rows' runs differ in settings**" in text and "budget: 3 (" in text
    assert "**a label: the rows have different seeds**" in text


def test_one_result_file_is_a_report(results_dir: Path, tmp_path: Path) -> None:
    one = results_dir / "a__kd__seed0.json"
    text = write_report(one, tmp_path / "report").read_text()
    assert "| kd | **0.5000 (1 seed)** | 1.00 |" in text
    with pytest.raises(FileNotFoundError, match="is not a complete result JSON"):
        write_report(results_dir / "a__kd__seed2.json", tmp_path / "report")  # running


def test_curves_say_what_the_line_and_the_band_are(results_dir: Path, tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    from ax_kernel_discovery.runner.report import plot_curves

    figures = []
    real_close = plt.close
    plt.close = lambda fig=None: figures.append(fig)  # keep the figure to read it
    try:
        results = load_results(results_dir)
        results.append(_result("a", "solo", 0, [4.0, 3.0, 2.0]))
        plot_curves(results, "a", ["kd", "solo"], tmp_path / "c.png")
    finally:
        plt.close = real_close
    ax = figures[0].axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:2] == ["kd (median of 2 seeds)", "solo (1 seed)"]
    assert len(ax.collections) == 1  # one band: kd's; none for one seed
    assert any("band: 25th-75th percentile" in t.get_text() for t in ax.texts)
    text = write_report(results_dir, tmp_path / "report").read_text()
    assert "the shaded band spans the middle half of the seeds (25th to 75th percentile" in text
