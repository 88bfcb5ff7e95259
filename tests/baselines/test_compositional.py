"""Compositional Search: expansions start from their parents' fitted hyperparameters."""

from __future__ import annotations

import pytest
import torch

from ax_kernel_discovery.baselines.compositional import reuse_hyperparameters, reuse_parent_fit
from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import formula
from ax_kernel_discovery.population import base_candidate
from ax_kernel_discovery.proposers.compositional import expand

torch.set_num_threads(1)


def _fitted_like_state(
    cand: KernelCandidate, dim: int, seed: int
) -> tuple[dict[str, torch.Tensor], torch.nn.Module]:
    """State dict of a kernel-discovery GP with distinct random raw hyperparameters."""
    from ax_kernel_discovery.gp import KernelDiscoveryGP
    from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel

    gen = torch.Generator().manual_seed(seed)
    X = torch.rand(8, dim, dtype=torch.float64, generator=gen)
    model = KernelDiscoveryGP(
        X, X.sum(-1, keepdim=True), covar_module=DiscoveredKernel(cand.model_dump_json(), dim)
    )
    model.double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, dtype=p.dtype, generator=gen))
    return {k: v.detach().clone() for k, v in model.state_dict().items()}, model


@pytest.mark.parametrize("op", ["sum", "product"])
def test_reuse_hyperparameters(op: str) -> None:
    from ax_kernel_discovery.gp import KernelDiscoveryGP
    from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel

    dim = 3
    parent, base = base_candidate("rq"), base_candidate("sl")
    spec = expand(parent.spec, base.spec, op)
    cand = KernelCandidate(
        name="cs", formula=formula(spec), origin="offline", parents=("RQ", "SL"), spec=spec
    )
    p_state, _ = _fitted_like_state(parent, dim, 0)
    b_state, _ = _fitted_like_state(base, dim, 1)
    warm = {"RQ": p_state, "SL": b_state}
    state = reuse_hyperparameters(cand, warm, dim)
    X = torch.rand(8, dim, dtype=torch.float64)
    model = KernelDiscoveryGP(
        X, X.sum(-1, keepdim=True), covar_module=DiscoveredKernel(cand.model_dump_json(), dim)
    )
    model.double()
    model.load_state_dict(state)  # strict: the composed state is complete
    inner = "covar_module.inner."
    assert torch.equal(
        state["likelihood.noise_covar.raw_noise"], p_state["likelihood.noise_covar.raw_noise"]
    )
    if op == "sum":
        pairs = [
            ("kernels.0.base_kernel.raw_lengthscale", p_state, "base_kernel.raw_lengthscale"),
            ("kernels.0.raw_outputscale", p_state, "raw_outputscale"),
            ("kernels.1.base_kernel.raw_weights", b_state, "base_kernel.raw_weights"),
            ("kernels.1.raw_outputscale", b_state, "raw_outputscale"),
        ]
    else:
        pairs = [
            ("base_kernel.kernels.0.raw_alpha", p_state, "base_kernel.raw_alpha"),
            ("raw_outputscale", p_state, "raw_outputscale"),
            ("base_kernel.kernels.1.raw_lengthscale", b_state, "base_kernel.raw_lengthscale"),
        ]
    for dst, source, src in pairs:
        assert torch.equal(state[inner + dst], source[inner + src]), dst
    assert reuse_hyperparameters(cand, {}, dim) is None
    start = reuse_parent_fit(cand, [], warm, dim)  # the start rule: a warm start's steps
    assert start is not None and start.warm_steps and start.parameters.keys() == state.keys()
    assert reuse_parent_fit(base, [], warm, dim) is None  # not an expansion
