"""GPyTorch's kernel contract for :class:`FeatureMapKernel` with every feature map."""

from __future__ import annotations

import unittest
from typing import Any

import torch

from ax_kernel_discovery.kernels import DimScaledMatern52Kernel
from ax_kernel_discovery.kernels.feature_maps import FeatureMapKernel, feature_map_output_dim
from ax_kernel_discovery.testing import KernelContractMixin


class _FeatureMapContract:
    """A Matern-5/2 (ARD, dimension-scaled prior) on the features, batched throughout."""

    feature_map: str
    data_dim = 2

    def create_kernel_for_dim(self, dim: int, **kwargs: Any) -> FeatureMapKernel:
        batch_shape = kwargs.get("batch_shape", torch.Size([]))
        base = DimScaledMatern52Kernel(
            ard_num_dims=feature_map_output_dim(self.feature_map, dim), batch_shape=batch_shape
        )
        return FeatureMapKernel(base, self.feature_map, dim=dim, **kwargs)


class TestFeatureMapKernelBezier(_FeatureMapContract, KernelContractMixin, unittest.TestCase):
    feature_map = "bezier"


class TestFeatureMapKernelRadius(_FeatureMapContract, KernelContractMixin, unittest.TestCase):
    feature_map = "radius"


class TestFeatureMapKernelDirection(_FeatureMapContract, KernelContractMixin, unittest.TestCase):
    feature_map = "direction"
