"""GPyTorch's kernel contract for expression-tree composites (what ``build_kernel`` makes).

The trees are the start set's BOCK and SL in a product of a sum, a sum with a warped
leaf, and the paper's three discovered kernels. ``build_kernel`` makes unbatched trees
over all D inputs, so GPyTorch's tests that need a batched kernel or ``active_dims`` are
skipped; :class:`~ax_kernel_discovery.surrogate.discovered.DiscoveredKernel`, the class Ax
builds members with, runs the ``active_dims`` and batch tests with a tree inside
(``tests/kernels/test_discovered.py``).
"""

from __future__ import annotations

import pickle
import unittest
from typing import Any

import torch
from gpytorch.kernels import Kernel

from ax_kernel_discovery.expression import PAPER_KERNELS, Spec, build_kernel, leaf
from ax_kernel_discovery.testing import KernelContractMixin

_UNBATCHED = (
    "build_kernel makes unbatched trees (Ax fits one GP per outcome; DiscoveredKernel, "
    "which Ax holds, shares hyperparameters across batches)"
)
_NO_ACTIVE_DIMS = (
    "build_kernel takes no active_dims (Ax passes all D columns); DiscoveredKernel, which "
    "Ax holds, takes them and passes this test with a tree inside"
)
_SKIPS = {
    **dict.fromkeys(
        (
            "test_smoke_double_batch_kernel_double_batch_x_no_ard",
            "test_smoke_double_batch_kernel_double_batch_x_ard",
            "test_kernel_getitem_single_batch",
            "test_kernel_getitem_double_batch",
            "test_kernel_getitem_broadcast",
        ),
        _UNBATCHED,
    ),
    "test_active_dims_of_bound_kernel": _NO_ACTIVE_DIMS,
}


class _TreeContract:
    spec: Spec
    data_dim = 2
    skipped_tests = _SKIPS

    def create_kernel_for_dim(self, dim: int, **kwargs: Any) -> Kernel:
        batch_shape = kwargs.pop("batch_shape", torch.Size([]))
        if batch_shape != torch.Size([]) or kwargs:
            raise AssertionError(f"skipped test asked for {batch_shape} / {kwargs}")
        return build_kernel(self.spec, dim)

    def test_pickle_keeps_the_values(self) -> None:
        kernel = self.create_kernel_for_dim(3).double()
        with torch.no_grad():
            for _, p in kernel.named_parameters():
                p.add_(0.3 * torch.randn_like(p))
        x = torch.rand(6, 3, dtype=torch.float64)
        copy = pickle.loads(pickle.dumps(kernel))
        self.assertAllClose(copy(x).to_dense(), kernel(x).to_dense())  # type: ignore[attr-defined]


class TestProductOfSum(_TreeContract, KernelContractMixin, unittest.TestCase):
    spec = {
        "op": "product",
        "args": [leaf("bock"), {"op": "sum", "args": [leaf("sl"), leaf("poly2", "tanh")]}],
    }


class TestSumWithWarpedLeaf(_TreeContract, KernelContractMixin, unittest.TestCase):
    spec = {"op": "sum", "args": [leaf("matern52", "kumaraswamy"), leaf("rq", ard=False)]}


class TestPaperMatern52TanhPolyRQ(_TreeContract, KernelContractMixin, unittest.TestCase):
    spec = PAPER_KERNELS["matern52_x_tanhpoly_plus_rq"]


class TestPaperRQBezierPoly(_TreeContract, KernelContractMixin, unittest.TestCase):
    spec = PAPER_KERNELS["rq_plus_bezier_poly"]


class TestPaperRQSphericalMatern52WarpedPeriodic(
    _TreeContract, KernelContractMixin, unittest.TestCase
):
    spec = PAPER_KERNELS["rq_spherical_matern52_warped_periodic"]
