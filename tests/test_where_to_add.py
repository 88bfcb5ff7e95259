"""docs/architecture.md's "Where to add" is checked against the code (issue 49 item 8).

Every name the section quotes (in backticks) must exist: a dotted name is imported
(``round.RoundSteps`` from ``ax_kernel_discovery.surrogate.round``), a path is a file or
folder of the repository or the package, and any other identifier occurs in the
package's source. A rename or a move that leaves the section behind fails here, by name.
"""

from __future__ import annotations

import importlib
import keyword
import re
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "ax_kernel_discovery"
DOC = REPO / "docs" / "architecture.md"

#: Where a dotted name of the section may start (the section leaves the package's name out).
PREFIXES = ("ax_kernel_discovery.", "ax_kernel_discovery.surrogate.", "")

#: What a reader must find a "where to add" entry for (the issue's list).
ENTRIES = ("step", "rule", "executor", "kernel", "proposer")

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def section(text: str) -> str:
    """The "Where to add" section of ``text`` (up to the next heading of its level)."""
    match = re.search(r"^## Where to add\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    assert match, "docs/architecture.md has no '## Where to add' section"
    return match.group(1)


def entries(text: str) -> list[str]:
    """The bold titles of the section's bullets (``- **A kernel** ...``)."""
    return re.findall(r"^- \*\*(.+?)\*\*", section(text), flags=re.M)


@cache
def _source_words() -> frozenset[str]:
    words: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        words.update(IDENTIFIER.findall(path.read_text()))
    return frozenset(words)


def _resolve_dotted(name: str) -> bool:
    for prefix in PREFIXES:
        parts = (prefix + name).split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj: object = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                fields = getattr(obj, "model_fields", {})  # a pydantic model's field
                if hasattr(obj, attr):
                    obj = getattr(obj, attr)
                elif attr in fields:
                    obj = fields[attr]
                else:
                    break
            else:
                return True
            break
    return False


def _path_exists(name: str) -> bool:
    return any((root / name).exists() for root in (REPO, PACKAGE, PACKAGE / "surrogate"))


def missing(text: str) -> list[str]:
    """The quoted names of the section that the code does not hold."""
    gone = []
    for span in re.findall(r"`([^`]+)`", section(text)):
        span = span.strip()
        if " " not in span and ("/" in span or span.endswith((".py", ".md", ".toml"))):
            if not _path_exists(span):
                gone.append(span)
        elif re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_]\w*)+", span):
            if not _resolve_dotted(span):
                gone.append(span)
        else:  # an identifier, a signature, a decorator call: each word is in the code
            words = [w for w in IDENTIFIER.findall(span) if not keyword.iskeyword(w)]
            gone += [w for w in words if w not in _source_words()]
    return gone


def test_every_name_in_where_to_add_is_in_the_code() -> None:
    assert missing(DOC.read_text()) == []


def test_where_to_add_has_an_entry_for_each_extension() -> None:
    titles = " ".join(entries(DOC.read_text())).lower()
    absent = [what for what in ENTRIES if what not in titles]
    assert not absent, f"no 'where to add' entry for: {absent}"


@pytest.mark.parametrize(
    "quoted",
    [
        "`round.RoundSteps.no_such_step`",
        "`surrogate/no_such_module.py`",
        "`NoSuchRegistry`",
        '`@register_no_such_rule("name")`',
    ],
)
def test_a_name_the_code_does_not_hold_is_found(quoted: str) -> None:
    text = f"# doc\n\n## Where to add\n\n- **A step**: {quoted} and `round.RoundSteps`.\n"
    assert missing(text) != []
    assert missing(text.replace(quoted, "`round.RoundSteps.open`")) == []
