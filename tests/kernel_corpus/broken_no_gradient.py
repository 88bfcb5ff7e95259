"""A registered parameter that the Gram matrix does not depend on (detached)."""

import torch
from gpytorch.constraints import Positive
from gpytorch.kernels import Kernel


class DetachedParameterKernel(Kernel):
    has_lengthscale = True

    def __init__(self, ard_num_dims=None, **kwargs):
        super().__init__(ard_num_dims=ard_num_dims, **kwargs)
        self.register_parameter(name="raw_gamma", parameter=torch.nn.Parameter(torch.zeros(1)))
        self.register_constraint("raw_gamma", Positive())

    def forward(self, x1, x2, diag=False, **params):
        gamma = self.raw_gamma_constraint.transform(self.raw_gamma).detach()
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        return torch.exp(-0.5 * gamma * sq_dist)
