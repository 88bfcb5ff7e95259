"""Linear kernel on centred inputs (baseline)."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from gpytorch.kernels import LinearKernel

from ax_kernel_discovery.kernels.priors import clamp_unit


class CenteredLinearKernel(LinearKernel):
    r"""Linear (dot-product) kernel on inputs centred at the middle of the unit box.

    .. math::

        k(x, x') = v \, (x - \tfrac{1}{2})^\top (x' - \tfrac{1}{2})

    Unlike GPyTorch's ``LinearKernel``, ``forward`` returns a dense tensor, not a low-rank
    operator: a sum of a low-rank operator and another kernel's Gram matrix makes
    ``linear_operator`` take a Cholesky root of the other matrix, which fails (or adds
    jitter, changing the sum) when that matrix is itself rank-deficient, as a cosine,
    polynomial or second linear term is in few points (``cosine + linear`` was
    rejected as ``Matrix not positive definite``), and costs an O(N^3) factorisation per
    evaluation where the dense sum costs O(N^2 D).

    Args:
        ard_num_dims: Input dimension D (accepted for a uniform constructor; unused).
        **kwargs: Passed to :class:`gpytorch.kernels.LinearKernel`.
    """

    formula: ClassVar[str] = "k(x, x') = v * (x - 0.5)^T (x' - 0.5)"

    def __init__(self, ard_num_dims: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params: Any
    ) -> torch.Tensor:
        out = super().forward(clamp_unit(x1) - 0.5, clamp_unit(x2) - 0.5, diag=diag, **params)
        return out if isinstance(out, torch.Tensor) else out.to_dense()
