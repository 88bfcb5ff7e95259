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
