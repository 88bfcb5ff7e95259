"""benchmarks/acqf_twins.py: the committed twin runs, paired by seed."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest


def test_the_twin_table_pairs_all_committed_seeds(
    benchmark_script: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    twins = benchmark_script("acqf_twins")
    twins.main([])
    out = capsys.readouterr().out
    # seeds 0-4 from the study folder (kd rows and the variant qlognei_keep), 5-29 from the twins'
    assert "| svm | 0-4 (n=5) | 0/0/5 |" in out
    assert "| svm | 15-29 (n=15) | 11/0/4 |" in out
    assert "| svm | all (n=30) | 13/0/17 |" in out
    assert "| hartmann6_100 | all (n=30) | 11/0/19 |" in out
    assert "| rover100 | all (n=10) | 7/0/3 |" in out
    assert "new_rows better on 35, worse on 45" in out
    # the test written down before seeds 15-29 ran (benchmarks/results/acqf_twins/RULE_*)
    assert "BoTorch's class better on 26, worse on 24; one-sided exact sign p = 0.444" in out
    # each arm against Ax's default on seeds 0-14 (the study's and benchmarks/results/more_seeds)
    assert "| svm | new_rows | 15 | 13/0/2 |" in out
    assert "| hartmann6_100 | new_rows | 15 | 10/0/5 |" in out
