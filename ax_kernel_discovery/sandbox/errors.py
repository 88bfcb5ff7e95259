"""The errors of kernel source: it fails the sandbox's static check, or cannot be loaded.

Both are kernel failures (:class:`~ax_kernel_discovery.errors.KernelFailure`): the
source is at fault, not kernel discovery.
"""

from __future__ import annotations

from ax_kernel_discovery.errors import KernelFailure

__all__ = ["KernelLoadError", "UnsafeCodeError"]


class KernelLoadError(KernelFailure, ValueError):
    """Checked kernel source that cannot be loaded: executing it failed, or it defines no
    (such) ``gpytorch.kernels.Kernel`` subclass."""


class UnsafeCodeError(KernelFailure, ValueError):
    """Kernel source that fails the static check.

    Args:
        reason: Human readable reason, starting with ``"sandbox: "`` or ``"syntax: "``.
        stage: ``"sandbox"`` (disallowed construct) or ``"syntax"`` (does not parse).
    """

    def __init__(self, reason: str, stage: str = "sandbox") -> None:
        super().__init__(reason)
        self.reason = reason
        self.stage = stage
