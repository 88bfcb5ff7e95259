"""GPyTorch's kernel contract and the cylindrical structure of :class:`BOCKKernel`."""

from __future__ import annotations

import unittest
from typing import Any

import pytest
import torch

from ax_kernel_discovery.kernels import BOCKKernel
from ax_kernel_discovery.testing import ARD_TESTS, KernelContractMixin


class TestBOCKKernel(KernelContractMixin, unittest.TestCase):
    skipped_tests = dict.fromkeys(
        ARD_TESTS, "no ARD: one lengthscale on the warped radius, shared by all dimensions"
    )

    # the radius is scaled by the number of columns it receives, so any dimension works
    def create_kernel_no_ard(self, **kwargs: Any) -> BOCKKernel:
        return BOCKKernel(ard_num_dims=1, **kwargs)


def test_bock_is_radial_times_angular() -> None:
    k = BOCKKernel(ard_num_dims=4).double()
    centre = torch.full((1, 4), 0.5, dtype=torch.float64)
    # points on the same ray from the centre have the same direction: angular term = sum(w)
    a = centre + 0.2 * torch.tensor([[1.0, 0, 0, 0]], dtype=torch.float64)
    b = centre + 0.4 * torch.tensor([[1.0, 0, 0, 0]], dtype=torch.float64)
    opposite = centre - 0.2 * torch.tensor([[1.0, 0, 0, 0]], dtype=torch.float64)
    k_same, k_opp = k(a, b).to_dense().item(), k(a, opposite).to_dense().item()
    # opposite directions with equal radii: radial term 1, angular sum_p w_p (-1)^p
    w = k.angular_weights.detach()
    assert k_opp == pytest.approx(float(w[0] - w[1] + w[2]), rel=1e-6)
    assert k(a, a).to_dense().item() == pytest.approx(float(w.sum()), rel=1e-6)
    assert k_same < k(a, a).to_dense().item()


def test_bock_radius_warp_has_no_flat_edges() -> None:
    """Regression (issue 21): moving a point changes the kernel near the centre and corners.

    The radius was clamped to [1e-6, 1 - 1e-6], so near a corner of the box (every
    coordinate at a bound, radius 1) the radial term had zero gradient beside a steep
    slope, as in the Kumaraswamy input warp.
    """
    k = BOCKKernel(ard_num_dims=3).double()
    k.alpha = k.beta = 0.3
    other = torch.tensor([[0.3, 0.6, 0.4]], dtype=torch.float64)
    for corner in ([1.0, 1.0, 1.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0 - 1e-8]):
        x = torch.tensor([corner], dtype=torch.float64, requires_grad=True)
        (grad,) = torch.autograd.grad(k._polar(x)[0].sum(), x)
        assert torch.isfinite(grad).all() and grad.abs().sum() > 0, (corner, grad)
        (grad,) = torch.autograd.grad(k(x, other).to_dense().sum(), x)
        assert torch.isfinite(grad).all() and grad.abs().sum() > 0, (corner, grad)


def test_setters_round_trip_through_the_raw_parameters() -> None:
    k = BOCKKernel(ard_num_dims=4, batch_shape=torch.Size([2])).double()
    k.alpha, k.beta = 0.3, torch.tensor([[2.0], [3.0]], dtype=torch.float64)
    w = torch.tensor([0.1, 1.0, 4.0], dtype=torch.float64)
    k.angular_weights = w
    # a Python float is taken at the kernel's precision
    torch.testing.assert_close(
        k.alpha, torch.full((2, 1), 0.3, dtype=torch.float64), rtol=1e-15, atol=0
    )
    torch.testing.assert_close(k.beta, torch.tensor([[2.0], [3.0]], dtype=torch.float64))
    torch.testing.assert_close(k.angular_weights, w.expand(2, 3))
    for name in ("alpha", "beta", "angular_weights"):
        raw, constraint = getattr(k, f"raw_{name}"), getattr(k, f"raw_{name}_constraint")
        torch.testing.assert_close(constraint.transform(raw), getattr(k, name))
    k.initialize(alpha=2.0)  # GPyTorch's initialize goes through the setter
    torch.testing.assert_close(k.alpha, torch.full((2, 1), 2.0, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="out of bounds"):
        k.alpha = 20.0  # outside [0.1, 10]
