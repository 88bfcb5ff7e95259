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

    def test_sum_with_a_rank_deficient_kernel(self) -> None:
        # A lazy low-rank Gram matrix made linear_operator factor the other summand,
        # which failed for a rank-two cosine kernel: the sum must be the dense sum.
        from ax_kernel_discovery.kernels.cosine import ProjectedCosineKernel

        cosine = ProjectedCosineKernel(ard_num_dims=3).double()
        linear = self.create_kernel_no_ard().double()
        x = torch.rand(12, 3, dtype=torch.float64)
        out = (cosine + linear)(x).to_dense()
        want = cosine(x).to_dense() + linear.variance * (x - 0.5) @ (x - 0.5).T
        torch.testing.assert_close(out, want)
        self.assertIsInstance(linear.forward(x, x), torch.Tensor)
