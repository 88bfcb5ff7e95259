"""GPyTorch's kernel contract for :class:`DimScaledMatern52Kernel`."""

from __future__ import annotations

import math
import unittest
from typing import Any

import torch

from ax_kernel_discovery.kernels import DimScaledMatern52Kernel
from ax_kernel_discovery.testing import KernelContractMixin


class TestDimScaledMatern52Kernel(KernelContractMixin, unittest.TestCase):
    data_dim = 2

    def create_kernel_for_dim(self, dim: int, **kwargs: Any) -> DimScaledMatern52Kernel:
        return DimScaledMatern52Kernel(ard_num_dims=dim, **kwargs)

    def test_formula(self) -> None:
        kernel = self.create_kernel_for_dim(3).double()
        kernel.lengthscale = torch.tensor([[0.3, 0.7, 1.5]], dtype=torch.float64)
        x1, x2 = torch.rand(4, 3, dtype=torch.float64), torch.rand(5, 3, dtype=torch.float64)
        r = ((x1.unsqueeze(-2) - x2.unsqueeze(-3)) / kernel.lengthscale).pow(2).sum(-1).sqrt()
        want = (1 + math.sqrt(5) * r + 5 / 3 * r**2) * torch.exp(-math.sqrt(5) * r)
        torch.testing.assert_close(kernel(x1, x2).to_dense(), want)
