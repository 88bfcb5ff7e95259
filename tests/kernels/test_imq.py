"""GPyTorch's kernel contract for :class:`DimScaledIMQKernel`."""

from __future__ import annotations

import unittest
from typing import Any

import torch

from ax_kernel_discovery.kernels.imq import DimScaledIMQKernel
from ax_kernel_discovery.testing import KernelContractMixin


class TestDimScaledIMQKernel(KernelContractMixin, unittest.TestCase):
    data_dim = 2

    def create_kernel_for_dim(self, dim: int, **kwargs: Any) -> DimScaledIMQKernel:
        return DimScaledIMQKernel(ard_num_dims=dim, **kwargs)

    def test_formula(self) -> None:
        kernel = self.create_kernel_for_dim(3).double()
        kernel.lengthscale = torch.tensor([[0.3, 0.7, 1.5]], dtype=torch.float64)
        x1, x2 = torch.rand(4, 3, dtype=torch.float64), torch.rand(5, 3, dtype=torch.float64)
        r2 = ((x1.unsqueeze(-2) - x2.unsqueeze(-3)) / kernel.lengthscale).pow(2).sum(-1)
        torch.testing.assert_close(kernel(x1, x2).to_dense(), (1 + r2).rsqrt())
