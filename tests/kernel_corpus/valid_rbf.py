r"""Hand-written RBF kernel.

.. math::
    k(x, x') = \exp\left(-\tfrac12 \lVert (x - x') / \ell \rVert^2\right)

with ARD lengthscales :math:`\ell` owned by the GPyTorch base class.
"""

import torch
from gpytorch.kernels import Kernel


class HandRBFKernel(Kernel):
    has_lengthscale = True

    def __init__(self, ard_num_dims=None, **kwargs):
        super().__init__(ard_num_dims=ard_num_dims, **kwargs)

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        return torch.exp(-0.5 * sq_dist)
