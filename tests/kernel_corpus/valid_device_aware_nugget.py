"""The device-aware version of ``broken_deviceless_nugget``: tensors made on the inputs' device."""

import torch
from gpytorch.kernels import Kernel


class DeviceAwareNuggetKernel(Kernel):
    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        sq_dist = self.covar_dist(x1_, x2_, square_dist=True, diag=diag, **params)
        k = torch.exp(-torch.tensor(0.5, dtype=x1.dtype) * sq_dist)
        if diag:
            return k + 1e-3
        if x1.shape == x2.shape and torch.equal(x1, x2):
            return k + 1e-3 * torch.eye(x1.size(-2), dtype=x1.dtype, device=x1.device)
        return k
