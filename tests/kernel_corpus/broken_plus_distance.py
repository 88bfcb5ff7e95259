"""Not PSD: RBF plus beta times the Euclidean distance (a distance is not a kernel)."""

import torch
from gpytorch.constraints import Positive
from gpytorch.kernels import Kernel


class RBFPlusDistanceKernel(Kernel):
    has_lengthscale = True

    def __init__(self, ard_num_dims=None, **kwargs):
        super().__init__(ard_num_dims=ard_num_dims, **kwargs)
        self.register_parameter(name="raw_beta", parameter=torch.nn.Parameter(torch.zeros(1)))
        self.register_constraint("raw_beta", Positive())

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        dist = sq_dist.clamp_min(1e-30).sqrt()
        beta = self.raw_beta_constraint.transform(self.raw_beta)
        return torch.exp(-0.5 * sq_dist) + beta * dist
