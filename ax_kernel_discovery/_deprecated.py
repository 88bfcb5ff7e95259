"""Old import paths of names that moved up the layers, kept for one release.

A name that moved to a module *above* its old one (``make_client`` from ``llm.client``
to ``llm.factory``) cannot be re-exported by a plain import in its old module: that
import would close an import cycle. The old module instead ends with::

    __getattr__ = moved_names(__name__, {"make_client": "ax_kernel_discovery.llm.factory"})

so that ``from ax_kernel_discovery.llm.client import make_client`` keeps working, with a
:class:`DeprecationWarning` naming the new path. A name that was renamed as well names
its target ``"module:new_name"``. The new module is imported only when an
old path is used; nothing in the package uses an old path (``lint-imports`` holds the
package's own imports to the layers, see ``docs/architecture.md``).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved_module", "moved_names"]


def moved_names(module: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) that serves names moved out of ``module``.

    Args:
        module: The old module (its ``__name__``).
        names: Each moved name and where it is now: the module that holds it under the
            same name (``"pkg.new"``), or the module and its new name (``"pkg.new:g"``).

    Returns:
        The ``__getattr__`` function: a moved name is taken from its new place with a
        ``DeprecationWarning`` naming it; any other name raises ``AttributeError`` as usual.

    Example:
        >>> __getattr__ = moved_names("pkg.old", {"f": "pkg.new"})  # doctest: +SKIP
        >>> __getattr__ = moved_names("pkg.old", {"f": "pkg.new:g"})  # f is now g  # doctest: +SKIP
    """

    def __getattr__(name: str) -> Any:
        target = names.get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target_module, _, new_name = target.partition(":")
        new_name = new_name or name
        warnings.warn(
            f"{module}.{name} moved to {target_module}.{new_name}; import it from there (the "
            "old path will be removed in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(target_module), new_name)

    return __getattr__


def moved_module(module: str, target: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) for a module that moved as a whole.

    The old module keeps only its docstring and this hook, so that
    ``from ax_kernel_discovery.sweep import sweep`` keeps working for one release, with a
    :class:`DeprecationWarning` naming the new module (here
    ``ax_kernel_discovery.runner.sweep``). The new module is imported only when the old
    path is used.

    Args:
        module: The old module (its ``__name__``).
        target: The module that holds its contents now.

    Returns:
        The ``__getattr__`` function.
    """

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new = importlib.import_module(target)
        if not hasattr(new, name):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module} moved to {target}; import {name} from there (the old path will be "
            "removed in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(new, name)

    return __getattr__
