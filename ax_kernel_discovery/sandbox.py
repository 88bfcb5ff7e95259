"""Isolation of untrusted kernel source written by an LLM.

Kernel classes proposed by an LLM are Python source. They are never imported; they go
through three layers:

1. :func:`check_source`, a static AST allowlist. Imports only of ``torch`` (and the
   submodules ``nn``, ``nn.functional``, ``nn.init``, ``linalg``, ``special``, ``fft``,
   ``autograd``), ``gpytorch`` (``kernels``, ``kernels.kernel``, ``constraints``,
   ``priors``, ``settings``, ``functions``), ``math`` and a few names of ``typing``. No ``global``/``nonlocal``,
   ``yield``, ``async``, ``match``, star or relative imports, bare ``except``, class
   keywords (metaclasses), class decorators, or method decorators other than
   ``property``/``staticmethod``/``classmethod``/``x.setter``; a class body holds only
   methods, a docstring and constant attributes. No names or attributes that start with
   ``__`` (except ``__init__``), no dangerous builtins (``eval``, ``exec``, ``open``,
   ``getattr``, ``type``, ``object``, ...), and a denylist of attributes that reach
   files, processes, pickles, frames, raw memory or process-wide state (``load``,
   ``save``, ``from_file``, ``hub``, ``ops``, ``os``, ``sys``, ``environ``,
   ``gi_frame``, ``f_globals``, ``as_strided``, ``set_*``, ``manual_seed``,
   ``format``, ...). ``self`` is privileged in methods: only ``self._private``
   attributes may be read (GPyTorch code calls ``self._set_lengthscale``) and only
   ``self.x = ...`` (one level deep) may be assigned; ``self`` can never be rebound.
2. :func:`load_kernel_class` ``exec``s the checked source with a restricted
   ``__builtins__`` (:data:`SAFE_BUILTINS`) whose ``__import__`` hands out read-only
   proxies of the allowed modules; a proxy refuses private names, denylisted names and
   any submodule that is not allowed (so ``torch.os`` or ``typing.sys`` do not leak).
   Its ``__build_class__`` makes every method check that its first argument is an
   instance of its class, so ``K.patch(torch.Tensor)`` cannot turn ``self.x = ...``
   into a monkey-patch of torch.
3. :func:`run_isolated` runs the loading and :func:`~ax_kernel_discovery.validation.check_kernel`
   in a child process: ``python -I`` (no ``PYTHON*`` variables, no user site), a clean
   environment (no API keys: see :func:`_child_env`), a fresh temporary working
   directory and ``HOME``, resource limits (address space, CPU time, file size, open
   files, no core dumps), a wall-clock limit after which the whole process group is
   killed, and output through files in the temporary directory. Whatever happens in
   the child (exceptions, crashes, signals, exhausted limits, garbage output) comes
   back as a :class:`~ax_kernel_discovery.validation.ValidationResult` with
   ``ok=False``; nothing is raised into the caller.

What it protects against: honest mistakes and sloppy or mildly hostile LLM output:
reading files or environment variables (API keys), writing files, spawning processes,
network access through Python, unpickling, monkey-patching the host's modules or global
torch settings, infinite loops, huge allocations and crashes taking the host down.

What it does not: it is *not* a security boundary against a determined attacker.
CPython object graphs are large and a static filter cannot prove the absence of every
escape route; torch ops run native code that can be crashed or, with a memory
corruption bug, exploited; the rlimits do not restrict syscalls or the network. Once a
kernel passed validation, :func:`load_kernel_class` also runs its (checked) source in
the host process, where only layers 1-2 apply: a kernel that is slow or huge only on
other inputs, or that mutates a public container of an allowed module (``x[k] = v``),
is not stopped there. Run untrusted proposals inside a
container or VM (no network, read-only file system, no secrets mounted) when that
matters.

Why the limits are set in the child rather than with ``preexec_fn``: ``preexec_fn`` is
unsafe when the parent has threads (torch and LiteLLM start some), and the child
applies the limits before importing anything or reading the untrusted code, which
gives the same protection.
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import importlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ax_kernel_discovery._compat import compile_python, parse_python
from ax_kernel_discovery.validation import ValidationOptions, ValidationResult

__all__ = [
    "ALLOWED_MODULES",
    "SAFE_BUILTINS",
    "UnsafeCodeError",
    "check_source",
    "load_kernel_class",
    "run_isolated",
]


class UnsafeCodeError(ValueError):
    """Kernel source that fails the static check.

    Args:
        reason: Human readable reason, starting with ``"sandbox: "`` or ``"syntax: "``.
        stage: ``"sandbox"`` (disallowed construct) or ``"syntax"`` (does not parse).
    """

    def __init__(self, reason: str, stage: str = "sandbox") -> None:
        super().__init__(reason)
        self.reason = reason
        self.stage = stage


#: Modules the kernel source may import (and reach as attributes of each other).
ALLOWED_MODULES: frozenset[str] = frozenset(
    {
        "__future__",
        "math",
        "typing",
        "torch",
        "torch.nn",
        "torch.nn.functional",
        "torch.nn.init",
        "torch.linalg",
        "torch.special",
        "torch.fft",
        "torch.autograd",
        "gpytorch",
        "gpytorch.kernels",
        "gpytorch.kernels.kernel",
        "gpytorch.constraints",
        "gpytorch.priors",
        "gpytorch.settings",
        "gpytorch.functions",
    }
)

#: Per-module attribute allowlists (modules not listed expose every public attribute
#: that passes the denylist). ``typing`` can evaluate strings (``get_type_hints``).
_MODULE_ATTRIBUTE_ALLOWLIST: dict[str, frozenset[str]] = {
    "typing": frozenset(
        {
            "Any",
            "Callable",
            "Dict",
            "Iterable",
            "List",
            "Optional",
            "Sequence",
            "TYPE_CHECKING",
            "Tuple",
            "Union",
        }
    ),
    "__future__": frozenset({"annotations"}),
}

#: Builtin names the source may not mention at all.
_FORBIDDEN_NAMES: frozenset[str] = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "open",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "vars",
        "dir",
        "input",
        "breakpoint",
        "help",
        "exit",
        "quit",
        "memoryview",
        "type",
        "object",
        "BaseException",
        "SystemExit",
        "KeyboardInterrupt",
        "GeneratorExit",
        "bytearray",
        "id",
        "copyright",
        "credits",
        "license",
    }
)

#: Attribute names (on any object) and imported names that are refused.
_FORBIDDEN_ATTRIBUTES: frozenset[str] = frozenset(
    {
        # files, pickles, native code, compilation
        "load",
        "loads",
        "save",
        "dump",
        "dumps",
        "from_file",
        "fromfile",
        "tofile",
        "frombuffer",
        "load_library",
        "load_state_dict",
        "compile",
        "hub",
        "ops",
        "classes",
        "library",
        "utils",
        "jit",
        "package",
        "serialization",
        "cpp_extension",
        "multiprocessing",
        "distributed",
        "backends",
        "profiler",
        "numpy",
        "ctypes",
        # modules re-exported by torch/typing/gpytorch
        "os",
        "sys",
        "subprocess",
        "builtins",
        "importlib",
        "inspect",
        "pickle",
        "shutil",
        "socket",
        "pathlib",
        "io",
        "environ",
        "getenv",
        "system",
        "popen",
        "spawn",
        "fork",
        # frames, code objects, tracebacks
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "ag_await",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_back",
        "f_code",
        "f_trace",
        "tb_frame",
        "tb_next",
        "co_code",
        "co_consts",
        "co_names",
        "mro",
        # string evaluation, formatting into attributes
        "format",
        "format_map",
        "get_type_hints",
        "ForwardRef",
        # raw memory
        "as_strided",
        "as_strided_",
        "storage",
        "untyped_storage",
        "data_ptr",
        # process-wide state
        "manual_seed",
        "seed",
        "use_deterministic_algorithms",
        "set_",
    }
)

#: Attribute name prefixes that are refused (``set_default_dtype``, ``set_num_threads``,
#: ``set_grad_enabled``, ``set_printoptions``, ...).
_FORBIDDEN_PREFIXES: tuple[str, ...] = ("set_",)


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


def _attribute_refusal(attr: str) -> str | None:
    """Why attribute ``attr`` may not be used (on any object), or None."""
    if attr in _FORBIDDEN_ATTRIBUTES:
        return f"attribute {attr!r} is not allowed"
    if attr.startswith(_FORBIDDEN_PREFIXES):
        return f"attribute {attr!r} is not allowed (changes process-wide state)"
    if attr.startswith("__") and attr != "__init__":
        return f"dunder attribute {attr!r} is not allowed"
    return None


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
        refusal = _attribute_refusal(attr)
        if refusal:
            raise AttributeError(f"{name}.{attr}: {refusal}")
        allowed = _MODULE_ATTRIBUTE_ALLOWLIST.get(name)
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


_PRIVILEGED_NAMES = ("self", "cls")
_METHOD_DECORATORS = ("property", "staticmethod", "classmethod")
_PROPERTY_DECORATORS = ("setter", "getter", "deleter")


class _SourceChecker(ast.NodeVisitor):
    """AST allowlist; raises :class:`UnsafeCodeError` on the first violation.

    ``self`` (``cls`` in a classmethod) is *privileged* inside the methods of classes the
    code defines: only there may private attributes be read (``self._set_x``) and
    attributes be assigned (``self.x = ...``, one level deep). The names can never be
    rebound, nested functions that take them as parameters lose the privilege, and at
    run time every method checks that its first argument is an instance of its class
    (:func:`_guard_methods`), so ``self`` cannot be a module or a torch class.
    """

    _FORBIDDEN_NODES: dict[type, str] = {
        ast.Global: "'global' statements",
        ast.Nonlocal: "'nonlocal' statements",
        ast.Yield: "generators ('yield')",
        ast.YieldFrom: "generators ('yield from')",
        ast.Await: "'await'",
        ast.AsyncFunctionDef: "async functions",
        ast.AsyncFor: "'async for'",
        ast.AsyncWith: "'async with'",
        ast.Match: "'match' statements",
    }

    def __init__(self) -> None:
        self._privileged: frozenset[str] = frozenset()

    def _fail(self, node: ast.AST, what: str) -> None:
        line = getattr(node, "lineno", "?")
        raise UnsafeCodeError(f"sandbox: line {line}: {what}")

    def generic_visit(self, node: ast.AST) -> None:
        for kind, what in self._FORBIDDEN_NODES.items():
            if isinstance(node, kind):
                self._fail(node, f"{what} not allowed")
        super().generic_visit(node)

    # -- imports ---------------------------------------------------------------------

    def _check_module(self, node: ast.AST, module: str) -> None:
        if module not in ALLOWED_MODULES:
            self._fail(
                node,
                f"import of {module!r} is not allowed "
                "(allowed: torch, gpytorch and a few of their submodules, math, typing)",
            )

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)
            self._check_binding(node, alias.asname or alias.name.partition(".")[0])
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._fail(node, "relative imports are not allowed")
        module = node.module or ""
        self._check_module(node, module)
        for alias in node.names:
            if alias.name == "*":
                self._fail(node, f"'from {module} import *' is not allowed")
            if module == "__future__":
                continue
            refusal = _attribute_refusal(alias.name)
            if alias.name.startswith("_"):
                refusal = f"private name {alias.name!r} is not allowed"
            allowed = _MODULE_ATTRIBUTE_ALLOWLIST.get(module)
            if refusal is None and allowed is not None and alias.name not in allowed:
                refusal = f"name {alias.name!r} is not allowed"
            if refusal:
                self._fail(node, f"'from {module} import {alias.name}': {refusal}")
            self._check_binding(node, alias.asname or alias.name)
        self.generic_visit(node)

    # -- names -----------------------------------------------------------------------

    def _check_name(self, node: ast.AST, name: str) -> None:
        if name in _FORBIDDEN_NAMES:
            self._fail(node, f"name {name!r} is not allowed")
        if name.startswith("__") and name != "__init__":
            self._fail(node, f"dunder name {name!r} is not allowed")

    def _check_binding(self, node: ast.AST, name: str) -> None:
        """A name that is assigned (not a parameter)."""
        self._check_name(node, name)
        if name in _PRIVILEGED_NAMES:
            self._fail(node, f"rebinding {name!r} is not allowed")

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._check_binding(node, node.id)
        else:
            self._check_name(node, node.id)
        self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is None:
            self._fail(node, "bare 'except:' is not allowed (catch a specific exception)")
        if node.name:
            self._check_binding(node, node.name)
        self.generic_visit(node)

    # -- attributes ------------------------------------------------------------------

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        refusal = _attribute_refusal(attr)
        if refusal:
            self._fail(node, refusal)
        on_self = isinstance(node.value, ast.Name) and node.value.id in self._privileged
        if attr.startswith("_") and attr != "__init__" and not on_self:
            self._fail(
                node,
                f"private attribute {attr!r} is only allowed on 'self' in a method "
                "(e.g. self._set_x)",
            )
        if isinstance(node.ctx, (ast.Store, ast.Del)) and not on_self:
            self._fail(
                node,
                f"assigning attribute {attr!r} of anything but 'self' in a method "
                "(one level deep: self.x = ...)",
            )
        self.generic_visit(node)

    # -- functions and classes -------------------------------------------------------

    @staticmethod
    def _param_names(args: ast.arguments) -> list[str]:
        names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        return names

    def _visit_arguments(self, args: ast.arguments) -> None:
        """Defaults and annotations: evaluated in the enclosing scope."""
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is None:
                continue
            self._check_name(arg, arg.arg)
            if arg.annotation is not None:
                self.visit(arg.annotation)
        for default in (*args.defaults, *args.kw_defaults):
            if default is not None:
                self.visit(default)

    def _visit_scope(self, body: Sequence[ast.AST] | ast.AST, privileged: frozenset[str]) -> None:
        saved, self._privileged = self._privileged, privileged
        try:
            for stmt in body if isinstance(body, Sequence) else [body]:
                self.visit(stmt)
        finally:
            self._privileged = saved

    def _visit_function(self, node: ast.FunctionDef, privileged: frozenset[str]) -> None:
        if node.name.startswith("__") and node.name != "__init__":
            self._fail(node, f"defining dunder method {node.name!r} is not allowed")
        self._check_binding(node, node.name)
        for dec in node.decorator_list:
            self.visit(dec)
        self._visit_arguments(node.args)
        if node.returns is not None:
            self.visit(node.returns)
        self._visit_scope(node.body, privileged)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.decorator_list:
            self._fail(node, "decorators are only allowed on methods")
        inherited = self._privileged - set(self._param_names(node.args))
        self._visit_function(node, inherited)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._visit_arguments(node.args)
        self._visit_scope(node.body, self._privileged - set(self._param_names(node.args)))

    def _visit_method(self, node: ast.FunctionDef) -> None:
        kinds = set()
        for dec in node.decorator_list:
            if isinstance(dec, ast.Name) and dec.id in _METHOD_DECORATORS:
                kinds.add(dec.id)
            elif (
                isinstance(dec, ast.Attribute)
                and dec.attr in _PROPERTY_DECORATORS
                and isinstance(dec.value, ast.Name)
            ):
                kinds.add("property")
            else:
                self._fail(
                    dec,
                    "method decorators must be property, staticmethod, classmethod "
                    "or <property>.setter/getter/deleter",
                )
        positional = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
        first = positional[0] if positional else None
        privileged: frozenset[str] = frozenset()
        if "staticmethod" not in kinds:
            wanted = "cls" if "classmethod" in kinds else "self"
            if first == wanted and self._param_names(node.args).count(wanted) == 1:
                privileged = frozenset({wanted})
        self._visit_function(node, privileged)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._check_binding(node, node.name)
        if node.keywords:
            self._fail(node, "class keywords (metaclass=...) are not allowed")
        if node.decorator_list:
            self._fail(node, "class decorators are not allowed")
        for base in node.bases:
            self.visit(base)
        saved, self._privileged = self._privileged, frozenset()
        try:
            for stmt in node.body:
                self._visit_class_statement(stmt)
        finally:
            self._privileged = saved

    def _visit_class_statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.FunctionDef):
            self._visit_method(stmt)
            return
        if isinstance(stmt, ast.Pass) or (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        ):
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            value = stmt.value
            if value is None or not any(
                isinstance(n, (ast.Call, ast.Lambda, ast.NamedExpr)) for n in ast.walk(value)
            ):
                self.visit(stmt)
                return
        self._fail(
            stmt,
            "a class body may only hold methods, a docstring and attributes set to "
            "constants (no calls)",
        )

    # -- misc ------------------------------------------------------------------------

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, bytes):
            self._fail(node, "bytes literals are not allowed")
        self.generic_visit(node)


def check_source(code: str) -> None:
    """Statically check untrusted kernel source against the sandbox's allowlist.

    Args:
        code: Python source of a module defining a GPyTorch kernel.

    Raises:
        UnsafeCodeError: ``stage="syntax"`` if it does not parse (reason ``"syntax: ..."``),
            ``stage="sandbox"`` for a disallowed construct (reason ``"sandbox: ..."``).

    Example:
        >>> check_source("import os")
        Traceback (most recent call last):
        ...
        ax_kernel_discovery.sandbox.UnsafeCodeError: sandbox: line 1: import of 'os' is not allowed ...
    """
    if not isinstance(code, str):
        raise UnsafeCodeError(f"sandbox: source must be a string, not {type(code).__name__}")
    if "\x00" in code:
        raise UnsafeCodeError("syntax: source contains a NUL byte", stage="syntax")
    try:
        tree = parse_python(code, mode="exec")
    except SyntaxError as err:
        raise UnsafeCodeError(
            f"syntax: {err.msg} (line {err.lineno}, column {err.offset})", stage="syntax"
        ) from None
    except (ValueError, RecursionError, MemoryError) as err:
        raise UnsafeCodeError(f"syntax: {type(err).__name__}: {err}", stage="syntax") from None
    _SourceChecker().visit(tree)


def _kernel_base() -> type:
    import gpytorch

    return gpytorch.kernels.Kernel


def load_kernel_class(code: str, class_name: str | None = None) -> type:
    """Check and execute kernel source with restricted builtins; return the kernel class.

    Args:
        code: Python source of a module defining a ``gpytorch.kernels.Kernel`` subclass.
        class_name: Class to return; default: the first Kernel subclass defined in ``code``.

    Returns:
        The kernel class (a subclass of :class:`gpytorch.kernels.Kernel`).

    Raises:
        UnsafeCodeError: The source fails :func:`check_source`.
        ValueError: Executing the source failed, or it defines no (such) Kernel subclass.
    """
    check_source(code)
    module_name = "axkd_kernel_code_" + hashlib.sha256(code.encode()).hexdigest()[:12]
    namespace: dict[str, Any] = {
        "__builtins__": dict(SAFE_BUILTINS),
        "__name__": module_name,
        "__doc__": None,
    }
    try:
        compiled = compile_python(code, f"<kernel code {module_name}>", "exec")
        exec(compiled, namespace)  # noqa: S102 - checked source, restricted builtins
    except Exception as err:  # noqa: BLE001 - arbitrary code
        msg = str(err).strip().splitlines()
        detail = f"{type(err).__name__}: {msg[0][:300]}" if msg else type(err).__name__
        raise ValueError(f"load: executing the kernel code failed ({detail})") from err
    base = _kernel_base()
    defined = [
        value
        for value in namespace.values()
        if isinstance(value, type) and issubclass(value, base) and value.__module__ == module_name
    ]
    if class_name is not None:
        for value in defined:
            if value.__name__ == class_name:
                return value
        names = ", ".join(v.__name__ for v in defined) or "none"
        raise ValueError(
            f"load: the code defines no Kernel subclass named {class_name!r} (found: {names})"
        )
    if not defined:
        raise ValueError("load: the code defines no subclass of gpytorch.kernels.Kernel")
    return defined[0]


# ----------------------------------------------------------------------------------------
# The child process
# ----------------------------------------------------------------------------------------

_RESULT_MARKER = "AXKD-RESULT "
_PACKAGE_DIR = str(Path(__file__).resolve().parent)
_MAX_OUTPUT = 1 << 20  # RLIMIT_FSIZE of the child: 1 MB per file

# Applied before anything else runs in the child: the limits, then the package path
# without executing the package's ``__init__`` (it may import Ax; the child needs only
# ``sandbox`` and ``validation``).
_PRELUDE = """\
import json, resource, sys
for _name, _soft, _hard in json.loads(sys.argv[1]):
    _res = getattr(resource, _name)
    _max = resource.getrlimit(_res)[1]
    if _max != resource.RLIM_INFINITY:
        _soft, _hard = min(_soft, _max), min(_hard, _max)
    resource.setrlimit(_res, (_soft, _hard))
