"""Input-warped kernels: a trusted base kernel applied to a learnt map of the inputs."""

from __future__ import annotations

from math import sqrt
from typing import Any

import torch
from gpytorch.constraints import Interval, Positive
from gpytorch.kernels import Kernel

from ax_kernel_discovery._upstream.gpytorch import own_batch_shape
from ax_kernel_discovery.kernels.input_map import InputMapKernel
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


class WarpedKernel(InputMapKernel):
    r"""A base kernel evaluated on warped inputs, :math:`k(x, x') = k_0(\phi(x), \phi(x'))`.

    Any kernel of a deterministic feature map is PSD when the base kernel is. Warps:

    * ``tanh`` / ``arctan``: :math:`\phi(x) = \tanh(c (x - \tfrac12))`, :math:`c > 0`,
      squashing the box edges together;
    * ``kumaraswamy``: :math:`\phi(x)_d = 1 - (1 - x_d^{a_d})^{b_d}`, a per-dimension CDF warp
      of the inputs squeezed onto :math:`[\epsilon, 1 - \epsilon]` (:func:`kumaraswamy_cdf`);
    * ``spherical``: inverse stereographic projection of :math:`c (x - \tfrac12)/\sqrt{D}`
      onto :math:`S^D` (one more coordinate).

    The parameters are ``c`` (``tanh``, ``arctan``: starts at 2; ``spherical``: at 3;
    positive) and ``a``, ``b`` (``kumaraswamy``: one per dimension in ``[0.2, 5]``,
    starting at 1, the identity map), each a property over its raw parameter
    (``raw_c``, ``raw_a``, ``raw_b``) with a setter, as GPyTorch's ``lengthscale``.

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
        >>> k.c = 1.5
        >>> k(torch.rand(4, 5)).shape
        torch.Size([4, 4])
    """

    def __init__(self, base_kernel: Kernel, warp: str, dim: int, **kwargs: Any) -> None:
        warp_output_dim(warp, dim)  # validates the name
        super().__init__(base_kernel, dim, **kwargs)
        self.warp = warp
        batch = own_batch_shape(self)
        if warp in ("tanh", "arctan", "spherical"):
            self.register_parameter("raw_c", torch.nn.Parameter(torch.zeros(*batch, 1)))
            self.register_constraint("raw_c", Positive())
            self.c = 2.0 if warp != "spherical" else 3.0
        elif warp == "kumaraswamy":
            self.register_parameter("raw_a", torch.nn.Parameter(torch.zeros(*batch, self.dim)))
            self.register_parameter("raw_b", torch.nn.Parameter(torch.zeros(*batch, self.dim)))
            self.register_constraint("raw_a", Interval(0.2, 5.0))
            self.register_constraint("raw_b", Interval(0.2, 5.0))
            # start at the identity map (a = b = 1)
            self.a = 1.0
            self.b = 1.0

    def _warp_parameter(self, name: str) -> torch.nn.Parameter:
        """The raw parameter ``raw_<name>``, or a clear error naming the warps that have it."""
        raw = self._parameters.get(f"raw_{name}")
        if raw is None:
            owners = "tanh, arctan, spherical" if name == "c" else "kumaraswamy"
            raise AttributeError(
                f"the {self.warp!r} warp has no parameter {name!r}; only {owners} warps do"
            )
        return raw

    def _set_warp_parameter(self, name: str, value: torch.Tensor | float) -> None:
        raw = self._warp_parameter(name)
        value = torch.as_tensor(value, dtype=raw.dtype, device=raw.device)
        constraint = getattr(self, f"raw_{name}_constraint")
        self.initialize(**{f"raw_{name}": constraint.inverse_transform(value)})

    @property
    def c(self) -> torch.Tensor:
        """Steepness ``c > 0`` of the ``tanh``, ``arctan`` and ``spherical`` warps."""
        return self.raw_c_constraint.transform(self._warp_parameter("c"))

    @c.setter
    def c(self, value: torch.Tensor | float) -> None:
        self._set_warp_parameter("c", value)

    @property
    def a(self) -> torch.Tensor:
        """Kumaraswamy shape ``a`` per dimension, in ``[0.2, 5]``."""
        return self.raw_a_constraint.transform(self._warp_parameter("a"))

    @a.setter
    def a(self, value: torch.Tensor | float) -> None:
        self._set_warp_parameter("a", value)

    @property
    def b(self) -> torch.Tensor:
        """Kumaraswamy shape ``b`` per dimension, in ``[0.2, 5]``."""
        return self.raw_b_constraint.transform(self._warp_parameter("b"))

    @b.setter
    def b(self, value: torch.Tensor | float) -> None:
        self._set_warp_parameter("b", value)

    def phi(self, x: torch.Tensor) -> torch.Tensor:
        """The input warp, ``(..., N, D) -> (..., N, D')`` (batched warp parameters broadcast)."""
        x = clamp_unit(x)
        if self.warp == "identity":
            return x
        if self.warp == "kumaraswamy":
            # (*batch, D) -> (*batch, 1, D)
            return kumaraswamy_cdf(x, self.a.unsqueeze(-2), self.b.unsqueeze(-2))
        c = self.c.unsqueeze(-1)  # (*batch, 1, 1)
        if self.warp == "tanh":
            return torch.tanh(c * (x - 0.5))
        if self.warp == "arctan":
            return torch.atan(c * (x - 0.5))
        u = c * (x - 0.5) / sqrt(max(self.dim, 1))
        sq = u.pow(2).sum(-1, keepdim=True)
        return torch.cat([2.0 * u / (1.0 + sq), (sq - 1.0) / (sq + 1.0)], dim=-1)
