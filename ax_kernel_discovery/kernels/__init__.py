"""GPyTorch kernels of the start population and the baselines (one kernel per module), and
the leaves of the expression grammar.

:data:`LEAVES` registers by name every kernel an expression tree can use, each by one
:class:`~ax_kernel_discovery.kernels.leaf.Leaf` description (how it is built, its formula,
its tier, how the offline operator treats it). Adding a kernel: its module here, its
export and its :class:`Leaf` below, and its test (``tests/kernels/``).
"""

from ax_kernel_discovery.kernels.bock import BOCKKernel
from ax_kernel_discovery.kernels.cosine import ProjectedCosineKernel
from ax_kernel_discovery.kernels.feature_maps import FeatureMapKernel
from ax_kernel_discovery.kernels.imq import DimScaledIMQKernel
from ax_kernel_discovery.kernels.input_map import InputMapKernel
from ax_kernel_discovery.kernels.leaf import (
    Leaf,
    ard,
    isotropic_matern32,
    isotropic_matern52,
    isotropic_rbf,
    isotropic_rq,
    leaf_table,
    matern32,
    polynomial,
)
from ax_kernel_discovery.kernels.linear import CenteredLinearKernel
from ax_kernel_discovery.kernels.matern52 import DimScaledMatern52Kernel
from ax_kernel_discovery.kernels.periodic import DimScaledPeriodicKernel
from ax_kernel_discovery.kernels.priors import dim_scaled_lengthscale_prior
from ax_kernel_discovery.kernels.rbf import DimScaledRBFKernel
from ax_kernel_discovery.kernels.rq import DimScaledRQKernel
from ax_kernel_discovery.kernels.saas import SaasMatern52Kernel
from ax_kernel_discovery.kernels.sl import SphericalLinearKernel
from ax_kernel_discovery.kernels.warped import WarpedKernel

__all__ = [
    "LEAVES",
    "BOCKKernel",
    "CenteredLinearKernel",
    "DimScaledIMQKernel",
    "DimScaledMatern52Kernel",
    "DimScaledPeriodicKernel",
    "DimScaledRBFKernel",
    "DimScaledRQKernel",
    "FeatureMapKernel",
    "InputMapKernel",
    "Leaf",
    "ProjectedCosineKernel",
    "SaasMatern52Kernel",
    "SphericalLinearKernel",
    "WarpedKernel",
    "dim_scaled_lengthscale_prior",
]

#: The leaves of the expression grammar by name, in the order the offline operator draws
#: them (the classic tier first).
LEAVES: dict[str, Leaf] = leaf_table(
    Leaf(
        "rbf",
        ard(DimScaledRBFKernel),
        "exp(-|u - u'|^2_l / 2)",
        isotropic=isotropic_rbf,
        distance=True,
        title="RBF",
    ),
    Leaf(
        "matern52",
        ard(DimScaledMatern52Kernel),
        "(1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r), r = |u - u'|_l",
        isotropic=isotropic_matern52,
        distance=True,
        title="Matern52",
    ),
    Leaf(
        "matern32",
        matern32,
        "(1 + sqrt3 r) exp(-sqrt3 r), r = |u - u'|_l",
        isotropic=isotropic_matern32,
        distance=True,
    ),
    Leaf(
        "rq",
        ard(DimScaledRQKernel),
        "(1 + |u - u'|^2_l / (2 alpha))^(-alpha)",
        isotropic=isotropic_rq,
        distance=True,
        title="RQ",
    ),
    Leaf("bock", ard(BOCKKernel), BOCKKernel.formula, projecting=True, title="BOCK"),
    Leaf(
        "sl", ard(SphericalLinearKernel), SphericalLinearKernel.formula, projecting=True, title="SL"
    ),
    Leaf("linear", ard(CenteredLinearKernel), CenteredLinearKernel.formula),
    Leaf("periodic", ard(DimScaledPeriodicKernel), DimScaledPeriodicKernel.formula),
    Leaf("poly2", polynomial(2), "(u^T u' + c)^2", polynomial=True),
    # the extended tier (the offline operator draws it with offline_grammar="extended")
    Leaf("imq", ard(DimScaledIMQKernel), "(1 + |u - u'|^2_l)^(-1/2)", "extended", distance=True),
    Leaf("poly3", polynomial(3), "(u^T u' + c)^3", "extended", polynomial=True),
    Leaf(
        "cosine",
        ard(ProjectedCosineKernel),
        "cos(2 pi sum_d (u_d - u'_d) / p_d)",
        "extended",
    ),
    Leaf(
        "saas",
        ard(SaasMatern52Kernel),
        "(1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r), r = |u - u'|_l, tau ~ HC(0.1), tau / l_d^2 ~ HC(1)",
        "extended",
        title="SAAS",
    ),
)
