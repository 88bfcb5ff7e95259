"""Repairs of a covariance function's AST: numeric slips and unused parameter reads."""

from __future__ import annotations

import ast

__all__ = ["drop_dead_reads", "numeric_fixes"]


_FLOAT_MATH = {"sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "atan", "log1p", "expm1"}


def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if isinstance(node, ast.BinOp):
        return _is_number(node.left) and _is_number(node.right)
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    )


def _attr_call(module: str, attr: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(
        func=ast.Attribute(value=ast.Name(module, ast.Load()), attr=attr, ctx=ast.Load()),
        args=args,
        keywords=[],
    )


class _NumericFixes(ast.NodeTransformer):
    """Semantics-preserving fixes of frequent small-model bugs in covariance functions.

    * ``torch.sqrt(5.0)`` -> ``math.sqrt(5.0)``: torch math functions want tensors;
    * ``math.exp(t)`` on anything but a plain number -> ``torch.exp(t)`` when ``t`` is a
      tensor (else ``math.exp``): ``math`` converts its argument to a Python float, which
      fails for non-scalar tensors and under ``torch.vmap`` and cuts the gradient;
    * ``torch.tensor([a, b])`` with non-constant items -> ``torch.stack`` of them:
      ``torch.tensor`` copies the values and cuts the gradient.
    """

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return node
        module, attr = func.value.id, func.attr
        one_arg = len(node.args) == 1 and not node.keywords
        if module == "torch" and attr in _FLOAT_MATH and one_arg and _is_number(node.args[0]):
            self._count("torch.<fn>(number) -> math.<fn>(number)")
            return ast.copy_location(_attr_call("math", attr, node.args), node)
        if module == "math" and attr in _FLOAT_MATH and one_arg and not _is_number(node.args[0]):
            # (lambda v: torch.f(v) if torch.is_tensor(v) else math.f(v))(arg)
            value = ast.Name("v", ast.Load())
            choose = ast.IfExp(
                test=_attr_call("torch", "is_tensor", [value]),
                body=_attr_call("torch", attr, [value]),
                orelse=_attr_call("math", attr, [value]),
            )
            lam = ast.Lambda(
                args=ast.arguments(
                    posonlyargs=[],
                    args=[ast.arg("v")],
                    kwonlyargs=[],
                    kw_defaults=[],
                    defaults=[],
                ),
                body=choose,
            )
            self._count("math.<fn>(tensor) -> torch.<fn>(tensor)")
            return ast.copy_location(ast.Call(func=lam, args=node.args, keywords=[]), node)
        if (
            module == "torch"
            and attr == "tensor"
            and node.args
            and isinstance(node.args[0], (ast.List, ast.Tuple))
            and node.args[0].elts
            and not all(_is_number(e) for e in node.args[0].elts)
            and not any(
                isinstance(e, (ast.List, ast.Tuple, ast.Starred)) for e in node.args[0].elts
            )
        ):
            items: list[ast.expr] = [
                _attr_call("torch", "as_tensor", [e]) for e in node.args[0].elts
            ]
            self._count("torch.tensor([tensors]) -> torch.stack")
            return ast.copy_location(
                _attr_call("torch", "stack", [ast.List(elts=items, ctx=ast.Load())]), node
            )
        return node


def numeric_fixes(tree: ast.Module) -> list[str]:
    """Apply :class:`_NumericFixes` to ``tree`` in place; notes of what changed."""
    fixer = _NumericFixes()
    fixer.visit(tree)
    ast.fix_missing_locations(tree)
    return [f"{what} x{n}" for what, n in fixer.counts.items()]


def drop_dead_reads(func: ast.FunctionDef) -> list[str]:
    """Remove ``name = p["key"]`` statements whose ``name`` is never read (in place).

    Small models copy every hyperparameter of the formula into a local and then leave
    some unused; the parameter would get no gradient and fail validation. Returns the
    keys whose reads were removed.
    """
    args = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    if len(args) < 3:
        return []
    pname = args[2]
    loads = {
        n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    dropped: list[str] = []

    def dead(stmt: ast.stmt) -> str | None:
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id not in loads
            and isinstance(stmt.value, ast.Subscript)
            and isinstance(stmt.value.value, ast.Name)
            and stmt.value.value.id == pname
            and isinstance(stmt.value.slice, ast.Constant)
            and isinstance(stmt.value.slice.value, str)
        ):
            return None
        return stmt.value.slice.value

    body = []
    for stmt in func.body:
        key = dead(stmt)
        if key is None:
            body.append(stmt)
        else:
            dropped.append(key)
    if dropped and body:
        func.body = body
    return dropped if body else []
