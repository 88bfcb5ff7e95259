"""Non-finite output: log of a distance that is zero on the diagonal."""

import torch
from gpytorch.kernels import Kernel


class LogDistanceKernel(Kernel):
    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        return torch.exp(-0.5 * sq_dist) - 0.01 * torch.log(sq_dist)
