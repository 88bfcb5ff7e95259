"""benchmarks/lbfgs_memory.py: kd's fits with scipy's L-BFGS-B memory and a longer one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType


def test_a_recorded_round_replayed_with_both_memories(
    benchmark_script: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    lm = benchmark_script("lbfgs_memory")
    printed: list[str] = []
    # a few steps per fit: the memory matters little there, but every fit is counted
    config = {"fit_maxiter": 5, "proposals_per_round": 1}
    argv = ["--fixtures", "hartmann6_100__seed1__r3", "--memory", "30"]
    data = lm.main(
        [*argv, "--kd-config", json.dumps(config), "--out", str(tmp_path)], printed.append
    )
    (row,) = data["rows"]
    a, b = row["runs"]["scipy"], row["runs"]["memory"]
    assert (row["n"], row["dim"]) == (50, 100)
    for run in (a, b):
        assert run["warm"]["iterations"] > 0 and run["cold"]["iterations"] > 0  # counted here
        assert 0 < run["warm"]["cpu"] + run["cold"]["cpu"] < run["cpu"]
    assert a["chosen"] == b["chosen"]  # prequential: chosen before the round's fits
    assert row["better"] + row["equal"] + row["worse"] == len(
        set(a["fit_scores"]) & set(b["fit_scores"])
    )
    written = (tmp_path / "lbfgs_memory.md").read_text()
    assert written.strip() == printed[0].strip() and "hartmann6_100__seed1__r3" in written
    assert json.loads((tmp_path / "lbfgs_memory.json").read_text())["memory"] == 30
