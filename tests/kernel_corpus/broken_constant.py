"""The local 1.5B model's ``u - u`` bug: the kernel ignores its inputs (a constant)."""

import math

import torch
from gpytorch.constraints import Positive
from gpytorch.kernels import Kernel


class ConstantByMistakeKernel(Kernel):
    has_lengthscale = True

    def __init__(self, ard_num_dims=None, **kwargs):
        super().__init__(ard_num_dims=ard_num_dims, **kwargs)
        self.register_parameter(name="raw_alpha", parameter=torch.nn.Parameter(torch.zeros(1, 1)))
        self.register_constraint("raw_alpha", Positive())

    def forward(self, x1, x2, diag=False, **params):
        alpha = self.raw_alpha_constraint.transform(self.raw_alpha)
        u1 = x1 / math.sqrt(x1.size(-1))
        sq = ((u1 - u1) / self.lengthscale).pow(2).sum(-1, keepdim=True)  # (..., N, 1) zeros
        covar = alpha * torch.exp(-0.5 * sq) * torch.ones_like(x2[..., :1, :1]).transpose(-2, -1)
        covar = covar.expand(*covar.shape[:-1], x2.size(-2))
        if diag:
            return covar.diagonal(dim1=-2, dim2=-1) if x1.size(-2) == x2.size(-2) else covar[..., 0]
        return covar
