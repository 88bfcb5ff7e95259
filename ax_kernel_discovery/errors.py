"""Errors by kind: a kernel's failure is recorded, anything else is a bug.

A round of kernel discovery builds, checks, fits and scores kernels that may be bad
(LLM-written code, an odd composition): their failures are part of the method and become
recorded :class:`~ax_kernel_discovery.candidate.Rejection`\\ s. An error of another kind
where a kernel runs (a ``KeyError`` in a criterion, a ``TypeError`` in the surrogate's
bookkeeping) is a bug of kernel discovery, or of a library it calls, and must not pass
for a rejection.

The kinds:

* **Kernel failures** (:func:`is_kernel_failure`): the named types of
  :data:`KERNEL_FAILURES` (not PSD, NaN, a linear-algebra error, a GP fit that failed,
  an optimizer's time limit, memory, timeouts, :class:`KernelFailure` of kd's own
  checks), and *anything* raised in the code of a kernel kd did not write. Kernel source
  (an LLM's or a kernel library's) is loaded under the file name
  :data:`KERNEL_CODE_FILE` (``"<kernel code ...>"``), so an error whose traceback passes
  through a frame of such code, or whose explicit cause (``raise ... from``) does, is that
  kernel's failure whatever its type: a ``TypeError`` inside its ``forward`` is the
  kernel's fault, the same ``TypeError`` in kd's own code is not. The sandbox's child
  reports the failures of the kernel it checks as a validation result (stage
  ``sandbox``, ``timeout``, ``load``, a check's name) and never raises them.
* **A broken worker process** (:mod:`ax_kernel_discovery.surrogate.worker`'s
  ``WorkerError``, a call that cannot be pickled): the fits run in this process
  instead, where their own errors are classified.
* **Best effort** (logging, optional imports, an LLM provider's network errors, the
  diagnostics of a run): caught where they happen and never raised into a run.
* **Anything else is a bug**: :func:`unexpected` raises it in strict mode; otherwise it
  warns (:class:`UnexpectedErrorWarning`, naming the error and where it happened), logs
  it with its traceback, and the caller records it (a rejection of stage
  :data:`UNEXPECTED`) and goes on.

Strict mode is on when the environment variable :data:`STRICT_ENV`
(``AXKD_STRICT_ERRORS``) is ``1``: an environment variable so that the surrogate's
worker processes and the sandbox's child, which start as fresh interpreters, inherit it.
The test suite turns it on for every test (``tests/conftest.py``); :func:`strict_errors`
turns it on or off for a block of code.

Example:
    >>> from linear_operator.utils.errors import NotPSDError
    >>> is_kernel_failure(NotPSDError("not PSD")), is_kernel_failure(KeyError("x"))
    (True, False)
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

import torch
from botorch.exceptions.errors import (
    ModelFittingError,
    OptimizationGradientError,
    OptimizationTimeoutError,
)
from linear_operator.utils.errors import NanError, NotPSDError

__all__ = [
    "KERNEL_CODE_FILE",
    "KERNEL_FAILURES",
    "STRICT_ENV",
    "UNEXPECTED",
    "KernelFailure",
    "UnexpectedErrorWarning",
    "is_kernel_failure",
    "is_strict",
    "rejection_stage",
    "strict_errors",
    "unexpected",
]

logger = logging.getLogger(__name__)

#: The environment variable that turns strict mode on (``1``).
STRICT_ENV = "AXKD_STRICT_ERRORS"

#: The stage of a rejection recorded for an unexpected error (a bug, not the kernel's).
UNEXPECTED = "unexpected"

#: The file name kernel source is compiled under (``.format(module name)``): frames of
#: this code are the kernel's own.
KERNEL_CODE_FILE = "<kernel code {}>"
_KERNEL_CODE_PREFIX = KERNEL_CODE_FILE.split("{", 1)[0]


class KernelFailure(Exception):
    """A kernel that fails one of kernel discovery's own checks (a non-finite score, a
    forecast that is not finite)."""


class UnexpectedErrorWarning(RuntimeWarning):
    """An error that is no kernel failure (a bug) was recorded and the run went on."""


#: The exception types of a kernel's failure: the Gram matrix is not positive definite
#: or holds NaNs, a linear-algebra routine failed, BoTorch could not fit the GP or its
#: optimizer ran out of time or met a bad gradient, the kernel needs more memory than
#: there is, or it ran out of time; :class:`KernelFailure` for kd's own checks.
KERNEL_FAILURES: tuple[type[BaseException], ...] = (
    NotPSDError,
    NanError,
    torch.linalg.LinAlgError,
    ModelFittingError,
    OptimizationTimeoutError,
    OptimizationGradientError,
    MemoryError,
    torch.OutOfMemoryError,
    TimeoutError,
    KernelFailure,
)


def is_strict() -> bool:
    """Whether strict mode is on (``$AXKD_STRICT_ERRORS`` is ``1``)."""
    return os.environ.get(STRICT_ENV, "") == "1"


@contextmanager
def strict_errors(enabled: bool = True) -> Iterator[None]:
    """Strict mode on (or off, ``enabled=False``) inside the block; processes started
    inside it inherit the setting."""
    before = os.environ.get(STRICT_ENV)
    os.environ[STRICT_ENV] = "1" if enabled else "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(STRICT_ENV, None)
        else:
            os.environ[STRICT_ENV] = before


def _through_kernel_code(tb: TracebackType | None) -> bool:
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(_KERNEL_CODE_PREFIX):
            return True
        tb = tb.tb_next
    return False


def is_kernel_failure(error: BaseException) -> bool:
    """Whether ``error`` is a kernel's failure: one of :data:`KERNEL_FAILURES`, or raised
    through the code of a kernel kd did not write; the same for its explicit cause."""
    seen: set[int] = set()
    err: BaseException | None = error
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, KERNEL_FAILURES) or _through_kernel_code(err.__traceback__):
            return True
        err = err.__cause__
    return False


def _describe(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:300]}" if lines else type(error).__name__


def unexpected(error: BaseException, where: str) -> str:
    """Report ``error``, which is no kernel failure, caught at ``where``: a bug.

    Call it in the ``except`` block that caught ``error``. In strict mode it raises
    ``error`` again; otherwise it warns (:class:`UnexpectedErrorWarning`) and logs it with
    its traceback, and the caller records it and goes on.

    Returns:
        The error in one line (its type and message) and where, for the caller's record.
    """
    if is_strict():
        raise error
    text = f"{where}: {_describe(error)}"
    warnings.warn(
        f"kernel discovery: unexpected error in {text} (a bug, not a kernel's failure: "
        "please report it); recorded, and the run goes on",
        UnexpectedErrorWarning,
        stacklevel=2,
    )
    logger.error("unexpected error in %s", where, exc_info=error)
    return text


def rejection_stage(error: BaseException, stage: str, where: str | None = None) -> str:
    """The stage of the rejection that records ``error``: ``stage`` for a kernel's failure;
    for anything else :func:`unexpected` runs first (it raises in strict mode) and the
    stage is :data:`UNEXPECTED`.

    Args:
        error: The error caught.
        stage: The rejection's stage for a kernel failure (``"fit"``, ``"validation"``).
        where: Where it was caught, for the warning (default: ``stage``).
    """
    if is_kernel_failure(error):
        return stage
    unexpected(error, where or stage)
    return UNEXPECTED
