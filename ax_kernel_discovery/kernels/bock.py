"""BOCK: the cylindrical kernel of Oh, Gavves & Welling (2018)."""

from __future__ import annotations

from math import sqrt
from typing import Any, ClassVar

import torch
from gpytorch.constraints import Interval, Positive
from gpytorch.kernels import Kernel

from ax_kernel_discovery.kernels.priors import clamp_unit
from ax_kernel_discovery.kernels.warped import kumaraswamy_cdf

_EPS = 1e-6


class BOCKKernel(Kernel):
    r"""Cylindrical kernel: Kumaraswamy-warped radius times a polynomial in the angle.

    The box :math:`[0,1]^D` is mapped into the unit ball by
    :math:`z = (2x - 1)/\sqrt{D}`, split into radius :math:`r = \|z\|` and direction
    :math:`a = z / r`:

    .. math::

        k(x, x') = k_{M52}\big(\kappa(r), \kappa(r')\big)
                   \sum_{p=0}^{P-1} w_p \, (a^\top a')^p,
        \qquad \kappa(r) = 1 - (1 - r^{\alpha})^{\beta}

    with positive weights :math:`w_p` (a polynomial with positive coefficients of a dot
    product kernel is PSD; the product of PSD kernels is PSD).

    Args:
        ard_num_dims: Input dimension D.
        num_angular_weights: Degree P of the angular polynomial.
        **kwargs: Passed to :class:`gpytorch.kernels.Kernel`.

    Reference:
        C. Oh, E. Gavves, M. Welling. BOCK: Bayesian Optimization with Cylindrical
        Kernels. ICML 2018.
    """

    has_lengthscale = True
    formula: ClassVar[str] = (
        "z = (2x - 1)/sqrt(D), r = ||z||, a = z/r, kappa(r) = 1 - (1 - r^alpha)^beta, "
        "t = |kappa(r) - kappa(r')| / l; k(x, x') = (1 + sqrt5 t + 5/3 t^2) exp(-sqrt5 t) * "
        "sum_{p=0}^{P-1} w_p (a^T a')^p, w_p > 0, P = 3"
    )

    def __init__(self, ard_num_dims: int, num_angular_weights: int = 3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dim = int(ard_num_dims)
        self.num_angular_weights = int(num_angular_weights)
        batch = self.batch_shape
        self.register_parameter("raw_alpha", torch.nn.Parameter(torch.zeros(*batch, 1)))
        self.register_parameter("raw_beta", torch.nn.Parameter(torch.zeros(*batch, 1)))
        self.register_parameter(
            "raw_angular_weights", torch.nn.Parameter(torch.zeros(*batch, self.num_angular_weights))
        )
        self.register_constraint("raw_alpha", Interval(0.1, 10.0))
        self.register_constraint("raw_beta", Interval(0.1, 10.0))
        self.register_constraint("raw_angular_weights", Positive())

    @property
    def alpha(self) -> torch.Tensor:
        """Kumaraswamy shape :math:`\\alpha` of the radius warp, in ``[0.1, 10]``."""
        return self.raw_alpha_constraint.transform(self.raw_alpha)

    @alpha.setter
    def alpha(self, value: torch.Tensor | float) -> None:
        self._set_transformed("alpha", value)

    @property
    def beta(self) -> torch.Tensor:
        """Kumaraswamy shape :math:`\\beta` of the radius warp, in ``[0.1, 10]``."""
        return self.raw_beta_constraint.transform(self.raw_beta)

    @beta.setter
    def beta(self, value: torch.Tensor | float) -> None:
        self._set_transformed("beta", value)

    @property
    def angular_weights(self) -> torch.Tensor:
        """Positive weights :math:`w_p` of the angular polynomial."""
        return self.raw_angular_weights_constraint.transform(self.raw_angular_weights)

    @angular_weights.setter
    def angular_weights(self, value: torch.Tensor | float) -> None:
        self._set_transformed("angular_weights", value)

    def _set_transformed(self, name: str, value: torch.Tensor | float) -> None:
        """Set ``name`` through its raw parameter, as GPyTorch's ``_set_lengthscale``."""
        raw = getattr(self, f"raw_{name}")
        value = torch.as_tensor(value, dtype=raw.dtype, device=raw.device)
        constraint = getattr(self, f"raw_{name}_constraint")
        self.initialize(**{f"raw_{name}": constraint.inverse_transform(value)})

    def _polar(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = (2.0 * clamp_unit(x) - 1.0) / sqrt(max(x.size(-1), 1))
        r = z.norm(dim=-1, keepdim=True)
        # no clamp plateau at the centre or the corners (see kumaraswamy_cdf)
        kappa = kumaraswamy_cdf(r, self.alpha.unsqueeze(-1), self.beta.unsqueeze(-1))
        return kappa, z / r.clamp_min(_EPS)

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params: Any
    ) -> torch.Tensor:
        k1, a1 = self._polar(x1)
        k2, a2 = self._polar(x2)
        ls = self.lengthscale  # (*batch, 1, 1)
        if diag:
            dist = (k1 - k2).abs().squeeze(-1) / ls.squeeze(-1)
            cos = (a1 * a2).sum(-1)
        else:
            dist = torch.cdist(k1, k2).clamp_min(0.0) / ls
            cos = a1 @ a2.transpose(-2, -1)
        sqrt5d = sqrt(5.0) * dist
        radial = (1.0 + sqrt5d + sqrt5d.pow(2) / 3.0) * torch.exp(-sqrt5d)
        w = self.angular_weights
        angular = torch.zeros_like(cos)
        for p in range(self.num_angular_weights):
            wp = w[..., p]
            wp = wp.view(*wp.shape, *([1] * (cos.dim() - wp.dim())))
            angular = angular + wp * cos.pow(p)
        return radial * angular
