"""GPyTorch kernels of the start population and the baselines (one kernel per module)."""

from ax_kernel_discovery.kernels.bock import BOCKKernel
from ax_kernel_discovery.kernels.input_map import InputMapKernel
from ax_kernel_discovery.kernels.linear import CenteredLinearKernel
from ax_kernel_discovery.kernels.matern52 import DimScaledMatern52Kernel
from ax_kernel_discovery.kernels.periodic import DimScaledPeriodicKernel
from ax_kernel_discovery.kernels.priors import dim_scaled_lengthscale_prior
from ax_kernel_discovery.kernels.rbf import DimScaledRBFKernel
from ax_kernel_discovery.kernels.rq import DimScaledRQKernel
from ax_kernel_discovery.kernels.sl import SphericalLinearKernel
from ax_kernel_discovery.kernels.warped import WarpedKernel

__all__ = [
    "BOCKKernel",
    "CenteredLinearKernel",
    "DimScaledMatern52Kernel",
    "DimScaledPeriodicKernel",
    "DimScaledRBFKernel",
    "DimScaledRQKernel",
    "InputMapKernel",
    "SphericalLinearKernel",
    "WarpedKernel",
    "dim_scaled_lengthscale_prior",
]
