"""RBF kernel with the dimension-scaled lengthscale prior."""

from __future__ import annotations

from typing import Any, ClassVar

from gpytorch.kernels import RBFKernel

from ax_kernel_discovery.kernels.priors import dim_scaled_lengthscale_kwargs


class DimScaledRBFKernel(RBFKernel):
    r"""Squared-exponential kernel with ARD lengthscales and the LN(sqrt2 + log sqrt D, sqrt3) prior.

    .. math::

        k(x, x') = \exp\left(-\tfrac{1}{2} \sum_{d=1}^{D} \frac{(x_d - x'_d)^2}{\ell_d^2}\right)

    Args:
        ard_num_dims: Input dimension D (one lengthscale per dimension).
        **kwargs: Passed to :class:`gpytorch.kernels.RBFKernel`.

    Example:
        >>> k = DimScaledRBFKernel(ard_num_dims=100)
    """

    formula: ClassVar[str] = (
        "k(x, x') = exp(-0.5 * sum_d (x_d - x'_d)^2 / l_d^2), l_d ~ LN(sqrt2 + log sqrt D, sqrt3)"
    )

    def __init__(self, ard_num_dims: int, **kwargs: Any) -> None:
        kwargs = {**dim_scaled_lengthscale_kwargs(ard_num_dims), **kwargs}
        super().__init__(ard_num_dims=ard_num_dims, **kwargs)
