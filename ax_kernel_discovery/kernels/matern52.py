"""Matern-5/2 kernel with the dimension-scaled lengthscale prior."""

from __future__ import annotations

from typing import Any, ClassVar

from gpytorch.kernels import MaternKernel

from ax_kernel_discovery.kernels.priors import dim_scaled_lengthscale_kwargs


class DimScaledMatern52Kernel(MaternKernel):
    r"""Matern-5/2 kernel with ARD lengthscales and the LN(sqrt2 + log sqrt D, sqrt3) prior.

    .. math::

        k(x, x') = \left(1 + \sqrt{5} r + \tfrac{5}{3} r^2\right) e^{-\sqrt{5} r},
        \qquad r = \sqrt{\sum_d (x_d - x'_d)^2 / \ell_d^2}

    Args:
        ard_num_dims: Input dimension D.
        **kwargs: Passed to :class:`gpytorch.kernels.MaternKernel`.
    """

    formula: ClassVar[str] = (
        "k(x, x') = (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r), r = ||(x - x') / l||, l_d ~ LN(sqrt2 + log sqrt D, sqrt3)"
    )

    def __init__(self, ard_num_dims: int, **kwargs: Any) -> None:
        kwargs = {**dim_scaled_lengthscale_kwargs(ard_num_dims), **kwargs}
        super().__init__(nu=2.5, ard_num_dims=ard_num_dims, **kwargs)
