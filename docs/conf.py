"""Sphinx configuration of the documentation site (``nox -s docs``).

The Markdown pages of ``docs/`` are read by MyST; the API reference is generated from
the docstrings (autodoc, autosummary, napoleon for the Google style), and the lists that
have a registry in the package are rendered from it (``_ext/registries.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from ax_kernel_discovery import __version__  # noqa: E402

project = "ax-kernel-discovery"
release = version = __version__
extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "kd_docs",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "_templates"]
templates_path = ["_templates"]
html_theme = "alabaster"

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

autosummary_generate = True
autosummary_imported_members = False
autosummary_ignore_module_all = False
# each object is documented once, in the module that defines it (a package's re-exports
# link there: _ext/kd_docs.py)
autodoc_default_options = {
    "members": True,
    "undoc-members": True,
    "show-inheritance": True,
    "ignore-module-all": True,
}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # "Attributes:" as fields: a NamedTuple's are documented once

# A broken cross-reference to this package fails the build (-W -n): every
# ``ax_kernel_discovery.*`` name a docstring or page refers to must be documented. There
# is no network for intersphinx, so names outside the package (Ax, BoTorch, GPyTorch,
# torch, the standard library) are not checked, nor the short names of type hints.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(?!ax_kernel_discovery\.).*"),  # outside the package
    (r"py:.*", r"ax_kernel_discovery\..*\._\w+"),  # private classes (show-inheritance)
]


def _write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def _reference() -> str:
    """The API reference page: the public names (``ax_kernel_discovery.__all__``, each
    linked where it is defined) and one page per module, found by walking the package."""
    import pkgutil

    import ax_kernel_discovery as package

    public = []
    for name in package.__all__:
        obj = getattr(package, name)
        module = getattr(obj, "__module__", package.__name__)
        public.append(f"{module.removeprefix(package.__name__ + '.')}.{name}")
    modules = sorted(
        m.name
        for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
        if not m.name.rsplit(".", 1)[1].startswith("_")
    )
    lines = [
        "API reference",
        "=============",
        "",
        ".. automodule:: ax_kernel_discovery",
        "   :no-members:",
        "",
        "Public names",
        "------------",
        "",
        "``from ax_kernel_discovery import ...``: the names of ``ax_kernel_discovery.__all__``,",
        "each documented in the module that defines it.",
        "",
        ".. autosummary::",
        "   :nosignatures:",
        "",
        *(f"   {name}" for name in public),
        "",
        "Modules",
        "-------",
        "",
        ".. autosummary::",
        "   :toctree: .",
        "",
        *(f"   {name.removeprefix(package.__name__ + '.')}" for name in modules),
        "",
    ]
    return "\n".join(lines)


_write_if_changed(HERE / "_generated" / "reference.rst", _reference())
