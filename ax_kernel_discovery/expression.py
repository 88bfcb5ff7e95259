"""Kernel expressions: JSON trees over trusted kernels, warps, sums and products.

The base population and the offline evolution operator describe kernels as small
trees, so that a kernel is data (serializable, hashable, printable as a formula) and
is built only from the package's own trusted modules:

* leaf: ``{"kernel": "matern52", "warp": "tanh", "ard": true}``
* sum / product: ``{"op": "sum" | "product", "args": [tree, tree]}``

Each summand gets its own output scale; a product gets one for the whole product.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from gpytorch.kernels import (
    AdditiveKernel,
    Kernel,
    MaternKernel,
    PolynomialKernel,
    ProductKernel,
    RBFKernel,
    RQKernel,
    ScaleKernel,
)
from gpytorch.priors import GammaPrior

from ax_kernel_discovery.kernels import (
    BOCKKernel,
    CenteredLinearKernel,
    DimScaledMatern52Kernel,
    DimScaledPeriodicKernel,
    DimScaledRBFKernel,
    DimScaledRQKernel,
    SphericalLinearKernel,
    WarpedKernel,
)
from ax_kernel_discovery.kernels.priors import dim_scaled_lengthscale_kwargs
from ax_kernel_discovery.kernels.warped import WARP_FORMULAS, warp_output_dim

Spec = dict[str, Any]


def _matern32(dim: int) -> Kernel:
    return MaternKernel(nu=1.5, ard_num_dims=dim, **dim_scaled_lengthscale_kwargs(dim))


def _poly2(dim: int) -> Kernel:
    return PolynomialKernel(power=2)


#: Leaf kernels: name -> (ARD factory, readable formula of k0(u, u')).
LEAVES: dict[str, tuple[Callable[[int], Kernel], str]] = {
    "rbf": (lambda d: DimScaledRBFKernel(ard_num_dims=d), "exp(-|u - u'|^2_l / 2)"),
    "matern52": (
        lambda d: DimScaledMatern52Kernel(ard_num_dims=d),
        "(1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r), r = |u - u'|_l",
    ),
    "matern32": (_matern32, "(1 + sqrt3 r) exp(-sqrt3 r), r = |u - u'|_l"),
    "rq": (lambda d: DimScaledRQKernel(ard_num_dims=d), "(1 + |u - u'|^2_l / (2 alpha))^(-alpha)"),
    "bock": (lambda d: BOCKKernel(ard_num_dims=d), BOCKKernel.formula),
    "sl": (lambda d: SphericalLinearKernel(ard_num_dims=d), SphericalLinearKernel.formula),
    "linear": (lambda d: CenteredLinearKernel(ard_num_dims=d), CenteredLinearKernel.formula),
    "periodic": (
        lambda d: DimScaledPeriodicKernel(ard_num_dims=d),
        DimScaledPeriodicKernel.formula,
    ),
    "poly2": (_poly2, "(u^T u' + c)^2"),
}

#: Stationary distance kernels whose base function can be swapped, and that can be isotropic.
DISTANCE_KERNELS: tuple[str, ...] = ("rbf", "matern52", "matern32", "rq")

_ISOTROPIC: dict[str, Callable[[int], Kernel]] = {
    "rbf": lambda d: RBFKernel(**dim_scaled_lengthscale_kwargs(d)),
    "matern52": lambda d: MaternKernel(nu=2.5, **dim_scaled_lengthscale_kwargs(d)),
    "matern32": lambda d: MaternKernel(nu=1.5, **dim_scaled_lengthscale_kwargs(d)),
    "rq": lambda d: RQKernel(**dim_scaled_lengthscale_kwargs(d)),
}


def leaf(kernel: str, warp: str = "identity", ard: bool = True) -> Spec:
    """A leaf spec (validated)."""
    spec = {"kernel": kernel, "warp": warp, "ard": ard}
    validate_spec(spec)
    return spec


def validate_spec(spec: Spec, depth: int = 0) -> None:
    """Raise ``ValueError`` with a clear reason if ``spec`` is not a valid tree."""
    if depth > 8:
        raise ValueError("kernel expression is nested too deeply (max depth 8)")
    if not isinstance(spec, dict):
        raise ValueError(f"kernel expression node must be a dict, got {type(spec).__name__}")
    if "op" in spec:
        if spec["op"] not in ("sum", "product"):
            raise ValueError(f"unknown operator {spec['op']!r}; use 'sum' or 'product'")
        args = spec.get("args")
        if not isinstance(args, list) or len(args) < 2:
            raise ValueError("'sum'/'product' need a list of at least two 'args'")
        for arg in args:
            validate_spec(arg, depth + 1)
        return
    if spec.get("kernel") not in LEAVES:
        raise ValueError(f"unknown kernel {spec.get('kernel')!r}; choose from {sorted(LEAVES)}")
    if spec.get("warp", "identity") not in WARP_FORMULAS:
        raise ValueError(f"unknown warp {spec.get('warp')!r}; choose from {sorted(WARP_FORMULAS)}")
    if not spec.get("ard", True) and spec["kernel"] not in DISTANCE_KERNELS:
        raise ValueError(f"only {DISTANCE_KERNELS} can be isotropic (ard=false)")


def _build(spec: Spec, dim: int) -> Kernel:
    if "op" in spec:
        parts = [_build(arg, dim) for arg in spec["args"]]
        if spec["op"] == "sum":
            return AdditiveKernel(*[p if isinstance(p, ScaleKernel) else _scaled(p) for p in parts])
        return ProductKernel(*parts)
    warp = spec.get("warp", "identity")
    in_dim = warp_output_dim(warp, dim)
    name = spec["kernel"]
    base = LEAVES[name][0](in_dim) if spec.get("ard", True) else _ISOTROPIC[name](in_dim)
    return base if warp == "identity" else WarpedKernel(base, warp=warp, dim=dim)


def _scaled(kernel: Kernel) -> ScaleKernel:
    """Output scale with BoTorch's classic Gamma(2, 0.15) prior (targets are standardized)."""
    return ScaleKernel(kernel, outputscale_prior=GammaPrior(2.0, 0.15))


