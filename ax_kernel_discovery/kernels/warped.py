"""Input-warped kernels: a trusted base kernel applied to a learnt map of the inputs."""

from __future__ import annotations

from math import sqrt
from typing import Any, ClassVar

import torch
from gpytorch.constraints import Interval, Positive
from gpytorch.kernels import Kernel

from ax_kernel_discovery.kernels.priors import clamp_unit

#: The Kumaraswamy warp maps ``[0, 1]`` affinely onto ``[_EPS, 1 - _EPS]`` first.
_EPS = 1e-6


def kumaraswamy_cdf(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    r"""The Kumaraswamy CDF :math:`1 - (1 - u^a)^b` of ``x`` in ``[0, 1]``, smooth on the box.

    ``x`` is first mapped affinely onto :math:`u \in [\epsilon, 1 - \epsilon]`, so the
    warp's derivative is positive and finite everywhere on ``[0, 1]``, the edges
    included. Clamping ``x`` there instead (as this package did, and as BoTorch's
    ``kumaraswamy_warp`` still does after the same affine map, where round-off makes
    the clamp bite at ``x = 1``) gives a zero derivative at the edges beside slopes of
    order :math:`a \epsilon^{a-1}` (~1e4 for :math:`a = 0.2`): L-BFGS-B's line search
    then fails whenever the acquisition reaches a bound (issue 21).
    """
    u = x * (1.0 - 2.0 * _EPS) + _EPS
    return 1.0 - (1.0 - u.pow(a)).pow(b)


#: Readable description of each warp, used in formulas and prompts.
WARP_FORMULAS: dict[str, str] = {
    "identity": "x",
    "tanh": "tanh(c (x - 0.5))",
    "arctan": "arctan(c (x - 0.5))",
    "kumaraswamy": "1 - (1 - x_d^a_d)^b_d",
    "spherical": "inverse stereographic projection of c (x - 0.5) / sqrt(D) onto S^D",
}


def warp_output_dim(warp: str, dim: int) -> int:
    """Dimension of the warped inputs (the spherical map adds one coordinate)."""
    if warp not in WARP_FORMULAS:
        raise ValueError(f"unknown warp {warp!r}; choose from {sorted(WARP_FORMULAS)}")
    return dim + 1 if warp == "spherical" else dim


class WarpedKernel(Kernel):
    r"""A base kernel evaluated on warped inputs, :math:`k(x, x') = k_0(\phi(x), \phi(x'))`.

    Any kernel of a deterministic feature map is PSD when the base kernel is. Warps:

    * ``tanh`` / ``arctan``: :math:`\phi(x) = \tanh(c (x - \tfrac12))`, :math:`c > 0`,
      squashing the box edges together;
    * ``kumaraswamy``: :math:`\phi(x)_d = 1 - (1 - x_d^{a_d})^{b_d}`, a per-dimension CDF warp
      of the inputs squeezed onto :math:`[\epsilon, 1 - \epsilon]` (:func:`kumaraswamy_cdf`);
    * ``spherical``: inverse stereographic projection of :math:`c (x - \tfrac12)/\sqrt{D}`
      onto :math:`S^D` (one more coordinate).

    Args:
        base_kernel: The kernel applied to the warped inputs (built for
            :func:`warp_output_dim` dimensions).
        warp: One of ``identity``, ``tanh``, ``arctan``, ``kumaraswamy``, ``spherical``.
        dim: Input dimension D.
        **kwargs: Passed to :class:`gpytorch.kernels.Kernel` (``batch_shape``: the warp
            parameters get this batch shape; build ``base_kernel`` with the same one).

    Example:
        >>> from ax_kernel_discovery.kernels import DimScaledRBFKernel
        >>> k = WarpedKernel(DimScaledRBFKernel(ard_num_dims=5), warp="tanh", dim=5)
        >>> k(torch.rand(4, 5)).shape
        torch.Size([4, 4])
    """

    formula: ClassVar[str] = "k(x, x') = k0(phi(x), phi(x'))"

    def __init__(self, base_kernel: Kernel, warp: str, dim: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        warp_output_dim(warp, dim)  # validates the name
        self.base_kernel = base_kernel
        self.warp = warp
        self.dim = int(dim)
        batch = self._batch_shape
        if warp in ("tanh", "arctan", "spherical"):
            self.register_parameter("raw_c", torch.nn.Parameter(torch.zeros(*batch, 1)))
            self.register_constraint("raw_c", Positive())
            init = 2.0 if warp != "spherical" else 3.0
            self.raw_c.data.fill_(
                float(self.raw_c_constraint.inverse_transform(torch.tensor(init)))
            )
        elif warp == "kumaraswamy":
            self.register_parameter("raw_a", torch.nn.Parameter(torch.zeros(*batch, self.dim)))
            self.register_parameter("raw_b", torch.nn.Parameter(torch.zeros(*batch, self.dim)))
            self.register_constraint("raw_a", Interval(0.2, 5.0))
            self.register_constraint("raw_b", Interval(0.2, 5.0))
            # start at the identity map (a = b = 1)
            for name in ("raw_a", "raw_b"):
                constraint = getattr(self, f"{name}_constraint")
                getattr(self, name).data.fill_(
                    float(constraint.inverse_transform(torch.tensor(1.0)))
                )

    @property
    def batch_shape(self) -> torch.Size:
        """Batch shape; a map without parameters has none of its own: the base kernel's."""
        if not self._parameters:
            return self.base_kernel.batch_shape
        return torch.broadcast_shapes(self._batch_shape, self.base_kernel.batch_shape)

    @batch_shape.setter
    def batch_shape(self, value: torch.Size) -> None:
        self._batch_shape = value

    def phi(self, x: torch.Tensor) -> torch.Tensor:
        """The input warp, ``(..., N, D) -> (..., N, D')`` (batched warp parameters broadcast)."""
        x = clamp_unit(x)
        if self.warp == "identity":
            return x
        if self.warp == "kumaraswamy":
            # (*batch, D) -> (*batch, 1, D)
            a = self.raw_a_constraint.transform(self.raw_a).unsqueeze(-2)
            b = self.raw_b_constraint.transform(self.raw_b).unsqueeze(-2)
            return kumaraswamy_cdf(x, a, b)
        c = self.raw_c_constraint.transform(self.raw_c).unsqueeze(-1)  # (*batch, 1, 1)
        if self.warp == "tanh":
            return torch.tanh(c * (x - 0.5))
        if self.warp == "arctan":
            return torch.atan(c * (x - 0.5))
        u = c * (x - 0.5) / sqrt(max(self.dim, 1))
        sq = u.pow(2).sum(-1, keepdim=True)
        return torch.cat([2.0 * u / (1.0 + sq), (sq - 1.0) / (sq + 1.0)], dim=-1)

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params: Any
    ) -> torch.Tensor:
        return self.base_kernel.forward(self.phi(x1), self.phi(x2), diag=diag, **params)
