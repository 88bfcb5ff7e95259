"""Shape, symmetry, PSD, diag and gradient checks for every kernel of the package."""

from __future__ import annotations

import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import Kernel
from gpytorch.mlls import ExactMarginalLogLikelihood

from ax_kernel_discovery.expression import build_kernel, leaf
from ax_kernel_discovery.kernels import (
    LEAVES,
    DimScaledMatern52Kernel,
    DimScaledRBFKernel,
    dim_scaled_lengthscale_prior,
)
from ax_kernel_discovery.kernels.warped import WARP_FORMULAS

DIM = 7


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _kernels() -> list[tuple[str, Kernel]]:
    out = [(name, build_kernel(leaf(name), DIM)) for name in LEAVES]
    out += [(f"matern52@{w}", build_kernel(leaf("matern52", w), DIM)) for w in WARP_FORMULAS]
    out += [("rq~iso", build_kernel(leaf("rq", ard=False), DIM))]
    out += [
        (
            "composite",
            build_kernel(
                {
                    "op": "product",
                    "args": [
                        leaf("bock"),
                        {"op": "sum", "args": [leaf("sl"), leaf("poly2", "tanh")]},
                    ],
                },
                DIM,
            ),
        )
    ]
    return [(n, k.double()) for n, k in out]


KERNELS = _kernels()


@pytest.mark.parametrize(("name", "kernel"), KERNELS, ids=[n for n, _ in KERNELS])
def test_shapes_symmetry_psd_diag(name: str, kernel: Kernel) -> None:
    x = _x(12, DIM)
    x[0, 0], x[1, 1] = -1e-9, 1 + 1e-9  # a hair outside [0, 1], as after Ax's Normalize
    K = kernel(x, x).to_dense()
    assert K.shape == (12, 12)
    assert torch.allclose(K, K.T, atol=1e-10)
    assert torch.linalg.eigvalsh(K).min() > -1e-8 * K.abs().max()
    assert torch.allclose(kernel(x, x, diag=True), torch.diagonal(K), atol=1e-8)
    assert kernel(_x(5, DIM), _x(1, DIM, seed=1)).to_dense().shape == (5, 1)
    assert kernel(_x(3, DIM), _x(7, DIM, seed=1)).to_dense().shape == (3, 7)
    assert kernel(_x(2, 4, DIM), _x(2, 3, DIM, seed=1)).to_dense().shape == (2, 4, 3)
    assert torch.isfinite(K).all()


@pytest.mark.parametrize(("name", "kernel"), KERNELS, ids=[n for n, _ in KERNELS])
def test_gradients_reach_every_parameter(name: str, kernel: Kernel) -> None:
    x = _x(6, DIM)
    kernel.zero_grad()
    kernel(x, _x(4, DIM, seed=2)).to_dense().sum().backward()
    # a parameter only a prior reads (the SAAS prior's global shrinkage) gets its gradient
    # from the prior term of the fit's objective, not from K
    prior_only = {"saas": {"raw_tau"}}.get(name, set())
    no_grad = {n.rsplit(".", 1)[-1] for n, p in kernel.named_parameters() if p.grad is None}
    assert no_grad == prior_only
    if prior_only:  # the fit's objective: the marginal log likelihood with the prior terms
        model = SingleTaskGP(x, _x(6, 1, seed=3), covar_module=kernel)
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        mll(model(x), model.train_targets).backward()
    for pname, p in kernel.named_parameters():
        assert p.grad is not None, f"{name}: no gradient for {pname}"
        assert torch.isfinite(p.grad).all(), f"{name}: non-finite gradient for {pname}"


def test_dim_scaled_prior_matches_paper() -> None:
    prior = dim_scaled_lengthscale_prior(100)
    assert prior.loc.item() == pytest.approx(2**0.5 + 0.5 * torch.log(torch.tensor(100.0)).item())
    assert prior.scale.item() == pytest.approx(3**0.5)
    rbf = DimScaledRBFKernel(ard_num_dims=100)
    assert rbf.lengthscale.shape == (1, 100)
    assert rbf.lengthscale[0, 0].item() == pytest.approx(prior.mode.item(), rel=1e-6)
    assert DimScaledMatern52Kernel(ard_num_dims=3).nu == 2.5
