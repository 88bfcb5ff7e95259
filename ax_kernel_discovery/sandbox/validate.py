"""Validation of untrusted kernel source: the checks of :mod:`ax_kernel_discovery.validation`
run on a class loaded in the sandbox's resource-limited child process.

:func:`~ax_kernel_discovery.validation.check_kernel` decides whether a kernel may join
the population; this module only runs it where untrusted code can do no harm
(:func:`~ax_kernel_discovery.sandbox.isolation.run_isolated`).
:func:`validate_candidate` is the one entry point for a candidate kernel (a proposal, a
kernel-library entry): its source goes to the sandbox, an expression tree of the
package's own kernels is checked in this process.

Example:
    >>> validate_kernel_code("import os\\n", 5).stage
    'sandbox'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ax_kernel_discovery.sandbox.isolation import run_isolated
from ax_kernel_discovery.validation import (
    ValidationOptions,
    ValidationResult,
    check_kernel,
    describe_error,
)

if TYPE_CHECKING:
    from gpytorch.kernels import Kernel

__all__ = ["KernelDefinition", "validate_candidate", "validate_kernel_code"]


class KernelDefinition(Protocol):
    """What :func:`validate_candidate` reads of a kernel (a
    :class:`~ax_kernel_discovery.candidate.KernelCandidate` has it)."""

    @property
    def code(self) -> str | None:
        """Untrusted source of a ``gpytorch.kernels.Kernel`` subclass (``None``: a tree)."""
        ...

    @property
    def class_name(self) -> str | None:
        """The class to take from ``code`` (first Kernel subclass if ``None``)."""
        ...

    def build(self, dim: int) -> Kernel:
        """The kernel for inputs of dimension ``dim`` (trusted: only called for trees)."""
        ...


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
    except (ValueError, TypeError) as err:  # bad options: a caller's error, but report it
        return ValidationResult(False, f"error: bad options ({describe_error(err)})", "error")
    return run_isolated(code, dim, class_name, opts)


def validate_candidate(
    candidate: KernelDefinition,
    dim: int,
    factory: Callable[[int], Kernel] | None = None,
    **options: Any,
) -> ValidationResult:
    """Validate a kernel before it joins a population or drives a run.

    Kernel source (``candidate.code``) is untrusted: it goes through
    :func:`validate_kernel_code`, every check in the sandboxed child, the GP fit check
    included. An expression tree of the package's own kernels is trusted: ``candidate.build``
    goes through :func:`~ax_kernel_discovery.validation.check_kernel` in this process,
    without the GP fit check unless ``options`` ask for it (``check_fit=True``).

    Args:
        candidate: The kernel: a :class:`~ax_kernel_discovery.candidate.KernelCandidate`
            or anything with its ``code``, ``class_name`` and ``build``.
        dim: Input dimension D.
        factory: Builds the tree's kernel instead of ``candidate.build`` (a caller that
            builds the kernel once for several checks passes it here).
        **options: Fields of :class:`~ax_kernel_discovery.validation.ValidationOptions`
            (``fit_timeout``, ``device``...).

    Returns:
        The :class:`~ax_kernel_discovery.validation.ValidationResult`; never raises for a
        bad kernel.

    Example:
        >>> from ax_kernel_discovery.population import base_candidate  # doctest: +SKIP
        >>> validate_candidate(base_candidate("rbf"), 5).ok  # doctest: +SKIP
        True
    """
    if candidate.code is not None:
        return validate_kernel_code(candidate.code, dim, class_name=candidate.class_name, **options)
    return check_kernel(factory or candidate.build, dim, **{"check_fit": False, **options})
