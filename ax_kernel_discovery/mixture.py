"""A weighted mixture of fitted GPs that BoTorch's acquisition functions average over.

:class:`KernelMixtureModel` holds the fitted models of several population members and
returns their posteriors as one :class:`~botorch.posteriors.fully_bayesian.GaussianMixturePosterior`,
the posterior that BoTorch's SAAS model gives its MCMC samples: the members sit on the
mixture dimension ``MCMC_DIM``, and Monte-Carlo acquisition functions such as
``qLogNoisyExpectedImprovement`` average over it (``is_ensemble``). The acquisition value
of the mixture is therefore the weighted mean of the members' values,

.. math::

    \\alpha_{\\text{mix}}(X) = \\sum_k w_k \\, \\alpha_k(X),

which, for an expected improvement, is the expected improvement under the mixture
predictive :math:`\\sum_k w_k \\, p_k(f \\mid D)`. Weights are given as integer ``counts``
(a member with count 2 appears twice on the mixture dimension; its posterior is computed
once), i.e. rounded to multiples of ``1 / sum(counts)`` (see
:func:`ax_kernel_discovery.selection.mixture_counts`).

Example:
    >>> import torch
    >>> from botorch.models import SingleTaskGP
    >>> X = torch.rand(8, 2, dtype=torch.float64); Y = X.sum(-1, keepdim=True)
    >>> mix = KernelMixtureModel([SingleTaskGP(X, Y), SingleTaskGP(X, -Y)], counts=[3, 1])
    >>> mix.posterior(torch.rand(5, 2, dtype=torch.float64)).mean.shape
    torch.Size([4, 5, 1])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch
from botorch.models.model import Model
from botorch.posteriors.fully_bayesian import GaussianMixturePosterior
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from linear_operator import to_linear_operator
from torch import Tensor

from ax_kernel_discovery._upstream.botorch import EnsembleWithoutCachedRoot


class KernelMixtureModel(EnsembleWithoutCachedRoot, Model):
    """A weighted mixture of single-output BoTorch models (an ensemble for acquisition).

    Args:
        models: Fitted single-output models on the same training data.
        counts: Positive integer weight of each model (the mixture weight is
            ``counts[k] / sum(counts)``).
        names: The members' names (kept for reports).
    """

    def __init__(
        self, models: Sequence[Model], counts: Sequence[int], names: Sequence[str] = ()
    ) -> None:
        super().__init__()
        if not models or len(models) != len(counts):
            raise ValueError("a mixture needs one positive count per model")
        if any(int(c) < 1 for c in counts):
            raise ValueError(f"mixture counts must be >= 1, got {list(counts)}")
        for m in models:
            if m.num_outputs != 1:
                raise ValueError("a kernel mixture takes single-output models only")
        self.models = torch.nn.ModuleList(models)
        self.counts = [int(c) for c in counts]
        self.names = list(names)
        index = [k for k, c in enumerate(self.counts) for _ in range(c)]
        self.register_buffer("_index", torch.tensor(index, dtype=torch.long), persistent=False)

    @property
    def weights(self) -> list[float]:
        """Each model's mixture weight."""
        total = sum(self.counts)
        return [c / total for c in self.counts]

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def _first(self) -> Model:
        return cast(Model, self.models[0])

    @property
    def batch_shape(self) -> torch.Size:
        return self._first.batch_shape

    @property
    def train_inputs(self) -> Any:
        """The (shared) training inputs of the first member (what BoTorch helpers read)."""
        return cast(Any, self._first).train_inputs

    @property
    def train_targets(self) -> Tensor:
        return cast(Tensor, cast(Any, self._first).train_targets)

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: Any = None,
        **kwargs: Any,
    ) -> GaussianMixturePosterior:
        """The mixture posterior at ``X`` (``batch x q x d``): members on ``MCMC_DIM``."""
        if output_indices not in (None, [0]):
            raise ValueError(f"a kernel mixture has one output, got indices {output_indices}")
        means, covs = [], []
        for model in self.models:
            post = cast(
                GPyTorchPosterior,
                cast(Model, model).posterior(X, observation_noise=observation_noise),
            )
            mvn = post.distribution
            means.append(mvn.mean)
            covs.append(mvn.covariance_matrix)
        index = cast(Tensor, self._index).to(device=X.device)
        mean = torch.stack(means, dim=-2).index_select(-2, index)
        cov = torch.stack(covs, dim=-3).index_select(-3, index)
        # a linear operator, as GPyTorch's own posteriors: a plain tensor would make torch
        # factorize it at once, without the jitter a near-singular posterior needs
        posterior = GaussianMixturePosterior(MultivariateNormal(mean, to_linear_operator(cov)))
        if posterior_transform is not None:
            return posterior_transform(posterior)
        return posterior

    def forward(self, X: Tensor) -> Any:  # pragma: no cover - posterior() is the interface
        raise NotImplementedError("use posterior(); a mixture has no single GPyTorch forward")


__all__ = ["KernelMixtureModel"]
