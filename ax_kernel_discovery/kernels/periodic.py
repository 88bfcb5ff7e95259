"""Periodic kernel with ARD lengthscales (baseline)."""

from __future__ import annotations

from typing import Any, ClassVar

from gpytorch.kernels import PeriodicKernel

from ax_kernel_discovery.kernels.priors import dim_scaled_lengthscale_kwargs


class DimScaledPeriodicKernel(PeriodicKernel):
    r"""Exp-sine-squared kernel with ARD lengthscales and periods.

    .. math::

        k(x, x') = \exp\left(-2 \sum_d \frac{\sin^2(\pi |x_d - x'_d| / p_d)}{\ell_d}\right)

    As in GPyTorch's :class:`~gpytorch.kernels.PeriodicKernel`, the lengthscale divides
    the squared sine (not squared itself).

    Args:
        ard_num_dims: Input dimension D.
        **kwargs: Passed to :class:`gpytorch.kernels.PeriodicKernel`.
    """

    formula: ClassVar[str] = "k(x, x') = exp(-2 sum_d sin^2(pi |x_d - x'_d| / p_d) / l_d)"

    def __init__(self, ard_num_dims: int, **kwargs: Any) -> None:
        kwargs = {**dim_scaled_lengthscale_kwargs(ard_num_dims), **kwargs}
        super().__init__(ard_num_dims=ard_num_dims, **kwargs)
