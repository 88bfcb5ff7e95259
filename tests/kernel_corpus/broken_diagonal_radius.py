"""Shape bug from the paper: "radii" read off the diagonal of a cross matrix.

``diagonal(x1 @ x2^T)`` has min(N1, N2) entries, so the outer product of the radii has
the wrong shape for rectangular inputs.
"""

import torch
from gpytorch.kernels import Kernel


class DiagonalRadiusKernel(Kernel):
    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        radius = torch.diagonal(torch.matmul(x1, x2.transpose(-2, -1)), dim1=-2, dim2=-1)
        if diag:
            return torch.exp(-0.5 * sq_dist) * (1.0 + radius * radius)
        scale = 1.0 + radius.unsqueeze(-1) * radius.unsqueeze(-2)
        return torch.exp(-0.5 * sq_dist) * scale
