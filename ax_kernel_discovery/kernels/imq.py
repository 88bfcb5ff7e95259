"""Inverse multiquadric kernel with ARD lengthscales and the dimension-scaled prior."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from gpytorch.kernels import Kernel

from ax_kernel_discovery.kernels.priors import dim_scaled_lengthscale_kwargs


class DimScaledIMQKernel(Kernel):
    r"""Inverse multiquadric kernel, a heavy-tailed scale mixture of RBFs.

    .. math::

        k(x, x') = \left(1 + r^2\right)^{-1/2},
        \qquad r^2 = \sum_d (x_d - x'_d)^2 / \ell_d^2

    It is the rational quadratic kernel with :math:`\alpha = 1/2` after rescaling the
    lengthscales, so it is PSD in every dimension; its correlations decay like
    :math:`1/r` instead of exponentially.

    Args:
        ard_num_dims: Input dimension D.
        **kwargs: Passed to :class:`gpytorch.kernels.Kernel`.

    Example:
        >>> k = DimScaledIMQKernel(ard_num_dims=3)
        >>> k(torch.zeros(2, 3)).to_dense().shape
        torch.Size([2, 2])
    """

    has_lengthscale = True
    formula: ClassVar[str] = "k(x, x') = (1 + r^2)^(-1/2), r^2 = sum_d (x_d - x'_d)^2 / l_d^2"

    def __init__(self, ard_num_dims: int, **kwargs: Any) -> None:
        kwargs = {**dim_scaled_lengthscale_kwargs(ard_num_dims), **kwargs}
        super().__init__(ard_num_dims=ard_num_dims, **kwargs)

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params: Any
    ) -> torch.Tensor:
        sq = self.covar_dist(
            x1.div(self.lengthscale),
            x2.div(self.lengthscale),
            square_dist=True,
            diag=diag,
            **params,
        )
        return (1.0 + sq).rsqrt()
