"""Kernel classes of conversion and direct replies (:func:`extract_code_block`).

The only changes made to code are formatting repairs: a block without any import gets
:data:`DEFAULT_IMPORTS`, and a block with several Kernel classes is split into one
module per class.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ax_kernel_discovery._ast_lock import parse_python
from ax_kernel_discovery.llm.parsing.errors import ParseError
from ax_kernel_discovery.llm.parsing.fences import fenced_blocks, strip_thinking

__all__ = [
    "DEFAULT_IMPORTS",
    "CodeBlock",
    "NormalizeNumbers",
    "extract_code_block",
    "extract_code_blocks",
    "find_kernel_class",
    "forward_fingerprint",
    "trim_prose",
]


_CLASS_RE = re.compile(r"^class\s+([A-Za-z_]\w*)\s*\(([^)]*)\)\s*:", re.MULTILINE)


@dataclass(frozen=True)
class CodeBlock:
    """Kernel source taken from a reply and the name of its Kernel subclass."""

    code: str
    class_name: str
    docstring: str = ""


def find_kernel_class(code: str) -> tuple[str, str] | None:
    """``(class_name, docstring)`` of the first class deriving from a ``*Kernel`` base.

    Uses the AST when the code parses, else a regular expression.
    """
    try:
        tree = parse_python(code)
    except SyntaxError:
        for match in _CLASS_RE.finditer(code):
            if "Kernel" in match.group(2):
                return match.group(1), ""
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                base_name = ast.unparse(base)
                if base_name.split(".")[-1].endswith("Kernel"):
                    return node.name, ast.get_docstring(node) or ""
    return None


class NormalizeNumbers(ast.NodeTransformer):
    """Writes every int and float constant as a float, so that ``2`` and ``2.0`` compare equal."""

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return ast.copy_location(ast.Constant(float(node.value)), node)
        return node


def forward_fingerprint(code: str) -> str | None:
    """A canonical dump of the ``forward`` body (numbers as floats), to spot copies.

    Two classes that differ only in their names, docstrings, constructors or the
    spelling of numbers (``1`` vs ``1.0``) get the same fingerprint. None when the code
    does not parse or has no ``forward``.
    """
    try:
        tree = parse_python(code)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "forward":
            body = ast.Module(body=node.body, type_ignores=[])
            return ast.dump(NormalizeNumbers().visit(body))
    return None


#: Prepended to kernel code that has no import at all (a formatting slip of small
#: models: the prompt asks for the imports).
DEFAULT_IMPORTS = (
    "import math\n\nimport gpytorch\nimport torch\nfrom gpytorch.constraints import Positive\n\n\n"
)


#: Imports added when code uses one of these names without importing it (small models
#: often write ``gpytorch.constraints.Positive()`` after importing only ``Kernel``).
_STANDARD_IMPORTS: dict[str, str] = {
    "math": "import math",
    "torch": "import torch",
    "gpytorch": "import gpytorch",
    "Kernel": "from gpytorch.kernels import Kernel",
    "Positive": "from gpytorch.constraints import Positive",
    "Interval": "from gpytorch.constraints import Interval",
    "GreaterThan": "from gpytorch.constraints import GreaterThan",
}


def _with_imports(code: str) -> str:
    """Add the standard imports that ``code`` uses but does not make."""
    try:
        tree = parse_python(code)
    except SyntaxError:
        return code
    if not any(isinstance(node, (ast.Import, ast.ImportFrom)) for node in tree.body):
        return DEFAULT_IMPORTS + code
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            bound.add(node.name)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    missing = [
        line for name, line in _STANDARD_IMPORTS.items() if name in used and name not in bound
    ]
    return "\n".join(missing) + "\n" + code if missing else code


def trim_prose(code: str) -> str:
    """Cut trailing prose off code that was not fenced: keep lines up to the last code line."""
    lines = code.splitlines()
    keep = len(lines)
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if not line.strip():
            continue
        if line.startswith((" ", "\t", "class ", "def ", "import ", "from ", "@", ")", "#")):
            keep = i + 1
            break
        keep = i  # a prose line at column 0: drop it
    return "\n".join(lines[:keep]).rstrip() + "\n"


def extract_code_block(text: str) -> CodeBlock:
    """The Python code of the Kernel subclass in a reply.

    Prefers fenced blocks (python or unlabelled) that define a Kernel subclass, the
    first one if there are several; a block without its imports gets them from an
    earlier imports-only block. Without fences, takes the reply from its first
    ``import``/``class`` line.

    Raises:
        ParseError: No Kernel subclass found.
    """
    text = strip_thinking(text)
    if not text.strip():
        raise ParseError("empty reply (no code)")
    blocks = [body for lang, body in fenced_blocks(text) if lang in ("", "python", "py", "python3")]
    for i, body in enumerate(blocks):
        found = find_kernel_class(body)
        if found:
            code = body.strip("\n")
            if "import" not in code:
                imports = [b for b in blocks[:i] if "import" in b and "class " not in b]
                if imports:
                    code = imports[-1].strip("\n") + "\n\n\n" + code
            code = _with_imports(code.rstrip() + "\n")
            return CodeBlock(code=code, class_name=found[0], docstring=found[1])
    if blocks:
        raise ParseError(f"{len(blocks)} code block(s) but none defines a gpytorch Kernel subclass")
    start = re.search(r"^(import |from |class )", text, re.MULTILINE)
    if start is not None:
        code = _with_imports(trim_prose(text[start.start() :].replace("```", "")))
        found = find_kernel_class(code)
        if found:
            return CodeBlock(code=code, class_name=found[0], docstring=found[1])
    raise ParseError("no Python code defining a gpytorch Kernel subclass in the reply")


def _split_kernel_classes(code: str) -> list[str]:
    """One module per Kernel subclass of ``code``; other top-level code is shared."""
    try:
        tree = parse_python(code)
    except SyntaxError:
        return [code]
    lines = code.splitlines()
    kernels = [
        node
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any(ast.unparse(b).split(".")[-1].endswith("Kernel") for b in node.bases)
    ]
    if len(kernels) < 2:
        return [code]
    shared = [
        "\n".join(lines[node.lineno - 1 : node.end_lineno])
        for node in tree.body
        if node not in kernels
        and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
    ]
    header = "\n".join(shared).strip()
    out = []
    for node in kernels:
        start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
        body = "\n".join(lines[start : node.end_lineno])
        out.append((header + "\n\n\n" if header else "") + body + "\n")
    return out


def extract_code_blocks(text: str) -> list[CodeBlock]:
    """Every Kernel subclass of a reply (for one-stage direct replies), in order.

    Each fenced block is taken; a block with several Kernel subclasses is split into
    one module per class (imports and helpers shared).

    Raises:
        ParseError: No Kernel subclass found.
    """
    text = strip_thinking(text)
    out: list[CodeBlock] = []
    for lang, body in fenced_blocks(text):
        if lang not in ("", "python", "py", "python3"):
            continue
        for code in _split_kernel_classes(body.strip("\n") + "\n"):
            found = find_kernel_class(code)
            if found:
                out.append(CodeBlock(_with_imports(code), found[0], found[1]))
    if not out:
        out.append(extract_code_block(text))  # raises ParseError with the reason
    return out
