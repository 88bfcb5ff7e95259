"""The leaf registry: one description per leaf kernel, read by everything that uses leaves."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
import torch
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from gpytorch.kernels import Kernel

import ax_kernel_discovery.kernels as kernels
from ax_kernel_discovery.expression import (
    CLASSIC_LEAVES,
    DISTANCE_KERNELS,
    EXTENDED_DISTANCE_KERNELS,
    ISOTROPIC_LEAVES,
    acquisition_cost,
    build_kernel,
    formula,
    leaf,
    validate_spec,
)
from ax_kernel_discovery.kernels import LEAVES, DimScaledRBFKernel, Leaf
from ax_kernel_discovery.kernels.leaf import ard, leaf_table
from ax_kernel_discovery.population import start_candidates
from ax_kernel_discovery.proposers.offline import OfflineEvolutionProposer


def test_the_grammars_tables_are_read_from_the_leaves_in_the_offline_operators_order() -> None:
    """The tables the package's leaves had before the registry, in the same order (the
    offline operator draws from them: their order is its random draws' order). A new
    extended leaf goes after these; a new classic one changes the default operator's draws."""
    assert CLASSIC_LEAVES[:9] == (
        "rbf", "matern52", "matern32", "rq", "bock", "sl", "linear", "periodic", "poly2",
    )  # fmt: skip
    extended = [k for k in LEAVES if k not in CLASSIC_LEAVES]
    assert extended[:3] == ["imq", "poly3", "cosine"]
    assert DISTANCE_KERNELS[:4] == ISOTROPIC_LEAVES[:4] == ("rbf", "matern52", "matern32", "rq")
    assert EXTENDED_DISTANCE_KERNELS[:5] == (*DISTANCE_KERNELS[:4], "imq")
    assert {"sl", "bock"} <= {k for k, v in LEAVES.items() if v.projecting}
    assert OfflineEvolutionProposer()._polys[:1] == ("poly2",)
    assert OfflineEvolutionProposer(grammar="extended")._polys[:2] == ("poly2", "poly3")
    assert [c.name for c in start_candidates()] == ["RBF", "Matern52", "RQ", "BOCK", "SL"]


@pytest.mark.parametrize("name", list(LEAVES))
def test_every_leaf_builds_a_kernel_of_its_dimension(name: str) -> None:
    kernel = LEAVES[name].factory(3)
    assert isinstance(kernel, Kernel)
    x = torch.rand(4, 3, dtype=torch.float64)
    assert kernel.to(torch.float64)(x).to_dense().shape == (4, 4)
    if LEAVES[name].isotropic is not None:
        assert LEAVES[name].isotropic(3)(x).to_dense().shape == (4, 4)  # type: ignore[misc]


def test_every_kernel_class_the_package_exports_is_importable_from_kernels() -> None:
    """Every public Kernel class of a module of ``kernels/`` is exported from
    ``kernels`` (as the module's own class), and every exported ``...Kernel`` is one."""
    defined = {}
    for info in pkgutil.iter_modules(kernels.__path__, f"{kernels.__name__}."):
        module = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Kernel) and cls.__module__ == info.name and name[0] != "_":
                defined[name] = cls
    assert len(defined) >= 13  # one per kernel module (issue 49: GPyTorch's layout)
    exported = {n: getattr(kernels, n) for n in kernels.__all__ if n.endswith("Kernel")}
    assert exported == defined
    assert all(isinstance(v, kernels.Leaf) for v in kernels.LEAVES.values())
    # the exported prior is BoTorch's default lengthscale prior at the same dimension
    ours = kernels.dim_scaled_lengthscale_prior(7)
    botorch = get_covar_module_with_dim_scaled_prior(ard_num_dims=7).lengthscale_prior
    assert type(ours) is type(botorch)
    assert float(ours.loc) == pytest.approx(float(botorch.loc), rel=1e-12)
    assert float(ours.scale) == pytest.approx(float(botorch.scale), rel=1e-12)


def test_a_new_leaf_is_one_registration(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a kernel of its own needs besides its module: one Leaf in the table."""

    class Toy(DimScaledRBFKernel):
        formula = "toy(u, u')"

    monkeypatch.setitem(LEAVES, "toy", Leaf("toy", ard(Toy), Toy.formula, projecting=True))
    spec = leaf("toy")
    validate_spec(spec)
    assert isinstance(build_kernel(spec, 3).base_kernel, Toy)
    assert "TOY(u, u') = toy(u, u')" in formula(spec)
    assert acquisition_cost(spec) == 2  # one leaf, one projection


def test_two_leaves_cannot_share_a_name() -> None:
    with pytest.raises(ValueError, match="two leaves are named 'rbf'"):
        leaf_table(LEAVES["rbf"], LEAVES["rbf"])
