"""The shared body of the input-map kernels: one map per input, and the eval-mode map cache."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import ScaleKernel

from ax_kernel_discovery.kernels import DimScaledRBFKernel, InputMapKernel, WarpedKernel
from ax_kernel_discovery.kernels.input_map import same_input


class _CountingWarp(WarpedKernel):
    """A tanh-warped RBF that counts its map's evaluations, by number of rows."""

    def __init__(self, dim: int = 3, **kwargs: Any) -> None:
        super().__init__(DimScaledRBFKernel(ard_num_dims=dim, **kwargs), "tanh", dim, **kwargs)
        self.calls: list[int] = []

    def phi(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.append(x.size(-2))
        return super().phi(x)


def _kernel(**kwargs: Any) -> _CountingWarp:
    kernel = _CountingWarp(**kwargs).double()
    kernel.c = 1.7
    return kernel


def _plain(kernel: InputMapKernel, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    """``k0(phi(x1), phi(x2))`` with the map applied to each side, without any sharing."""
    return kernel.base_kernel.forward(kernel.phi(x1), kernel.phi(x2))


def test_input_map_kernel_is_exported_and_the_base_of_both_families() -> None:
    from ax_kernel_discovery.kernels.feature_maps import FeatureMapKernel

    assert issubclass(WarpedKernel, InputMapKernel)
    assert issubclass(FeatureMapKernel, InputMapKernel)
    with pytest.raises(NotImplementedError):
        InputMapKernel(DimScaledRBFKernel(ard_num_dims=2), dim=2)(torch.rand(3, 2)).to_dense()


def test_same_input_is_one_tensor_or_one_view_taken_twice() -> None:
    base = torch.rand(2, 6, 3, requires_grad=True) * 1.0
    x = torch.rand(4, 3)
    assert same_input(x, x)
    assert not same_input(x, x.clone())  # equal values are not the same input
    assert same_input(base[..., 2:, :], base[..., 2:, :])
    assert not same_input(base[..., 2:, :], base[..., 1:5, :])
    assert not same_input(base[..., 2:, :], base[..., 2:, :].detach())  # no gradient
    with torch.no_grad():
        no_grad_view = base[..., 2:, :]
    assert not same_input(base[..., 2:, :], no_grad_view)
    assert not same_input(base[..., 2:, :], base.double()[..., 2:, :])


def test_map_is_evaluated_once_for_the_same_input_without_gradients() -> None:
    kernel = _kernel()
    x = torch.rand(5, 3, dtype=torch.float64)
    with torch.no_grad():
        gram = kernel(x).to_dense()  # GPyTorch passes the same tensor twice
        assert kernel.calls == [5]
        torch.testing.assert_close(gram, _plain(kernel, x, x), rtol=0, atol=0)
        kernel.calls.clear()
        joint = torch.rand(7, 3, dtype=torch.float64)
        kernel.forward(joint[2:], joint[2:])  # GPyTorch's K(X*, X*) in exact prediction
        assert kernel.calls == [5]
    kernel.calls.clear()
    kernel.raw_c.requires_grad_(False)
    kernel.forward(x, x)  # grad mode, but nothing requires a gradient
    assert kernel.calls == [5]


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_where_a_gradient_flows_both_sides_are_mapped_and_gradients_are_bitwise_the_same(
    mode: str,
) -> None:
    """One map for both sides would change the gradients' last bits, and so fits and candidates.

    Sharing the map of ``X`` between the two sides of ``K(X, X)`` sums the two sides'
    gradients before the map's backward instead of after it: equal up to rounding, but
    L-BFGS-B then took other steps (the recorded rounds of
    tests/surrogate/test_replayed_round.py scored 1e-6 apart).
    """
    kernel = _kernel().train(mode == "train")
    joint = torch.rand(8, 3, dtype=torch.float64, requires_grad=True)
    x = joint[2:]
    (grad_x, grad_c) = torch.autograd.grad(
        kernel.forward(x, joint[2:]).sum(), (joint, kernel.raw_c)
    )
    assert kernel.calls == [6, 6]
    x_plain = joint.detach().clone().requires_grad_(True)
    plain = _plain(kernel, x_plain[2:], x_plain[2:])
    (plain_x, plain_c) = torch.autograd.grad(plain.sum(), (x_plain, kernel.raw_c))
    assert torch.equal(grad_x, plain_x) and torch.equal(grad_c, plain_c)
    kernel.calls.clear()
    kernel(joint.detach()).to_dense()  # the input needs no gradient, but c does
    assert kernel.calls == [8, 8]


def test_eval_mode_maps_each_input_value_once_without_gradients() -> None:
    kernel = _kernel().eval()
    train = torch.rand(8, 3, dtype=torch.float64)
    with torch.no_grad():
        first = kernel(torch.rand(2, 3, dtype=torch.float64), train).to_dense()
        test = torch.rand(3, 3, dtype=torch.float64)
        second = kernel(test, train.clone()).to_dense()  # equal values, another tensor
    assert kernel.calls == [2, 8, 3]
    assert first.shape == (2, 8)
    torch.testing.assert_close(second, _plain(kernel, test, train), rtol=0, atol=0)


def test_cache_is_not_used_where_a_gradient_can_flow() -> None:
    kernel = _kernel().eval()
    train = torch.rand(8, 3, dtype=torch.float64)
    with torch.no_grad():
        kernel(train[:2], train).to_dense()
    kernel.calls.clear()
    kernel(train[:2], train).to_dense()  # grad mode, the warp's c requires a gradient
    assert kernel.calls == [2, 8]
    kernel.calls.clear()
    kernel.raw_c.requires_grad_(False)
    kernel(train[:2], train).to_dense()  # nothing requires a gradient: cached
    assert kernel.calls == []
    kernel.calls.clear()
    kernel(train.clone().requires_grad_(True), train).to_dense()  # the input requires one
    assert kernel.calls == [8]


def test_training_mode_never_caches_and_train_empties_the_cache() -> None:
    kernel = _kernel()
    x = torch.rand(4, 3, dtype=torch.float64)
    with torch.no_grad():
        kernel(x, x.clone()).to_dense()
        assert kernel.calls == [4, 4]
        kernel.eval()
        kernel(x, x.clone()).to_dense()
        kernel.eval()  # BoTorch calls eval() at every posterior: the cache stays
        kernel(x).to_dense()
        assert kernel.calls == [4, 4, 4]
        kernel.train()
        kernel.eval()
        kernel(x).to_dense()
    assert kernel.calls == [4, 4, 4, 4]


@pytest.mark.parametrize(
    "change",
    ["setter", "initialize", "load_state_dict", "in_place_data", "float", "constraint"],
)
def test_cache_never_returns_a_map_of_other_parameter_values(change: str) -> None:
    kernel = _kernel().eval()
    kumaraswamy = WarpedKernel(DimScaledRBFKernel(ard_num_dims=3), "kumaraswamy", 3).double()
    kumaraswamy.a = 2.0
    x, y = torch.rand(4, 3, dtype=torch.float64), torch.rand(5, 3, dtype=torch.float64)
    with torch.no_grad():
        before = kernel(x, y).to_dense() if change != "constraint" else kumaraswamy(x, y).to_dense()
        if change == "setter":
            kernel.c = 0.4
        elif change == "initialize":
            kernel.initialize(raw_c=torch.tensor(-1.0))
        elif change == "load_state_dict":
            state = kernel.state_dict()
            state["raw_c"] = torch.full_like(state["raw_c"], 2.5)
            kernel.load_state_dict(state)
        elif change == "in_place_data":  # .data bypasses the version counter
            kernel.raw_c.data.mul_(0.5)
        elif change == "float":  # c rounded to single precision, the inputs still double
            kernel.float()
        else:  # a constraint's bounds are part of the map's state too
            kernel = kumaraswamy
            kernel(x, y).to_dense()
            kernel.raw_a_constraint.upper_bound.fill_(3.0)
        after = kernel(x, y).to_dense()
    assert not torch.equal(before, after)
    torch.testing.assert_close(after, _plain(kernel, x, y), rtol=0, atol=0)


def test_cache_never_returns_a_map_of_other_input_values() -> None:
    kernel = _kernel().eval()
    x, y = torch.rand(4, 3, dtype=torch.float64), torch.rand(5, 3, dtype=torch.float64)
    with torch.no_grad():
        before = kernel(x, y).to_dense()
        y.data.add_(0.1)  # in place, through .data
        after = kernel(x, y).to_dense()
        y[0, 0] = 0.0
        last = kernel(x, y).to_dense()
        kernel.calls.clear()
        kernel(x, y.t().contiguous().t()).to_dense()  # same values, another memory layout
    assert kernel.calls == [5]
    assert not torch.allclose(before, after) and not torch.allclose(after, last)
    torch.testing.assert_close(last, _plain(kernel, x, y), rtol=0, atol=0)


def test_copies_and_pickles_start_with_an_empty_cache() -> None:
    kernel = _kernel().eval()
    with torch.no_grad():
        kernel(torch.rand(4, 3, dtype=torch.float64)).to_dense()
    assert kernel._map_cache.entries
    for twin in (copy.deepcopy(kernel), pickle.loads(pickle.dumps(kernel))):
        assert not twin._map_cache.entries


def _fitted_gp(train_x: torch.Tensor) -> SingleTaskGP:
    dim = train_x.size(-1)
    kernel = ScaleKernel(_CountingWarp(dim).double())
    train_y = torch.sin(6 * train_x).sum(-1, keepdim=True)
    model = SingleTaskGP(train_x, train_y, covar_module=kernel).double()
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model.eval()


@pytest.mark.parametrize("at_training_points", [False, True])
def test_posterior_gradients_with_and_without_the_cache_are_identical(
    at_training_points: bool,
) -> None:
    """Gradients of the posterior w.r.t. X* (BoTorch's acquisition) do not see the cache.

    The cache is filled by a gradient-free pass first, as BoTorch's raw-sample
    initialization does; at the training points X* has the cached values but needs
    its own gradient.
    """
    torch.manual_seed(0)
    train_x = torch.rand(2, 12, 4, dtype=torch.float64)
    models = [_fitted_gp(train_x) for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    warp = [m.covar_module.base_kernel for m in models]
    warp[1]._map_cache.size = 0  # no cache
    test_x = train_x.clone() if at_training_points else torch.rand(2, 5, 4, dtype=torch.float64)
    values, grads = [], []
    for model in models:
        with torch.no_grad():
            post = model.posterior(test_x)
            values.append((post.mean, post.variance))
        x = test_x.clone().requires_grad_(True)
        post = model.posterior(x)
        (grad,) = torch.autograd.grad((post.mean + post.variance.sqrt()).sum(), x)
        grads.append(grad)
    assert warp[0]._map_cache.entries and not warp[1]._map_cache.entries
    for cached, plain in zip(values[0], values[1], strict=True):
        torch.testing.assert_close(cached, plain, rtol=0, atol=0)
    torch.testing.assert_close(grads[0], grads[1], rtol=0, atol=0)
    assert grads[0].abs().sum() > 0
    # the cache served: the gradient-free pass of the cached model mapped each value once
    assert sum(warp[0].calls) < sum(warp[1].calls)
