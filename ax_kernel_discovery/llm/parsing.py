"""Reading LLM replies: formula blocks and kernel code, robust to sloppy formatting.

Models wrap answers in prose, forget or add fences, reason in ``<think>`` sections
and label fields in bold. These functions accept all of that and raise
:class:`ParseError` with a reason that says what was missing. The only changes made to
code are formatting repairs: a block without any import gets :data:`DEFAULT_IMPORTS`,
and a block with several Kernel classes is split into one module per class.

Example:
    >>> reply = '''Here you go:
    ... ```formula
    ... KERNEL: Additive
    ... PARAMETERS: lengthscale l (one per dimension)
    ... INPUT TRANSFORM: none
    ... COVARIANCE FUNCTION: k(x, x') = mean_d exp(-(x_d - x'_d)^2 / (2 l_d^2))
    ... PSD GUARANTEE: sum of PSD kernels
    ... ```'''
    >>> [b.name for b in extract_formula_blocks(reply)]
    ['Additive']
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass, field

from ax_kernel_discovery._compat import parse_python

__all__ = [
    "DEFAULT_IMPORTS",
    "CodeBlock",
    "FormulaBlock",
    "FunctionBlock",
    "NamedFunctionReply",
    "ParseError",
    "extract_code_block",
    "extract_code_blocks",
    "extract_formula_blocks",
    "extract_function_block",
    "find_kernel_class",
    "forward_fingerprint",
    "split_function_replies",
    "strip_thinking",
]


class ParseError(ValueError):
    """A reply did not contain what was asked for; ``str(err)`` says what is missing."""


# Field labels of a formula block, in the order we ask for them, and their aliases.
_FIELDS: dict[str, tuple[str, ...]] = {
    "name": ("KERNEL", "KERNEL NAME", "NAME"),
    "parents": ("PARENTS", "PARENT KERNELS"),
    "combination": ("COMBINATION", "OPERATION"),
    "parameters": ("PARAMETERS", "HYPERPARAMETERS"),
    "input_transform": ("INPUT TRANSFORM", "INPUT TRANSFORMATION", "TRANSFORM", "INPUT WARP"),
    "formula": ("COVARIANCE FUNCTION", "COVARIANCE", "FORMULA", "KERNEL FUNCTION"),
    "psd_guarantee": ("PSD GUARANTEE", "PSD", "PSD PROOF", "POSITIVE DEFINITENESS"),
}
_LABEL_TO_FIELD = {alias: name for name, aliases in _FIELDS.items() for alias in aliases}
# Longest first so "KERNEL NAME" wins over "KERNEL" and "COVARIANCE FUNCTION" over "COVARIANCE".
_LABEL_RE = re.compile(
    r"^[\s>*_#\-\d.)]*(?:\*\*|__)?\s*("
    + "|".join(re.escape(a) for a in sorted(_LABEL_TO_FIELD, key=len, reverse=True))
    + r")\s*(?:\*\*|__)?\s*[:=\-–]\s*(?:\*\*|__)?\s*(.*)$",
    re.IGNORECASE,
)
_FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n]*$", re.MULTILINE)
_THINK_RE = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)
_CLASS_RE = re.compile(r"^class\s+([A-Za-z_]\w*)\s*\(([^)]*)\)\s*:", re.MULTILINE)


@dataclass(frozen=True)
class FormulaBlock:
    """One kernel as the discovery / composition stage describes it.

    Attributes:
        name: From the ``KERNEL`` line.
        formula: The ``COVARIANCE FUNCTION`` (required).
        parameters: ``PARAMETERS`` line (may be empty).
        input_transform: ``INPUT TRANSFORM`` line (``""`` when absent or ``none``).
        psd_guarantee: ``PSD GUARANTEE`` line.
        parents: Names from a ``PARENTS`` line (composition).
        combination: ``sum`` / ``product`` from a ``COMBINATION`` line (composition).
        raw: The block's text as the model wrote it.
    """

    name: str
    formula: str
    parameters: str = ""
    input_transform: str = ""
    psd_guarantee: str = ""
    parents: tuple[str, ...] = ()
    combination: str = ""
    raw: str = field(default="", compare=False)

    def describe(self) -> str:
        """One readable formula string (covariance plus the input transform, if any)."""
        text = self.formula
        if self.input_transform:
            text += f"; input transform: {self.input_transform}"
        return text

    def as_block(self) -> str:
        """The block in the canonical fenced format (what the conversion prompt shows)."""
        lines = [f"KERNEL: {self.name}"]
        if self.parents:
            lines.append(f"PARENTS: {', '.join(self.parents)}")
        if self.combination:
            lines.append(f"COMBINATION: {self.combination}")
        lines += [
            f"PARAMETERS: {self.parameters or 'see formula'}",
            f"INPUT TRANSFORM: {self.input_transform or 'none'}",
            f"COVARIANCE FUNCTION: {self.formula}",
        ]
        if self.psd_guarantee:
            lines.append(f"PSD GUARANTEE: {self.psd_guarantee}")
        return "```formula\n" + "\n".join(lines) + "\n```"


@dataclass(frozen=True)
class CodeBlock:
    """Kernel source taken from a reply and the name of its Kernel subclass."""

    code: str
    class_name: str
    docstring: str = ""


def strip_thinking(text: str) -> str:
    """Remove ``<think>...</think>`` sections (and an unclosed leading one)."""
    text = _THINK_RE.sub("", text or "")
    # A reply cut off inside its reasoning, or one whose opening tag was eaten.
    lower = text.lower()
    if "</think>" in lower:
        text = text[lower.rindex("</think>") + len("</think>") :]
    elif lower.lstrip().startswith("<think>"):
        text = ""
    return text


def _fenced_spans(text: str) -> list[tuple[str, str, int, int]]:
    """``(language, body, start, end)`` of every fenced block (an unclosed last fence
    runs to the end); ``start``/``end`` bound the block with its fences."""
    blocks: list[tuple[str, str, int, int]] = []
    pos = 0
    while True:
        opening = _FENCE_RE.search(text, pos)
        if opening is None:
            break
        fence, lang = opening.group(1), opening.group(2).lower()
        body_start = opening.end() + 1
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = closing.search(text, body_start)
        if end is None:
            blocks.append((lang, text[body_start:], opening.start(), len(text)))
            break
        blocks.append((lang, text[body_start : end.start()], opening.start(), end.end()))
        pos = end.end()
    return blocks


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced block; an unclosed last fence runs to the end."""
    return [(lang, body) for lang, body, _, _ in _fenced_spans(text)]


