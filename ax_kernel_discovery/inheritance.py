"""Warm starts that a new kernel inherits from the members it is made of.

A member is refitted each round from last round's hyperparameters (a few L-BFGS steps);
a kernel proposed this round has none and is fitted from GPyTorch's defaults with 4x
the steps. With the paper's start set that cold fit is most of a round's selection
time at a few hundred points: composites took 15-17 s each at n = 300, D = 100, against
0.04 s for a warm member (``benchmarks/round_overhead.py``).

Most new kernels *contain* members: the offline operator and the LLM's composition
call combine two members by a sum or a product, or extend one by a new term. Such a
subtree is the same GPyTorch module as the member, so its fitted parameters are a
good start point for the new kernel's fit. :func:`inherited_parameters` maps them:

* the new kernel's expression tree is walked in the order :func:`.expression.build_kernel`
  builds it, giving each subtree's module path (``kernels.0.base_kernel`` ...);
* a subtree equal to a member's whole tree (:func:`.expression.canonical`) takes the
  member's fitted parameters below that module, largest subtrees first, never two
  members for one module;
* a member's output scale goes with it where the new kernel scales that subtree (a
  summand); the likelihood's noise, the mean and the root output scale come from the
  member with the largest match;
* a parameter is taken only where the new kernel has one of the same name and shape;
  anything else keeps its default (the new term's parameters, all of a kernel written
  as code).

The fit then starts there, with the step budget of a cold fit: this changes where
L-BFGS starts, not how long it may run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence

from torch import Tensor

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import Spec, build_kernel, canonical

__all__ = ["inherited_parameters", "subtree_paths"]

#: Where the member's kernel sits in the GP (``DiscoveredKernel.inner``).
_COVAR = "covar_module.inner"


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


def _paths(spec: Spec, prefix: str) -> Iterator[tuple[str, Spec]]:
    yield prefix, spec
    if "op" not in spec:
        return
    for i, arg in enumerate(spec["args"]):
        # a sum scales each summand (ScaleKernel(part)); a product holds its parts
        child = _join(prefix, f"kernels.{i}", "base_kernel" if spec["op"] == "sum" else "")
        yield from _paths(arg, child)


def subtree_paths(spec: Spec) -> list[tuple[str, Spec]]:
    """Every subtree of ``spec`` with the path of its module in ``build_kernel(spec)``.

    Paths are relative to the built kernel (the GP's ``covar_module``), parents before
    their subtrees. A sum is the root module itself; anything else is wrapped in one
    ``ScaleKernel``, so its module is ``base_kernel``.

    Example:
        >>> [p for p, _ in subtree_paths({"op": "sum", "args": [{"kernel": "rbf"}, {"kernel": "sl"}]})]
        ['', 'kernels.0.base_kernel', 'kernels.1.base_kernel']
    """
    return list(_paths(spec, _root(spec)))


def _root(spec: Spec) -> str:
    """Module path of ``spec``'s own tree in ``build_kernel(spec)`` (see :func:`subtree_paths`)."""
    return "" if spec.get("op") == "sum" else "base_kernel"


def _key(spec: Spec) -> str:
    return json.dumps(canonical(spec), sort_keys=True)


def _inside(path: str, taken: Sequence[str]) -> bool:
    return any(path == t or path.startswith(t + ".") for t in taken)


def inherited_parameters(
    child: KernelCandidate,
    members: Sequence[tuple[KernelCandidate, Mapping[str, Tensor]]],
    dim: int,
) -> dict[str, Tensor]:
    """A partial warm start for ``child`` from the fitted members it contains.

    Args:
        child: The new kernel (only expression trees inherit; code gets ``{}``).
        members: Fitted members and their GP parameters (``named_parameters`` of the
            whole model: ``covar_module.*``, ``likelihood.*``, ``mean_module.*``).
        dim: Input dimension of the run.

    Returns:
        GP parameter name -> value for the new kernel's model; empty when no member is
        a subtree of it.
    """
    if child.spec is None:
        return {}
    by_key: dict[str, tuple[str, Mapping[str, Tensor]]] = {}
    for cand, params in members:
        if cand.spec is not None and cand.name != child.name:
            by_key.setdefault(_key(cand.spec), (_root(cand.spec), params))
    if not by_key:
        return {}
    shapes = {name: p.shape for name, p in build_kernel(child.spec, dim).named_parameters()}
    out: dict[str, Tensor] = {}
    taken: list[str] = []
    first: Mapping[str, Tensor] | None = None
    for path, sub in subtree_paths(child.spec)[1:]:  # the whole tree would be a duplicate
        match = by_key.get(_key(sub))
        if match is None or _inside(path, taken):
            continue
        root, params = match
        source = _join(_COVAR, root) + "."
        for name, value in params.items():
            if not name.startswith(source):
                continue
            target = _join(path, name[len(source) :])
            if shapes.get(target) == value.shape:
                out[_join(_COVAR, target)] = value
        summand_scale = path.removesuffix("base_kernel") + "raw_outputscale"
        parent_scale = params.get(f"{_COVAR}.raw_outputscale")
        if (
            root == "base_kernel"
            and path.endswith(".base_kernel")
            and parent_scale is not None
            and shapes.get(summand_scale) == parent_scale.shape
        ):
            out[_join(_COVAR, summand_scale)] = parent_scale  # a scaled summand's scale
        taken.append(path)
        if first is None:
            first = params
    if first is None:
        return {}
    root_scale = f"{_COVAR}.raw_outputscale"
    for name, value in first.items():
        if not name.startswith("covar_module.") or (
            name == root_scale and shapes.get("raw_outputscale") == value.shape
        ):
            out.setdefault(name, value)
    return out
