"""GPyTorch's kernel contract for :class:`DimScaledPeriodicKernel`."""

from __future__ import annotations

import math
import unittest
from typing import Any

import torch

from ax_kernel_discovery.kernels import DimScaledPeriodicKernel
from ax_kernel_discovery.testing import KernelContractMixin


class TestDimScaledPeriodicKernel(KernelContractMixin, unittest.TestCase):
    data_dim = 2

    def create_kernel_for_dim(self, dim: int, **kwargs: Any) -> DimScaledPeriodicKernel:
        return DimScaledPeriodicKernel(ard_num_dims=dim, **kwargs)

    def test_formula(self) -> None:
        kernel = self.create_kernel_for_dim(3).double()
        kernel.lengthscale = torch.tensor([[0.3, 0.7, 1.5]], dtype=torch.float64)
        kernel.period_length = torch.tensor([[0.5, 1.0, 2.0]], dtype=torch.float64)
        x1, x2 = torch.rand(4, 3, dtype=torch.float64), torch.rand(5, 3, dtype=torch.float64)
        diff = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
        s = (torch.sin(math.pi * diff / kernel.period_length).pow(2) / kernel.lengthscale).sum(-1)
        torch.testing.assert_close(kernel(x1, x2).to_dense(), torch.exp(-2 * s))
