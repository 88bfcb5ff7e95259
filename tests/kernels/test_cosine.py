"""GPyTorch's kernel contract for :class:`ProjectedCosineKernel`."""

from __future__ import annotations

import math
import unittest
from typing import Any

import torch

from ax_kernel_discovery.kernels.cosine import ProjectedCosineKernel
from ax_kernel_discovery.testing import KernelContractMixin


class TestProjectedCosineKernel(KernelContractMixin, unittest.TestCase):
    data_dim = 2

    def create_kernel_for_dim(self, dim: int, **kwargs: Any) -> ProjectedCosineKernel:
        return ProjectedCosineKernel(ard_num_dims=dim, **kwargs)

    def test_formula(self) -> None:
        kernel = self.create_kernel_for_dim(3).double()
        kernel.initialize(
            raw_period=kernel.raw_period_constraint.inverse_transform(
                torch.tensor([[0.5, 1.0, 4.0]], dtype=torch.float64)
            )
        )
        x1, x2 = torch.rand(4, 3, dtype=torch.float64), torch.rand(5, 3, dtype=torch.float64)
        phase = 2 * math.pi * ((x1.unsqueeze(-2) - x2.unsqueeze(-3)) / kernel.period).sum(-1)
        torch.testing.assert_close(kernel(x1, x2).to_dense(), torch.cos(phase))
