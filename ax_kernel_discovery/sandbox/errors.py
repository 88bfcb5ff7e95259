"""The error of kernel source that fails the sandbox's static check."""

from __future__ import annotations

__all__ = ["UnsafeCodeError"]


class UnsafeCodeError(ValueError):
    """Kernel source that fails the static check.

    Args:
        reason: Human readable reason, starting with ``"sandbox: "`` or ``"syntax: "``.
        stage: ``"sandbox"`` (disallowed construct) or ``"syntax"`` (does not parse).
    """

    def __init__(self, reason: str, stage: str = "sandbox") -> None:
        super().__init__(reason)
        self.reason = reason
        self.stage = stage
