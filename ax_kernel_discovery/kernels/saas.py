"""Matern-5/2 kernel with BoTorch's sparse axis-aligned subspace (SAAS) prior."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from botorch.models.map_saas import add_saas_prior
from gpytorch.kernels import MaternKernel


class SaasMatern52Kernel(MaternKernel):
    r"""Matern-5/2 kernel with ARD lengthscales under the SAAS prior, fitted by MAP.

    The prior of Eriksson & Jankowiak (2021), "High-Dimensional Bayesian Optimization with
    Sparse Axis-Aligned Subspaces", as BoTorch's MAP-SAAS models place it
    (:func:`botorch.models.map_saas.add_saas_prior` with an inferred global shrinkage):

    .. math::

        k(x, x') = \left(1 + \sqrt{5} r + \tfrac{5}{3} r^2\right) e^{-\sqrt{5} r},
        \qquad r = \sqrt{\sum_d (x_d - x'_d)^2 / \ell_d^2},

        \tau \sim \mathcal{HC}(0.1), \qquad \tau / \ell_d^2 \sim \mathcal{HC}(1).

    The half-Cauchy priors pull most inverse squared lengthscales to zero, so that the
    kernel ignores most inputs unless the data show they matter: the prior of a problem
    whose value depends on a few of its many inputs. The lengthscales and :math:`\tau` are
    optimized on a log scale inside bounds (:math:`\ell_d \in [0.01, 10^4]`,
    :math:`\tau \in [10^{-3}, 10]`), which BoTorch's L-BFGS-B fit respects.

    Args:
        ard_num_dims: Input dimension D.
        **kwargs: Passed to :class:`gpytorch.kernels.MaternKernel` (not a lengthscale
            prior: the SAAS prior replaces it).
    """

    formula: ClassVar[str] = (
        "k(x, x') = (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r), r = ||(x - x') / l||, "
        "tau ~ HC(0.1), tau / l_d^2 ~ HC(1) (SAAS)"
    )

    def __init__(self, ard_num_dims: int, **kwargs: Any) -> None:
        if "lengthscale_prior" in kwargs:
            raise ValueError(
                "SaasMatern52Kernel places the SAAS prior on its lengthscales: pass no "
                "lengthscale_prior (or use DimScaledMatern52Kernel for a prior of your own)"
            )
        super().__init__(nu=2.5, ard_num_dims=ard_num_dims, **kwargs)
        add_saas_prior(self, tau=None, log_scale=True)

    @property
    def tau(self) -> torch.Tensor:
        """The global shrinkage :math:`\\tau` (one per batch)."""
        return self.raw_tau_constraint.transform(self.raw_tau)

    @tau.setter
    def tau(self, value: torch.Tensor | float) -> None:
        self._set_tau(value)

    def _set_tau(self, value: torch.Tensor | float) -> None:
        if not torch.is_tensor(value):
            value = torch.as_tensor(value).to(self.raw_tau)
        self.initialize(raw_tau=self.raw_tau_constraint.inverse_transform(value))
