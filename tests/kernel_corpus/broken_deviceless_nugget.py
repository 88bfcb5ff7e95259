"""Device bug: right shapes, but a nugget made without ``device=``.

Passes every check on a CPU; on a GPU ``torch.eye`` lands on the CPU and the sum fails
at fit time. The scalar ``torch.tensor(0.5)`` is fine on a GPU (a 0-dim CPU tensor).
"""

import torch
from gpytorch.kernels import Kernel


class DevicelessNuggetKernel(Kernel):
    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        k = torch.exp(-torch.tensor(0.5, dtype=x1.dtype) * sq_dist)
        if diag:
            return k + 1e-3
        if x1.shape == x2.shape and torch.equal(x1, x2):
            return k + 1e-3 * torch.eye(x1.size(-2), dtype=x1.dtype)
        return k