def _parse_fields(text: str) -> dict[str, str]:
    """Field values of a formula block; continuation lines extend the last field."""
    values: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        match = _LABEL_RE.match(line)
        if match:
            current = _LABEL_TO_FIELD[match.group(1).upper()]
            if current in values:  # a second KERNEL line starts another block
                if current == "name":
                    break
                values[current].append(match.group(2).strip())
            else:
                values[current] = [match.group(2).strip()]
        elif current is not None and line.strip() and not line.strip().startswith("```"):
            values[current].append(line.strip())
    return {k: _clean(" ".join(v)) for k, v in values.items()}


def _clean(value: str) -> str:
    value = value.strip().strip("*_`").strip()
    return re.sub(r"\s+", " ", value)


def _split_names(value: str) -> tuple[str, ...]:
    parts = re.split(r"\s*(?:,|;|\band\b|\+|\*|&)\s*", value)
    return tuple(p.strip(" `'\"*") for p in parts if p.strip(" `'\"*"))


#: ``k(x, x') = ...`` to the end of the line.
_K_OF_X = re.compile(r"k\s*\(\s*x\s*,\s*x'\s*\)\s*=[^\n]*")


def _block_from_fields(fields: dict[str, str], raw: str, index: int) -> FormulaBlock:
    formula = fields.get("formula", "")
    if not formula:  # "KERNEL: Name (note): k(x, x') = ..." on one line
        inline = _K_OF_X.search(fields.get("name", ""))
        if inline is not None:
            formula = inline.group(0).strip()
            fields = {**fields, "name": fields["name"][: inline.start()]}
    if not formula:
        have = ", ".join(sorted(fields)) or "no recognised fields"
        raise ParseError(f"formula block {index + 1} has no COVARIANCE FUNCTION line ({have})")
    transform = fields.get("input_transform", "")
    if transform.lower().rstrip(".") in ("none", "no", "n/a", "identity", "-", ""):
        transform = ""
    name = re.sub(r"[^\w]", "", fields.get("name", "").split("(")[0]) or f"Kernel{index + 1}"
    return FormulaBlock(
        name=name,
        formula=formula,
        parameters=fields.get("parameters", ""),
        input_transform=transform,
        psd_guarantee=fields.get("psd_guarantee", ""),
        parents=_split_names(fields.get("parents", "")),
        combination=fields.get("combination", "").lower().strip("."),
        raw=raw.strip(),
    )


