"""``diag=True`` has the right shape but the wrong values (forgot the amplitude)."""

import torch
from gpytorch.kernels import Kernel


class WrongDiagKernel(Kernel):
    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        if diag:
            return torch.exp(-0.5 * sq_dist)
        return 2.0 * torch.exp(-0.5 * sq_dist)
