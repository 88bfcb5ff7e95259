"""Function-style replies: ``PARAMETERS`` + ``def covariance(x1, x2, p)``."""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass

from ax_kernel_discovery._ast_lock import parse_python
from ax_kernel_discovery.llm.parsing.code_blocks import NormalizeNumbers, trim_prose
from ax_kernel_discovery.llm.parsing.errors import ParseError
from ax_kernel_discovery.llm.parsing.fences import fenced_blocks, fenced_spans, strip_thinking
from ax_kernel_discovery.llm.parsing.function_fixes import drop_dead_reads, numeric_fixes

__all__ = [
    "FunctionBlock",
    "NamedFunctionReply",
    "extract_function_block",
    "split_function_replies",
]


#: Accepted spellings of the parameter kinds (lower case) -> canonical kind.
_KIND_ALIASES: dict[str, str] = {
    "ard": "ard",
    "per_dim": "ard",
    "per-dim": "ard",
    "per_dimension": "ard",
    "positive": "positive",
    "scalar": "positive",
    "unit": "unit",
    "interval": "unit",
}


@dataclass(frozen=True)
class FunctionBlock:
    """A function-style conversion reply.

    Attributes:
        parameters: ``name -> kind`` (``"ard"``, ``"positive"`` or ``"unit"``), in order.
        source: Module code with ``def covariance(x1, x2, p)``, its helpers and imports
            (without the ``PARAMETERS`` assignment).
        fingerprint: Canonical dump of the functions (numbers as floats), to spot copies.
        notes: Adjustments made to ``PARAMETERS`` (unused names dropped, used ones added).
    """

    parameters: dict[str, str]
    source: str
    fingerprint: str
    notes: tuple[str, ...] = ()


def _drop_label_lines(code: str) -> str:
    """Drop formula-style label lines (``INPUT TRANSFORM: none``) when the code does not parse."""
    try:
        parse_python(code)
        return code
    except SyntaxError:
        pass
    kept = [line for line in code.splitlines() if not re.match(r"[A-Z][A-Z _]*:\s", line)]
    return "\n".join(kept) + "\n"


def _function_candidates(text: str) -> list[str]:
    blocks = [body for lang, body in fenced_blocks(text) if lang in ("", "python", "py", "python3")]
    with_def = [b for b in blocks if re.search(r"^\s*def\s+covariance\s*\(", b, re.MULTILINE)]
    if with_def:
        return [_drop_label_lines(b) for b in with_def]
    start = re.search(r"^(import |from |PARAMETERS\b|def )", text, re.MULTILINE)
    if start is not None:
        return [trim_prose(text[start.start() :].replace("```", ""))]
    return []


def _parameters_node(tree: ast.Module) -> ast.expr | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "PARAMETERS" for t in node.targets
        ):
            return node.value
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "PARAMETERS"
            and node.value is not None
        ):
            return node.value
    return None


