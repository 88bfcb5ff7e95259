"""benchmarks/llm_study_tables.py prints docs/llm.md's tables from the committed results."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "benchmarks" / "results" / "study"


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "llm_study_tables", ROOT / "benchmarks" / "llm_study_tables.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not (STUDY / "llm_local").is_dir(), reason="no committed LLM study runs")
def test_tables_match_the_committed_runs(capsys: pytest.CaptureFixture[str]) -> None:
    _script().main(["--study", str(STUDY)])
    out = capsys.readouterr().out
    # the numbers docs/llm.md quotes
    assert "kd, local LLM vs kd, offline: 2/0/3 (n=5" in out
    assert "kd, local LLM vs cake, local LLM: 5/0/0 (n=5, sign-test p=0.062)" in out
    assert "131/200 (66%)" in out and "121/200 (60%)" in out
    assert "llm_local_overlap   accepted 32/40 (80%)" in out
    assert "without median 101 s" in out


def test_missing_variants_are_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _script().main(["--study", str(tmp_path)])
    assert "no complete set of kd-LLM, kd and cake runs" in capsys.readouterr().out
