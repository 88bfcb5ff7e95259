"""Ignores ``diag=True`` and returns the full matrix (breaks ScaleKernel and variances)."""

import torch
from gpytorch.kernels import Kernel


class IgnoresDiagKernel(Kernel):
    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        return torch.exp(-0.5 * torch.cdist(x1_, x2_).pow(2))
