"""The error raised when a reply lacks what was asked for."""

from __future__ import annotations

__all__ = ["ParseError"]


class ParseError(ValueError):
    """A reply did not contain what was asked for; ``str(err)`` says what is missing."""
