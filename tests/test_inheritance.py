"""Warm starts inherited from the members a new kernel contains."""

from __future__ import annotations

import torch

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import Spec, build_kernel, formula
from ax_kernel_discovery.gp import KernelDiscoveryGP
from ax_kernel_discovery.inheritance import inherited_parameters, subtree_paths
from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel
from ax_kernel_discovery.surrogate.state import warm_parameters

DIM = 4
BOCK: Spec = {"kernel": "bock"}
SL: Spec = {"kernel": "sl"}
RBF: Spec = {"kernel": "rbf"}
NEW: Spec = {"kernel": "poly2", "warp": "tanh"}
BOCK_SL: Spec = {"op": "sum", "args": [BOCK, SL]}


def cand(name: str, spec: Spec) -> KernelCandidate:
    return KernelCandidate(name=name, formula=formula(spec), origin="offline", spec=spec)


def gp(c: KernelCandidate, seed: int) -> KernelDiscoveryGP:
    """A GP of ``c`` whose parameters are set to seed-dependent values (as if fitted)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(12, DIM, dtype=torch.double, generator=g)
    Y = torch.rand(12, 1, dtype=torch.double, generator=g)
    model = KernelDiscoveryGP(
        X, Y, covar_module=DiscoveredKernel(c.model_dump_json(), ard_num_dims=DIM)
    )
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model


def params(model: torch.nn.Module, prefix: str) -> dict[str, torch.Tensor]:
    return {n[len(prefix) :]: p for n, p in model.named_parameters() if n.startswith(prefix)}


def test_subtree_paths_name_the_modules_build_kernel_makes() -> None:
    spec: Spec = {"op": "product", "args": [BOCK_SL, NEW]}
    kernel = build_kernel(spec, DIM)
    paths = dict((p, s) for p, s in subtree_paths(spec))
    assert list(paths) == [
        "base_kernel",
        "base_kernel.kernels.0",
        "base_kernel.kernels.0.kernels.0.base_kernel",
        "base_kernel.kernels.0.kernels.1.base_kernel",
        "base_kernel.kernels.1",
    ]
    for path, sub in paths.items():
        built = build_kernel(sub, DIM)
        alone = built if sub.get("op") == "sum" else built.base_kernel
        assert type(kernel.get_submodule(path)) is type(alone)
        assert [n for n, _ in kernel.get_submodule(path).named_parameters()] == [
            n for n, _ in alone.named_parameters()
        ]


def test_a_product_with_a_new_term_inherits_the_members_fitted_parameters() -> None:
    parent, other = cand("bock+sl", BOCK_SL), cand("RBF", RBF)
    parent_gp, other_gp = gp(parent, 1), gp(other, 2)
    child = cand("child", {"op": "product", "args": [BOCK_SL, NEW]})
    warm = inherited_parameters(
        child, [(other, warm_parameters(other_gp)), (parent, warm_parameters(parent_gp))], DIM
    )
    child_gp = gp(child, 3)
    default = {n: p.detach().clone() for n, p in child_gp.named_parameters()}
    child_gp.load_state_dict(warm)
    # the sum inside the product is the parent, output scales of its summands included
    mine = params(child_gp, "covar_module.inner.base_kernel.kernels.0.")
    theirs = params(parent_gp, "covar_module.inner.")
    assert mine.keys() == theirs.keys() and len(mine) == 9
    for name in mine:
        torch.testing.assert_close(mine[name], theirs[name].float().double())
    # the new term keeps its own values; noise and mean come from the parent
    for name, value in params(child_gp, "covar_module.inner.base_kernel.kernels.1.").items():
        torch.testing.assert_close(
            value, default[f"covar_module.inner.base_kernel.kernels.1.{name}"]
        )
    for name in ("likelihood.noise_covar.raw_noise", "mean_module.raw_constant"):
        torch.testing.assert_close(
            dict(child_gp.named_parameters())[name],
            dict(parent_gp.named_parameters())[name].float().double(),
        )
    assert "covar_module.inner.raw_outputscale" not in warm  # the parent, a sum, has none
    assert not any(k.startswith("covar_module.inner.base_kernel.kernels.1") for k in warm)


def test_a_sum_of_two_members_takes_each_ones_scale_and_parameters() -> None:
    bock, rbf = cand("BOCK", BOCK), cand("RBF", RBF)
    bock_gp, rbf_gp = gp(bock, 4), gp(rbf, 5)
    child = cand("child", {"op": "sum", "args": [RBF, BOCK]})
    warm = inherited_parameters(
        child, [(bock, warm_parameters(bock_gp)), (rbf, warm_parameters(rbf_gp))], DIM
    )
    for i, source in enumerate((rbf_gp, bock_gp)):
        torch.testing.assert_close(
            warm[f"covar_module.inner.kernels.{i}.raw_outputscale"],
            dict(source.named_parameters())["covar_module.inner.raw_outputscale"].float(),
        )
        for name, value in params(source, "covar_module.inner.base_kernel.").items():
            torch.testing.assert_close(
                warm[f"covar_module.inner.kernels.{i}.base_kernel.{name}"], value.float()
            )
    # noise and mean from the first (largest, leftmost) match: RBF
    torch.testing.assert_close(
        warm["likelihood.noise_covar.raw_noise"],
        dict(rbf_gp.named_parameters())["likelihood.noise_covar.raw_noise"].float(),
    )


def test_nothing_is_inherited_without_a_member_subtree() -> None:
    rbf = cand("RBF", RBF)
    warped = cand("rbf@tanh", {"kernel": "rbf", "warp": "tanh"})  # a mutation, not a subtree
    assert inherited_parameters(warped, [(rbf, warm_parameters(gp(rbf, 6)))], DIM) == {}
    code = KernelCandidate(name="c", formula="f", origin="discovery", code="class K: pass")
    assert inherited_parameters(code, [(rbf, warm_parameters(gp(rbf, 6)))], DIM) == {}
