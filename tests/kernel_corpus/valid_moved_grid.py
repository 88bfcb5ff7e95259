"""Device-correct by moving: tensors made on the CPU, then put on the inputs' device.

Issue 30 item 7: ``torch.linspace(0, 1, 5).to(x1)`` works on a GPU (the grid is made on
the CPU, then copied to the inputs' device and dtype), so the device check must accept
it. RBF plus a linear kernel on cosine features of the mean coordinate at the grid's
frequencies (PSD: a sum of PSD kernels).
"""

import math

import torch
from gpytorch.kernels import Kernel


class MovedGridKernel(Kernel):
    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        k = torch.exp(-0.5 * sq_dist)
        grid = torch.linspace(0, 1, 5).to(x1)  # made on the CPU, moved to the inputs
        weights = torch.arange(1, 6).double().reciprocal().to(device=x1.device, dtype=x1.dtype)
        phase = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0], dtype=torch.float64).type_as(x1)
        f1 = torch.cos(math.pi * x1.mean(-1, keepdim=True) * grid + phase) * weights
        f2 = torch.cos(math.pi * x2.mean(-1, keepdim=True) * grid + phase) * weights
        if diag:
            return k + (f1 * f2).sum(-1)
        return k + f1 @ f2.transpose(-1, -2)
