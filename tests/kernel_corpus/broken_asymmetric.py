"""Not symmetric: weights the covariance by a function of the first input only."""

import torch
from gpytorch.kernels import Kernel


class AsymmetricKernel(Kernel):
    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        weight = 1.0 + x1.sum(-1)
        if not diag:
            weight = weight.unsqueeze(-1)
        return weight * torch.exp(-0.5 * sq_dist)
