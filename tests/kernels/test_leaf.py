"""The leaf registry: one description per leaf kernel, read by everything that uses leaves."""

from __future__ import annotations

import pytest
import torch
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
    for name in kernels.__all__:
        assert getattr(kernels, name) is not None


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
