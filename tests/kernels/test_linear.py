"""GPyTorch's kernel contract for :class:`CenteredLinearKernel`."""

from __future__ import annotations

import unittest
from typing import Any

import torch

from ax_kernel_discovery.kernels import CenteredLinearKernel
from ax_kernel_discovery.testing import ARD_TESTS, KernelContractMixin


class TestCenteredLinearKernel(KernelContractMixin, unittest.TestCase):
    skipped_tests = dict.fromkeys(ARD_TESTS, "no ARD: one variance for all dimensions")

    def create_kernel_no_ard(self, **kwargs: Any) -> CenteredLinearKernel:
        return CenteredLinearKernel(**kwargs)

    def test_formula(self) -> None:
        kernel = self.create_kernel_no_ard().double()
        kernel.variance = 1.7
        x1, x2 = torch.rand(4, 3, dtype=torch.float64), torch.rand(5, 3, dtype=torch.float64)
        want = 1.7 * (x1 - 0.5) @ (x2 - 0.5).T
        torch.testing.assert_close(kernel(x1, x2).to_dense(), want)
