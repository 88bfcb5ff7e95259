r"""Rational quadratic plus a polynomial of a Bezier-projected coordinate.

Our reading of a kernel the paper reports as discovered:

.. math::
    t(x) = \frac1D \sum_{d=1}^D \sum_{k=0}^{3} w_k \binom{3}{k} x_d^k (1 - x_d)^{3-k},
    \qquad
    k(x, x') = \left(1 + \frac{r^2}{2\alpha}\right)^{-\alpha} + (c + t(x)\, t(x'))^2

Each coordinate (clamped to [0, 1]) is mapped through a cubic Bezier curve with
learnable positive control values :math:`w_k`; :math:`t(x)` is their mean, a smooth
1-D projection. With :math:`c, \alpha, w_k > 0` and an integer degree the polynomial
term is :math:`c^2 + 2c\, t t' + t^2 t'^2`, a non-negative combination of rank-one
kernels, hence PSD; the RQ term is PSD; their sum is PSD.
"""

import torch
from gpytorch.constraints import Positive
from gpytorch.kernels import Kernel


class RQBezierPolyKernel(Kernel):
    has_lengthscale = True

    def __init__(self, ard_num_dims=None, **kwargs):
        super().__init__(ard_num_dims=ard_num_dims, **kwargs)
        self.register_parameter(
            name="raw_alpha", parameter=torch.nn.Parameter(torch.zeros(*self.batch_shape, 1, 1))
        )
        self.register_constraint("raw_alpha", Positive())
        self.register_parameter(
            name="raw_offset", parameter=torch.nn.Parameter(torch.zeros(*self.batch_shape, 1, 1))
        )
        self.register_constraint("raw_offset", Positive())
        self.register_parameter(
            name="raw_control", parameter=torch.nn.Parameter(torch.zeros(*self.batch_shape, 1, 4))
        )
        self.register_constraint("raw_control", Positive())

    @property
    def alpha(self):
        return self.raw_alpha_constraint.transform(self.raw_alpha)

    @property
    def offset(self):
        return self.raw_offset_constraint.transform(self.raw_offset)

    @property
    def control(self):
        return self.raw_control_constraint.transform(self.raw_control)

    def _bezier_coordinate(self, x):
        u = x.clamp(0.0, 1.0)
        v = 1.0 - u
        w = self.control
        curve = (
            w[..., 0:1] * v.pow(3)
            + 3.0 * w[..., 1:2] * u * v.pow(2)
            + 3.0 * w[..., 2:3] * u.pow(2) * v
            + w[..., 3:4] * u.pow(3)
        )
        return curve.mean(-1)

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        alpha = self.alpha
        offset = self.offset
        t1 = self._bezier_coordinate(x1)
        t2 = self._bezier_coordinate(x2)
        if diag:
            alpha = alpha.squeeze(-1)
            offset = offset.squeeze(-1)
            prod = t1 * t2
        else:
            prod = t1.unsqueeze(-1) * t2.unsqueeze(-2)
        rq = (1.0 + sq_dist.div(2.0 * alpha)).pow(-alpha)
        poly = (offset + prod).pow(2)
        return rq + poly
