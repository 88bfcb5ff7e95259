"""RoundSteps: a round whose every kernel is rejected falls back to Ax's model, loudly."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from ax.core.search_space import SearchSpaceDigest
from botorch.utils.datasets import SupervisedDataset
from linear_operator.utils.errors import NotPSDError

from ax_kernel_discovery import kernel_discovery_generation_strategy, surrogate_of
from ax_kernel_discovery.candidate import Rejection
from ax_kernel_discovery.errors import UNEXPECTED, UnexpectedErrorWarning, strict_errors
from ax_kernel_discovery.population import Population, start_candidates
from ax_kernel_discovery.selection_rules import LOOCRPS
from ax_kernel_discovery.surrogate.round import AllKernelsRejectedWarning, RoundSteps
from ax_kernel_discovery.surrogate.state import OutcomeState, RoundContext
from ax_kernel_discovery.testing import TINY_ACQUISITION, unit_box_client

#: One BO round after 4 Sobol points, every kernel fitted in this process.
CONFIG = {
    "population_size": 2,
    "proposals_per_round": 0,
    "fit_maxiter": 5,
    "criterion": "loo_crps",
    "guard_rounds": 0,
    "background_fits": "off",
    "keep_kernels": (),
}


def _score_raises(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    """Every fit's score (the ``loo_crps`` rule's) raises ``error``."""

    def fit_score(self: LOOCRPS, *args: Any, **kwargs: Any) -> float:
        raise error

    monkeypatch.setattr(LOOCRPS, "fit_score", fit_score)


def _one_bo_round() -> Any:
    client = unit_box_client(
        2, kernel_discovery_generation_strategy(CONFIG, num_sobol=4, **TINY_ACQUISITION)
    )
    for size in (4, 1):
        for index, params in client.get_next_trials(max_trials=size).items():
            client.complete_trial(index, raw_data={"f": (params["x0"] - 0.3) ** 2 + params["x1"]})
    return client


def test_every_kernel_failing_falls_back_to_axs_model_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kernel failures only: no raise, even in strict mode, but a warning naming them."""
    _score_raises(monkeypatch, NotPSDError("the Gram matrix is not PSD"))
    with pytest.warns(AllKernelsRejectedWarning, match="NotPSDError: the Gram matrix is not PSD"):
        client = _one_bo_round()
    (rec,) = surrogate_of(client).history
    assert rec.chosen is None and len(client._experiment.trials) == 5
    assert {r.stage for r in rec.rejected} == {"fit"} and rec.rejected[-1].name == "*"


def test_a_bug_in_every_fit_raises_in_strict_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    _score_raises(monkeypatch, ZeroDivisionError("division by zero"))
    with pytest.raises(ZeroDivisionError):
        _one_bo_round()


def test_a_bug_in_every_fit_warns_and_the_users_run_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _score_raises(monkeypatch, ZeroDivisionError("division by zero"))
    with (
        strict_errors(False),
        pytest.warns(UnexpectedErrorWarning, match="ZeroDivisionError"),
        pytest.warns(AllKernelsRejectedWarning, match="unexpected"),
    ):
        client = _one_bo_round()
    (rec,) = surrogate_of(client).history
    assert rec.chosen is None and len(client._experiment.trials) == 5  # on Ax's model
    *kernels, fallback = rec.rejected
    assert kernels and {r.stage for r in kernels} == {UNEXPECTED}
    assert all("ZeroDivisionError" in r.reason for r in kernels)
    assert (fallback.name, fallback.stage) == ("*", "fit")


def _context() -> RoundContext:
    X = torch.rand(4, 2, dtype=torch.float64)
    return RoundContext(
        outcome="f",
        state=OutcomeState(Population(start_candidates()[:1], size=1)),
        dataset=SupervisedDataset(X, X[:, :1], feature_names=["a", "b"], outcome_names=["f"]),
        search_space_digest=SearchSpaceDigest(feature_names=["a", "b"], bounds=[(0, 1)] * 2),
        round=3,
    )


def test_in_strict_mode_a_fallback_after_unexpected_rejections_raises() -> None:
    """Rejections recorded as unexpected where nothing raised (a worker process out of
    strict mode): the fallback refuses them in strict mode."""
    bug = Rejection(name="RBF", stage=UNEXPECTED, reason="fit: KeyError: 'x'")
    with pytest.raises(RuntimeError, match="1 unexpected errors"):
        RoundSteps._warn_all_rejected(_context(), [bug])
    with strict_errors(False), pytest.warns(AllKernelsRejectedWarning, match="KeyError"):
        RoundSteps._warn_all_rejected(_context(), [bug])
