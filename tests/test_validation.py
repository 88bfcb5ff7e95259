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

from ax_kernel_discovery.kernels import SaasMatern52Kernel
from ax_kernel_discovery.sandbox import load_kernel_class
from ax_kernel_discovery.sandbox.validate import validate_kernel_code
from ax_kernel_discovery.validation import (
    SANDBOX_FIT_SECONDS,
    CheckTimeout,
    ValidationOptions,
    ValidationResult,
    _DevicelessTensorsOnHost,
    _inputs,
    _on_host,
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
        "valid_moved_grid",
    ],
)
def test_valid_corpus_passes(name: str) -> None:
    res = check_kernel(corpus_factory(name), 9)
    assert res.ok, res.reason


def test_a_parameter_that_only_its_prior_reads_passes_the_gradient_check() -> None:
    """The SAAS prior's global shrinkage enters the fit through its prior only: it passes,
    and the same kernel without its priors fails (nothing else moves the parameter)."""
    assert check_kernel(lambda d: SaasMatern52Kernel(ard_num_dims=d), 7).ok

    def without_priors(d: int) -> SaasMatern52Kernel:
        kernel = SaasMatern52Kernel(ard_num_dims=d)
        kernel._priors.clear()  # tau's own prior and tau / l_d^2's
        return kernel

    res = check_kernel(without_priors, 7, check_fit=False)
    assert (res.stage, res.reason) == ("gradient", "gradient: no gradient for parameter raw_tau")


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
            "(20,D)x(20,D) raised RuntimeError: Expected all tensors to be on the same "
            "device, but add got one made without device= (on the CPU in a GPU run) and one "
            "on the inputs' device; in a GPU run a tensor created without device= is on the CPU",
        ),
        (
            "broken_dtype_only_move",
            "device",
            "(20,D)x(20,D) raised RuntimeError: Expected all tensors to be on the same "
            "device, but mul got one",
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


def test_a_tensor_moved_to_the_inputs_passes_where_one_cast_only_is_refused() -> None:
    """Issue 30 item 7: ``torch.linspace(0, 1, 5).to(x1)`` works on a GPU; the probe put
    the grid on the ``meta`` device, which holds no data ("Cannot copy out of meta
    tensor"), and refused it. ``.to(x1.dtype)`` leaves it on the CPU: still refused."""
    moved = check_kernel(corpus_factory("valid_moved_grid"), 6, check_fit=False)
    assert moved.ok, moved.reason
    assert "device" in moved.timings  # the probe ran, and passed
    cast = check_kernel(corpus_factory("broken_dtype_only_move"), 6, check_fit=False)
    assert (cast.ok, cast.stage) == (False, "device")
    assert "t.to(x1)" in cast.reason


def _grid(x: torch.Tensor) -> torch.Tensor:
    return torch.linspace(0, 1, 3).to(x) * x


def _grid_same_dtype(x: torch.Tensor) -> torch.Tensor:
    # on a CPU .to() returns the grid itself: the probe must still count it as moved
    return torch.linspace(0, 1, 3, dtype=torch.float64).to(x) * x


def _computed_on_host_then_moved(x: torch.Tensor) -> torch.Tensor:
    w = torch.arange(1, 4).double().mul(0.5).exp() + torch.ones(3, dtype=torch.float64)
    return w.to(device=x.device, dtype=x.dtype) * x


def _to_device(x: torch.Tensor) -> torch.Tensor:
    return torch.ones(3, dtype=x.dtype).to(x.device) + x


def _type_as(x: torch.Tensor) -> torch.Tensor:
    return torch.ones(3).type_as(x) + x


def _made_on_the_device(x: torch.Tensor) -> torch.Tensor:
    eye = torch.eye(3, device=x.device, dtype=x.dtype)
    return eye @ x + x.new_ones(3) + torch.zeros_like(x) + torch.as_tensor([1.0, 2.0, 3.0]).to(x)


def _cpu_scalars(x: torch.Tensor) -> torch.Tensor:
    return torch.tensor(0.5, dtype=x.dtype) * x + torch.linspace(0, 1, 3).sum() * x


def _cpu_index(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[torch.tensor([0, 2])] = x[torch.arange(2)] * 2  # CPU indices, device values
    y[1] = torch.zeros(3, dtype=x.dtype)  # basic indexing copies across devices
    return y + x[:, torch.tensor([2, 1, 0])]


def _eye_plus_x(x: torch.Tensor) -> torch.Tensor:
    return torch.eye(3, dtype=x.dtype) + x


def _cast_only(x: torch.Tensor) -> torch.Tensor:
    return torch.linspace(0, 1, 3).to(x.dtype) * x


def _the_original_of_a_move(x: torch.Tensor) -> torch.Tensor:
    grid = torch.linspace(0, 1, 3, dtype=x.dtype)
    grid.to(x)  # a copy on the device; grid itself stays on the CPU
    return grid * x


def _cat(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([torch.zeros(1, 3, dtype=x.dtype), x])


def _matmul(x: torch.Tensor) -> torch.Tensor:
    return x @ torch.ones(3, 1, dtype=x.dtype)


def _expanded_cpu_scalar(x: torch.Tensor) -> torch.Tensor:
    return torch.tensor(1.0, dtype=x.dtype).expand(3, 3) + x  # no longer 0-dim


def _moved_to_the_cpu(x: torch.Tensor) -> torch.Tensor:
    return x.cpu() * x + x.to("cpu")


def _device_index_into_a_cpu_tensor(x: torch.Tensor) -> torch.Tensor:
    return torch.arange(5.0, dtype=x.dtype)[x.argmax(-1)]


def _cpu_values_by_advanced_indexing(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[torch.tensor([0, 1])] = torch.ones(2, 3, dtype=x.dtype)
    return y


def _cpu_linear_operator(x: torch.Tensor) -> torch.Tensor:
    from linear_operator.operators import DiagLinearOperator

    return torch.matmul(DiagLinearOperator(torch.ones(3, dtype=x.dtype)), x)


def _hstack_of_cpu_scalars(x: torch.Tensor) -> torch.Tensor:
    return torch.hstack([torch.tensor(1.0, dtype=x.dtype), x.sum()]).sum() * x


def _stack_of_cpu_scalars(x: torch.Tensor) -> torch.Tensor:
    return torch.stack([torch.tensor(1.0, dtype=x.dtype), x.sum()]).sum() * x


#: Code that runs with its inputs on a GPU: the probe accepts it.
RUNS_ON_A_GPU = [
    _grid,
    _grid_same_dtype,
    _computed_on_host_then_moved,
    _to_device,
    _type_as,
    _made_on_the_device,
    _cpu_scalars,
    _cpu_index,
]
#: Code that fails with its inputs on a GPU (CPU tensors of one or more dimensions mixed
#: with them): the probe refuses it.
FAILS_ON_A_GPU = [
    _eye_plus_x,
    _cast_only,
    _the_original_of_a_move,
    _cat,
    _matmul,
    _expanded_cpu_scalar,
    _moved_to_the_cpu,
    _device_index_into_a_cpu_tensor,
    _cpu_values_by_advanced_indexing,
    _cpu_linear_operator,
    _hstack_of_cpu_scalars,  # issue 52 item 12: 0-dim CPU tensors joined to device ones
    _stack_of_cpu_scalars,
]


@pytest.mark.parametrize("code", RUNS_ON_A_GPU, ids=lambda f: f.__name__)
def test_the_device_probe_accepts_code_that_runs_on_a_gpu(code) -> None:
    x = torch.rand(3, 3, dtype=torch.float64)
    with _DevicelessTensorsOnHost(x.device):
        out = code(x)
    assert not _on_host(out)  # on the inputs' device
    assert torch.equal(out, code(x))  # on the real values


@pytest.mark.parametrize("code", FAILS_ON_A_GPU, ids=lambda f: f.__name__)
def test_the_device_probe_refuses_code_that_mixes_devices(code) -> None:
    x = torch.rand(3, 3, dtype=torch.float64)
    code(x)  # fine on a CPU
    with pytest.raises(RuntimeError, match="same device"), _DevicelessTensorsOnHost(x.device):
        code(x)


#: Indexing, where FakeTensor's rules are not PyTorch's kernels' (it cannot move CPU
#: indices to a pretend GPU, and lets a CPU tensor take GPU indices, which CUDA refuses).
_INDEXING = {_cpu_index, _device_index_into_a_cpu_tensor, _cpu_values_by_advanced_indexing}
#: FakeTensor lets ``torch.stack`` take a 0-dim CPU tensor with GPU ones; CUDA's stack
#: unsqueezes them and concatenates (``torch.cat``), which refuses mixed devices.
_FAKE_TENSOR_LAX = {_stack_of_cpu_scalars}


@pytest.mark.parametrize(
    "code",
    [c for c in RUNS_ON_A_GPU + FAILS_ON_A_GPU if c not in _INDEXING | _FAKE_TENSOR_LAX],
    ids=lambda f: f.__name__,
)
def test_the_probe_s_verdicts_are_pytorch_s_device_rules(code) -> None:
    """Without a GPU: PyTorch's own device propagation (FakeTensorMode, shapes and devices
    without data) on inputs on a pretend GPU agrees with the probe on each case."""
    fake_tensor = pytest.importorskip("torch._subclasses.fake_tensor")
    with fake_tensor.FakeTensorMode():
        x = torch.empty(3, 3, dtype=torch.float64, device="cuda")
        try:
            code(x)
            runs = True
        except RuntimeError as err:
            assert "same device" in str(err)
            runs = False
    assert runs == (code in RUNS_ON_A_GPU)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_the_probe_s_verdicts_are_a_gpu_s() -> None:
    """The two lists above, run with the inputs on a GPU and no probe."""
    x = torch.rand(3, 3, dtype=torch.float64, device="cuda")
    for code in RUNS_ON_A_GPU:
        assert code(x).device == x.device, code.__name__
    for code in FAILS_ON_A_GPU:
        with pytest.raises(RuntimeError):
            code(x)
            pytest.fail(f"{code.__name__} ran on a GPU")


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


class _PlainAttributeKernel(RBFKernel):
    """Weights kept as a plain attribute: ``module.to(device)`` moves parameters and
    buffers only, so in a GPU run ``self.w`` stays on the CPU."""

    def __init__(self, dim: int, register: bool = False) -> None:
        super().__init__(ard_num_dims=dim)
        if register:
            self.register_buffer("w", torch.linspace(0.5, 1.5, dim))
        else:
            self.w = torch.linspace(0.5, 1.5, dim)

    def forward(self, x1, x2, diag=False, **params):
        return super().forward(x1 * self.w, x2 * self.w, diag=diag, **params)


def test_a_tensor_kept_as_a_plain_attribute_is_refused_naming_it() -> None:
    """Issue 52 item 12: the probe wraps ``forward``, so a tensor made in ``__init__``
    and kept as a plain attribute passed on a CPU and failed at fit on a GPU. The
    constructed module's tensors are probed too; a registered buffer passes."""
    res = check_kernel(lambda d: _PlainAttributeKernel(d), 4, check_fit=False)
    assert (res.ok, res.stage) == (False, "device")
    assert "'w'" in res.reason and "register_buffer('w', ...)" in res.reason
    nested = check_kernel(lambda d: ScaleKernel(_PlainAttributeKernel(d)), 4, check_fit=False)
    assert (nested.ok, nested.stage) == (False, "device")
    assert "'base_kernel.w'" in nested.reason
    registered = check_kernel(lambda d: _PlainAttributeKernel(d, register=True), 4)
    assert registered.ok, registered.reason


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
        None,  # no wall-clock limit of the fit check (issue 52 item 11)
        True,
        None,  # measured: the child's start-up size + memory_headroom_mb
    )
    assert (opts.memory_headroom_mb, opts.device) == (3072, "cpu")
    assert opts.wall_limit == SANDBOX_FIT_SECONDS + opts.wall_margin  # the safety net
    assert opts.updated(fit_timeout=60.0).wall_limit == 60.0 + opts.wall_margin
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


def test_the_fit_check_reads_no_clock_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 52 item 11: without ``fit_timeout`` the fit check is bounded by its
    iterations only, so on a clock 1000x slow (every interval 1000x longer) a kernel
    still passes; with one (opt-in) it is refused as a timeout, by name."""
    real = time.perf_counter
    start = real()
    monkeypatch.setattr(time, "perf_counter", lambda: start + (real() - start) * 1000.0)
    real_monotonic = time.monotonic
    begin = real_monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: begin + (real_monotonic() - begin) * 1000.0)
    factory = lambda d: RBFKernel(ard_num_dims=d)  # noqa: E731
    assert check_kernel(factory, 4).ok
    capped = check_kernel(factory, 4, fit_timeout=1.0)
    assert (capped.ok, capped.stage) == (False, "timeout")
