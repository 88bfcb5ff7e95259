"""Reading structured replies: kernel expression trees as JSON.

A reply constrained by :func:`ax_kernel_discovery.llm.schema.proposal_schema` is a JSON
object ``{"kernels": [{"rationale": ..., "kernel": tree}, ...]}``. Without a
constraint (``decoding="none"``) models wrap it in prose or code fences, or answer with
a bare list or a single tree; all of these are read. Nothing is built here: the trees
still go through the grammar's validator.

Example:
    >>> items = parse_kernel_trees('```json\\n{"kernels": [{"rationale": "smooth", '
    ...     '"kernel": {"kernel": "rbf", "warp": "identity", "ard": true}}]}\\n```')
    >>> items[0].rationale, items[0].tree["kernel"]
    ('smooth', 'rbf')
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ax_kernel_discovery.llm.parsing import ParseError

__all__ = ["TreeItem", "json_values", "parse_kernel_trees"]


@dataclass(frozen=True)
class TreeItem:
    """One proposed tree (not yet validated) and the model's one-line rationale."""

    tree: Any
    rationale: str = ""


_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)


def json_values(text: str) -> list[Any]:
    """Every top-level JSON object or array found in ``text``, in order."""
    decoder = json.JSONDecoder()
    out: list[Any] = []
    i = 0
    while i < len(text):
        if text[i] in "{[":
            try:
                value, end = decoder.raw_decode(text, i)
            except ValueError:
                i += 1
                continue
            out.append(value)
            i = end
        else:
            i += 1
    return out


def _items(value: Any) -> list[TreeItem] | None:
    if isinstance(value, dict) and isinstance(value.get("kernels"), list):
        value = value["kernels"]
    if isinstance(value, dict):
        if not {"kernel", "op"} & set(value):
            return None  # neither a tree nor a list of trees
        value = [value]
    if not isinstance(value, list):
        return None
    items = []
    for entry in value:
        if isinstance(entry, dict) and "kernel" in entry and isinstance(entry["kernel"], dict):
            rationale = entry.get("rationale", "")
            items.append(TreeItem(entry["kernel"], " ".join(str(rationale).split())))
        elif isinstance(entry, dict) and isinstance(entry.get("expression"), dict):
            items.append(
                TreeItem(entry["expression"], " ".join(str(entry.get("rationale", "")).split()))
            )
        else:
            items.append(TreeItem(entry))  # a bare tree (or junk the validator will name)
    return items


def parse_kernel_trees(reply: str) -> list[TreeItem]:
    """The proposed trees of a reply, in order (validation is the caller's job).

    Raises:
        ParseError: The reply holds no JSON object or array, or none of the expected
            shape.
    """
    text = _THINK.sub("", reply or "")
    values = json_values(text)
    if not values:
        snippet = " ".join(text.split())[:120]
        raise ParseError(f"no JSON object in the reply ({snippet!r})")
    for value in values:
        items = _items(value)
        if items:
            return items
    raise ParseError("the reply's JSON has no 'kernels' list and no kernel tree")