import types
_pkg = types.ModuleType("ax_kernel_discovery")
_pkg.__path__ = [sys.argv[2]]
sys.modules["ax_kernel_discovery"] = _pkg
del _name, _soft, _hard, _res, _max, _pkg, types
"""

_WORKER = """\
from ax_kernel_discovery.sandbox import _worker_main
_worker_main()
"""


def _child_env(home: str) -> dict[str, str]:
    """The complete environment of the child: nothing inherited but ``PATH``/``LANG``.

    Args:
        home: The child's ``HOME`` (a fresh temporary directory).
    """
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "TMPDIR": home,
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return env


def _rlimits(options: ValidationOptions) -> list[tuple[str, int, int]]:
    """``(RLIMIT_NAME, soft, hard)`` triples applied in the child."""
    mem = int(options.memory_mb) * 1024 * 1024
    cpu = int(options.cpu_seconds or math.ceil(options.wall_limit) + 5)
    return [
        ("RLIMIT_AS", mem, mem),
        ("RLIMIT_CPU", cpu, cpu + 5),
        ("RLIMIT_FSIZE", _MAX_OUTPUT, _MAX_OUTPUT),
        ("RLIMIT_NOFILE", 64, 64),
        ("RLIMIT_CORE", 0, 0),
    ]


@dataclass
class _ChildRun:
    """What came back from one child process."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    wall: float