def _split_unfenced(text: str) -> list[str]:
    """Split prose into chunks that each start at a KERNEL line."""
    chunks: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        match = _LABEL_RE.match(line)
        if match and _LABEL_TO_FIELD[match.group(1).upper()] == "name" and current:
            chunks.append("\n".join(current))
            current = []
        current.append(line)
    if current:
        chunks.append("\n".join(current))
    return [
        c
        for c in chunks
        if "COVARIANCE" in c.upper() or "FORMULA" in c.upper() or _K_OF_X.search(c)
    ]


def extract_formula_blocks(text: str) -> list[FormulaBlock]:
    """All formula blocks of a reply, in order.

    Takes fenced ``formula`` blocks; else any fenced block with field labels; else
    unfenced ``KERNEL: ...`` sections of the prose. A fenced block holding several
    ``KERNEL`` lines is split.

    Raises:
        ParseError: No block with a ``COVARIANCE FUNCTION`` line was found.
    """
    text = strip_thinking(text)
    if not text.strip():
        raise ParseError("empty reply (no formula block)")
    fenced = _fenced_blocks(text)
    candidates = [body for lang, body in fenced if lang in ("formula", "kernel", "math")]
    if not candidates:
        candidates = [
            body
            for lang, body in fenced
            if lang not in ("python", "py") and "COVARIANCE" in body.upper()
        ]
    chunks = [c for body in candidates for c in _split_unfenced(body)]
    if not chunks:
        chunks = _split_unfenced(text)
    blocks: list[FormulaBlock] = []
    errors: list[str] = []
    for chunk in chunks:
        try:
            blocks.append(_block_from_fields(_parse_fields(chunk), chunk, len(blocks)))
        except ParseError as exc:
            errors.append(str(exc))
    if not blocks:
        if errors:
            raise ParseError("; ".join(errors))
        raise ParseError(
            "no formula block found (expected a ```formula block with a COVARIANCE FUNCTION line)"
        )
    return blocks


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


class _NormalizeNumbers(ast.NodeTransformer):
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
            return ast.dump(_NormalizeNumbers().visit(body))
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


def _trim_prose(code: str) -> str:
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
    blocks = [
        body for lang, body in _fenced_blocks(text) if lang in ("", "python", "py", "python3")
    ]
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
        code = _with_imports(_trim_prose(text[start.start() :].replace("```", "")))
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
    for lang, body in _fenced_blocks(text):
        if lang not in ("", "python", "py", "python3"):
            continue
        for code in _split_kernel_classes(body.strip("\n") + "\n"):
            found = find_kernel_class(code)
            if found:
                out.append(CodeBlock(_with_imports(code), found[0], found[1]))
    if not out:
        out.append(extract_code_block(text))  # raises ParseError with the reason
    return out


# ----------------------------------------------------------------------------------------
# Function-style conversion replies: PARAMETERS + def covariance(x1, x2, p)
# ----------------------------------------------------------------------------------------

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
    blocks = [
        body for lang, body in _fenced_blocks(text) if lang in ("", "python", "py", "python3")
    ]
    with_def = [b for b in blocks if re.search(r"^\s*def\s+covariance\s*\(", b, re.MULTILINE)]
    if with_def:
        return [_drop_label_lines(b) for b in with_def]
    start = re.search(r"^(import |from |PARAMETERS\b|def )", text, re.MULTILINE)
    if start is not None:
        return [_trim_prose(text[start.start() :].replace("```", ""))]
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
    dead = _drop_dead_reads(func)
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
    fixes = _numeric_fixes(tree)
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
    fingerprint = ast.dump(_NormalizeNumbers().visit(functions))
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
    for lang, body, start, end in _fenced_spans(text):
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


def _numeric_fixes(tree: ast.Module) -> list[str]:
    """Apply :class:`_NumericFixes` to ``tree`` in place; notes of what changed."""
    fixer = _NumericFixes()
    fixer.visit(tree)
    ast.fix_missing_locations(tree)
    return [f"{what} x{n}" for what, n in fixer.counts.items()]


def _drop_dead_reads(func: ast.FunctionDef) -> list[str]:
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
