"""Kernels of deterministic feature maps: Bezier projection, radius and direction.

A PSD base kernel applied to a feature map, :math:`k(x, x') = k_0(\\phi(x), \\phi(x'))`,
is PSD for any map :math:`\\phi`. These maps complement the monotone warps of
:class:`~ax_kernel_discovery.kernels.warped.WarpedKernel` with maps that change the
dimension, which the kernels reported as discovered by Yun, Shin et al. use:

* ``bezier``: a learnt one-dimensional projection,
  :math:`t(x) = \\frac1D \\sum_d B(x_d)`, where :math:`B(u) = \\sum_{k=0}^{3} w_k
  \\binom{3}{k} u^k (1-u)^{3-k}` is a cubic Bezier curve with learnable control
  values :math:`w_k` (shared by all coordinates, starting at the identity curve
  :math:`w = (0, \\tfrac13, \\tfrac23, 1)`, i.e. :math:`t(x)` = mean of the coordinates).
  This is our reading of the paper's "Bezier-projected" coordinate, which its text
  does not define further;
* ``radius``: :math:`\\rho(x) = \\lVert x - \\tfrac12 \\rVert / \\sqrt{D}`, the distance from
  the centre of the box (one dimension);
* ``direction``: :math:`u(x) = (x - \\tfrac12) / \\lVert x - \\tfrac12 \\rVert`, the input
  projected onto the unit sphere around the centre (D dimensions).
"""

from __future__ import annotations

from math import sqrt
from typing import Any

import torch
from gpytorch.kernels import Kernel

from ax_kernel_discovery._upstream.gpytorch import own_batch_shape
from ax_kernel_discovery.kernels.input_map import InputMapKernel
from ax_kernel_discovery.kernels.priors import clamp_unit

#: Readable description of each feature map, used in formulas and prompts.
FEATURE_MAP_FORMULAS: dict[str, str] = {
    "bezier": "t(x) = mean_d B(x_d), B a cubic Bezier curve with learnt control values (1-D)",
    "radius": "rho(x) = |x - 0.5| / sqrt(D) (1-D)",
    "direction": "u(x) = (x - 0.5) / |x - 0.5| (unit sphere)",
}

_EPS = 1e-12

#: Control values of the identity curve :math:`B(u) = u`, where the ``bezier`` map starts.
IDENTITY_CONTROL: tuple[float, ...] = (0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0)


def feature_map_output_dim(feature_map: str, dim: int) -> int:
    """Dimension of the mapped inputs."""
    if feature_map not in FEATURE_MAP_FORMULAS:
        raise ValueError(
            f"unknown feature map {feature_map!r}; choose from {sorted(FEATURE_MAP_FORMULAS)}"
        )
    return dim if feature_map == "direction" else 1


class FeatureMapKernel(InputMapKernel):
    r"""A base kernel evaluated on a feature map of the inputs, :math:`k_0(\phi(x), \phi(x'))`.

    The ``bezier`` map has one parameter, ``control`` (the curve's four control values,
    unconstrained: the parameter is its own value). It keeps its state-dict name, so it is
    a plain :class:`torch.nn.Parameter` rather than a property over a raw parameter: set
    it with ``initialize(control=...)``.

    Args:
        base_kernel: The kernel applied to the features (built for
            :func:`feature_map_output_dim` dimensions).
        feature_map: One of ``bezier``, ``radius``, ``direction``.
        dim: Input dimension D.
        **kwargs: Passed to :class:`gpytorch.kernels.Kernel`.

    Example:
        >>> from gpytorch.kernels import RBFKernel
        >>> k = FeatureMapKernel(RBFKernel(), "radius", dim=4)
        >>> k(torch.rand(3, 4)).to_dense().shape
        torch.Size([3, 3])
    """

    def __init__(self, base_kernel: Kernel, feature_map: str, dim: int, **kwargs: Any) -> None:
        feature_map_output_dim(feature_map, dim)  # validates the name
        super().__init__(base_kernel, dim, **kwargs)
        self.feature_map = feature_map
        if feature_map == "bezier":
            self.register_parameter(
                "control", torch.nn.Parameter(torch.zeros(*own_batch_shape(self), 4))
            )
            self.initialize(control=torch.tensor(IDENTITY_CONTROL))

    def phi(self, x: torch.Tensor) -> torch.Tensor:
        """The feature map (inputs clamped to the unit box first)."""
        x = clamp_unit(x)
        if self.feature_map == "bezier":
            w = self.control.unsqueeze(-2)  # (..., 1, 4), broadcast over the N points
            u, v = x, 1.0 - x
            curve = (
                w[..., 0:1] * v.pow(3)
                + 3.0 * w[..., 1:2] * u * v.pow(2)
                + 3.0 * w[..., 2:3] * u.pow(2) * v
                + w[..., 3:4] * u.pow(3)
            )
            return curve.mean(-1, keepdim=True)
        centred = x - 0.5
        norm = centred.pow(2).sum(-1, keepdim=True).clamp_min(_EPS).sqrt()
        if self.feature_map == "radius":
            return norm / sqrt(max(self.dim, 1))
        return centred / norm
