"""What the package knows about a leaf kernel of the grammar, in one description.

A :class:`Leaf` says how the kernel is built at an input dimension (with ARD
lengthscales, and with one :math:`\\sqrt{D}`-scaled lengthscale where it can be
isotropic), its readable formula, which tier of the grammar it belongs to, and how the
offline operator and the acquisition-cost proxy treat it. The leaves are registered by
name in :data:`ax_kernel_discovery.kernels.LEAVES` (with the kernels' exports), and
everything else reads them from there: the expression grammar
(:mod:`ax_kernel_discovery.expression`), the offline operator, the LLM prompts and schemas,
the kernel library and the start set.

The factories of the leaves GPyTorch provides (Matern-3/2, the polynomials, the isotropic
distance kernels) are here too: they add the package's priors to GPyTorch's kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gpytorch.kernels import Kernel, MaternKernel, PolynomialKernel, RBFKernel, RQKernel

from ax_kernel_discovery.kernels.priors import dim_scaled_lengthscale_kwargs

__all__ = [
    "Leaf",
    "Tier",
    "ard",
    "isotropic_matern32",
    "isotropic_matern52",
    "isotropic_rbf",
    "isotropic_rq",
    "leaf_table",
    "matern32",
    "polynomial",
]

#: ``classic``: drawn by the offline operator by default; ``extended``: only with
#: ``offline_grammar="extended"`` (both are open to LLM trees and library files).
Tier = Literal["classic", "extended"]


@dataclass(frozen=True)
class Leaf:
    """One leaf kernel of the expression grammar.

    Attributes:
        name: The leaf's name in expression trees (``{"kernel": name}``).
        factory: The kernel on ``d`` inputs, with ARD lengthscales where it has any.
        formula: Its base function ``k0(u, u')`` in words, for formulas and prompts.
        tier: ``classic`` or ``extended`` (see :data:`Tier`).
        isotropic: The kernel with one dimension-scaled lengthscale (``ard: false`` in a
            tree; ``None``: the leaf has no isotropic form).
        distance: A stationary distance kernel, whose base function the offline
            operator may swap for another's.
        projecting: It projects its inputs (onto a sphere or a cylinder) before the
            kernel: the acquisition recomputes that at every step (its cost proxy).
        polynomial: A polynomial feature of the inner product the offline operator
            multiplies or adds.
        title: The member name of the kernel in the start set (``None``: its name).
    """

    name: str
    factory: Callable[[int], Kernel]
    formula: str
    tier: Tier = "classic"
    isotropic: Callable[[int], Kernel] | None = None
    distance: bool = False
    projecting: bool = False
    polynomial: bool = False
    title: str | None = None


def leaf_table(*leaves: Leaf) -> dict[str, Leaf]:
    """The leaves by name, in the order given (the offline operator draws in that order).

    Raises:
        ValueError: Two leaves share a name.
    """
    table: dict[str, Leaf] = {}
    for leaf in leaves:
        if leaf.name in table:
            raise ValueError(f"two leaves are named {leaf.name!r}")
        table[leaf.name] = leaf
    return table


def ard(kernel: Callable[..., Kernel]) -> Callable[[int], Kernel]:
    """The factory of a kernel class of this package: ``kernel(ard_num_dims=d)``."""

    def factory(dim: int) -> Kernel:
        return kernel(ard_num_dims=dim)

    return factory


def matern32(dim: int) -> Kernel:
    """GPyTorch's Matern-3/2 with ARD lengthscales and the dimension-scaled prior."""
    return MaternKernel(nu=1.5, ard_num_dims=dim, **dim_scaled_lengthscale_kwargs(dim))


def polynomial(power: int) -> Callable[[int], Kernel]:
    """GPyTorch's polynomial kernel ``(u^T u' + c)^power`` (any input dimension)."""

    def factory(dim: int) -> Kernel:
        return PolynomialKernel(power=power)

    return factory


def isotropic_rbf(dim: int) -> Kernel:
    """RBF with one lengthscale and the dimension-scaled prior."""
    return RBFKernel(**dim_scaled_lengthscale_kwargs(dim))


def isotropic_matern52(dim: int) -> Kernel:
    """Matern-5/2 with one lengthscale and the dimension-scaled prior."""
    return MaternKernel(nu=2.5, **dim_scaled_lengthscale_kwargs(dim))


def isotropic_matern32(dim: int) -> Kernel:
    """Matern-3/2 with one lengthscale and the dimension-scaled prior."""
    return MaternKernel(nu=1.5, **dim_scaled_lengthscale_kwargs(dim))


def isotropic_rq(dim: int) -> Kernel:
    """RQ with one lengthscale and the dimension-scaled prior."""
    return RQKernel(**dim_scaled_lengthscale_kwargs(dim))
