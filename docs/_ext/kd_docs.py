"""The docs' own Sphinx pieces.

* ``{kd-registry} NAME``: a table made from one of the package's registries
  (:mod:`registry_tables`), so that no list of kernels, warps, proposers, criteria,
  problems or methods is typed by hand.
* References to a re-exported name (``ax_kernel_discovery.KernelDiscoveryConfig``,
  ``ax_kernel_discovery.kernels.BOCKKernel``) resolve to where the object is documented,
  the module that defines it. A reference to a name that does not exist still fails.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from docutils import nodes
from registry_tables import TABLES
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util.docutils import SphinxDirective


class RegistryTable(SphinxDirective):
    """``{kd-registry} NAME``: the table of registry ``NAME``."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        if name not in TABLES:
            raise self.error(f"unknown registry {name!r}; choose from {sorted(TABLES)}")
        return self.parse_text_to_nodes(TABLES[name]())


def _canonical(target: str) -> str | None:
    """Where the object that ``target`` names is defined, or None."""
    parts = target.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if not module or not qualname:  # data: the module that holds the same object
            return _holder(obj, parts[-1], target)
        canonical = f"{module}.{qualname}"
        return canonical if canonical != target else None
    return None


def _holder(obj: Any, name: str, target: str) -> str | None:
    """The deepest package module other than ``target``'s that has ``obj`` as ``name``."""
    holders = [
        module_name
        for module_name, module in list(sys.modules.items())
        if module_name.startswith("ax_kernel_discovery")
        and f"{module_name}.{name}" != target
        and getattr(module, name, None) is obj
    ]
    return f"{max(holders, key=len)}.{name}" if holders else None


def resolve_reexport(
    app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.Element
) -> nodes.Element | None:
    """A ``py`` reference to a package's re-export of a name, resolved to its definition."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    candidates = [target]
    module = node.get("py:module")
    if module and not target.startswith("ax_kernel_discovery."):
        candidates.insert(0, f"{module}.{target}")
    for name in candidates:
        if not name.startswith("ax_kernel_discovery."):
            continue
        canonical = _canonical(name)
        if canonical is None:
            continue
        node["reftarget"] = canonical
        domain = env.get_domain("py")
        found = domain.resolve_xref(
            env, node["refdoc"], app.builder, node["reftype"], canonical, node, contnode
        )
        if found is not None:
            return found
        node["reftarget"] = target
    return None


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("kd-registry", RegistryTable)
    app.connect("missing-reference", resolve_reexport)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
