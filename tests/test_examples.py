"""examples/: the quickstart (`nox -s demo`) runs as a user runs it, on a small problem."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "rounds",
    [
        1,  # the guard round: Ax's default model, no score to print
        pytest.param(2, marks=pytest.mark.slow),  # then a round that chose by its score
    ],
)
def test_the_quickstart_prints_every_round_the_guard_round_included(
    rounds: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default suite runs the quickstart's guard round (a scored round's line, from the
    same history, is the README snippet's: ``tests/test_docs.py``); the slow session one
    more round."""
    spec = importlib.util.spec_from_file_location("quickstart", ROOT / "examples" / "quickstart.py")
    assert spec is not None and spec.loader is not None
    quickstart = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(quickstart)
    quickstart.main(["--dim", "10", "--sobol", "8", "--rounds", str(rounds), "--batch", "2"])
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("round ")]
    assert len(lines) == rounds
    # the first BO round hands the acquisition Ax's default model: no score to print
    assert "chose AxDefault" in lines[0] and "PREQUENTIAL -  " in lines[0]
    if rounds > 1:
        assert "chose AxDefault" not in lines[1] and "PREQUENTIAL -  " not in lines[1]
    assert "best value" in out and "best kernel" in out


@pytest.mark.slow
def test_own_function_runs_and_prints_the_guard_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import runpy

    monkeypatch.chdir(tmp_path)  # the example saves its experiment in the working folder
    runpy.run_path(str(ROOT / "examples" / "own_function.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "round 0: n=8, chose AxDefault (score -)" in out
    assert (tmp_path / "own_function_experiment.json").is_file()


@pytest.mark.slow
def test_the_multi_objective_example_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    import runpy

    runpy.run_path(str(ROOT / "examples" / "multi_objective.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "round 1 cost_a: chose" in out and "round 1 cost_b: chose" in out
    assert "points on the Pareto front" in out
