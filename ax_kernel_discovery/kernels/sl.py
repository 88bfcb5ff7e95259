"""SL: the spherical linear kernel (inverse stereographic projection, then linear)."""

from __future__ import annotations

from math import log, sqrt
from typing import Any, ClassVar

import torch
from gpytorch.constraints import Interval
from gpytorch.kernels import Kernel
from gpytorch.priors import LogNormalPrior, NormalPrior

from ax_kernel_discovery.kernels.priors import clamp_unit, dim_scaled_lengthscale_kwargs


# Prior closures are module-level functions, not lambdas, so that the kernel pickles.
def _global_scale(module: SphericalLinearKernel) -> torch.Tensor:
    return module.global_scale


def _raw_weights(module: SphericalLinearKernel) -> torch.Tensor:
    return module.raw_weights


def _set_global_scale(module: SphericalLinearKernel, value: torch.Tensor) -> None:
    value = torch.as_tensor(value).to(module.raw_global_scale)
    module.initialize(raw_global_scale=module.raw_global_scale_constraint.inverse_transform(value))


class SphericalLinearKernel(Kernel):
    r"""Spherical linear kernel: ARD scaling, inverse stereographic projection, linear kernel.

    Inputs are centred and scaled by ARD lengthscales and a global scale :math:`s`,
    :math:`u = s (x - \tfrac12) / (\ell \sqrt{D})`, then lifted onto the unit sphere
    :math:`S^D \subset \mathbb{R}^{D+1}` by the inverse stereographic projection

    .. math::

        \pi(u) = \left(\frac{2u}{1 + \|u\|^2}, \frac{\|u\|^2 - 1}{\|u\|^2 + 1}\right),
        \qquad k(x, x') = w_0 + w_1 \, \pi(u)^\top \pi(u'),
        \qquad (w_0, w_1) = \mathrm{softmax}(\theta)

    A constant plus a non-negative multiple of a dot product is PSD.

    Args:
        ard_num_dims: Input dimension D.
        **kwargs: Passed to :class:`gpytorch.kernels.Kernel`.
    """

    has_lengthscale = True
    formula: ClassVar[str] = (
        "u = s (x - 0.5) / (l sqrt(D)); pi(u) = (2u/(1+|u|^2), (|u|^2-1)/(|u|^2+1)) on S^D; "
        "k(x, x') = w0 + w1 * pi(u)^T pi(u'), (w0, w1) = softmax(theta)"
    )

    def __init__(self, ard_num_dims: int, **kwargs: Any) -> None:
        # the dimension scaling is explicit here (u divides by sqrt D), so the lengthscale
        # prior is the dimension-free LN(sqrt2, sqrt3) and lengthscales start at 1
        kwargs = {**dim_scaled_lengthscale_kwargs(1), **kwargs}
        super().__init__(ard_num_dims=ard_num_dims, **kwargs)
        self.initialize(lengthscale=1.0)
        batch = self.batch_shape
        self.register_parameter("raw_global_scale", torch.nn.Parameter(torch.zeros(*batch, 1)))
        self.register_constraint("raw_global_scale", Interval(0.05, 50.0))
        # start with |u| of order one so the projection spreads over the sphere
        init = self.raw_global_scale_constraint.inverse_transform(torch.tensor(3.0))
        self.raw_global_scale.data.fill_(float(init))
        self.register_prior(
            "global_scale_prior",
            LogNormalPrior(log(3.0), 1.0),
            _global_scale,
            _set_global_scale,
        )
        self.register_parameter("raw_weights", torch.nn.Parameter(torch.zeros(*batch, 2)))
        # keeps the softmax away from saturation (the constant part trades off with the GP mean)
        self.register_prior("raw_weights_prior", NormalPrior(0.0, 1.0), _raw_weights)

    @property
    def global_scale(self) -> torch.Tensor:
        return self.raw_global_scale_constraint.transform(self.raw_global_scale)

    @property
    def weights(self) -> torch.Tensor:
        return torch.softmax(self.raw_weights, dim=-1)

    def _project(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.global_scale.unsqueeze(-1) / sqrt(max(x.size(-1), 1))
        u = (clamp_unit(x) - 0.5).div(self.lengthscale) * scale
        sq = u.pow(2).sum(-1, keepdim=True)
        return torch.cat([2.0 * u / (1.0 + sq), (sq - 1.0) / (sq + 1.0)], dim=-1)

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params: Any
    ) -> torch.Tensor:
        z1, z2 = self._project(x1), self._project(x2)
        w = self.weights
        if diag:
            dot = (z1 * z2).sum(-1)
        else:
            dot = z1 @ z2.transpose(-2, -1)
        w0, w1 = w[..., 0], w[..., 1]
        shape = [1] * (dot.dim() - w0.dim())
        return w0.view(*w0.shape, *shape) + w1.view(*w1.shape, *shape) * dot
