"""Dimension-scaled lengthscale prior shared by the distance kernels.

The prior of Hvarfner et al. (2024), "Vanilla Bayesian Optimization Performs Great in
High Dimensions", as used by BoTorch's
:func:`~botorch.models.utils.gpytorch_modules.get_covar_module_with_dim_scaled_prior`:

.. math::

    \\ell_d \\sim \\mathcal{LN}\\left(\\sqrt{2} + \\log\\sqrt{D},\\ \\sqrt{3}\\right)
"""

from __future__ import annotations

from math import log, sqrt
from typing import Any

import torch
from gpytorch.constraints import GreaterThan
from gpytorch.priors import LogNormalPrior

SQRT2 = sqrt(2.0)
SQRT3 = sqrt(3.0)


def dim_scaled_lengthscale_prior(dim: int) -> LogNormalPrior:
    """LN(sqrt2 + log(sqrt D), sqrt3), the prior BoTorch uses by default."""
    return LogNormalPrior(loc=SQRT2 + 0.5 * log(max(dim, 1)), scale=SQRT3)


def dim_scaled_lengthscale_kwargs(dim: int) -> dict[str, Any]:
    """Keyword arguments for a GPyTorch kernel with the dimension-scaled prior.

    The constraint keeps lengthscales above 0.025 (BoTorch's choice) and starts them at
    the prior's mode.
    """
    prior = dim_scaled_lengthscale_prior(dim)
    return {
        "lengthscale_prior": prior,
        "lengthscale_constraint": GreaterThan(2.5e-2, transform=None, initial_value=prior.mode),
    }


def clamp_unit(x: torch.Tensor) -> torch.Tensor:
    """Clamp inputs to [0, 1]: Ax's Normalize can put values a hair outside."""
    return x.clamp(0.0, 1.0)
