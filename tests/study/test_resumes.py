"""Every resume is listed from the result files (issue 50 item 5)."""

from __future__ import annotations

import json
from pathlib import Path

from ax_kernel_discovery.study.resumes import (
    RESUMES_END,
    RESUMES_START,
    resumed_runs,
    resumes_block,
    study_runs_files,
    write_resumes,
)

ROOT = Path(__file__).resolve().parents[2]


def _run(folder: Path, name: str, sessions: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    problem, method, seed = name.split("__")
    record = {"problem": problem, "method": method, "seed": int(seed[4:]), "sessions": sessions}
    (folder / f"{name}.json").write_text(json.dumps(record))


def test_resumed_runs_are_read_from_the_sessions_of_each_result_file(tmp_path: Path) -> None:
    one = {"n_start": 0, "resumed": False, "n_end": 170}
    _run(tmp_path / "confirmation", "svm__kd__seed1", [one])
    _run(
        tmp_path / "tuning" / "v",
        "svm__kd__seed2",
        [{**one, "n_end": 95}, {"n_start": 95, "resumed": True}, {"n_start": 140, "resumed": True}],
    )
    _run(tmp_path / "checkpoints", "svm__kd__seed3", [one, {"n_start": 5, "resumed": True}])
    runs = resumed_runs(tmp_path)
    assert runs == [
        {
            "path": "tuning/v/svm__kd__seed2.json",
            "run": "svm kd seed 2",
            "resumes": 2,
            "at": [95, 140],
        }
    ]
    assert "resumed 2 times, at 95, 140 evaluations" in resumes_block(tmp_path)
    runs_md = tmp_path / "RUNS.md"
    runs_md.write_text("# Runs\n\nhand-written text\n")
    assert write_resumes(runs_md)
    text = runs_md.read_text()
    assert text.startswith("# Runs\n\nhand-written text\n") and RESUMES_START in text
    assert not write_resumes(runs_md)  # unchanged the second time


def test_every_rounds_runs_md_lists_the_resumes_its_files_record() -> None:
    """The committed RUNS.md of each hold-out round and of the cost protocol's tuning runs
    is current (rewrite with ``python -m ax_kernel_discovery.study.resumes``)."""
    files = study_runs_files(ROOT / "benchmarks" / "results")
    assert (ROOT / "benchmarks/results/cost/RUNS.md") in files
    assert (ROOT / "benchmarks/results/long400b/RUNS.md") in files
    for runs_md in files:
        text = runs_md.read_text()
        block = text.split(RESUMES_START, 1)[1].split(RESUMES_END, 1)[0].strip()
        assert block == resumes_block(runs_md.parent), f"{runs_md}: run the resumes command"
    round_2 = (ROOT / "benchmarks/results/holdout2/RUNS.md").read_text()
    assert "hartmann6_100__bock__seed2000.json" in round_2  # missed by hand before
