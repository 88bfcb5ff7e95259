"""KernelMixtureModel: a weighted mixture posterior that BoTorch's acquisition averages over."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.models import SingleTaskGP
from botorch.sampling import SobolQMCNormalSampler
from botorch.utils.transforms import is_ensemble

from ax_kernel_discovery.mixture import KernelMixtureModel


def _models() -> tuple[torch.Tensor, SingleTaskGP, SingleTaskGP]:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(12, 3, generator=g, dtype=torch.float64)
    Y = torch.sin(4 * X).sum(-1, keepdim=True)
    a = SingleTaskGP(X, Y)
    b = SingleTaskGP(X, Y)
    with torch.no_grad():
        b.covar_module.lengthscale = 0.05  # a very different predictor of the same data
    return X, a, b


def test_mixture_moments_are_the_weighted_mixtures() -> None:
    _, a, b = _models()
    mix = KernelMixtureModel([a, b], counts=[3, 1], names=["a", "b"])
    assert mix.weights == [0.75, 0.25] and is_ensemble(mix)
    Xt = torch.rand(5, 3, dtype=torch.float64)
    post = mix.posterior(Xt, observation_noise=True)
    pa, pb = a.posterior(Xt, observation_noise=True), b.posterior(Xt, observation_noise=True)
    mean = 0.75 * pa.mean + 0.25 * pb.mean
    second = 0.75 * (pa.variance + pa.mean**2) + 0.25 * (pb.variance + pb.mean**2)
    assert torch.allclose(post.mixture_mean, mean, atol=1e-10)
    assert torch.allclose(post.mixture_variance, second - mean**2, atol=1e-10)


def test_a_mixture_of_one_model_acquires_like_the_model() -> None:
    X, a, _ = _models()
    Xt = torch.rand(4, 2, 3, dtype=torch.float64)  # 4 candidate batches of q = 2
    values = []
    for model in (a, KernelMixtureModel([a], counts=[2])):
        torch.manual_seed(1)
        acqf = qLogNoisyExpectedImprovement(
            model,
            X_baseline=X,
            sampler=SobolQMCNormalSampler(torch.Size([64]), seed=3),
            prune_baseline=False,
            cache_root=False,  # a mixture has no cached root: compare the same sampling
        )
        values.append(acqf(Xt))
    assert torch.allclose(values[0], values[1], atol=1e-6)


def test_qlognei_of_a_mixture_runs_and_has_gradients() -> None:
    X, a, b = _models()
    acqf = qLogNoisyExpectedImprovement(KernelMixtureModel([a, b], counts=[1, 1]), X_baseline=X)
    Xt = torch.rand(3, 2, 3, dtype=torch.float64, requires_grad=True)
    value = acqf(Xt)
    value.sum().backward()
    assert value.shape == (3,) and torch.isfinite(Xt.grad).all() and Xt.grad.abs().sum() > 0


def test_a_near_singular_posterior_is_sampled_not_refused() -> None:
    # the posterior at training points of a nearly noiseless GP is near-singular; the
    # study's preq_mix3 run on hartmann6_100 seed 4 failed in MultivariateNormal's eager
    # Cholesky there before the covariance was passed as a linear operator
    X, a, b = _models()
    for model in (a, b):
        model.likelihood.noise = 1e-4
    mix = KernelMixtureModel([a, b], counts=[1, 1])
    Xt = torch.cat([X, X[:3] + 1e-9]).unsqueeze(0)  # repeated points: singular
    post = mix.posterior(Xt)
    samples = post.rsample(torch.Size([4]))
    assert samples.shape == (4, 1, 2, 15, 1) and torch.isfinite(samples).all()


def test_bad_mixtures_are_refused() -> None:
    _, a, b = _models()
    with pytest.raises(ValueError, match="one positive count per model"):
        KernelMixtureModel([a, b], counts=[1])
    with pytest.raises(ValueError, match=">= 1"):
        KernelMixtureModel([a, b], counts=[1, 0])
