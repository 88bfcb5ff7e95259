"""Shape bug from the paper: an N1 x N1 identity added to an N1 x N2 matrix.

Works for square inputs, broadcasts to the wrong shape for (5,D)x(1,D).
"""

import torch
from gpytorch.kernels import Kernel


class EyeNuggetKernel(Kernel):
    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        if diag:
            return torch.exp(-0.5 * sq_dist) + 1e-3
        nugget = 1e-3 * torch.eye(x1.size(-2), dtype=x1.dtype)
        return torch.exp(-0.5 * sq_dist) + nugget
