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


def _feature_map(name: str, dim: int = 4, **kwargs: Any) -> FeatureMapKernel:
    base = DimScaledMatern52Kernel(ard_num_dims=feature_map_output_dim(name, dim), **kwargs)
    return FeatureMapKernel(base, name, dim=dim, **kwargs).double()


def test_feature_maps_match_their_formulas() -> None:
    x = torch.rand(6, 4, dtype=torch.float64)
    centred = x - 0.5
    norm = centred.norm(dim=-1, keepdim=True)
    torch.testing.assert_close(_feature_map("radius").phi(x), norm / 2.0, rtol=0, atol=1e-15)
    torch.testing.assert_close(_feature_map("direction").phi(x), centred / norm)
    bezier = _feature_map("bezier")  # starts at the identity curve: t(x) = mean of x
    torch.testing.assert_close(bezier.phi(x), x.mean(-1, keepdim=True))
    w = torch.tensor([0.2, -0.1, 0.9, 0.4], dtype=torch.float64)
    bezier.initialize(control=w)
    torch.testing.assert_close(bezier.control, w)
    curve = (
        w[0] * (1 - x) ** 3 + 3 * w[1] * x * (1 - x) ** 2 + 3 * w[2] * x**2 * (1 - x) + w[3] * x**3
    )
    torch.testing.assert_close(bezier.phi(x), curve.mean(-1, keepdim=True))
    y = torch.rand(3, 4, dtype=torch.float64)
    expected = bezier.base_kernel(bezier.phi(x), bezier.phi(y)).to_dense()
    torch.testing.assert_close(bezier(x, y).to_dense(), expected, rtol=0, atol=1e-15)


def test_bezier_control_keeps_its_state_dict_name() -> None:
    """Saved runs and the committed replay fixtures load ``control``."""
    kernel = _feature_map("bezier", batch_shape=torch.Size([2]))
    assert {k for k in kernel.state_dict() if not k.startswith("base_kernel.")} == {"control"}
    assert kernel.control.shape == (2, 4)
    assert not {k for k in _feature_map("radius").state_dict() if not k.startswith("base_")}
