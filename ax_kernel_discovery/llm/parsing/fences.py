"""The parts of a reply around its content: ``<think>`` sections and fenced blocks."""

from __future__ import annotations

import re

__all__ = ["fenced_blocks", "fenced_spans", "strip_thinking"]


_FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n]*$", re.MULTILINE)
_THINK_RE = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)


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


def fenced_spans(text: str) -> list[tuple[str, str, int, int]]:
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


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced block; an unclosed last fence runs to the end."""
    return [(lang, body) for lang, body, _, _ in fenced_spans(text)]