def _read_limited(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_OUTPUT + 1)
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")


def _launch(script: str, stdin: str, options: ValidationOptions, timeout: float) -> _ChildRun:
    """Run ``script`` in a fresh, limited interpreter; never raises for child failures.

    The child gets :data:`_PRELUDE` (rlimits, package path) before ``script``, the
    environment of :func:`_child_env`, a temporary cwd/HOME, ``stdin`` from a file and
    stdout/stderr to files. Its process group is killed after ``timeout`` seconds.
    """
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="axkd-sandbox-") as tmp:
        tmp_path = Path(tmp)
        home = tmp_path / "home"
        home.mkdir()
        (tmp_path / "stdin.json").write_text(stdin, encoding="utf-8")
        cmd = [
            sys.executable,
            "-I",
            "-X",
            "utf8",
            "-c",
            _PRELUDE + script,
            json.dumps(_rlimits(options)),
            _PACKAGE_DIR,
        ]
        timed_out = False
        with (
            open(tmp_path / "stdin.json", "rb") as fin,
            open(tmp_path / "stdout", "wb") as fout,
            open(tmp_path / "stderr", "wb") as ferr,
        ):
            try:
                proc = subprocess.Popen(
                    cmd,
                    stdin=fin,
                    stdout=fout,
                    stderr=ferr,
                    cwd=str(home),
                    env=_child_env(str(home)),
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as err:
                return _ChildRun(None, "", f"could not start the child: {err}", False, 0.0)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
            finally:
                if proc.poll() is None:
                    _kill_group(proc)
        return _ChildRun(
            proc.returncode,
            _read_limited(tmp_path / "stdout"),
            _read_limited(tmp_path / "stderr"),
            timed_out,
            time.monotonic() - start,
        )


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not fail
        pass


def _tail(text: str, limit: int = 400) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    tail = " | ".join(lines[-3:])
    return tail[-limit:]


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _interpret(run: _ChildRun, options: ValidationOptions) -> ValidationResult:
    """Turn what the child left behind into a :class:`ValidationResult`."""
    timings = {"sandbox": run.wall}
    if run.timed_out:
        return ValidationResult(
            False,
            f"timeout: the sandboxed validation exceeded its wall-clock limit "
            f"({options.wall_limit:g} s) and was killed",
            "timeout",
            timings,
        )
    result: ValidationResult | None = None
    for line in reversed(run.stdout.splitlines()):
        if line.startswith(_RESULT_MARKER):
            try:
                result = ValidationResult.from_dict(json.loads(line[len(_RESULT_MARKER) :]))
            except (ValueError, TypeError) as err:
                return ValidationResult(
                    False, f"sandbox: unreadable result from the child ({err})", "sandbox", timings
                )
            break
    rc = run.returncode
    if result is not None:
        # Only the worker writes to stdout (kernel prints go to stderr), so a result line
        # is trustworthy even if the interpreter died on the way out.
        result.timings.update(timings)
        return result
    if rc is not None and rc < 0:
        sig = -rc
        name = _signal_name(sig)
        if sig == getattr(signal, "SIGXCPU", None):
            return ValidationResult(
                False,
                f"timeout: the child exceeded its CPU-time limit ({options.cpu_seconds} s)",
                "timeout",
                timings,
            )
        what = {
            "SIGXFSZ": "exceeded the file-size limit (too much output?)",
            "SIGKILL": "was killed (out of memory?)",
            "SIGSEGV": "crashed (segmentation fault)",
            "SIGABRT": "aborted",
        }.get(name, "was terminated")
        detail = _tail(run.stderr)
        return ValidationResult(
            False,
            f"sandbox: the child {what} by {name}" + (f": {detail}" if detail else ""),
            "sandbox",
            timings,
        )
    detail = _tail(run.stderr) or _tail(run.stdout) or "no output"
    if "File too large" in run.stderr:
        return ValidationResult(
            False,
            f"sandbox: the child exceeded the file-size limit ({_MAX_OUTPUT} bytes; too much "
            f"output?): {detail}",
            "sandbox",
            timings,
        )
    if "MemoryError" in run.stderr or "can't allocate memory" in run.stderr:
        return ValidationResult(
            False,
            f"sandbox: the child ran out of memory (limit {options.memory_mb} MB): {detail}",
            "sandbox",
            timings,
        )
    return ValidationResult(
        False,
        f"sandbox: the child exited with code {rc} without a valid result: {detail}",
        "sandbox",
        timings,
    )


def run_isolated(
    code: str, dim: int, class_name: str | None = None, options: ValidationOptions | None = None
) -> ValidationResult:
    """Validate untrusted kernel source in a resource-limited child process.

    :func:`check_source` runs first in this process (a rejection needs no child). Then a
    child loads the class with :func:`load_kernel_class` and runs
    :func:`~ax_kernel_discovery.validation.check_kernel` with
    ``factory = lambda d: cls(ard_num_dims=d)``.

    Args:
        code: Kernel source.
        dim: Input dimension D.
        class_name: Class to take (first Kernel subclass in ``code`` if None).
        options: Check and sandbox settings.

    Returns:
        The child's :class:`ValidationResult` (with ``timings["sandbox"]``, the wall time
        of the child), or a failure of stage ``syntax``/``sandbox``/``timeout``.
    """
    opts = options or ValidationOptions()
    try:
        check_source(code)
    except UnsafeCodeError as err:
        return ValidationResult(False, err.reason, err.stage)
    payload = json.dumps(
        {
            "code": code,
            "dim": int(dim),
            "class_name": class_name,
            "options": opts.model_dump(),
            "deadline": time.time() + opts.wall_limit,
        }
    )
    # The child stops itself (stage "timeout" with the phase) wall_limit seconds after
    # this launch; the parent kills it shortly after in case it is stuck in native code.
    try:
        run = _launch(_WORKER, payload, opts, timeout=opts.wall_limit + 5.0)
        return _interpret(run, opts)
    except Exception as err:  # noqa: BLE001 - never raise into the caller
        return ValidationResult(False, f"sandbox: {type(err).__name__}: {err}", "sandbox")


def _worker_main() -> None:
    """Entry point of the child process (see :data:`_WORKER`)."""
    started = time.monotonic()
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # kernel prints must not corrupt the result line
    limit = "?"
    result: ValidationResult
    try:
        import torch

        from ax_kernel_discovery.validation import CheckTimeout, check_kernel

        torch.set_num_threads(1)
        payload = json.loads(sys.stdin.read())
        options = ValidationOptions(**payload["options"])
        limit = f"{options.wall_limit:g}"
        remaining = float(payload["deadline"]) - time.time()

        def _on_alarm(signum: int, frame: Any) -> None:
            raise CheckTimeout()

        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, max(remaining, 0.05))
        try:
            try:
                cls = load_kernel_class(payload["code"], payload.get("class_name"))
            except UnsafeCodeError as err:
                result = ValidationResult(False, err.reason, err.stage)
            except ValueError as err:
                result = ValidationResult(False, str(err), "load")
            else:
                result = check_kernel(lambda d: cls(ard_num_dims=d), payload["dim"], options)
        except CheckTimeout:
            result = ValidationResult(
                False, "timeout: time limit reached while loading the kernel code", "timeout"
            )
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except MemoryError as err:
        result = ValidationResult(False, f"error: memory: {err}", "error")
    except BaseException as err:  # noqa: BLE001 - report, never crash silently
        result = ValidationResult(False, f"error: {type(err).__name__}: {err}"[:500], "error")
    if result.stage == "timeout" and result.reason and result.reason.startswith("timeout: time"):
        result.reason += f" (sandbox wall-clock limit {limit} s)"
    result.timings["child"] = time.monotonic() - started
    real_stdout.write(_RESULT_MARKER + json.dumps(result.to_dict()) + "\n")
    real_stdout.flush()
