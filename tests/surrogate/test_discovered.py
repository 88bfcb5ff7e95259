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
from ax_kernel_discovery.expression import WARPS, formula, leaf
from ax_kernel_discovery.kernels import LEAVES
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


# --- cross-covariances against rows shared by every batch entry -------------------------

SHARED_TREES = (
    [leaf(k) for k in LEAVES]
    + [leaf("rbf", w) for w in WARPS if w != "identity"]
    + [
        leaf("matern52", ard=False),
        {"op": "sum", "args": [leaf("rbf", "tanh"), leaf("poly2")]},
        {"op": "product", "args": [leaf("matern52"), leaf("sl", "kumaraswamy")]},
    ]
)


def _member(spec: dict[str, Any], dim: int) -> DiscoveredKernel:
    cand = KernelCandidate(name="m", formula=formula(spec), origin="offline", spec=spec)
    kernel = DiscoveredKernel(cand.model_dump_json(), dim).double().eval()
    torch.manual_seed(3)
    with torch.no_grad():
        for _, p in kernel.named_parameters():
            p.add_(0.2 * torch.randn_like(p))
    return kernel


def _exact_prediction_blocks(
    b: int, m: int, n: int, dim: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Candidates (leaf, ``b x m x D``) and the test and train blocks GPyTorch's exact
    prediction slices from the training inputs broadcast and concatenated with them."""
    torch.manual_seed(0)
    train = torch.rand(n, dim, dtype=torch.float64)
    X = torch.rand(b, m, dim, dtype=torch.float64, requires_grad=True)
    full = torch.cat([train.expand(b, n, dim), X], dim=-2)
    return X, full[..., n:, :], full[..., :n, :]


@pytest.mark.parametrize("spec", SHARED_TREES, ids=lambda s: formula(s)[:40])
def test_cross_covariance_with_shared_rows_is_computed_once_with_the_same_values(
    spec: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 51 (the acquisition at D = 388): ``K(X_test, X_train)`` is evaluated on one
    copy of the training rows, not one per candidate, with the batched computation's
    values and gradients (candidates' and hyperparameters') to rounding: a matrix
    product against one copy may be blocked differently (differences seen: 1e-14 on
    entries of order 10)."""
    import ax_kernel_discovery.surrogate.discovered as discovered

    kernel = _member(spec, 4)
    seen: list[torch.Size] = []
    inner_forward = kernel.inner.forward

    def spy(x1: torch.Tensor, x2: torch.Tensor, **kw: Any) -> Any:
        seen.append(x2.shape)
        return inner_forward(x1, x2, **kw)

    def run() -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        kernel.zero_grad()
        X, test, train = _exact_prediction_blocks(5, 3, 7, 4)
        K = kernel(test, train).to_dense()
        assert K.shape == (5, 3, 7)
        (K * torch.linspace(-1, 1, K.numel()).reshape(K.shape)).sum().backward()
        assert X.grad is not None
        hyper = [p.grad.clone() for p in kernel.parameters() if p.grad is not None]
        return K.detach(), X.grad.clone(), hyper

    monkeypatch.setattr(kernel.inner, "forward", spy)
    K, grad, hyper = run()
    assert seen and all(s[:-2] == (1,) for s in seen)  # one copy of the training rows
    seen.clear()
    monkeypatch.setattr(discovered, "shared_rows", lambda x1, x2: None)
    K0, grad0, hyper0 = run()
    assert seen and all(s[:-2] == (5,) for s in seen)
    torch.testing.assert_close(K, K0, rtol=1e-13, atol=1e-14)
    torch.testing.assert_close(grad, grad0, rtol=1e-12, atol=1e-13)
    assert len(hyper) == len(hyper0)
    for g, g0 in zip(hyper, hyper0, strict=True):
        torch.testing.assert_close(g, g0, rtol=1e-12, atol=1e-13)


def test_a_symmetric_block_with_coinciding_candidates_keeps_each_candidates_gradient() -> None:
    """Two restarts at the same point: the test-test block's batch entries are equal but
    are separate candidates, so it is not reduced and each gets its own gradient."""
    from ax_kernel_discovery.surrogate.discovered import shared_rows

    kernel = _member({"op": "sum", "args": [leaf("rbf", "tanh"), leaf("sl")]}, 4)
    point = torch.rand(1, 3, 4, dtype=torch.float64)
    X = point.expand(2, 3, 4).clone().requires_grad_(True)
    assert shared_rows(X, X) is None
    kernel(X, X).to_dense().sum().backward()
    assert X.grad is not None
    assert torch.equal(X.grad[0], X.grad[1])
    assert X.grad.abs().sum() > 0


def test_code_members_and_unshared_rows_are_evaluated_as_they_are() -> None:
    from ax_kernel_discovery.surrogate.discovered import shared_rows

    x1 = torch.rand(3, 2, 4, dtype=torch.float64)
    assert shared_rows(x1, torch.rand(3, 5, 4, dtype=torch.float64)) is None  # rows differ
    assert shared_rows(x1, torch.rand(5, 4, dtype=torch.float64)) is None  # no batch
    assert shared_rows(x1, torch.rand(1, 5, 4, dtype=torch.float64)) is None  # one entry
    shared = shared_rows(x1, torch.rand(5, 4, dtype=torch.float64).expand(3, 5, 4))
    assert shared is not None and shared.shape == (1, 5, 4)

    code = DiscoveredKernel(CANDIDATES["function"].model_dump_json(), 4).double().eval()
    seen: list[torch.Size] = []
    inner_forward = code.inner.forward

    def spy(a: torch.Tensor, b: torch.Tensor, **kw: Any) -> Any:
        seen.append(b.shape)
        return inner_forward(a, b, **kw)

    code.inner.forward = spy  # type: ignore[method-assign]
    _, test, train = _exact_prediction_blocks(5, 3, 7, 4)
    assert code(test, train).to_dense().shape == (5, 3, 7)
    assert seen == [torch.Size([5, 7, 4])]
