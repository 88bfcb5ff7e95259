"""Analysis of a run: summary counts, lineage and the Markdown report."""

from __future__ import annotations

import pytest

from ax_kernel_discovery import KernelDiscoveryConfig, KernelDiscoverySurrogate, RoundRecord
from ax_kernel_discovery.analysis import discovery_report, lineage, summarize
from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.expression import formula, leaf
from ax_kernel_discovery.surrogate.state import OutcomeState


def _surrogate() -> KernelDiscoverySurrogate:
    # the paper's start set alone (five members), plus the two offline kernels below
    s = KernelDiscoverySurrogate(KernelDiscoveryConfig(start_kernels=None))
    pop = s._new_population()
    s.state.outcomes["f"] = OutcomeState(pop)
    a_spec = {"op": "sum", "args": [leaf("rbf", "tanh"), leaf("sl")]}
    a = KernelCandidate(
        name="a", formula=formula(a_spec), origin="offline", parents=("RBF", "SL"), spec=a_spec
    )
    b_spec = {"op": "product", "args": [a_spec, leaf("poly2")]}
    b = KernelCandidate(
        name="b", formula=formula(b_spec), origin="offline", parents=("a",), spec=b_spec
    )
    pop.add(a, 0)
    pop.add(b, 1)
    for name, value in zip(pop.names, [0.3, 0.4, 0.5, 0.6, 0.2, 0.1, 0.05], strict=True):
        pop.set_score(name, value)
    pop.rank()
    s.history = [
        RoundRecord(
            round=0,
            outcome="f",
            n=10,
            dim=5,
            chosen="SL",
            chosen_score=0.2,
            proposed=["a", "x"],
            accepted=["a"],
            rejected=[Rejection(name="x", stage="psd", reason="not PSD")],
            timings={"total": 2.0},
        ),
        RoundRecord(
            round=1,
            outcome="f",
            n=14,
            dim=5,
            chosen="b",
            chosen_score=0.05,
            proposed=["b"],
            accepted=["b"],
            timings={"total": 4.0},
        ),
    ]
    return s


def test_summary_counts() -> None:
    s = summarize(_surrogate())
    assert s["rounds"] == 2
    assert s["proposed"] == 3 and s["accepted"] == 2
    assert s["acceptance_rate"] == pytest.approx(2 / 3)
    assert s["rejections_by_stage"] == {"psd": 1}
    assert s["chosen"] == {"SL": 1, "b": 1}
    assert s["chosen_origin"] == {"base": 1, "offline": 1}
    assert s["leaf_kernels"]["sl"] == 3  # SL itself, in a, and in b
    assert s["warps"]["tanh"] == 2
    assert s["mean_selection_seconds"] == pytest.approx(3.0)


def test_lineage_follows_parents() -> None:
    s = _surrogate()
    assert lineage(s, "b") == ["a", "RBF", "SL"]
    with pytest.raises(KeyError, match="not in the population"):
        lineage(s, "zzz")


def test_report_lists_rounds_and_population() -> None:
    text = discovery_report(_surrogate())
    assert "| 1 | 14 | b | 0.0500 | 1/1 |" in text
    assert "{'psd': 1}" in text
    assert text.index("**b**") < text.index("**a**") < text.index("**SL**")


def test_export_kernels_of_a_client_whose_experiment_has_no_name() -> None:
    """Issue 30 item 11: every README example configures an unnamed experiment."""
    import torch

    from ax_kernel_discovery import export_kernels, kernel_discovery_generation_strategy
    from ax_kernel_discovery.testing import TINY_ACQUISITION, unit_box_client

    torch.set_num_threads(1)
    config = {"population_size": 3, "proposals_per_round": 0, "fit_maxiter": 5}
    strategy = kernel_discovery_generation_strategy(config, num_sobol=4, **TINY_ACQUISITION)
    client = unit_box_client(3, strategy)
    for _ in range(4):
        for index, params in client.get_next_trials(max_trials=3).items():
            client.complete_trial(
                index, raw_data={"f": sum((v - 0.3) ** 2 for v in params.values())}
            )
    assert not client._experiment.has_name
    kernels = export_kernels(client, top=2)
    assert 1 <= len(kernels) <= 2 and all(k.formula for k in kernels)