def build_kernel(spec: Spec, dim: int) -> Kernel:
    """Build the GPyTorch kernel of ``spec`` for inputs of dimension ``dim``.

    The result always carries output scales: a sum scales each summand, anything else
    is wrapped in one :class:`~gpytorch.kernels.ScaleKernel`.
    """
    validate_spec(spec)
    kernel = _build(spec, dim)
    return kernel if isinstance(kernel, AdditiveKernel) else _scaled(kernel)


def formula(spec: Spec) -> str:
    """Readable formula of a spec, e.g. ``s1 * Matern52(tanh(x)) + s2 * RQ(x)``."""

    def term(node: Spec) -> str:
        if "op" in node:
            inner = [term(a) for a in node["args"]]
            if node["op"] == "sum":
                return "(" + " + ".join(f"s{i + 1} * {t}" for i, t in enumerate(inner)) + ")"
            return " x ".join(inner)
        warp = node.get("warp", "identity")
        arg = "x" if warp == "identity" else WARP_FORMULAS[warp]
        iso = "" if node.get("ard", True) else ", isotropic, |.| / sqrt(D)"
        return f"{node['kernel'].upper()}[u = {arg}{iso}]"

    text = term(spec)
    if text.startswith("(") and text.endswith(")") and "op" in spec and spec["op"] == "sum":
        text = text[1:-1]
    elif "op" not in spec or spec["op"] != "sum":
        text = f"s * {text}"
    legend = "; ".join(sorted({f"{n.upper()}(u, u') = {LEAVES[n][1]}" for n in leaf_names(spec)}))
    return f"k(x, x') = {text}   where {legend}"


def leaves(spec: Spec) -> Iterator[Spec]:
    """All leaves of a spec, left to right."""
    if "op" in spec:
        for arg in spec["args"]:
            yield from leaves(arg)
    else:
        yield spec


def leaf_names(spec: Spec) -> list[str]:
    return [node["kernel"] for node in leaves(spec)]


def depth(spec: Spec) -> int:
    """Depth of the tree (a leaf has depth 1)."""
    return 1 + max((depth(a) for a in spec["args"]), default=0) if "op" in spec else 1


def short_name(spec: Spec) -> str:
    """Compact name, e.g. ``matern52@tanh+rq``."""
    if "op" in spec:
        sep = "+" if spec["op"] == "sum" else "*"
        return "(" + sep.join(short_name(a) for a in spec["args"]) + ")"
    name = spec["kernel"]
    if spec.get("warp", "identity") != "identity":
        name += "@" + spec["warp"]
    if not spec.get("ard", True):
        name += "~iso"
    return name
