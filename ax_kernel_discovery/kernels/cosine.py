"""Cosine kernel of a projection of the inputs (one spectral component)."""

from __future__ import annotations

from math import pi
from typing import Any, ClassVar

import torch
from gpytorch.constraints import Positive
from gpytorch.kernels import Kernel


class ProjectedCosineKernel(Kernel):
    r"""Cosine of a weighted difference: one frequency vector of a spectral mixture.

    .. math::

        k(x, x') = \cos\left(2\pi \sum_d \frac{x_d - x'_d}{p_d}\right)
        = \cos(\omega^\top x) \cos(\omega^\top x') + \sin(\omega^\top x) \sin(\omega^\top x')

    with :math:`\omega_d = 2\pi / p_d`. The second form is an inner product of the
    feature map :math:`(\cos \omega^\top x, \sin \omega^\top x)`, so the kernel is PSD (of
    rank two) in every dimension, unlike :math:`\cos(\lVert x - x' \rVert)`, which is not PSD
    for D > 1. On a one-dimensional feature (e.g. the ``radius`` feature map) it is
    :math:`\cos(\omega (\rho - \rho'))`. Periods start at :math:`2D`, so that at the
    start the phase difference over the unit box is at most :math:`\pi`.

    Args:
        ard_num_dims: Input dimension D.
        **kwargs: Passed to :class:`gpytorch.kernels.Kernel`.

    Example:
        >>> k = ProjectedCosineKernel(ard_num_dims=2)
        >>> float(k(torch.zeros(1, 2)).to_dense())
        1.0
    """

    formula: ClassVar[str] = "k(x, x') = cos(2 pi sum_d (x_d - x'_d) / p_d)"

    def __init__(self, ard_num_dims: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dim = int(ard_num_dims)
        self.register_parameter(
            "raw_period", torch.nn.Parameter(torch.zeros(*self.batch_shape, 1, self.dim))
        )
        self.register_constraint("raw_period", Positive())
        self.initialize(
            raw_period=self.raw_period_constraint.inverse_transform(
                torch.full_like(self.raw_period, 2.0 * self.dim)
            )
        )

    @property
    def period(self) -> torch.Tensor:
        return self.raw_period_constraint.transform(self.raw_period)

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params: Any
    ) -> torch.Tensor:
        omega = 2.0 * pi / self.period  # (..., 1, D)
        p1 = (x1 * omega).sum(-1)  # (..., N)
        p2 = (x2 * omega).sum(-1)  # (..., M)
        if diag:
            return torch.cos(p1 - p2)
        return torch.cos(p1.unsqueeze(-1) - p2.unsqueeze(-2))
