"""GPyTorch's kernel contract for :class:`WarpedKernel` with every warp, and the warps."""

from __future__ import annotations

import math
import unittest
from typing import Any

import pytest
import torch

from ax_kernel_discovery.kernels import DimScaledMatern52Kernel, WarpedKernel
from ax_kernel_discovery.kernels.warped import warp_output_dim
from ax_kernel_discovery.testing import KernelContractMixin


class _WarpedContract:
    """A Matern-5/2 (ARD, dimension-scaled prior) on warped inputs, batched throughout."""

    warp: str
    data_dim = 2

    def create_kernel_for_dim(self, dim: int, **kwargs: Any) -> WarpedKernel:
        batch_shape = kwargs.get("batch_shape", torch.Size([]))
        base = DimScaledMatern52Kernel(
            ard_num_dims=warp_output_dim(self.warp, dim), batch_shape=batch_shape
        )
        return WarpedKernel(base, warp=self.warp, dim=dim, **kwargs)

    def test_batched_warp_parameters_are_indexed(self) -> None:
        kernel = self.create_kernel_for_dim(3, batch_shape=torch.Size([3, 2]))
        with torch.no_grad():
            for _, p in kernel.named_parameters():
                p.add_(torch.randn_like(p))
        x = torch.rand(3, 2, 5, 3)
        full = kernel(x).to_dense()
        for i in range(3):
            for j in range(2):
                one = kernel[i, j]
                self.assertEqual(one.batch_shape, torch.Size([]))  # type: ignore[attr-defined]
                self.assertAllClose(one(x[i, j]).to_dense(), full[i, j])  # type: ignore[attr-defined]


class TestWarpedKernelIdentity(_WarpedContract, KernelContractMixin, unittest.TestCase):
    warp = "identity"


class TestWarpedKernelTanh(_WarpedContract, KernelContractMixin, unittest.TestCase):
    warp = "tanh"


class TestWarpedKernelArctan(_WarpedContract, KernelContractMixin, unittest.TestCase):
    warp = "arctan"


class TestWarpedKernelKumaraswamy(_WarpedContract, KernelContractMixin, unittest.TestCase):
    warp = "kumaraswamy"


class TestWarpedKernelSpherical(_WarpedContract, KernelContractMixin, unittest.TestCase):
    warp = "spherical"


def test_warps_match_their_formulas() -> None:
    x = torch.rand(6, 4, dtype=torch.float64)
    identity = WarpedKernel(DimScaledMatern52Kernel(ard_num_dims=4), "identity", dim=4).double()
    torch.testing.assert_close(identity.phi(x), x)
    tanh = WarpedKernel(DimScaledMatern52Kernel(ard_num_dims=4), "tanh", dim=4).double()
    c = tanh.raw_c_constraint.transform(tanh.raw_c).item()
    torch.testing.assert_close(tanh.phi(x), torch.tanh(c * (x - 0.5)))
    kuma = WarpedKernel(DimScaledMatern52Kernel(ard_num_dims=4), "kumaraswamy", dim=4).double()
    torch.testing.assert_close(kuma.phi(x), x, atol=1e-5, rtol=0)  # starts at a = b = 1
    sph = WarpedKernel(DimScaledMatern52Kernel(ard_num_dims=5), "spherical", dim=4).double()
    z = sph.phi(x)
    assert z.shape == (6, 5)
    torch.testing.assert_close(z.norm(dim=-1), torch.ones(6, dtype=torch.float64))
    c = sph.raw_c_constraint.transform(sph.raw_c).item()
    u = c * (x - 0.5) / math.sqrt(4)
    torch.testing.assert_close(z[:, :4], 2 * u / (1 + u.pow(2).sum(-1, keepdim=True)))


def test_kumaraswamy_warp_has_no_flat_edges() -> None:
    """Regression (issue 21): the warp's derivative is positive and finite on all of [0, 1].

    The warp clamped x to [1e-6, 1 - 1e-6] (and 1 - x^a to >= 1e-6): a zero derivative on
    the box's edges beside slopes of ~1e4 when a or b < 1. Acquisition optimization,
    which often ends at a bound, then failed in L-BFGS-B's line search (status ABNORMAL)
    and BoTorch restarted it: every study round with such a failure had chosen a
    Kumaraswamy-warped kernel.
    """
    x = torch.tensor([0.0, 1e-9, 5e-7, 1e-6, 0.5, 1 - 1e-6, 1 - 5e-7, 1.0], dtype=torch.float64)
    for a, b in ((0.2, 0.2), (0.2, 5.0), (5.0, 0.2), (5.0, 5.0), (0.5, 3.0)):
        kuma = WarpedKernel(DimScaledMatern52Kernel(ard_num_dims=1), "kumaraswamy", dim=1)
        kuma = kuma.double()
        # in single precision 0.2 and 5 lie a hair inside the bounds (at them raw = -inf, inf)
        kuma.a, kuma.b = torch.tensor(a), torch.tensor(b)
        xs = x.clone().unsqueeze(-1).requires_grad_(True)
        phi = kuma.phi(xs)
        (grad,) = torch.autograd.grad(phi.sum(), xs)
        assert torch.isfinite(grad).all() and (grad > 0).all(), (a, b, grad.flatten())
        assert (phi >= 0).all() and (phi <= 1).all()


