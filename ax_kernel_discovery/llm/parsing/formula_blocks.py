"""Formula blocks of discovery and composition replies (:func:`extract_formula_blocks`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ax_kernel_discovery.llm.parsing.errors import ParseError
from ax_kernel_discovery.llm.parsing.fences import fenced_blocks, strip_thinking

__all__ = ["FormulaBlock", "extract_formula_blocks"]


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
    fenced = fenced_blocks(text)
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
