"""GPyTorch's kernel contract for :class:`DiscoveredKernel`, the class Ax builds members from.

Three members: an expression tree (the package's own kernels) and two kernels of
LLM-written code loaded through the sandbox (function style and pair style), which
pickle by rebuilding from their source.
"""

from __future__ import annotations

import copy
import io
import pickle
import unittest
from typing import Any

import pytest
import torch

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import formula, leaf
from ax_kernel_discovery.llm.function_kernel import build_kernel_source
from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel
from ax_kernel_discovery.testing import KernelContractMixin

TREE = {"op": "sum", "args": [leaf("rbf", "tanh"), leaf("sl")]}

RQ_FN = """def covariance(x1, x2, p):
    r2 = torch.cdist(x1 / p["lengthscale"], x2 / p["lengthscale"]).pow(2)
    return p["w"] + (1.0 - p["w"]) * (1.0 + r2 / (2.0 * p["alpha"])).pow(-p["alpha"])
"""

PAIR_FN = """def covariance(x, y, p):
    d = (x - y) / p["lengthscale"]
    return torch.exp(-0.5 * (d * d).sum()) * (1.0 + p["c"] * (x * y).sum())
"""

CANDIDATES = {
    "tree": KernelCandidate(name="tree", formula=formula(TREE), origin="offline", spec=TREE),
    "function": KernelCandidate(
        name="fn_rq",
        formula="w + (1 - w) (1 + r^2 / (2 alpha))^(-alpha)",
        origin="discovery",
        code=build_kernel_source(
            {"lengthscale": "ard", "alpha": "positive", "w": "unit"}, RQ_FN, "FnRQ", "rq"
        ),
    ),
    "pair": KernelCandidate(
        name="pair_rbf_dot",
        formula="exp(-|x - y|_l^2 / 2) (1 + c x.y)",
        origin="discovery",
        code=build_kernel_source(
            {"lengthscale": "ard", "c": "positive"}, PAIR_FN, "PairRBFDot", "k", pairwise=True
        ),
    ),
}


class _DiscoveredContract:
    """Ax builds the kernel for the dataset's D (``ard_num_dims``): bound to D."""

    member: str
    data_dim = 2

    def create_kernel_for_dim(self, dim: int, **kwargs: Any) -> DiscoveredKernel:
        return DiscoveredKernel(CANDIDATES[self.member].model_dump_json(), dim, **kwargs)

    def _trained(self) -> DiscoveredKernel:
        kernel = self.create_kernel_for_dim(3).double()
        with torch.no_grad():
            for _, p in kernel.named_parameters():
                p.add_(0.3 * torch.randn_like(p))
        return kernel

    def test_round_trips_keep_values_dtype_and_mode(self) -> None:
        kernel = self._trained().eval()
        x = torch.rand(6, 3, dtype=torch.float64)
        want = kernel(x).to_dense()
        buffer = io.BytesIO()
        torch.save(kernel, buffer)
        buffer.seek(0)
        copies = [
            pickle.loads(pickle.dumps(kernel)),
            copy.deepcopy(kernel),
            torch.load(buffer, weights_only=False),
        ]
        for other in copies:
            self.assertIsNot(other.inner, kernel.inner)  # type: ignore[attr-defined]
            self.assertEqual(other.dtype, torch.float64)  # type: ignore[attr-defined]
            self.assertFalse(other.training)  # type: ignore[attr-defined]
            self.assertAllClose(other(x).to_dense(), want)  # type: ignore[attr-defined]
            self.assertEqual(  # type: ignore[attr-defined]
                sorted(n for n, _ in other.named_parameters()),
                sorted(n for n, _ in kernel.named_parameters()),
            )


class TestDiscoveredKernelTree(_DiscoveredContract, KernelContractMixin, unittest.TestCase):
    member = "tree"


class TestDiscoveredKernelFunctionCode(_DiscoveredContract, KernelContractMixin, unittest.TestCase):
    member = "function"


class TestDiscoveredKernelPairCode(_DiscoveredContract, KernelContractMixin, unittest.TestCase):
    member = "pair"


def test_batch_shape_is_shared_not_batched() -> None:
    kernel = DiscoveredKernel(CANDIDATES["tree"].model_dump_json(), 3, batch_shape=torch.Size([2]))
    assert kernel.batch_shape == torch.Size([])
    assert kernel(torch.rand(2, 4, 3)).to_dense().shape == (2, 4, 4)


def test_batch_shape_is_read_without_walking_the_sub_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GPyTorch reads ``batch_shape`` for every lazily evaluated kernel matrix; its default
    walks every sub-kernel's modules on each read (issue 21: a quarter of an acquisition
    step through a composite kernel). The wrapper is unbatched and answers directly."""
    kernel = DiscoveredKernel(CANDIDATES["tree"].model_dump_json(), 3)

    def walk(self: DiscoveredKernel) -> Any:
        raise AssertionError("batch_shape walked the sub-kernels")

    monkeypatch.setattr(DiscoveredKernel, "sub_kernels", walk)
    assert kernel.batch_shape == torch.Size([])
    x = torch.rand(2, 4, 3)
    lazy = kernel(x, x[..., :3, :])
    assert lazy.shape == (2, 4, 3)
    assert lazy.to_dense().shape == (2, 4, 3)


def test_naming_the_class_in_a_model_config_says_what_works() -> None:
    """Issue 52 item 19: ``ModelConfig(covar_module_class=DiscoveredKernel)``, as Ax's
    custom-kernel docs suggest, raised ``TypeError: ... missing 'candidate'``; the error
    now names the way that works (``model_config_for``), here and through Ax's fit."""
    from ax.core.search_space import SearchSpaceDigest
    from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
    from ax.generators.torch.botorch_modular.utils import ModelConfig
    from botorch.utils.datasets import SupervisedDataset

    with pytest.raises(TypeError, match=r"needs 'candidate'.*model_config_for\(kernel\)"):
        DiscoveredKernel(ard_num_dims=3)
    names = ["x0", "x1", "x2"]
    X = torch.rand(6, 3, dtype=torch.float64)
    data = SupervisedDataset(X, X.sum(-1, keepdim=True), feature_names=names, outcome_names=["f"])
    spec = SurrogateSpec(model_configs=[ModelConfig(covar_module_class=DiscoveredKernel)])
    with pytest.raises(TypeError, match="model_config_for"):
        Surrogate(surrogate_spec=spec).fit(
            datasets=[data],
            search_space_digest=SearchSpaceDigest(feature_names=names, bounds=[(0.0, 1.0)] * 3),
        )