def _warped(warp: str, dim: int = 4, **kwargs: Any) -> WarpedKernel:
    base = DimScaledMatern52Kernel(ard_num_dims=warp_output_dim(warp, dim), **kwargs)
    return WarpedKernel(base, warp, dim=dim, **kwargs).double()


@pytest.mark.parametrize(("warp", "start"), [("tanh", 2.0), ("arctan", 2.0), ("spherical", 3.0)])
def test_c_setter_round_trips_through_raw_c(warp: str, start: float) -> None:
    kernel = _warped(warp)
    torch.testing.assert_close(kernel.c, torch.full((1,), start, dtype=torch.float64))
    kernel.c = 0.7  # a Python float is taken at the kernel's precision
    torch.testing.assert_close(
        kernel.c, torch.full((1,), 0.7, dtype=torch.float64), rtol=1e-15, atol=0
    )
    constraint = kernel.raw_c_constraint
    torch.testing.assert_close(kernel.raw_c, constraint.inverse_transform(kernel.c))
    # GPyTorch's initialize goes through the setter
    kernel.initialize(c=torch.tensor(1.3, dtype=torch.float64))
    torch.testing.assert_close(kernel.c, torch.full((1,), 1.3, dtype=torch.float64))
    x = torch.rand(5, 4, dtype=torch.float64)
    u = 1.3 * (x - 0.5)
    expected = {"tanh": torch.tanh(u), "arctan": torch.atan(u)}.get(warp)
    if expected is not None:  # the spherical map is checked in test_warps_match_their_formulas
        torch.testing.assert_close(kernel.phi(x), expected, rtol=0, atol=1e-14)


def test_kumaraswamy_setters_take_one_value_per_dimension() -> None:
    kernel = _warped("kumaraswamy", batch_shape=torch.Size([2]))
    ones = torch.ones(2, 4, dtype=torch.float64)
    torch.testing.assert_close(kernel.a, ones)
    torch.testing.assert_close(kernel.b, ones)
    a = torch.tensor([0.3, 1.0, 2.0, 4.5], dtype=torch.float64)
    kernel.a, kernel.b = a, 2.5
    torch.testing.assert_close(kernel.a, a.expand(2, 4))
    torch.testing.assert_close(kernel.b, torch.full((2, 4), 2.5, dtype=torch.float64))
    x = torch.rand(2, 6, 4, dtype=torch.float64)
    u = x * (1 - 2e-6) + 1e-6
    torch.testing.assert_close(kernel.phi(x), 1 - (1 - u.pow(a)).pow(2.5), rtol=0, atol=1e-15)
    with pytest.raises(RuntimeError, match="out of bounds"):
        kernel.a = 7.0  # outside [0.2, 5]


def test_setting_a_parameter_the_warp_lacks_names_the_warps_that_have_it() -> None:
    with pytest.raises(AttributeError, match="'kumaraswamy' warp has no parameter 'c'"):
        _warped("kumaraswamy").c = 1.0
    with pytest.raises(AttributeError, match="only kumaraswamy warps do"):
        _warped("tanh").a = 1.0


@pytest.mark.parametrize(
    ("warp", "names"),
    [
        ("identity", set()),
        ("tanh", {"raw_c", "raw_c_constraint.lower_bound", "raw_c_constraint.upper_bound"}),
        (
            "kumaraswamy",
            {"raw_a", "raw_b"}
            | {f"raw_{p}_constraint.{b}" for p in "ab" for b in ("lower_bound", "upper_bound")},
        ),
    ],
)
def test_state_dict_keys_are_those_of_saved_runs(warp: str, names: set[str]) -> None:
    """Saved runs and the committed replay fixtures load these names."""
    keys = set(_warped(warp).state_dict())
    assert {k for k in keys if not k.startswith("base_kernel.")} == names
    assert "base_kernel.raw_lengthscale" in keys
