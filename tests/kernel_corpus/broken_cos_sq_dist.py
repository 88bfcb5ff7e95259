"""Not PSD: cos(pi d^2) is not a valid covariance (cos(pi r) would be, on one input)."""

import math

import torch
from gpytorch.kernels import Kernel


class CosSquaredDistanceKernel(Kernel):
    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        return torch.cos(math.pi * sq_dist)
