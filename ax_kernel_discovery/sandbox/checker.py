"""The static check of kernel source: an AST allowlist (:func:`check_source`)."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ax_kernel_discovery._ast_lock import parse_python
from ax_kernel_discovery.sandbox.errors import UnsafeCodeError
from ax_kernel_discovery.sandbox.policy import (
    ALLOWED_MODULES,
    FORBIDDEN_NAMES,
    MODULE_ATTRIBUTE_ALLOWLIST,
    attribute_refusal,
)

__all__ = ["check_source"]


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
            refusal = attribute_refusal(alias.name)
            if alias.name.startswith("_"):
                refusal = f"private name {alias.name!r} is not allowed"
            allowed = MODULE_ATTRIBUTE_ALLOWLIST.get(module)
            if refusal is None and allowed is not None and alias.name not in allowed:
                refusal = f"name {alias.name!r} is not allowed"
            if refusal:
                self._fail(node, f"'from {module} import {alias.name}': {refusal}")
            self._check_binding(node, alias.asname or alias.name)
        self.generic_visit(node)

    # -- names -----------------------------------------------------------------------

    def _check_name(self, node: ast.AST, name: str) -> None:
        if name in FORBIDDEN_NAMES:
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
        refusal = attribute_refusal(attr)
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
        ax_kernel_discovery.sandbox.errors.UnsafeCodeError: sandbox: line 1: import of 'os' is not allowed ...
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
