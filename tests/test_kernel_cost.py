"""benchmarks/kernel_cost.py: kernel families named by their short names, and one step."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from ax_kernel_discovery.expression import short_name

ROOT = Path(__file__).resolve().parents[1]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "kernel_cost", ROOT / "benchmarks" / "kernel_cost.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_short_names_parse_back_to_their_spec() -> None:
    kc = _script()
    for name in kc.FAMILIES:
        assert short_name(kc.parse_short_name(name)) == name
    spec = kc.parse_short_name("(rbf+rbf@kumaraswamy)")
    assert [a["warp"] for a in spec["args"]] == ["identity", "kumaraswamy"]
    assert kc.parse_short_name("rbf~iso")["ard"] is False
    with pytest.raises(ValueError, match="mixed operators"):
        kc.parse_short_name("(rbf+sl*rq)")
    with pytest.raises(ValueError, match="not a kernel short name"):
        kc.parse_short_name("rbf$")


def test_step_costs_evaluate_the_family_model() -> None:
    kc = _script()
    torch.set_num_threads(1)
    X = torch.rand(12, 4, dtype=torch.float64)
    Y = X.sum(-1, keepdim=True)
    model = kc._surrogate("(rbf+sl@tanh)", X, Y).model
    assert short_name(model.covar_module.candidate.spec) == "(rbf+sl@tanh)"
    step, raw = kc.step_costs("(rbf+sl@tanh)", X, Y, q=2, restarts=2, raw=4, repeats=1)
    assert step > 0 and raw > 0
