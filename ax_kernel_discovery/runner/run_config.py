"""Settings of one run (:class:`RunConfig`), their checks, and the problem they name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ax_kernel_discovery.baselines.cake import NoLLMError, check_cake_config
from ax_kernel_discovery.baselines.methods import UnknownMethodError, method_info
from ax_kernel_discovery.benchmarks import (
    PROBLEMS,
    MissingDependencyError,
    UnknownProblemError,
    get_problem,
)
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.devices import DeviceUnavailableError, check_device, resolve_device
from ax_kernel_discovery.library_format import (
    KernelLibraryError,
    get_kernel,
    validate_library_kernel,
)
from ax_kernel_discovery.llm.setup_check import LLMSetupError
from ax_kernel_discovery.proposers.from_config import check_llm_config

__all__ = [
    "KD_METHODS",
    "METRIC",
    "RunConfig",
    "UserInputError",
    "check_before_evaluations",
    "check_run_config",
    "make_problem",
    "make_run_config",
]


METRIC = "objective"
"""Name of the Ax metric that holds the problem's value."""


KD_METHODS: tuple[str, ...] = ("kd", "compositional", "cake")
"""Methods configured by a :class:`~ax_kernel_discovery.KernelDiscoveryConfig`."""


class UserInputError(ValueError):
    """Bad input from a user (unknown name, impossible budget, missing data...).

    The CLI prints its message and exits with status 2, without a traceback.
    """


class RunConfig(BaseModel):
    """Settings of one run (validated at construction; messages name the field).

    Args:
        problem: A benchmark name (:data:`ax_kernel_discovery.benchmarks.PROBLEMS`).
        method: A method name (:data:`ax_kernel_discovery.baselines.METHODS`).
        seed: Seed of the Sobol design, torch and numpy.
        budget: Total number of evaluations (Sobol points included).
        batch: Points per BO round (one joint q-batch).
        num_sobol: Sobol points before BO (paper: 20).
        out: Output folder.
        num_restarts, raw_samples, maxiter, sample_around_best: Acquisition optimizer.
        kd_config: Fields of :class:`~ax_kernel_discovery.KernelDiscoveryConfig` for
            ``kd`` and ``compositional``.
        method_options: Other options of the method (see ``get_method``).
        problem_options: Keyword arguments of the problem (e.g. ``data_dir``).
        device: torch device of the BO step.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    problem: str
    method: str
    seed: int = Field(0, ge=0)
    budget: int = Field(1000, ge=1)
    batch: int = Field(20, ge=1)
    num_sobol: int = Field(20, ge=1)
    out: str = "results"
    num_restarts: int = Field(4, ge=1)
    raw_samples: int = Field(512, ge=1)
    maxiter: int = Field(300, ge=1)
    sample_around_best: bool = True
    kd_config: dict[str, Any] | None = None
    method_options: dict[str, Any] = Field(default_factory=dict)
    problem_options: dict[str, Any] = Field(default_factory=dict)
    device: str | None = None

    @field_validator("problem", "method")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.strip().lower()

    @model_validator(mode="before")
    @classmethod
    def _kd_config_only_for_kd(cls, data: Any) -> Any:
        """``kd_config`` belongs to ``kd``/``compositional``; other methods record ``None``."""
        if isinstance(data, dict) and str(data.get("method", "")).strip().lower() not in KD_METHODS:
            data = {**data, "kd_config": None}
        return data

    @model_validator(mode="after")
    def _budget(self) -> RunConfig:
        if self.budget < self.num_sobol:
            raise ValueError(
                f"budget ({self.budget}) must be at least num_sobol ({self.num_sobol}): "
                "the Sobol design is part of the budget"
            )
        return self

    @property
    def method_label(self) -> str:
        """The method as results name it: ``fixed:<kernel name>`` for a library kernel."""
        kernel = self.method_options.get("kernel") if self.method == "fixed" else None
        if isinstance(kernel, dict) and kernel.get("name"):
            return f"fixed:{kernel['name']}"
        return self.method

    @property
    def run_id(self) -> str:
        method = re.sub(r"[^A-Za-z0-9_.+-]+", "-", self.method_label.replace(":", "-", 1))
        return f"{self.problem}__{method}__seed{self.seed}"

    @property
    def result_path(self) -> Path:
        return Path(self.out) / f"{self.run_id}.json"

    @property
    def checkpoint_path(self) -> Path:
        return Path(self.out) / "checkpoints" / f"{self.run_id}.json"

    def identity(self) -> dict[str, Any]:
        """What must not change between a run and its resumption (budget may grow)."""
        return self.model_dump(mode="json", exclude={"budget", "out", "problem_options", "device"})


def make_run_config(**kwargs: Any) -> RunConfig:
    """:class:`RunConfig` with a :class:`UserInputError` (one clear line) on bad input."""
    from pydantic import ValidationError

    try:
        cfg = RunConfig(**kwargs)
    except ValidationError as e:
        msgs = []
        for err in e.errors():
            loc = ".".join(str(x) for x in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            msgs.append(f"{loc}: {msg} (got {err.get('input')!r})" if loc else msg)
        raise UserInputError("; ".join(msgs)) from None
    check_run_config(cfg)
    return cfg


def check_run_config(cfg: RunConfig, build_problem: bool = False) -> None:
    """Raise :class:`UserInputError` for unknown names or a method's budget limit."""
    if cfg.problem not in PROBLEMS:
        raise UserInputError(
            f"unknown problem {cfg.problem!r}; valid names: {', '.join(sorted(PROBLEMS))}"
        )
    try:
        info = method_info(cfg.method)
    except UnknownMethodError as e:
        raise UserInputError(str(e)) from None
    if cfg.method == "cake":  # CAKE is an LLM method: say so before anything runs
        try:
            check_cake_config(KernelDiscoveryConfig.model_validate(cfg.kd_config or {}))
        except NoLLMError as e:
            raise UserInputError(str(e)) from None
        except ValueError:
            pass  # an invalid kd_config is reported below
    if cfg.method == "fixed":
        if "kernel" not in cfg.method_options:
            raise UserInputError(
                "method 'fixed' needs a kernel: --kernel kernels.json:NAME (a library file "
                "written by `ax-kernel-discovery export`)"
            )
        try:
            validate_library_kernel(get_kernel(cfg.method_options["kernel"]), where="--kernel")
        except KernelLibraryError as e:
            raise UserInputError(str(e)) from None
    if info.max_budget is not None and cfg.budget > info.max_budget:
        raise UserInputError(
            f"method {cfg.method!r} is allowed only for budget <= {info.max_budget} (got {cfg.budget}): "
            "its model fit is too expensive for longer runs"
        )
    if cfg.device is not None:
        try:
            resolve_device(cfg.device)
        except (ValueError, RuntimeError) as e:
            raise UserInputError(f"--device: {_as_cli_advice(e)}") from None
    if cfg.kd_config is not None:
        try:
            KernelDiscoveryConfig.model_validate(cfg.kd_config)
        except ValidationError as e:
            raise UserInputError(f"invalid kd_config: {_pydantic_messages(e)}") from None
    if cfg.method == "saasbo":
        from botorch.models import fully_bayesian

        if not getattr(fully_bayesian, "_HAS_JAX", False):
            raise UserInputError(
                "method 'saasbo' needs JAX and NumPyro: pip install 'botorch[fully_bayesian]'"
            )
    if build_problem:
        make_problem(cfg)


