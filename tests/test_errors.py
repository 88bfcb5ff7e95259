"""Errors by kind: a kernel's failure is recorded, anything else is a bug (strict: raised)."""

from __future__ import annotations

import os

import pytest
import torch
from botorch.exceptions.errors import ModelFittingError
from linear_operator.utils.errors import NanError, NotPSDError

from ax_kernel_discovery.errors import (
    STRICT_ENV,
    UNEXPECTED,
    KernelFailure,
    UnexpectedErrorWarning,
    is_kernel_failure,
    is_strict,
    rejection_stage,
    strict_errors,
    unexpected,
)
from ax_kernel_discovery.sandbox import load_kernel_class
from ax_kernel_discovery.sandbox.errors import KernelLoadError, UnsafeCodeError

RAISING_KERNEL = """\
import torch
from gpytorch.kernels import Kernel


class Raising(Kernel):
    def forward(self, x1, x2, diag=False, **params):
        return x1 @ "not a tensor"
"""


def _caught(error: BaseException) -> BaseException:
    """``error`` raised and caught here (so that it has a traceback)."""
    try:
        raise error
    except BaseException as e:  # noqa: BLE001
        return e


@pytest.mark.parametrize(
    "error",
    [
        NotPSDError("not PSD"),
        NanError("NaN in the Gram matrix"),
        torch.linalg.LinAlgError("singular"),
        ModelFittingError("all attempts failed"),
        KernelFailure("non-finite score"),
        UnsafeCodeError("sandbox: import of 'os'"),
        KernelLoadError("load: no Kernel subclass"),
        MemoryError(),
        TimeoutError(),
    ],
    ids=type,
)
def test_the_named_kinds_are_kernel_failures(error: Exception) -> None:
    assert is_kernel_failure(_caught(error))
    assert rejection_stage(_caught(error), "fit") == "fit"  # no raise, even in strict mode


@pytest.mark.parametrize(
    "error", [KeyError("x"), ZeroDivisionError(), TypeError("bad"), RuntimeError()], ids=type
)
def test_other_errors_are_bugs(error: Exception) -> None:
    assert not is_kernel_failure(_caught(error))


def test_anything_raised_in_a_kernels_own_code_is_its_failure() -> None:
    """A TypeError inside the forward of kernel source (an LLM's) is the kernel's fault,
    as is an error raised from it; the same TypeError in kd's code is a bug."""
    kernel = load_kernel_class(RAISING_KERNEL)()
    x = torch.rand(3, 2)
    with pytest.raises(TypeError) as info:
        kernel.forward(x, x)
    assert is_kernel_failure(info.value)
    try:
        raise KeyError("wrapped") from info.value
    except KeyError as wrapped:
        assert is_kernel_failure(wrapped)
    try:
        _ = torch.rand(2) @ "not a tensor"  # type: ignore[operator]
    except TypeError as ours:
        assert not is_kernel_failure(ours)
    with pytest.raises(KernelLoadError) as loading:  # its module code raises on import
        load_kernel_class("raise KeyError('at import')\n")
    assert is_kernel_failure(loading.value)


def test_the_test_suite_runs_in_strict_mode() -> None:
    assert is_strict() and os.environ[STRICT_ENV] == "1"


def test_a_bug_raises_in_strict_mode() -> None:
    error = ZeroDivisionError("division by zero")
    with pytest.raises(ZeroDivisionError):
        unexpected(error, "scoring")
    with pytest.raises(ZeroDivisionError):
        rejection_stage(error, "fit")


def test_a_bug_in_a_users_run_warns_naming_it_and_the_run_goes_on(
    kd_caplog: pytest.LogCaptureFixture,
) -> None:
    with strict_errors(False), pytest.warns(UnexpectedErrorWarning, match="ZeroDivisionError"):
        assert not is_strict()
        text = unexpected(_caught(ZeroDivisionError("division by zero")), "scoring (loo_crps)")
        stage = rejection_stage(_caught(KeyError("RBF")), "fit", "the fit")
    assert text == "scoring (loo_crps): ZeroDivisionError: division by zero"
    assert stage == UNEXPECTED
    assert "unexpected error in scoring (loo_crps)" in kd_caplog.text
    assert is_strict()  # the block restored it


def test_the_sandboxs_child_inherits_strict_mode() -> None:
    """Its environment is built from nothing: strict mode is passed on explicitly."""
    from ax_kernel_discovery.sandbox.isolation import _child_env

    assert _child_env("/tmp")[STRICT_ENV] == "1"
    with strict_errors(False):
        assert _child_env("/tmp")[STRICT_ENV] == "0"
