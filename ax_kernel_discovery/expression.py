"""Kernel expressions: JSON trees over trusted kernels, warps, sums and products.

The base population and the offline evolution operator describe kernels as small
trees, so that a kernel is data (serializable, hashable, printable as a formula) and
is built only from the package's own trusted modules:

* leaf: ``{"kernel": "matern52", "warp": "tanh", "ard": true}``
* sum / product: ``{"op": "sum" | "product", "args": [tree, tree, ...]}``

Each summand gets its own output scale (so a sum inside a product has scaled
sub-terms); a product gets one for the whole product.

The grammar has two tiers. The **classic** leaves and warps are what the offline
evolution operator draws from by default (:data:`CLASSIC_LEAVES`, :data:`CLASSIC_WARPS`);
the **extended** grammar adds the inverse multiquadric, a cubic polynomial, a
projected cosine and the dimension-changing feature maps ``bezier``, ``radius`` and
``direction`` (:mod:`ax_kernel_discovery.kernels.feature_maps`), so that the kernels
the paper reports as discovered can be written as trees (:data:`PAPER_KERNELS`). Every
tree of either tier is PSD by construction: sums and products of PSD kernels, and PSD
kernels of deterministic feature maps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpytorch.kernels import AdditiveKernel, Kernel, ProductKernel, ScaleKernel
from gpytorch.priors import GammaPrior

from ax_kernel_discovery.errors import KernelFailure
from ax_kernel_discovery.kernels import LEAVES, WarpedKernel
from ax_kernel_discovery.kernels.feature_maps import (
    FEATURE_MAP_FORMULAS,
    FeatureMapKernel,
    feature_map_output_dim,
)
from ax_kernel_discovery.kernels.warped import WARP_FORMULAS, warp_output_dim

Spec = dict[str, Any]

#: Leaves of the classic grammar (what the offline operator draws from by default).
CLASSIC_LEAVES: tuple[str, ...] = tuple(k for k, v in LEAVES.items() if v.tier == "classic")

#: Input maps of a leaf: the monotone warps of WarpedKernel and the feature maps.
WARPS: dict[str, str] = {**WARP_FORMULAS, **FEATURE_MAP_FORMULAS}

#: Warps of the classic grammar.
CLASSIC_WARPS: tuple[str, ...] = tuple(WARP_FORMULAS)

#: Leaves that can be isotropic (``"ard": false``): the classic distance kernels.
ISOTROPIC_LEAVES: tuple[str, ...] = tuple(k for k, v in LEAVES.items() if v.isotropic)

#: Stationary distance kernels of the classic grammar, whose base function the offline
#: operator swaps.
DISTANCE_KERNELS: tuple[str, ...] = tuple(
    k for k, v in LEAVES.items() if v.distance and v.tier == "classic"
)

#: Distance kernels of the extended grammar (the base-function swap may also pick these).
EXTENDED_DISTANCE_KERNELS: tuple[str, ...] = tuple(k for k, v in LEAVES.items() if v.distance)


def leaf(kernel: str, warp: str = "identity", ard: bool = True) -> Spec:
    """A leaf spec (validated)."""
    spec = {"kernel": kernel, "warp": warp, "ard": ard}
    validate_spec(spec)
    return spec


class InvalidSpecError(KernelFailure, ValueError):
    """A kernel expression that is no valid tree: the kernel's failure (its proposer's
    or its file's), not kernel discovery's (:mod:`ax_kernel_discovery.errors`)."""


def validate_spec(spec: Spec, depth: int = 0) -> None:
    """Raise :class:`InvalidSpecError` (a ``ValueError``) with a clear reason if ``spec``
    is not a valid tree.

    This is the grammar's validator: anything built from a tree (LLM replies included)
    passes it first. It never raises anything but ``InvalidSpecError``, whatever the input.
    """
    if depth > 8:
        raise InvalidSpecError("kernel expression is nested too deeply (max depth 8)")
    if not isinstance(spec, dict):
        raise InvalidSpecError(f"kernel expression node must be a dict, got {type(spec).__name__}")
    if "op" in spec:
        extra = sorted(set(map(str, spec)) - _OP_KEYS)
        if extra:
            raise InvalidSpecError(
                f"unknown field(s) {extra} in an operator node; use 'op' and 'args'"
            )
        if not isinstance(spec["op"], str) or spec["op"] not in ("sum", "product"):
            raise InvalidSpecError(f"unknown operator {spec['op']!r}; use 'sum' or 'product'")
        args = spec.get("args")
        if not isinstance(args, list) or len(args) < 2:
            raise InvalidSpecError("'sum'/'product' need a list of at least two 'args'")
        for arg in args:
            validate_spec(arg, depth + 1)
        return
    extra = sorted(set(map(str, spec)) - _LEAF_KEYS)
    if extra:
        raise InvalidSpecError(
            f"unknown field(s) {extra} in a leaf; use 'kernel', 'warp' and 'ard'"
        )
    kernel = spec.get("kernel")
    if not isinstance(kernel, str) or kernel not in LEAVES:
        raise InvalidSpecError(f"unknown kernel {kernel!r}; choose from {sorted(LEAVES)}")
    warp = spec.get("warp", "identity")
    if not isinstance(warp, str) or warp not in WARPS:
        raise InvalidSpecError(f"unknown warp {warp!r}; choose from {sorted(WARPS)}")
    ard = spec.get("ard", True)
    if not isinstance(ard, bool):
        raise InvalidSpecError(f"'ard' must be true or false, got {ard!r}")
    if not ard and kernel not in ISOTROPIC_LEAVES:
        raise InvalidSpecError(f"only {ISOTROPIC_LEAVES} can be isotropic (ard=false)")


_OP_KEYS = frozenset({"op", "args"})
_LEAF_KEYS = frozenset({"kernel", "warp", "ard"})


def canonical(spec: Spec) -> Spec:
    """A copy of a valid spec with every leaf's defaults written out (``warp``, ``ard``).

    ``{"kernel": "rbf"}`` and ``{"kernel": "rbf", "warp": "identity", "ard": true}``
    are the same kernel; after this they also have the same candidate key.
    """
    if "op" in spec:
        return {"op": spec["op"], "args": [canonical(a) for a in spec["args"]]}
    return {
        "kernel": spec["kernel"],
        "warp": spec.get("warp", "identity"),
        "ard": spec.get("ard", True),
    }


def _build(spec: Spec, dim: int) -> Kernel:
    if "op" in spec:
        parts = [_build(arg, dim) for arg in spec["args"]]
        if spec["op"] == "sum":
            return AdditiveKernel(*[p if isinstance(p, ScaleKernel) else _scaled(p) for p in parts])
        return ProductKernel(*parts)
    warp = spec.get("warp", "identity")
    feature_map = warp in FEATURE_MAP_FORMULAS
    in_dim = feature_map_output_dim(warp, dim) if feature_map else warp_output_dim(warp, dim)
    name = spec["kernel"]
    leaf = LEAVES[name]
    isotropic = leaf.isotropic
    base = isotropic(in_dim) if isotropic and not spec.get("ard", True) else leaf.factory(in_dim)
    if warp == "identity":
        return base
    if feature_map:
        return FeatureMapKernel(base, feature_map=warp, dim=dim)
    return WarpedKernel(base, warp=warp, dim=dim)


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
        arg = "x" if warp == "identity" else WARPS[warp]
        iso = "" if node.get("ard", True) else ", isotropic, |.| / sqrt(D)"
        return f"{node['kernel'].upper()}[u = {arg}{iso}]"

    text = term(spec)
    if text.startswith("(") and text.endswith(")") and "op" in spec and spec["op"] == "sum":
        text = text[1:-1]
    elif "op" not in spec or spec["op"] != "sum":
        text = f"s * {text}"
    legend = "; ".join(
        sorted({f"{n.upper()}(u, u') = {LEAVES[n].formula}" for n in leaf_names(spec)})
    )
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


def acquisition_cost(spec: Spec) -> int:
    """A deterministic proxy of what a kernel costs the acquisition optimizer, per step.

    One per leaf, one more per input warp or feature map and per projecting leaf (SL,
    BOCK): warps and projections of the inputs are recomputed at every optimizer step,
    and a sum or product evaluates each of its parts. The plain RBF costs 1.

    Example:
        >>> acquisition_cost(leaf("rbf")), acquisition_cost(leaf("sl", warp="tanh"))
        (1, 3)
    """
    if "op" in spec:
        return sum(acquisition_cost(a) for a in spec["args"])
    return (
        1 + int(spec.get("warp", "identity") != "identity") + int(LEAVES[spec["kernel"]].projecting)
    )


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


#: The kernels Yun, Shin et al. report as discovered, written in the extended grammar
#: (our readings; see ``tests/kernel_corpus`` for hand-written versions of the same).
PAPER_KERNELS: dict[str, Spec] = {
    # Matern-5/2 x (tanh-polynomial + RQ)
    "matern52_x_tanhpoly_plus_rq": {
        "op": "product",
        "args": [
            {"kernel": "matern52", "warp": "identity", "ard": True},
            {
                "op": "sum",
                "args": [
                    {"kernel": "poly2", "warp": "tanh", "ard": True},
                    {"kernel": "rq", "warp": "identity", "ard": True},
                ],
            },
        ],
    },
    # RQ + polynomial of a Bezier-projected coordinate
    "rq_plus_bezier_poly": {
        "op": "sum",
        "args": [
            {"kernel": "rq", "warp": "identity", "ard": True},
            {"kernel": "poly2", "warp": "bezier", "ard": True},
        ],
    },
    # RQ + spherical x Matern-5/2 + periodic of a warped radius (the appendix composite)
    "rq_spherical_matern52_warped_periodic": {
        "op": "sum",
        "args": [
            {"kernel": "rq", "warp": "identity", "ard": True},
            {
                "op": "product",
                "args": [
                    {"kernel": "sl", "warp": "identity", "ard": True},
                    {"kernel": "matern52", "warp": "identity", "ard": True},
                ],
            },
            {"kernel": "periodic", "warp": "radius", "ard": True},
        ],
    },
}
