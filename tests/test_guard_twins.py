"""benchmarks/guard_twins.py: kd's guarded BO step against stock Ax, point by point.

Slow (two real runs); the behaviour it measures is held in the default run by
``tests/test_strategy.py::test_a_guard_round_proposes_the_batch_stock_ax_proposes``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
import torch

torch.set_num_threads(1)


@pytest.mark.slow
def test_the_first_point_is_stock_ax_s(
    benchmark_script: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    gt = benchmark_script("guard_twins")
    small = {"batch": 3, "num_sobol": 6, "num_restarts": 1, "raw_samples": 16, "maxiter": 10}
    diffs = gt.point_differences("branin100", 0, str(tmp_path), **small)
    assert diffs.shape == (3,)
    assert diffs[0] < 1e-6  # the same model and acquisition from the same data
    # each run kept its own checkpoint: the two methods really ran
    assert {p.name for p in (tmp_path / "checkpoints").iterdir()} == {
        "branin100__ax_default__seed0.json",
        "branin100__kd__seed0.json",
    }
