"""Tests of :mod:`ax_kernel_discovery.validation` (checks run in this process).

Kernel sources come from ``tests/kernel_corpus/`` (read as text, loaded through
:func:`~ax_kernel_discovery.sandbox.load_kernel_class`); the sandboxed path is tested in
``test_sandbox.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from gpytorch.kernels import (
    LinearKernel,
    MaternKernel,
    RBFKernel,
    RQKernel,
    ScaleKernel,
)
from pydantic import ValidationError

from ax_kernel_discovery.sandbox import load_kernel_class
from ax_kernel_discovery.sandbox.validate import validate_kernel_code
from ax_kernel_discovery.validation import (
    CheckTimeout,
    ValidationOptions,
    ValidationResult,
    _inputs,
    check_kernel,
)

CORPUS = Path(__file__).parent / "kernel_corpus"


def corpus_factory(name: str):
    cls = load_kernel_class((CORPUS / f"{name}.py").read_text())
    return lambda d: cls(ard_num_dims=d)


ALL_PHASES = {"load", "shape", "diag", "finite", "gradient", "psd", "fit"}


def test_rbf_at_d100_passes_well_under_two_seconds() -> None:
    check_kernel(lambda d: RBFKernel(ard_num_dims=d), 3)  # warm-up: lazy botorch import
    start = time.perf_counter()
    res = check_kernel(lambda d: RBFKernel(ard_num_dims=d), 100)
    elapsed = time.perf_counter() - start
    assert res.ok, res.reason
    assert res.reason is None and res.stage is None
    assert ALL_PHASES <= set(res.timings)
    assert elapsed < 2.0


@pytest.mark.parametrize(
    "factory",
    [
        lambda d: RBFKernel(ard_num_dims=d),
        lambda d: MaternKernel(nu=2.5, ard_num_dims=d),
        lambda d: RQKernel(ard_num_dims=d),
        lambda d: ScaleKernel(MaternKernel(nu=0.5, ard_num_dims=d)),
        lambda d: LinearKernel(ard_num_dims=d),  # low rank, returns a LinearOperator
    ],
    ids=["rbf", "matern52", "rq", "scale-matern12", "linear"],
)
def test_gpytorch_kernels_pass(factory) -> None:
    res = check_kernel(factory, 7)
    assert res.ok, res.reason


@pytest.mark.parametrize(
    "name",
    [
        "valid_rbf",
        "valid_matern52_tanhpoly_rq",
        "valid_rq_bezier_poly",
        "valid_rq_spherelinear_matern_cos",
        "valid_device_aware_nugget",
    ],
)
def test_valid_corpus_passes(name: str) -> None:
    res = check_kernel(corpus_factory(name), 9)
    assert res.ok, res.reason


def test_very_high_dimension_is_fast_and_uses_few_points() -> None:
    start = time.perf_counter()
    res = check_kernel(lambda d: RBFKernel(ard_num_dims=d), 6392)
    assert res.ok, res.reason
    assert time.perf_counter() - start < 10.0
    # the reason of a failing kernel shows the N of the checks
    res = check_kernel(corpus_factory("broken_ignores_diag"), 6392, check_fit=False)
    assert res.stage == "diag"
    assert "(12,D)x(12,D)" in res.reason


@pytest.mark.parametrize(
    ("name", "stage", "fragment"),
    [
        ("broken_eye_shape", "shape", "(5,D)x(1,D) gave torch.Size([5, 5]), expected (5, 1)"),
        ("broken_diagonal_radius", "shape", "(3,D)x(7,D) raised RuntimeError"),
        ("broken_ignores_diag", "diag", "gave torch.Size([20, 20]), expected (20,)"),
        ("broken_wrong_diag", "diag", "differs from the diagonal of the full matrix"),
        ("broken_nan", "finite", "non-finite entries"),
        ("broken_asymmetric", "psd", "not symmetric"),
        ("broken_no_gradient", "gradient", "no gradient for parameter raw_gamma"),
        ("broken_cos_sq_dist", "psd", "Cholesky of K(X, X) + 1e-06 I failed"),
        ("broken_plus_distance", "psd", "Cholesky of K(X, X)"),
        ("broken_bad_constructor", "load", "missing 1 required positional argument: 'period'"),
        ("broken_constant", "degenerate", "does not depend on its inputs"),
        (
            "broken_deviceless_nugget",
            "device",
            "(20,D)x(20,D) raised RuntimeError: Tensor on device meta is not on the "
            "expected device cpu! once the tensors it creates without device= were put on "
            "another device",
        ),
    ],
)
def test_broken_corpus_rejected_at_the_right_stage(name: str, stage: str, fragment: str) -> None:
    res = check_kernel(corpus_factory(name), 10)
    assert not res.ok
    assert res.stage == stage, res.reason
    assert res.reason.startswith(f"{stage}: ")
    assert fragment in res.reason


def test_device_probe_is_the_only_check_that_sees_a_deviceless_tensor() -> None:
    """On a CPU the kernel works; only the meta-device probe shows it would fail on a GPU."""
    factory = corpus_factory("broken_deviceless_nugget")
    x = torch.rand(6, 3, dtype=torch.float64)
    kernel = factory(3).double()
    assert torch.isfinite(kernel(x).to_dense()).all()  # fine on a CPU
    res = check_kernel(factory, 10)
    assert (res.ok, res.stage) == (False, "device")
    assert "torch.eye(n, device=x1.device, dtype=x1.dtype)" in res.reason
    assert {"load", "shape", "device"} <= set(res.timings)
    # the probe runs before the checks that follow the shapes, on every device
    assert "diag" not in res.timings


def test_negative_eigenvalue_caught_when_jitter_hides_it_from_cholesky() -> None:
    res = check_kernel(corpus_factory("broken_cos_sq_dist"), 10, jitter=100.0)
    assert res.stage == "psd"
    assert "negative eigenvalue" in res.reason


def test_factory_errors_are_load_failures() -> None:
    res = check_kernel(lambda d: "not a kernel", 3)
    assert (res.ok, res.stage) == (False, "load")
    assert "not a gpytorch Kernel" in res.reason

    def boom(d: int):
        raise KeyError("nope")

    res = check_kernel(boom, 3)
    assert res.stage == "load" and "KeyError" in res.reason


class _NotATensorKernel(RBFKernel):
    def forward(self, x1, x2, diag=False, **params):
        return 1.0


def test_non_tensor_output_is_a_shape_failure() -> None:
    res = check_kernel(lambda d: _NotATensorKernel(ard_num_dims=d), 3)
    assert res.stage == "shape"
    assert "not a tensor" in res.reason


class _TimesOutKernel(RBFKernel):
    def forward(self, x1, x2, diag=False, **params):
        raise CheckTimeout()


def test_check_timeout_becomes_a_timeout_result() -> None:
    res = check_kernel(lambda d: _TimesOutKernel(ard_num_dims=d), 3)
    assert res.stage == "timeout"
    assert "checks phase" in res.reason


class _FailsInTrainingKernel(RBFKernel):
    def forward(self, x1, x2, diag=False, **params):
        if self.training:
            raise RuntimeError("only works in eval mode")
        return super().forward(x1, x2, diag=diag, **params)


def test_fit_failure() -> None:
    res = check_kernel(lambda d: _FailsInTrainingKernel(ard_num_dims=d), 4)
    assert res.stage == "fit"
    assert "only works in eval mode" in res.reason


class _SlowKernel(RBFKernel):
    def forward(self, x1, x2, diag=False, **params):
        if self.training:
            time.sleep(0.05)
        return super().forward(x1, x2, diag=diag, **params)


def test_fit_timeout() -> None:
    start = time.perf_counter()
    res = check_kernel(lambda d: _SlowKernel(ard_num_dims=d), 4, fit_timeout=0.2)
    assert res.stage == "timeout"
    assert "limit 0.2 s" in res.reason
    assert time.perf_counter() - start < 3.0


def test_check_fit_false_skips_the_fit() -> None:
    res = check_kernel(lambda d: RBFKernel(ard_num_dims=d), 4, check_fit=False)
    assert res.ok
    assert "fit" not in res.timings


def test_inputs_reach_a_hair_outside_the_cube() -> None:
    x = _inputs((6, 3), torch.Generator().manual_seed(0))
    assert x.dtype == torch.float64
    assert x.min() < 0 and x.max() > 1
    assert x.min() > -1e-6 and x.max() < 1 + 1e-6


def test_options_defaults_and_derived_cpu_limit() -> None:
    opts = ValidationOptions()
    assert (opts.n, opts.jitter, opts.fit_timeout, opts.check_fit, opts.memory_mb) == (
        20,
        1e-6,
        60.0,
        True,
        None,  # measured: the child's start-up size + memory_headroom_mb
    )
    assert (opts.memory_headroom_mb, opts.device) == (3072, "cpu")
    assert opts.wall_limit == opts.fit_timeout + opts.wall_margin
    assert opts.cpu_seconds >= opts.wall_limit
    short = opts.updated(fit_timeout=1.0, wall_margin=2.0)
    assert short.cpu_seconds == 3 + 5
    assert ValidationOptions(cpu_seconds=7).cpu_seconds == 7
    with pytest.raises(ValidationError):
        ValidationOptions(bogus=1)
    with pytest.raises(ValidationError):
        ValidationOptions(memory_mb=10)
    with pytest.raises(ValidationError, match="resolved device"):
        ValidationOptions(device="auto")
    with pytest.raises(ValidationError, match="device must be"):
        ValidationOptions(device="gpu")


def test_result_round_trip_and_malformed_data() -> None:
    res = ValidationResult(False, "psd: nope", "psd", {"psd": 0.1})
    assert ValidationResult.from_dict(res.to_dict()) == res
    for bad in ({"ok": "yes"}, {"ok": False, "stage": "pwned"}, [], {"ok": True, "timings": 3}):
        with pytest.raises(ValueError):
            ValidationResult.from_dict(bad)


def test_validate_kernel_code_rejects_statically_without_a_child() -> None:
    start = time.perf_counter()
    res = validate_kernel_code("import os\n", 5)
    assert (res.ok, res.stage) == (False, "sandbox")
    assert "import of 'os'" in res.reason
    assert time.perf_counter() - start < 0.5
    res = validate_kernel_code("x = 1", 5, memory_mb="lots")
    assert res.stage == "error" and "bad options" in res.reason
