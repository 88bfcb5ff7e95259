"""GPyTorch's kernel contract and the sphere of :class:`SphericalLinearKernel`."""

from __future__ import annotations

import pickle
import unittest
from typing import Any

import torch

from ax_kernel_discovery.kernels import SphericalLinearKernel
from ax_kernel_discovery.testing import KernelContractMixin


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


class TestSphericalLinearKernel(KernelContractMixin, unittest.TestCase):
    data_dim = 2

    def create_kernel_for_dim(self, dim: int, **kwargs: Any) -> SphericalLinearKernel:
        return SphericalLinearKernel(ard_num_dims=dim, **kwargs)

    def test_pickle_keeps_priors_and_values(self) -> None:
        kernel = self.create_kernel_for_dim(3).double()
        kernel.initialize(
            raw_weights=torch.tensor([0.3, -0.2]), raw_global_scale=torch.tensor([0.4])
        )
        copy = pickle.loads(pickle.dumps(kernel))
        x = _x(5, 3)
        torch.testing.assert_close(copy(x).to_dense(), kernel(x).to_dense())
        priors = {name: closure(module) for name, module, _, closure, _ in copy.named_priors()}
        torch.testing.assert_close(priors["global_scale_prior"], kernel.global_scale)
        torch.testing.assert_close(priors["raw_weights_prior"], kernel.raw_weights)


def test_sl_lives_on_the_sphere() -> None:
    k = SphericalLinearKernel(ard_num_dims=5).double()
    z = k._project(_x(10, 5))
    assert torch.allclose(z.norm(dim=-1), torch.ones(10, dtype=torch.float64))
    w0, w1 = k.weights.detach()
    diag = k(_x(3, 5), _x(3, 5)).to_dense().diagonal().detach()
    assert torch.allclose(diag, torch.full((3,), float(w0 + w1), dtype=torch.float64))
    # far-apart points are less similar than identical ones
    far = (
        k(torch.zeros(1, 5, dtype=torch.float64), torch.ones(1, 5, dtype=torch.float64))
        .to_dense()
        .item()
    )
    assert far < float(w0 + w1)
