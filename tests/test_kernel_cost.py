"""benchmarks/kernel_cost.py: kernel families named by their short names, and one step."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest
import torch

from ax_kernel_discovery.expression import short_name


def test_short_names_parse_back_to_their_spec(
    benchmark_script: Callable[[str], ModuleType],
) -> None:
    kc = benchmark_script("kernel_cost")
    for name in kc.FAMILIES:
        assert short_name(kc.parse_short_name(name)) == name
    spec = kc.parse_short_name("(rbf+rbf@kumaraswamy)")
    assert [a["warp"] for a in spec["args"]] == ["identity", "kumaraswamy"]
    assert kc.parse_short_name("rbf~iso")["ard"] is False
    with pytest.raises(ValueError, match="mixed operators"):
        kc.parse_short_name("(rbf+sl*rq)")
    with pytest.raises(ValueError, match="not a kernel short name"):
        kc.parse_short_name("rbf$")


def test_step_costs_evaluate_the_family_model(
    benchmark_script: Callable[[str], ModuleType],
) -> None:
    kc = benchmark_script("kernel_cost")
    torch.set_num_threads(1)
    X = torch.rand(12, 4, dtype=torch.float64)
    Y = X.sum(-1, keepdim=True)
    model = kc._surrogate("(rbf+sl@tanh)", X, Y).model
    assert short_name(model.covar_module.candidate.spec) == "(rbf+sl@tanh)"
    step, raw = kc.step_costs("(rbf+sl@tanh)", X, Y, q=2, restarts=2, raw=4, repeats=1)
    assert step > 0 and raw > 0


def test_optimize_costs_count_the_evaluations_of_one_acquisition(
    benchmark_script: Callable[[str], ModuleType],
) -> None:
    """A whole acquisition through a fitted GP: its evaluations are counted, the same
    for the same seed (a count, not a timing), and each evaluates the restarts' rows."""
    kc = benchmark_script("kernel_cost")
    torch.set_num_threads(1)
    X = torch.rand(10, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    Y = (X - 0.3).pow(2).sum(-1, keepdim=True).neg()
    first = kc.optimize_costs("rbf", X, Y, q=1)
    assert first["evaluations"] >= 2  # the raw samples' pass(es), then L-BFGS-B steps
    assert first["rows"] > first["evaluations"]  # batched: several restarts per evaluation
    assert first["cpu"] > 0
    again = kc.optimize_costs("rbf", X, Y, q=1)
    assert (again["evaluations"], again["rows"]) == (first["evaluations"], first["rows"])


def test_the_before_measure_evaluates_the_training_rows_per_batch_entry(
    benchmark_script: Callable[[str], ModuleType],
) -> None:
    """``batched_train_rows`` restores what the ``before`` columns time: the member sees
    the training rows once per candidate inside it and one copy outside it, and the same
    acquisition finds the same candidates both ways."""
    kc = benchmark_script("kernel_cost")
    from ax_kernel_discovery.surrogate import discovered

    torch.set_num_threads(1)
    X = torch.rand(10, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    Y = (X - 0.3).pow(2).sum(-1, keepdim=True).neg()
    x1 = torch.rand(4, 2, 3, dtype=torch.float64)
    assert discovered.shared_rows(x1, X.expand(4, 10, 3)) is not None
    with kc.batched_train_rows():
        assert discovered.shared_rows(x1, X.expand(4, 10, 3)) is None
    assert discovered.shared_rows(x1, X.expand(4, 10, 3)) is not None
    now = kc.optimize_costs("(rbf+sl@tanh)", X, Y, q=1)
    with kc.batched_train_rows():
        before = kc.optimize_costs("(rbf+sl@tanh)", X, Y, q=1)
    torch.testing.assert_close(now["x"], before["x"])
