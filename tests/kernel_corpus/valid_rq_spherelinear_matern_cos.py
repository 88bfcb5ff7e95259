r"""RQ + sphere-linear x Matern-5/2 + cosine of a warped radius.

Our reading of a kernel the paper reports as discovered:

.. math::
    k(x, x') = k_{RQ}(r) + \left(b + \langle u(x), u(x') \rangle\right) k_{M52}(r)
    + \cos\big(\omega (\rho(x) - \rho(x'))\big)

with :math:`r = \lVert (x - x') / \ell \rVert` (ARD), :math:`u(x) = (x - 0.5) /
\lVert x - 0.5 \rVert` (the input projected onto the unit sphere around the centre of
the cube), :math:`\rho(x) = \lVert x - 0.5 \rVert / \sqrt{D}` (a warped radius) and
:math:`b, \alpha, \omega > 0`. PSD: the sphere-linear term is a linear kernel on a
feature map plus a positive constant; its product with Matern-5/2 is PSD; the last term
is a stationary cosine kernel of the 1-D feature :math:`\rho`,
:math:`\cos\omega\rho\cos\omega\rho' + \sin\omega\rho\sin\omega\rho'`, of rank two.
"""

import math

import torch
from gpytorch.constraints import Positive
from gpytorch.kernels import Kernel


class RQSphereLinearMaternCosKernel(Kernel):
    has_lengthscale = True

    def __init__(self, ard_num_dims=None, **kwargs):
        super().__init__(ard_num_dims=ard_num_dims, **kwargs)
        for name in ("raw_alpha", "raw_bias", "raw_frequency"):
            self.register_parameter(
                name=name, parameter=torch.nn.Parameter(torch.zeros(*self.batch_shape, 1, 1))
            )
            self.register_constraint(name, Positive())

    @property
    def alpha(self):
        return self.raw_alpha_constraint.transform(self.raw_alpha)

    @property
    def bias(self):
        return self.raw_bias_constraint.transform(self.raw_bias)

    @property
    def frequency(self):
        return self.raw_frequency_constraint.transform(self.raw_frequency)

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        dist = sq_dist.clamp_min(1e-30).sqrt()

        alpha = self.alpha
        bias = self.bias
        frequency = self.frequency
        c1 = x1 - 0.5
        c2 = x2 - 0.5
        norm1 = c1.pow(2).sum(-1, keepdim=True).clamp_min(1e-12).sqrt()
        norm2 = c2.pow(2).sum(-1, keepdim=True).clamp_min(1e-12).sqrt()
        u1 = c1 / norm1
        u2 = c2 / norm2
        scale = math.sqrt(x1.size(-1))
        rho1 = norm1 / scale
        rho2 = norm2 / scale
        if diag:
            alpha = alpha.squeeze(-1)
            bias = bias.squeeze(-1)
            frequency = frequency.squeeze(-1)
            inner = (u1 * u2).sum(-1)
            rho_diff = (rho1 - rho2).squeeze(-1)
        else:
            inner = torch.matmul(u1, u2.transpose(-2, -1))
            rho_diff = rho1 - rho2.transpose(-2, -1)

        rq = (1.0 + sq_dist.div(2.0 * alpha)).pow(-alpha)
        sqrt5 = math.sqrt(5.0)
        matern = (1.0 + sqrt5 * dist + (5.0 / 3.0) * sq_dist) * torch.exp(-sqrt5 * dist)
        sphere_linear = bias + inner
        cosine = torch.cos(frequency * rho_diff)
        return rq + sphere_linear * matern + cosine
