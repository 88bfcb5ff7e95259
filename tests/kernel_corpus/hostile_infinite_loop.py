"""Never returns from forward."""

from gpytorch.kernels import Kernel


class LoopKernel(Kernel):
    def forward(self, x1, x2, diag=False, **params):
        while True:
            pass
