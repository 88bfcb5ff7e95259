r"""Matern-5/2 times (tanh-polynomial + rational quadratic).

Our reading of a kernel the paper reports as discovered:

.. math::
    k(x, x') = k_{M52}(r) \left[ \left(c + \tfrac1D \langle \tanh(x/\ell),
    \tanh(x'/\ell) \rangle\right)^2 + \left(1 + \frac{r^2}{2\alpha}\right)^{-\alpha} \right],
    \qquad r = \lVert (x - x') / \ell \rVert

with ARD lengthscales :math:`\ell` and :math:`c, \alpha > 0`. PSD: the polynomial is a
sum of products of the linear kernel on the feature map ``tanh`` with non-negative
coefficients, RQ is PSD, sums and products of PSD kernels are PSD.
"""

import math

import torch
from gpytorch.constraints import Positive
from gpytorch.kernels import Kernel


class Matern52TanhPolyRQKernel(Kernel):
    has_lengthscale = True

    def __init__(self, ard_num_dims=None, **kwargs):
        super().__init__(ard_num_dims=ard_num_dims, **kwargs)
        self.register_parameter(
            name="raw_offset", parameter=torch.nn.Parameter(torch.zeros(*self.batch_shape, 1, 1))
        )
        self.register_constraint("raw_offset", Positive())
        self.register_parameter(
            name="raw_alpha", parameter=torch.nn.Parameter(torch.zeros(*self.batch_shape, 1, 1))
        )
        self.register_constraint("raw_alpha", Positive())

    @property
    def offset(self):
        return self.raw_offset_constraint.transform(self.raw_offset)

    @property
    def alpha(self):
        return self.raw_alpha_constraint.transform(self.raw_alpha)

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        dist = sq_dist.clamp_min(1e-30).sqrt()
        sqrt5 = math.sqrt(5.0)
        matern = (1.0 + sqrt5 * dist + (5.0 / 3.0) * sq_dist) * torch.exp(-sqrt5 * dist)

        t1 = torch.tanh(x1_)
        t2 = torch.tanh(x2_)
        dim = x1.size(-1)
        offset = self.offset
        alpha = self.alpha
        if diag:
            inner = (t1 * t2).sum(-1) / dim
            offset = offset.squeeze(-1)
            alpha = alpha.squeeze(-1)
        else:
            inner = torch.matmul(t1, t2.transpose(-2, -1)) / dim
        poly = (offset + inner).pow(2)
        rq = (1.0 + sq_dist.div(2.0 * alpha)).pow(-alpha)
        return matern * (poly + rq)
