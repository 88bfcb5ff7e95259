"""Device bug: a grid made on the CPU and cast to the inputs' dtype, not moved.

``.to(x1.dtype)`` changes the dtype only: on a GPU the grid stays on the CPU and the
product with the inputs fails. The device-correct twin is ``valid_moved_grid``.
"""

import math

import torch
from gpytorch.kernels import Kernel


class DtypeOnlyMoveKernel(Kernel):
    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        k = torch.exp(-0.5 * sq_dist)
        grid = torch.linspace(0, 1, 5).to(x1.dtype)  # still on the CPU on a GPU run
        f1 = torch.cos(math.pi * x1.mean(-1, keepdim=True) * grid)
        f2 = torch.cos(math.pi * x2.mean(-1, keepdim=True) * grid)
        if diag:
            return k + (f1 * f2).sum(-1)
        return k + f1 @ f2.transpose(-1, -2)