def _read_parameters(node: ast.expr) -> dict[str, str]:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ParseError(
            f"PARAMETERS is not a dict literal of strings ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(value, dict):
        raise ParseError(f"PARAMETERS must be a dict, got {type(value).__name__}")
    out: dict[str, str] = {}
    for name, kind in value.items():
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise ParseError(f"PARAMETERS name {name!r} is not a plain identifier")
        if not isinstance(kind, str) or kind.strip().lower() not in _KIND_ALIASES:
            raise ParseError(
                f"PARAMETERS[{name!r}] has unknown kind {kind!r} "
                "(expected 'ard', 'positive' or 'unit')"
            )
        out[name] = _KIND_ALIASES[kind.strip().lower()]
    return out


def _used_keys(func: ast.FunctionDef) -> tuple[set[str], bool]:
    """String keys read from the function's third argument, and whether it escapes."""
    args = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    if len(args) < 3:
        return set(), True
    pname = args[2]
    keys: set[str] = set()
    seen: set[int] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            if node.value.id == pname and isinstance(node.slice, ast.Constant):
                if isinstance(node.slice.value, str):
                    keys.add(node.slice.value)
                    seen.add(id(node.value))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == pname
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            keys.add(node.args[0].value)
            seen.add(id(node.func.value))
    escapes = any(
        isinstance(n, ast.Name) and n.id == pname and id(n) not in seen for n in ast.walk(func)
    )
    return keys, escapes


def extract_function_block(text: str) -> FunctionBlock:
    """``PARAMETERS`` and ``def covariance(x1, x2, p)`` of a function-style reply.

    Takes the first fenced python (or unlabelled) block that defines ``covariance``;
    without fences, the reply from its first code line. ``PARAMETERS`` may sit in
    another block. Names the function reads from ``p`` but ``PARAMETERS`` lacks are
    added (``"ard"`` when the name contains ``lengthscale``, else ``"positive"``), and
    declared names it never reads are dropped (unused parameters fail validation).

    Raises:
        ParseError: No ``covariance`` function, no or malformed ``PARAMETERS`` (not a
            dict literal, an unknown kind, a name that is not an identifier).
    """
    text = strip_thinking(text)
    if not text.strip():
        raise ParseError("empty reply (no code)")
    candidates = _function_candidates(text)
    if not candidates:
        raise ParseError("no Python code defining covariance(x1, x2, p) in the reply")
    code = candidates[0].strip("\n") + "\n"
    try:
        tree = parse_python(code)
    except SyntaxError as exc:
        raise ParseError(f"the code does not parse: {exc.msg} (line {exc.lineno})") from None
    func = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "covariance"),
        None,
    )
    if func is None:
        raise ParseError("no top-level function named covariance(x1, x2, p) in the code")
    if len(func.args.posonlyargs) + len(func.args.args) < 3:
        raise ParseError("covariance must take three arguments (x1, x2, p)")
    notes: list[str] = []
    node = _parameters_node(tree)
    if node is None:  # PARAMETERS in another block or in the prose
        match = re.search(r"^\s*PARAMETERS\s*=\s*(\{[^}]*\})", text, re.MULTILINE)
        if match is not None:
            try:
                node = parse_python(match.group(1), mode="eval").body
            except SyntaxError as exc:
                raise ParseError(f"PARAMETERS does not parse: {exc.msg}") from None
    dead = drop_dead_reads(func)
    used, escapes = _used_keys(func)
    if node is not None:
        parameters = _read_parameters(node)
    elif not escapes:  # no PARAMETERS: the names read from p say it all
        parameters = {}
        notes.append("no PARAMETERS dict: inferred from the names read from p")
    else:
        raise ParseError("no PARAMETERS = {...} dict in the reply")
    if dead:
        notes.append(f"removed unused reads of {', '.join(dead)}")
    for name in sorted(used - set(parameters)):
        if not name.isidentifier() or name.startswith("_"):
            raise ParseError(f"covariance reads p[{name!r}], which is not a plain identifier")
        parameters[name] = "ard" if "lengthscale" in name.lower() else "positive"
        notes.append(f"added {name} ({parameters[name]})")
    if not escapes:
        for name in [n for n in parameters if n not in used]:
            del parameters[name]
            notes.append(f"dropped unused {name}")

    kept = [
        n
        for n in tree.body
        if isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef))
        or (
            isinstance(n, ast.Assign)
            and not any(isinstance(t, ast.Name) and t.id == "PARAMETERS" for t in n.targets)
        )
    ]
    fixes = numeric_fixes(tree)
    notes.extend(fixes)
    if dead or fixes:  # the tree changed: write it out (comments are lost)
        source = "\n\n".join(ast.unparse(n) for n in kept)
        if "math." in source and not re.search(r"^import math$", source, re.MULTILINE):
            source = "import math\n" + source
    else:
        lines = code.splitlines()
        source = "\n\n".join(
            "\n".join(
                lines[
                    (
                        n.decorator_list[0].lineno
                        if isinstance(n, ast.FunctionDef) and n.decorator_list
                        else n.lineno
                    )
                    - 1 : n.end_lineno
                ]
            )
            for n in kept
        )
    functions = ast.Module(
        body=[n for n in kept if isinstance(n, ast.FunctionDef)], type_ignores=[]
    )
    fingerprint = ast.dump(NormalizeNumbers().visit(functions))
    return FunctionBlock(dict(parameters), source.strip("\n") + "\n", fingerprint, tuple(notes))


@dataclass(frozen=True)
class NamedFunctionReply:
    """One kernel of a direct pair-style reply: its comment header and its code block.

    Attributes:
        name: The ``# KERNEL:`` name (``""`` when missing).
        formula: The ``# k(x, x') = ...`` line (``""`` when missing).
        text: The block as a fenced reply, for :func:`extract_function_block`.
    """

    name: str
    formula: str
    text: str


def _split_covariances(body: str) -> list[str]:
    """Split a code block that defines ``covariance`` several times (several kernels in
    one block) at the first unindented line after each definition's body."""
    defs = list(re.finditer(r"^def\s+covariance\s*\(", body, re.MULTILINE))
    if len(defs) <= 1:
        return [body]
    cuts = [0]
    for prev, nxt in itertools.pairwise(defs):
        segment = body[prev.end() : nxt.start()]
        lines = segment.split("\n")
        offset = prev.end() + len(lines[0]) + 1
        cut = nxt.start()
        for line in lines[1:]:
            if line.strip() and not line[0].isspace():
                cut = offset
                break
            offset += len(line) + 1
        cuts.append(cut)
    cuts.append(len(body))
    return [body[a:b] for a, b in itertools.pairwise(cuts) if body[a:b].strip()]


def split_function_replies(text: str) -> list[NamedFunctionReply]:
    """Split a reply with several ``covariance`` blocks (direct code generation).

    Each fenced python (or unlabelled) block that defines ``covariance`` is one kernel;
    its ``# KERNEL: Name`` and ``# k(x, x') = ...`` comment lines (inside the block or
    on the lines just before it) name and describe it.

    Raises:
        ParseError: No block defines ``covariance``.
    """
    text = strip_thinking(text)
    out: list[NamedFunctionReply] = []
    previous_end = 0
    for lang, body, start, end in fenced_spans(text):
        before = text[previous_end:start]
        previous_end = end
        if lang not in ("", "python", "py", "python3") or not re.search(
            r"^\s*def\s+covariance\s*\(", body, re.MULTILINE
        ):
            continue
        for i, piece in enumerate(_split_covariances(body)):
            header = (before[-400:] if i == 0 else "") + "\n" + piece
            name = re.search(r"KERNEL\s*:\s*`?([^\n`]+)", header)
            formula = re.search(r"(k\s*\(\s*x\s*,\s*x'\s*\)\s*=[^\n]+)", header)
            out.append(
                NamedFunctionReply(
                    name=name.group(1).strip() if name else "",
                    formula=" ".join(formula.group(1).split()) if formula else "",
                    text=f"```python\n{piece}\n```",
                )
            )
    if not out:
        raise ParseError("no fenced python block defining covariance(x, y, p) in the reply")
    return out
