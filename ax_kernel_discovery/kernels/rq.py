"""Rational quadratic kernel with the dimension-scaled lengthscale prior."""

from __future__ import annotations

from typing import Any, ClassVar

from gpytorch.kernels import RQKernel

from ax_kernel_discovery.kernels.priors import dim_scaled_lengthscale_kwargs


class DimScaledRQKernel(RQKernel):
    r"""Rational quadratic kernel (a scale mixture of RBFs) with the dimension-scaled prior.

    .. math::

        k(x, x') = \left(1 + \frac{r^2}{2\alpha}\right)^{-\alpha},
        \qquad r^2 = \sum_d (x_d - x'_d)^2 / \ell_d^2

    Args:
        ard_num_dims: Input dimension D.
        **kwargs: Passed to :class:`gpytorch.kernels.RQKernel`.
    """

    formula: ClassVar[str] = (
        "k(x, x') = (1 + r^2 / (2 alpha))^(-alpha), r^2 = sum_d (x_d - x'_d)^2 / l_d^2, l_d ~ LN(sqrt2 + log sqrt D, sqrt3)"
    )

    def __init__(self, ard_num_dims: int, **kwargs: Any) -> None:
        kwargs = {**dim_scaled_lengthscale_kwargs(ard_num_dims), **kwargs}
        super().__init__(ard_num_dims=ard_num_dims, **kwargs)
