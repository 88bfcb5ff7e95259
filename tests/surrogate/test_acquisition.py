"""KernelDiscoveryAcquisition: Ax's acquisition, without BoTorch's empty fixed-feature pass."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.acquisition import Acquisition
from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
from ax.generators.torch_base import TorchOptConfig
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.generation import gen as botorch_gen
from botorch.utils.datasets import SupervisedDataset

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import leaf
from ax_kernel_discovery.kernels.warped import WarpedKernel
from ax_kernel_discovery.surrogate import candidate_model_config
from ax_kernel_discovery.surrogate.acquisition import (
    KernelDiscoveryAcquisition,
    gen_candidates_scipy_unfixed,
)
from ax_kernel_discovery.surrogate.new_rows_qlognei import NewRowsqLogNEI

DIM = 40
WARPED = KernelCandidate(
    name="w",
    formula="rbf + rbf@tanh",
    spec={"op": "sum", "args": [leaf("rbf"), leaf("rbf", warp="tanh")]},
)


def _fitted_surrogate(
    candidate: KernelCandidate | None = None, seed: int = 0
) -> tuple[Surrogate, SearchSpaceDigest]:
    """A surrogate fitted on 16 points in D = 40: Ax's default model, or ``candidate``'s."""
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(16, DIM, generator=g, dtype=torch.float64)
    Y = ((X[:, :3] - 0.3) ** 2).sum(-1, keepdim=True)
    Y = (Y - Y.mean()) / Y.std()
    names = [f"x{i}" for i in range(DIM)]
    dataset = SupervisedDataset(X=X, Y=Y, feature_names=names, outcome_names=["f"])
    digest = SearchSpaceDigest(feature_names=names, bounds=[(0.0, 1.0)] * DIM)
    if candidate is None:
        surrogate = Surrogate()
    else:
        config = candidate_model_config(candidate, maxiter=5)
        surrogate = Surrogate(surrogate_spec=SurrogateSpec(model_configs=[config]))
    surrogate.fit([dataset], digest)
    return surrogate, digest


def _optimize(
    cls: type[Acquisition], monkeypatch: pytest.MonkeyPatch, fixed: dict[int, float] | None
) -> tuple[torch.Tensor, list[Any]]:
    """Candidates of a q = 2 qLogNEI optimization, and the fixed features each
    evaluation's ``fix_features`` was handed."""
    handed: list[Any] = []
    original = botorch_gen.fix_features

    def spy(X: torch.Tensor, fixed_features: Any = None, **kwargs: Any) -> torch.Tensor:
        handed.append(fixed_features)
        return original(X, fixed_features, **kwargs)

    monkeypatch.setattr(botorch_gen, "fix_features", spy)
    torch.manual_seed(0)  # the baseline's pruning and the optimizer draw random numbers
    surrogate, digest = _fitted_surrogate()
    acquisition = cls(
        surrogate=surrogate,
        search_space_digest=digest,
        torch_opt_config=TorchOptConfig(objective_weights=torch.tensor([[-1.0]])),
        botorch_acqf_class=qLogNoisyExpectedImprovement,
    )
    candidates, _, _ = acquisition.optimize(
        n=2,
        search_space_digest=digest,
        fixed_features=fixed,
        optimizer_options={"num_restarts": 2, "raw_samples": 32, "options": {"maxiter": 20}},
    )
    monkeypatch.setattr(botorch_gen, "fix_features", original)
    return candidates, handed


def test_the_same_candidates_without_the_per_column_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    ours, ours_handed = _optimize(KernelDiscoveryAcquisition, monkeypatch, None)
    axs, ax_handed = _optimize(Acquisition, monkeypatch, None)
    # BoTorch 0.18 hands the evaluations {} (a copy of every column each time) ...
    assert ax_handed and all(h == {} for h in ax_handed)
    # ... ours hands them None: no copy, and the optimization ends at the same points
    assert ours_handed and all(h is None for h in ours_handed)
    assert torch.equal(ours, axs)


def test_fixed_features_still_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    candidates, handed = _optimize(KernelDiscoveryAcquisition, monkeypatch, {3: 0.25})
    assert any(h for h in handed)  # Ax's own path: fix_features gets the fixed feature
    assert torch.all(candidates[:, 3] == 0.25)


def test_constant_hyperparameters_let_the_warp_of_the_training_inputs_be_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[int, ...]] = []
    phi = WarpedKernel.phi

    def spy(self: WarpedKernel, x: torch.Tensor) -> torch.Tensor:
        calls.append(tuple(x.shape))
        return phi(self, x)

    monkeypatch.setattr(WarpedKernel, "phi", spy)
    candidates, maps = {}, {}
    for cls in (KernelDiscoveryAcquisition, Acquisition):
        torch.manual_seed(0)
        surrogate, digest = _fitted_surrogate(WARPED, seed=1)
        acquisition = cls(
            surrogate=surrogate,
            search_space_digest=digest,
            torch_opt_config=TorchOptConfig(objective_weights=torch.tensor([[-1.0]])),
            botorch_acqf_class=NewRowsqLogNEI,  # kernels of the training inputs as they are
        )
        calls.clear()
        candidates[cls], _, _ = acquisition.optimize(
            n=2,
            search_space_digest=digest,
            optimizer_options={
                "num_restarts": 2,
                "raw_samples": 32,
                "options": {"maxiter": 20},
                "gen_candidates": gen_candidates_scipy_unfixed,  # the only other difference
            },
        )
        maps[cls] = sum(1 for shape in calls if shape[-2] == 16)  # maps of the 16 training rows
        assert all(p.requires_grad for p in surrogate.model.parameters())  # as before
    # the same candidates, bit for bit; the training rows are not mapped at every evaluation
    assert torch.equal(candidates[KernelDiscoveryAcquisition], candidates[Acquisition])
    # (a few times per baseline: 9 against 50 when written)
    assert 20 < maps[Acquisition] and maps[KernelDiscoveryAcquisition] * 4 < maps[Acquisition]
