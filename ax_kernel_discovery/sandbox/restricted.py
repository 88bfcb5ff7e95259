"""The restricted run time of kernel code: safe builtins and read-only module proxies.

:data:`SAFE_BUILTINS` is the ``__builtins__`` kernel source is executed with: its
``__import__`` hands out :class:`_ModuleProxy` views of the allowed modules, and its
``__build_class__`` makes every method check that its first argument is an instance of
its class.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import types
from typing import Any

from ax_kernel_discovery.sandbox.policy import (
    ALLOWED_MODULES,
    MODULE_ATTRIBUTE_ALLOWLIST,
    attribute_refusal,
)

__all__ = ["SAFE_BUILTINS"]


def _safe_import_factory() -> Any:
    def _safe_import(
        name: str,
        globals: Any = None,  # noqa: A002 - signature of builtins.__import__
        locals: Any = None,  # noqa: A002
        fromlist: Any = (),
        level: int = 0,
    ) -> Any:
        if level != 0:
            raise ImportError("relative imports are not allowed in kernel code")
        if name not in ALLOWED_MODULES:
            raise ImportError(f"import of {name!r} is not allowed in kernel code")
        module = importlib.import_module(name)
        if fromlist:
            proxy = _ModuleProxy(module)
            for attr in fromlist:
                try:
                    getattr(proxy, attr)
                except AttributeError as err:
                    raise ImportError(str(err)) from None
            return proxy
        top = name.partition(".")[0]
        return _ModuleProxy(importlib.import_module(top))

    return _safe_import


_SAFE_BUILTIN_NAMES = (
    "abs",
    "all",
    "any",
    "bool",
    "callable",
    "classmethod",
    "dict",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "frozenset",
    "hasattr",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "pow",
    "print",
    "property",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "zip",
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "Exception",
    "IndexError",
    "KeyError",
    "NotImplementedError",
    "RuntimeError",
    "TypeError",
    "ValueError",
    "ZeroDivisionError",
    "NotImplemented",
    "Ellipsis",
    "None",
    "True",
    "False",
)


def _instance_guard(func: types.FunctionType, owner: type) -> Any:
    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if not args or not isinstance(args[0], owner):
            raise TypeError(
                f"{owner.__name__}.{func.__name__} must be called on a {owner.__name__}"
            )
        return func(*args, **kwargs)

    return guarded


def _guard_methods(cls: type) -> None:
    """Make every method and property of ``cls`` check that ``self`` is an instance.

    Together with the static rules this keeps the privileged ``self`` of kernel code
    from being anything but an instance of a class the code defined (``K.m(torch.Tensor)``
    would otherwise let ``self.x = ...`` patch torch).
    """
    for name, value in list(vars(cls).items()):
        if isinstance(value, types.FunctionType):
            setattr(cls, name, _instance_guard(value, cls))
        elif isinstance(value, property):
            parts: list[Any] = [
                _instance_guard(f, cls) if isinstance(f, types.FunctionType) else f
                for f in (value.fget, value.fset, value.fdel)
            ]
            setattr(cls, name, property(parts[0], parts[1], parts[2], value.__doc__))


def _guarded_build_class(func: Any, name: str, *bases: Any, **kwargs: Any) -> type:
    """``__build_class__`` of kernel code: guards the methods before anyone sees the class."""
    cls = builtins.__build_class__(func, name, *bases, **kwargs)
    _guard_methods(cls)
    return cls


#: The ``__builtins__`` of kernel code: plain data types, arithmetic, iteration and
#: class machinery; ``__import__`` only hands out proxies of :data:`ALLOWED_MODULES`.
SAFE_BUILTINS: dict[str, Any] = {
    **{name: getattr(builtins, name) for name in _SAFE_BUILTIN_NAMES},
    "__build_class__": _guarded_build_class,
    "__import__": _safe_import_factory(),
}


class _ModuleProxy:
    """Read-only view of an allowed module for kernel code."""

    __slots__ = ("_axkd_module", "_axkd_cache")

    def __init__(self, module: types.ModuleType) -> None:
        object.__setattr__(self, "_axkd_module", module)
        object.__setattr__(self, "_axkd_cache", {})

    def __getattr__(self, attr: str) -> Any:
        cache = object.__getattribute__(self, "_axkd_cache")
        if attr in cache:
            return cache[attr]
        module = object.__getattribute__(self, "_axkd_module")
        name = module.__name__
        if attr.startswith("_"):
            raise AttributeError(f"private attribute {name}.{attr} is not allowed")
        refusal = attribute_refusal(attr)
        if refusal:
            raise AttributeError(f"{name}.{attr}: {refusal}")
        allowed = MODULE_ATTRIBUTE_ALLOWLIST.get(name)
        if allowed is not None and attr not in allowed:
            raise AttributeError(f"{name}.{attr} is not allowed in kernel code")
        value = getattr(module, attr)
        if isinstance(value, types.ModuleType):
            if value.__name__ not in ALLOWED_MODULES:
                raise AttributeError(f"module {value.__name__!r} is not allowed in kernel code")
            value = _ModuleProxy(value)
        cache[attr] = value
        return value

    def __setattr__(self, attr: str, value: Any) -> None:
        raise AttributeError("modules are read-only in kernel code")

    def __delattr__(self, attr: str) -> None:
        raise AttributeError("modules are read-only in kernel code")

    def __repr__(self) -> str:
        return f"<kernel-code view of module {object.__getattribute__(self, '_axkd_module').__name__!r}>"