def _as_cli_advice(error: Exception) -> str:
    """A device error's message with its way out said as the CLI flag."""
    return str(error).replace("use device 'cpu'", "use --device cpu")


def _pydantic_messages(error: Any) -> str:
    """A pydantic ``ValidationError`` as one line: ``field: message`` per problem."""
    parts = []
    for err in error.errors():
        loc = ".".join(str(x) for x in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def check_before_evaluations(cfg: RunConfig) -> None:
    """What would otherwise fail after the Sobol evaluations: the device and the LLM.

    Called before a run evaluates anything (not for a finished run, which needs neither).

    Raises:
        UserInputError: The device is not usable here, or the LLM proposer of ``kd`` /
            ``cake`` cannot work (model string, key, server, xllamacpp, model file).
    """
    kd = None
    if cfg.method in KD_METHODS:
        kd = KernelDiscoveryConfig.model_validate(cfg.kd_config or {})
    try:
        if cfg.device is not None:
            check_device(cfg.device)
        elif kd is not None:
            kd.resolved_device()
    except DeviceUnavailableError as e:
        raise UserInputError(_as_cli_advice(e)) from None
    if kd is not None and (cfg.method == "cake" or kd.proposer in ("llm", "direct")):
        try:
            check_llm_config(kd)
        except LLMSetupError as e:
            raise UserInputError(str(e)) from None


def make_problem(cfg: RunConfig) -> Any:
    """Build the run's problem (:class:`UserInputError` for missing data/dependencies)."""
    try:
        return get_problem(cfg.problem, **cfg.problem_options)
    except (UnknownProblemError, FileNotFoundError, MissingDependencyError) as e:
        raise UserInputError(f"{cfg.problem}: {e}") from None
