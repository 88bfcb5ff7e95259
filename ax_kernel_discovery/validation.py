"""Checks that a kernel may join the population.

A proposed kernel (an LLM-written ``gpytorch.kernels.Kernel`` subclass or a trusted
expression tree) joins the population only if it passes, in order:

1. ``load``: ``factory(dim)`` builds a :class:`gpytorch.kernels.Kernel`;
2. ``shape``: in float64, on inputs uniform in :math:`[0, 1]^D` (a few entries a hair
   outside the cube), ``forward`` returns exactly ``... x n1 x n2`` for
   ``(N,D)x(N,D)``, ``(5,D)x(1,D)``, ``(3,D)x(7,D)``, ``(1,4,D)x(1,3,D)`` and
   ``(2,N,D)x(2,M,D)``; these catch the shape bugs of LLM-written kernels (a
   ``torch.eye(x1.size(-2))`` added to a rectangular matrix, radii taken from the
   diagonal of a cross matrix);
3. ``device``: the shape checks once more, as a GPU run would see them: every tensor the
   kernel creates without a ``device=`` (``torch.eye(n)``, ``torch.zeros(n, m)``,
   ``torch.tensor([...])``) is taken to be on the CPU, the inputs on the GPU, and an
   operation that mixes the two raises as PyTorch raises there
   (:class:`_DevicelessTensorsOnHost`, on the real values). A kernel that mixes them works
   on a CPU and fails on a GPU; the probe makes it fail on every device alike, before it
   joins. What works on a GPU passes: a tensor moved to the inputs
   (``torch.linspace(0, 1, 5).to(x1)``), 0-dim CPU tensors such as ``torch.tensor(2.0)``
   (CUDA operations accept them, but not in ``torch.stack`` or ``torch.cat``), CPU
   index tensors. A tensor the kernel keeps as a plain attribute (``self.w =
   torch.ones(d)`` in ``__init__``, not a parameter or buffer) is refused, naming it:
   ``kernel.to(device)`` leaves it on the CPU. All checks run on
   ``ValidationOptions.device``, the run's device;
4. ``diag``: ``forward(x, x, diag=True)`` has shape ``(N,)`` and equals the diagonal of
   the full matrix (:class:`~gpytorch.kernels.ScaleKernel` and posterior variances call
   ``forward(..., diag=True)`` directly, so a kernel that ignores ``diag`` breaks them);
5. ``finite``: every output is finite;
6. ``gradient``: the gradient of :math:`\\sum_{ij} K_{ij}` exists and is finite for
   every kernel parameter (for a parameter that only a registered prior reads, as the
   SAAS prior's global shrinkage, that of the prior's log density);
7. ``psd``: :math:`K(X, X)` is symmetric, the Cholesky factor of
   :math:`K + \\text{jitter}\\, I` exists and the smallest eigenvalue is above
   :math:`-10^{-6} \\lambda_{\\max}`; GPyTorch's silent jitter retries are switched off;
8. ``fit`` / ``timeout``: a :class:`botorch.models.SingleTaskGP` with
   ``ScaleKernel(kernel)`` fits a smooth function on ``n`` random points in
   ``fit_maxiter`` L-BFGS steps (within ``fit_timeout`` seconds, when one is given) and
   gives a finite posterior at 5 test points.

:func:`check_kernel` runs the checks in this process and is meant for trusted
factories (the package's own kernels, expression trees). Untrusted source goes through
:func:`~ax_kernel_discovery.sandbox.validate.validate_kernel_code`, which runs the same
checks in a resource-limited child process (:mod:`ax_kernel_discovery.sandbox`). No check raises: every failure is a
:class:`ValidationResult` with ``ok=False``, the ``stage`` that failed and a readable
``reason``.

Example:
    >>> from gpytorch.kernels import RBFKernel
    >>> check_kernel(lambda d: RBFKernel(ard_num_dims=d), dim=10).ok
    True
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import gpytorch
import torch
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from torch.overrides import TorchFunctionMode

from ax_kernel_discovery.devices import check_device_name
from ax_kernel_discovery.errors import rejection_stage

__all__ = [
    "SANDBOX_FIT_SECONDS",
    "CheckTimeout",
    "ValidationOptions",
    "ValidationResult",
    "check_kernel",
]

#: Without ``fit_timeout``: the seconds a sandbox child gets for its fit check before it
#: is stopped (plus ``wall_margin``), a safety net against code that never ends, not a
#: budget (the check takes a second or two); when it fires the rejection says so.
SANDBOX_FIT_SECONDS = 300.0

STAGES = (
    "syntax",
    "sandbox",
    "load",
    "shape",
    "device",
    "diag",
    "gradient",
    "psd",
    "finite",
    "degenerate",
    "fit",
    "timeout",
    "error",
)


@dataclass
class ValidationResult:
    """Outcome of the validation of one kernel.

    Args:
        ok: Whether every check passed.
        reason: The first failed check, human readable (``None`` when ``ok``).
        stage: Where it failed: one of ``syntax``, ``sandbox``, ``load``, ``shape``,
            ``device``, ``diag``, ``gradient``, ``psd``, ``finite``, ``fit``, ``timeout``,
            ``error``.
        timings: Seconds spent per phase.
    """

    ok: bool
    reason: str | None = None
    stage: str | None = None
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (what the sandbox child sends back)."""
        return {
            "ok": self.ok,
            "reason": self.reason,
            "stage": self.stage,
            "timings": dict(self.timings),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ValidationResult:
        """Inverse of :meth:`to_dict`; raises ``ValueError`` on malformed data."""
        if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
            raise ValueError(f"not a validation result: {data!r:.200}")
        reason, stage = data.get("reason"), data.get("stage")
        if reason is not None and not isinstance(reason, str):
            raise ValueError(f"bad reason {reason!r:.100}")
        if stage is not None and stage not in STAGES:
            raise ValueError(f"bad stage {stage!r:.100}")
        timings = data.get("timings") or {}
        if not isinstance(timings, dict):
            raise ValueError(f"bad timings {timings!r:.100}")
        return cls(
            ok=data["ok"],
            reason=reason,
            stage=stage,
            timings={str(k): float(v) for k, v in timings.items()},
        )


class ValidationOptions(BaseModel):
    """Settings of the kernel checks and of the sandbox child that runs them."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    n: int = Field(20, ge=2, description="Number of points N of the checks and of the GP fit.")
    high_dim: int = Field(
        1000, ge=1, description="From this input dimension on, the checks use `n_high_dim` points."
    )
    n_high_dim: int = Field(
        12, ge=2, description="N of the shape/diag/gradient/PSD checks when dim >= high_dim."
    )
    jitter: float = Field(1e-6, ge=0.0, description="Jitter added before the Cholesky check.")
    eig_tol: float = Field(
        1e-6, ge=0.0, description="Smallest eigenvalue must exceed -eig_tol * largest."
    )
    diag_rtol: float = Field(1e-6, ge=0.0, description="Relative tolerance of the diag check.")
    diag_atol: float = Field(1e-8, ge=0.0, description="Absolute tolerance of the diag check.")
    fit_timeout: float | None = Field(
        None,
        gt=0.0,
        description="Wall-clock limit (s) of the GP fit check (None: none; the check is "
        "bounded by fit_maxiter iterations, and a sandbox child by its safety net, "
        "SANDBOX_FIT_SECONDS).",
    )
    fit_maxiter: int = Field(
        100,
        ge=1,
        description="L-BFGS iterations of the fit check (it tests that fitting works, not "
        "that it converges).",
    )
    check_fit: bool = Field(True, description="Run the GP fit check.")
    device: str = Field(
        "cpu",
        description="Torch device the checks run on: the run's device (cpu, cuda or cuda:N).",
    )
    seed: int = Field(0, description="Seed of the random test inputs.")
    memory_mb: int | None = Field(
        None,
        ge=1024,
        description="Address-space limit (RLIMIT_AS) of the sandbox child in MB; None: "
        "measured, the address space a child has mapped once its imports are done (and, on "
        "CUDA, its CUDA context made) plus memory_headroom_mb. A fixed limit does not fit "
        "every build: CPU torch maps about 0.65 GB at import, a CUDA build maps its CUDA "
        "libraries (several GB) and the CUDA driver reserves virtual address space for "
        "the device when it starts, so a 4 GB limit would reject every code kernel there.",
    )
    memory_headroom_mb: int = Field(
        3072,
        ge=256,
        description="With memory_mb=None: the address space the sandbox child may map beyond "
        "its measured start-up size (MB).",
    )
    wall_margin: float = Field(
        30.0,
        gt=0.0,
        description="Seconds added to fit_timeout for the sandbox child's wall-clock limit "
        "(interpreter start, imports and the checks before the fit).",
    )
    cpu_seconds: int | None = Field(
        None,
        ge=1,
        description="CPU-time limit of the sandbox child; derived from the wall-clock "
        "limit when not given.",
    )

    @field_validator("device")
    @classmethod
    def _device(cls, value: str) -> str:
        if check_device_name(value) == "auto":
            raise ValueError("device must be a resolved device (cpu, cuda or cuda:N), not 'auto'")
        return value

    @model_validator(mode="after")
    def _derive_cpu_seconds(self) -> ValidationOptions:
        if self.cpu_seconds is None:
            # Single-threaded child: CPU time <= wall time, plus slack for start-up.
            self.cpu_seconds = int(math.ceil(self.wall_limit)) + 5
        return self

    @property
    def wall_limit(self) -> float:
        """Wall-clock limit (s) of the sandbox child: a safety net against code that never
        ends (``fit_timeout``, else :data:`SANDBOX_FIT_SECONDS`, plus ``wall_margin``)."""
        fit = SANDBOX_FIT_SECONDS if self.fit_timeout is None else self.fit_timeout
        return fit + self.wall_margin

    def updated(self, **overrides: Any) -> ValidationOptions:
        """A validated copy with ``overrides`` applied (cpu_seconds re-derived)."""
        data = self.model_dump()
        if "cpu_seconds" not in overrides and any(
            k in overrides for k in ("fit_timeout", "wall_margin")
        ):
            data["cpu_seconds"] = None
        data.update(overrides)
        return ValidationOptions(**data)


class CheckTimeout(BaseException):
    """Raised (by a signal handler of the sandbox child) when time is up.

    A ``BaseException`` so that ``except Exception`` in kernel code does not swallow it.
    """


class _Failure(Exception):
    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


def _describe(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    first = text[0] if text else ""
    if len(first) > 300:
        first = first[:300] + "..."
    return f"{type(err).__name__}: {first}" if first else type(err).__name__


describe_error = _describe
"""An exception in one line: its type and the first line of its message (300 characters)."""


def _is_memory_error(err: BaseException) -> bool:
    if isinstance(err, MemoryError):
        return True
    msg = str(err).lower()
    return isinstance(err, RuntimeError) and (
        "can't allocate memory" in msg or "out of memory" in msg or "not enough memory" in msg
    )


def _prior_gradients(
    kernel: gpytorch.kernels.Kernel, params: list[torch.Tensor]
) -> list[torch.Tensor | None]:
    """The gradient of the kernel's registered priors' log density (the prior term of the
    fit's MAP objective) for each parameter; ``None`` for one no prior reads."""
    terms = [
        prior.log_prob(closure(module)).sum()
        for _, module, prior, closure, _ in kernel.named_priors()
    ]
    if not terms:
        return [None] * len(params)
    total = sum(terms[1:], terms[0])
    if not total.requires_grad:
        return [None] * len(params)
    return list(torch.autograd.grad(total, params, allow_unused=True))


def _dense(out: Any) -> torch.Tensor:
    if hasattr(out, "to_dense") and not isinstance(out, torch.Tensor):
        out = out.to_dense()
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"forward returned {type(out).__name__}, not a tensor")
    return out


def _inputs(shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    """Uniform [0, 1] inputs with a few entries a hair outside the cube."""
    x = torch.rand(*shape, generator=gen, dtype=torch.float64)
    flat = x.view(-1)
    flat[0] = -1e-9
    if flat.numel() > 1:
        flat[-1] = 1.0 + 1e-9
    if flat.numel() > 2:
        flat[flat.numel() // 2] = 0.0
    return x


#: Tensor factories whose result lands on the default device unless ``device=`` is given.
_FACTORIES = frozenset(
    {
        torch.arange,
        torch.as_tensor,
        torch.empty,
        torch.empty_strided,
        torch.eye,
        torch.full,
        torch.linspace,
        torch.logspace,
        torch.normal,
        torch.ones,
        torch.rand,
        torch.randint,
        torch.randn,
        torch.randperm,
        torch.scalar_tensor,
        torch.tensor,
        torch.tril_indices,
        torch.triu_indices,
        torch.zeros,
    }
)

_Base = torch._C.TensorBase

#: Functions whose result is on the device of their first tensor argument unless
#: ``device=`` is given (``torch.zeros_like(t)``, ``t.new_ones(n)``).
_LIKE = frozenset(
    {
        torch.empty_like,
        torch.full_like,
        torch.ones_like,
        torch.rand_like,
        torch.randint_like,
        torch.randn_like,
        torch.zeros_like,
        _Base.new_empty,
        _Base.new_full,
        _Base.new_ones,
        _Base.new_tensor,
        _Base.new_zeros,
    }
)

#: Functions that join their tensors into one (CUDA's ``stack`` unsqueezes and
#: concatenates): every input must be on one device, 0-dim CPU tensors too.
_JOINS = frozenset(
    {
        torch.cat,
        torch.concat,
        torch.concatenate,
        torch.stack,
        torch.hstack,
        torch.vstack,
        torch.dstack,
        torch.column_stack,
        torch.row_stack,
    }
)

#: Methods that read only the shape of their tensor argument: no device is mixed.
_SHAPE_OF_OTHER = frozenset({_Base.expand_as, _Base.reshape_as, _Base.view_as})

#: The tag of a tensor made without ``device=`` while the probe runs (see
#: :class:`_DevicelessTensorsOnHost`); kernel code cannot name it (private names are
#: refused by the sandbox's checker).
_HOST_TAG = "_axkd_made_on_host"

_DEVICE_MISMATCH = (
    "expected all tensors to be on the same device",
    "is not on the expected device",
)


def _on_host(t: torch.Tensor) -> bool:
    """Whether ``t`` was made without ``device=`` while the probe ran (on a GPU run: the CPU)."""
    return bool(getattr(t, _HOST_TAG, False))


def _tensors(obj: Any, out: list[torch.Tensor]) -> list[torch.Tensor]:
    """The tensors in ``obj`` (nested lists, tuples and dicts; a ``LinearOperator``'s)."""
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            _tensors(item, out)
    elif isinstance(obj, dict):
        for item in obj.values():
            _tensors(item, out)
    else:
        representation = getattr(obj, "representation", None)  # a LinearOperator
        if callable(representation) and type(obj).__module__.startswith("linear_operator"):
            _tensors(tuple(representation()), out)
    return out


class _DevicelessTensorsOnHost(TorchFunctionMode):
    """Runs kernel code as if its inputs were on a GPU and what it creates without
    ``device=`` on the CPU, on real data, and raises where such a run would.

    Every tensor that a factory (``torch.eye(n)``, ``torch.linspace(0, 1, 5)``,
    ``torch.tensor([...])``) makes without ``device=`` is tagged *on the host*, and so
    is what is computed from tagged tensors only; the inputs, the kernel's parameters
    and buffers, and what is computed from them are on *the device*. An operation that
    combines a host tensor of one or more dimensions with a device tensor raises
    :class:`RuntimeError`, as PyTorch raises on a GPU; these are allowed, as there:

    - a 0-dim host tensor with device tensors (``torch.tensor(0.5) * x1``: CUDA
      operations take CPU scalars); the result is on the device; not in a join
      (``torch.stack``, ``torch.cat``, ``torch.hstack``, ...), which CUDA refuses;
    - a move: ``t.to(x1)``, ``t.to(x1.device)``, ``t.to(device=..., dtype=...)``,
      ``t.type_as(x1)`` and ``t.cuda()`` put ``t`` on the device (a copy), ``t.cpu()``
      and ``t.to("cpu")`` on the host; ``t.to(x1.dtype)`` leaves it where it is;
    - ``device=`` given to a factory, ``torch.*_like`` or ``t.new_*``: the device named
      (a ``torch.device`` equal to the inputs' counts as theirs, the string ``"cpu"``
      as the host); without it, ``torch.*_like(t)`` and ``t.new_*`` are where ``t`` is;
    - ``t.copy_(src)`` and ``t[...] = src`` with basic indexing (a copy across
      devices); host index tensors into a device tensor (``x1[torch.arange(2)]``);
    - ``t.expand_as(x1)``, ``t.view_as(x1)``, ``t.reshape_as(x1)`` (only the size of
      ``x1`` is read).

    The values are the real ones (nothing is put on the ``meta`` device, which holds no
    data and cannot be moved back), so code that moves what it creates runs as on a GPU.
    Not seen: a ``torch.device`` taken from a host tensor (``device=t.device``) counts as
    the inputs' device on a CPU run, where both are the CPU.

    Args:
        device: The device the inputs are on (the run's device).
    """

    def __init__(self, device: torch.device) -> None:
        super().__init__()
        self.device = device

    def _on_host_device(self, device: Any) -> bool:
        """Whether ``device=device`` puts a tensor on the host (not the inputs' device)."""
        if isinstance(device, str) and torch.device(device).type == "cpu":
            return True  # named "cpu": the host on a GPU run
        dev = torch.device(device)
        same = dev.type == self.device.type and dev.index in (None, self.device.index)
        return not same

    def _mismatch(self, func: Any, tensors: list[torch.Tensor]) -> None:
        host = [t for t in tensors if _on_host(t)]
        joined = func in _JOINS  # a 0-dim CPU tensor is a scalar to elementwise ops only
        if any(joined or t.dim() > 0 for t in host) and len(host) < len(tensors):
            name = getattr(func, "__name__", repr(func))
            raise RuntimeError(  # what PyTorch raises in a GPU run
                f"Expected all tensors to be on the same device, but {name} got one made "
                "without device= (on the CPU in a GPU run) and one on the inputs' device"
            )

    def _target(
        self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[bool | None, bool]:
        """Where the result goes: (on the host?, or None to follow the inputs) and
        whether the operation is checked for mixed devices."""
        device = kwargs.get("device")
        if func in _FACTORIES:
            if device is not None:
                return self._on_host_device(device), False
            if args and isinstance(args[0], torch.Tensor):  # torch.as_tensor(t): t's
                return _on_host(args[0]), False
            return True, False
        if func in _LIKE:
            if device is not None:
                return self._on_host_device(device), False
            return _on_host(args[0]), False
        if func is _Base.to:
            for arg in (*args[1:], kwargs.get("other"), device):
                if isinstance(arg, torch.Tensor):
                    return _on_host(arg), False
                if isinstance(arg, (str, torch.device)) or (
                    isinstance(arg, int) and not isinstance(arg, bool)
                ):
                    return self._on_host_device(arg), False
            return None, False  # a dtype only: where it was
        if func is _Base.type_as:
            return _on_host(args[1]), False
        if func is _Base.cuda:
            return False, False
        if func is _Base.cpu:
            return True, False
        if func is _Base.copy_ or func in _SHAPE_OF_OTHER:
            return _on_host(args[0]), False
        return None, True

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        target, checked = self._target(func, args, kwargs)
        inputs = _tensors((args, kwargs), [])
        if func is _Base.__getitem__ or func is _Base.__setitem__:
            self._check_indexing(func, args)
            target = _on_host(args[0])
        elif checked:
            self._mismatch(func, inputs)
        out = func(*args, **kwargs)
        if target is None:  # follows its inputs: the device if any is there
            if not inputs:
                return out
            target = all(_on_host(t) for t in inputs)
        elif (
            isinstance(out, torch.Tensor)
            and _on_host(out) != target
            and any(out is t for t in inputs)
        ):
            out = out.clone()  # a move that was a no-op here: the original stays where it is
        outputs = [out] if isinstance(out, torch.Tensor) else []
        if isinstance(out, (list, tuple)):  # torch.chunk, torch.linalg.eigh, ...
            outputs = _tensors(out, [])
        for t in outputs:
            if not any(t is i for i in inputs):  # in place: it stays where it is
                setattr(t, _HOST_TAG, target)
        return out

    def _check_indexing(self, func: Any, args: tuple[Any, ...]) -> None:
        """``t[index]`` and ``t[index] = value``: host index tensors are allowed into a
        device tensor (device ones into a host tensor are not); the value of an
        advanced-indexing assignment must be where ``t`` is, or 0-dim."""
        self_, index = args[0], args[1]
        indices = _tensors(index, [])
        if _on_host(self_) and any(not _on_host(i) and i.dim() > 0 for i in indices):
            self._mismatch(func, [self_, *indices])
        value = args[2] if func is _Base.__setitem__ else None
        if indices and isinstance(value, torch.Tensor) and value.dim() > 0:
            self._mismatch(func, [self_, value])


#: Packages whose modules' plain attributes are theirs to manage, not the kernel's.
_LIBRARIES = frozenset({"torch", "gpytorch", "botorch", "linear_operator"})


def _plain_tensor_attributes(kernel: torch.nn.Module) -> list[str]:
    """The tensors the kernel keeps as plain attributes (``self.w = torch.ones(d)``, in
    a list or dict too), by dotted name: ``module.to(device)`` moves parameters and
    buffers only, so in a GPU run these stay on the CPU."""
    names: list[str] = []
    for prefix, module in kernel.named_modules():
        if type(module).__module__.split(".")[0] in _LIBRARIES:
            continue  # GPyTorch's own (a constraint's _initial_value, used once at init)
        for key, value in vars(module).items():
            if key in ("_parameters", "_buffers", "_modules"):
                continue
            if _tensors(value, []) and not isinstance(value, torch.nn.Module):
                names.append(f"{prefix}.{key}" if prefix else key)
    return names


def _attribute_reason(names: list[str]) -> str:
    listed = ", ".join(repr(n) for n in names)
    attr = names[0].rsplit(".", 1)[-1]
    return (
        f"device: the kernel keeps tensors as plain attributes ({listed}), not as "
        "parameters or buffers; kernel.to(device) moves only those, so in a GPU run they "
        f"stay on the CPU. Register each in __init__: self.register_buffer({attr!r}, ...) "
        "(or a torch.nn.Parameter for one the fit tunes), or create it in forward on the "
        "inputs' device"
    )


def _device_reason(label: str, err: BaseException | None = None) -> str:
    what = f"raised {_describe(err)}" if err is not None else "returned a tensor on another device"
    return (
        f"device: {label} {what}; in a GPU run a tensor created without device= is on "
        "the CPU, not on the inputs' device. Create them on the inputs' device: "
        "torch.eye(n, device=x1.device, dtype=x1.dtype), x1.new_ones(...), "
        "torch.zeros_like(x1), or move them there: t.to(x1)"
    )


def _is_device_mismatch(err: BaseException) -> bool:
    msg = str(err).lower()
    return any(text in msg for text in _DEVICE_MISMATCH)


def _smooth_function(x: torch.Tensor) -> torch.Tensor:
    """A smooth test function on [0, 1]^D that depends on every coordinate."""
    d = x.size(-1)
    return (
        torch.sin(2.0 * math.pi * x[..., 0])
        + torch.sin(3.0 * x).mean(-1)
        + ((x - 0.5) ** 2).sum(-1) / d
    ).unsqueeze(-1)


@contextmanager
def _phase(name: str, timings: dict[str, float], stage: str | None = None) -> Iterator[None]:
    """Time a phase; turn unexpected exceptions into a failure of ``stage``."""
    start = time.perf_counter()
    try:
        yield
    except (_Failure, CheckTimeout):
        raise
    except Exception as err:  # noqa: BLE001 - the kernel is arbitrary code
        stage = stage or name
        if _is_memory_error(err):
            raise _Failure(
                "error", f"memory: {name} check ran out of memory ({_describe(err)})"
            ) from err
        raise _Failure(stage, f"{stage}: kernel raised {_describe(err)}") from err
    finally:
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - start


def check_kernel(
    factory: Callable[[int], gpytorch.kernels.Kernel],
    dim: int,
    options: ValidationOptions | None = None,
    **overrides: Any,
) -> ValidationResult:
    """Run the validation checks on the kernel ``factory(dim)`` in this process.

    Args:
        factory: Builds a fresh kernel for input dimension ``dim``, e.g.
            ``lambda d: MyKernel(ard_num_dims=d)``. Called twice (checks and fit).
        dim: Input dimension D.
        options: Check settings (defaults: :class:`ValidationOptions`).
        **overrides: Fields of :class:`ValidationOptions` to override.

    Returns:
        The :class:`ValidationResult`; never raises for a bad kernel.

    Example:
        >>> from gpytorch.kernels import MaternKernel
        >>> check_kernel(lambda d: MaternKernel(ard_num_dims=d), 5, check_fit=False).ok
        True
    """
    opts = options or ValidationOptions()
    if overrides:
        opts = opts.updated(**overrides)
    timings: dict[str, float] = {}
    phase = "load"
    try:
        with (
            gpytorch.settings.cholesky_max_tries(0),
            gpytorch.settings.lazily_evaluate_kernels(False),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")
            kernel = _build(factory, dim, timings, opts.device)
            phase = "checks"
            _run_checks(kernel, dim, opts, timings)
            if opts.check_fit:
                phase = "fit"
                _check_fit(factory, dim, opts, timings)
    except _Failure as failure:
        return ValidationResult(False, failure.reason, failure.stage, timings)
    except CheckTimeout:
        return ValidationResult(
            False, f"timeout: time limit reached during the {phase} phase", "timeout", timings
        )
    except Exception as err:  # noqa: BLE001 - never raise into the caller
        # outside the checks' phases (which take anything the kernel raises for its
        # failure): the kernel's own code, else a bug (raised here in strict mode)
        stage = rejection_stage(err, "error", "check_kernel")
        return ValidationResult(False, f"error: {_describe(err)}", stage, timings)
    return ValidationResult(True, None, None, timings)


def _build(
    factory: Callable[[int], gpytorch.kernels.Kernel],
    dim: int,
    timings: dict[str, float],
    device: str = "cpu",
) -> gpytorch.kernels.Kernel:
    with _phase("load", timings):
        kernel = factory(dim)
        if not isinstance(kernel, gpytorch.kernels.Kernel):
            raise _Failure(
                "load", f"load: factory returned {type(kernel).__name__}, not a gpytorch Kernel"
            )
        kernel = kernel.to(device=device, dtype=torch.float64)
    return kernel


def _run_checks(
    kernel: gpytorch.kernels.Kernel, dim: int, opts: ValidationOptions, timings: dict[str, float]
) -> None:
    n = opts.n if dim < opts.high_dim else min(opts.n, opts.n_high_dim)
    m = max(2, n // 2 + 1)
    gen = torch.Generator().manual_seed(opts.seed)

    def inputs(*shape: int) -> torch.Tensor:
        return _inputs(shape, gen).to(opts.device)

    x = inputs(n, dim)
    cases: list[tuple[str, torch.Tensor, torch.Tensor]] = [
        (f"({n},D)x({n},D)", x, x),
        ("(5,D)x(1,D)", inputs(5, dim), inputs(1, dim)),
        ("(3,D)x(7,D)", inputs(3, dim), inputs(7, dim)),
        ("(1,4,D)x(1,3,D)", inputs(1, 4, dim), inputs(1, 3, dim)),
        (f"(2,{n},D)x(2,{m},D)", inputs(2, n, dim), inputs(2, m, dim)),
    ]
    plain = _plain_tensor_attributes(kernel)  # as built: before forward fills any cache
    kernel.eval()
    outputs: list[tuple[str, torch.Tensor]] = []
    with torch.no_grad(), _phase("shape", timings):
        for label, x1, x2 in cases:
            try:
                out = _dense(kernel.forward(x1, x2))
            except Exception as err:  # noqa: BLE001
                if _is_memory_error(err):
                    raise
                if _is_device_mismatch(err):  # on a GPU: what the probe below finds on a CPU
                    raise _Failure("device", _device_reason(label, err)) from err
                raise _Failure("shape", f"shape: {label} raised {_describe(err)}") from err
            expected = torch.Size((*x1.shape[:-2], x1.size(-2), x2.size(-2)))
            if out.shape != expected:
                raise _Failure(
                    "shape", f"shape: {label} gave {out.shape}, expected {tuple(expected)}"
                )
            outputs.append((label, out))
    with torch.no_grad(), _phase("device", timings):
        if plain:
            raise _Failure("device", _attribute_reason(plain))
        for label, x1, x2 in cases + [("diag=True", x, x)]:
            try:
                with _DevicelessTensorsOnHost(x1.device):
                    out = _dense(kernel.forward(x1, x2, diag=label == "diag=True"))
            except Exception as err:  # noqa: BLE001 - it ran without the probe
                if _is_memory_error(err):
                    raise
                raise _Failure("device", _device_reason(label, err)) from err
            if out.device != x1.device or (_on_host(out) and out.dim() > 0):
                raise _Failure("device", _device_reason(label))

    full = outputs[0][1]
    with torch.no_grad(), _phase("diag", timings):
        try:
            diag = _dense(kernel.forward(x, x, diag=True))
        except Exception as err:  # noqa: BLE001
            if _is_memory_error(err):
                raise
            raise _Failure("diag", f"diag: diag=True raised {_describe(err)}") from err
        if diag.shape != torch.Size((n,)):
            raise _Failure(
                "diag", f"diag: diag=True on ({n},D)x({n},D) gave {diag.shape}, expected ({n},)"
            )
        ref = full.diagonal(dim1=-2, dim2=-1)
        if not torch.allclose(diag, ref, rtol=opts.diag_rtol, atol=opts.diag_atol, equal_nan=True):
            gap = (diag - ref).abs().nan_to_num(nan=float("inf")).max().item()
            raise _Failure(
                "diag",
                f"diag: diag=True differs from the diagonal of the full matrix "
                f"(max abs difference {gap:.3g})",
            )
        outputs.append(("diag=True", diag))

    with _phase("finite", timings):
        for label, out in outputs:
            if not torch.isfinite(out).all():
                bad = int((~torch.isfinite(out)).sum())
                raise _Failure("finite", f"finite: {label} has {bad} non-finite entries")
        asym = (full - full.transpose(-2, -1)).abs().max().item()
        scale = max(full.abs().max().item(), 1e-300)
        if asym > 1e-8 * scale + 1e-12:
            raise _Failure("psd", f"psd: K(X, X) is not symmetric (max |K - K^T| = {asym:.3g})")
        spread = (full.amax(dim=(-2, -1)) - full.amin(dim=(-2, -1))).max().item()
        if n > 1 and spread <= 1e-10 * scale:
            raise _Failure(
                "degenerate",
                "degenerate: every entry of K(X, X) is the same at distinct points "
                "(the kernel does not depend on its inputs)",
            )

    with _phase("gradient", timings):
        params = [(name, p) for name, p in kernel.named_parameters() if p.requires_grad]
        kernel.zero_grad(set_to_none=True)
        if params:
            total = _dense(kernel.forward(x, x)).sum()
            if not total.requires_grad:
                raise _Failure(
                    "gradient", "gradient: the Gram matrix does not depend on any parameter"
                )
            grads = torch.autograd.grad(total, [p for _, p in params], allow_unused=True)
            if any(grad is None for grad in grads):
                # a hyperparameter of a prior (the SAAS prior's global shrinkage) moves the
                # fit's objective through the prior only
                by_prior = _prior_gradients(kernel, [p for _, p in params])
                grads = tuple(
                    g if g is not None else b for g, b in zip(grads, by_prior, strict=True)
                )
            for (name, _), grad in zip(params, grads, strict=True):
                if grad is None:
                    raise _Failure("gradient", f"gradient: no gradient for parameter {name}")
                if not torch.isfinite(grad).all():
                    raise _Failure(
                        "gradient", f"gradient: non-finite gradient for parameter {name}"
                    )

    with torch.no_grad(), _phase("psd", timings):
        sym = 0.5 * (full + full.transpose(-2, -1))
        eye = torch.eye(n, dtype=sym.dtype, device=sym.device)
        _, info = torch.linalg.cholesky_ex(sym + opts.jitter * eye)
        if int(info) != 0:
            raise _Failure(
                "psd",
                f"psd: Cholesky of K(X, X) + {opts.jitter:g} I failed (info={int(info)})",
            )
        eig = torch.linalg.eigvalsh(sym)
        lo, hi = eig.min().item(), eig.max().item()
        if lo < -opts.eig_tol * max(abs(hi), 1e-300):
            raise _Failure(
                "psd", f"psd: K(X, X) has a negative eigenvalue {lo:.3g} (largest {hi:.3g})"
            )


def _check_fit(
    factory: Callable[[int], gpytorch.kernels.Kernel],
    dim: int,
    opts: ValidationOptions,
    timings: dict[str, float],
) -> None:
    from botorch.exceptions.errors import ModelFittingError
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.kernels import ScaleKernel
    from gpytorch.mlls import ExactMarginalLogLikelihood

    gen = torch.Generator().manual_seed(opts.seed + 1)
    train_x = torch.rand(opts.n, dim, generator=gen, dtype=torch.float64).to(opts.device)
    train_y = _smooth_function(train_x)
    test_x = torch.rand(5, dim, generator=gen, dtype=torch.float64).to(opts.device)
    start = time.perf_counter()
    with _phase("fit", timings):
        kernel = factory(dim)
        model = SingleTaskGP(train_x, train_y, covar_module=ScaleKernel(kernel))
        model = model.to(device=opts.device, dtype=torch.float64)
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                fit_gpytorch_mll(
                    mll,
                    optimizer_kwargs={
                        "timeout_sec": opts.fit_timeout,
                        "options": {"maxiter": opts.fit_maxiter},
                    },
                    max_attempts=1,
                    warning_handler=lambda w: True,
                )
            except ModelFittingError as err:
                cause = err.__context__ or err.__cause__
                detail = f" ({_describe(cause)})" if cause is not None else ""
                raise _Failure("fit", f"fit: fitting the GP failed{detail}") from err
        elapsed = time.perf_counter() - start
        timed_out = any("timed out" in str(w.message) for w in caught)
        if opts.fit_timeout is not None and (timed_out or elapsed > opts.fit_timeout):
            raise _Failure(
                "timeout",
                f"timeout: GP fit took {elapsed:.1f} s (limit {opts.fit_timeout:g} s)",
            )
        with torch.no_grad():
            post = model.posterior(test_x)
            mean, var = post.mean, post.variance
        if not (torch.isfinite(mean).all() and torch.isfinite(var).all()):
            raise _Failure("fit", "fit: posterior at 5 test points is not finite")
        if (var < -1e-8).any():
            raise _Failure("fit", "fit: posterior variance is negative")
