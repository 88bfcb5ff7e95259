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
    # seeds 0-4 from the study folder (kd rows and the variant new_rows), 5-14 from the twins'
    assert "| svm | 0-4 (n=5) | 0/0/5 |" in out
    assert "| svm | all (n=15) | 2/0/13 |" in out
    assert "| hartmann6_100 | all (n=15) | 3/0/12 |" in out
    assert "| rover100 | all (n=10) | 7/0/3 |" in out
    assert "new_rows better on 16, worse on 34" in out
