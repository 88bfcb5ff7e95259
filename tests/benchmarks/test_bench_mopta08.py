"""Mopta08 wrapper, run against a stand-in program that follows the same file protocol."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from ax_kernel_discovery.benchmarks.mopta08 import Mopta08

FAKE = """#!{python}
import sys
xs = [float(t) for t in open("input.txt").read().split()]
if len(xs) != 124:
    sys.exit(3)
objective = sum(xs)
constraints = [x - 0.5 for x in xs[:68]]
with open("output.txt", "w") as fh:
    fh.write("\\n".join(repr(v) for v in [objective] + constraints) + "\\n")
"""


def _script(tmp_path: Path, body: str, name: str = "mopta08_fake") -> Path:
    path = tmp_path / name
    path.write_text(body.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_missing_binary_gives_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("AXKD_MOPTA08_BINARY", raising=False)
    with pytest.raises(FileNotFoundError, match="AXKD_MOPTA08_BINARY") as info:
        Mopta08()
    assert "binary=" in str(info.value)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Mopta08(binary=tmp_path / "nope.bin")
    not_exec = tmp_path / "plain.bin"
    not_exec.write_text("")
    with pytest.raises(FileNotFoundError, match="not executable"):
        Mopta08(binary=not_exec)


def test_soft_constrained_value(tmp_path) -> None:
    problem = Mopta08(binary=_script(tmp_path, FAKE))
    assert (problem.dim, problem.minimize) == (124, True)
    x = np.full(124, 0.7)
    # objective 124 * 0.7, 68 violated constraints of 0.2 each, penalty 10 per unit
    assert problem.evaluate_one(x) == pytest.approx(124 * 0.7 + 10 * 68 * 0.2)
    objective, constraints = problem.run(np.full(124, 0.25))
    assert objective == pytest.approx(31.0) and constraints.shape == (68,)
    assert problem.evaluate_one(np.full(124, 0.25)) == pytest.approx(31.0)  # all feasible


def test_binary_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("AXKD_MOPTA08_BINARY", str(_script(tmp_path, FAKE)))
    X = np.random.default_rng(0).uniform(size=(3, 124))
    expected = X.sum(axis=1) + 10 * np.maximum(X[:, :68] - 0.5, 0).sum(axis=1)
    np.testing.assert_allclose(Mopta08().evaluate(X), expected, rtol=1e-12)


def test_worker_pool_matches_sequential(tmp_path) -> None:
    problem = Mopta08(binary=_script(tmp_path, FAKE))
    problem.mp_context = "fork"
    X = np.random.default_rng(1).uniform(size=(4, 124))
    with problem:
        parallel = problem.evaluate(X, n_workers=2)
    np.testing.assert_array_equal(parallel, problem.evaluate(X))


def test_failing_binary_reports(tmp_path) -> None:
    failing = _script(tmp_path, "#!/bin/sh\necho boom >&2\nexit 2\n", "fail")
    with pytest.raises(RuntimeError, match=r"exit code 2.*boom"):
        Mopta08(binary=failing).evaluate_one(np.zeros(124))
    short = _script(tmp_path, "#!/bin/sh\necho 1 2 3 > output.txt\n", "short")
    with pytest.raises(RuntimeError, match="expected 69 numbers"):
        Mopta08(binary=short).evaluate_one(np.zeros(124))


@pytest.mark.skipif(
    not os.environ.get("AXKD_MOPTA08_BINARY"),
    reason="Mopta08 binary not available: set AXKD_MOPTA08_BINARY to run the real program",
)
def test_real_binary() -> None:
    value = Mopta08().evaluate_one(np.full(124, 0.5))
    assert np.isfinite(value) and 150.0 < value < 1e4
