"""Validation of untrusted kernel source: the checks of :mod:`ax_kernel_discovery.validation`
run on a class loaded in the sandbox's resource-limited child process.

:func:`~ax_kernel_discovery.validation.check_kernel` decides whether a kernel may join
the population; this module only runs it where untrusted code can do no harm
(:func:`~ax_kernel_discovery.sandbox.isolation.run_isolated`).

Example:
    >>> validate_kernel_code("import os\\n", 5).stage
    'sandbox'
"""

from __future__ import annotations

from typing import Any

from ax_kernel_discovery.sandbox.isolation import run_isolated
from ax_kernel_discovery.validation import ValidationOptions, ValidationResult, describe_error

__all__ = ["validate_kernel_code"]


def validate_kernel_code(
    code: str, dim: int, class_name: str | None = None, **options: Any
) -> ValidationResult:
    """Validate untrusted kernel source in a resource-limited child process.

    The source is first checked statically (:func:`~ax_kernel_discovery.sandbox.check_source`),
    then loaded with restricted builtins and run through
    :func:`~ax_kernel_discovery.validation.check_kernel` with
    ``factory = lambda d: cls(ard_num_dims=d)`` in the child.

    Args:
        code: Source of a module defining a ``gpytorch.kernels.Kernel`` subclass.
        dim: Input dimension D.
        class_name: Class to take (first Kernel subclass defined in ``code`` if None).
        **options: Fields of :class:`~ax_kernel_discovery.validation.ValidationOptions`.

    Returns:
        The :class:`~ax_kernel_discovery.validation.ValidationResult`; never raises for
        bad code.
    """
    try:
        opts = ValidationOptions(**options)
    except Exception as err:  # noqa: BLE001 - bad options are a caller error, but report it
        return ValidationResult(False, f"error: bad options ({describe_error(err)})", "error")
    return run_isolated(code, dim, class_name, opts)
