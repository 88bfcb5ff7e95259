"""Settings of one run (:class:`RunConfig`), their checks, and the problem they name."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
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

from ax_kernel_discovery._upstream.botorch import has_jax
from ax_kernel_discovery.baselines.cake import NoLLMError, check_cake_config
from ax_kernel_discovery.baselines.methods import (
    UnknownMethodError,
    method_info,
    method_kd_config,
)
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
    validate_start_kernels,
)
from ax_kernel_discovery.llm.setup_check import LLMSetupError
from ax_kernel_discovery.proposers.from_config import check_llm_config

__all__ = [
    "KD_METHODS",
    "METRIC",
    "RunConfig",
    "UserInputError",
    "check_before_evaluations",
    "check_out_folder",
    "check_run_config",
    "identity_of_result",
    "identity_of_settings",
    "make_problem",
    "make_run_config",
    "setting_differences",
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
    def bo_rounds(self) -> int:
        """BO rounds of the run: the budget after the Sobol design, ``batch`` points each."""
        return -(-(self.budget - self.num_sobol) // self.batch)

    def unused_discovery_note(self) -> str | None:
        """Why a kernel-discovery run would never use a discovered kernel (``None``: it
        will): no BO round, or only guard rounds (``guard_rounds``: Ax's default model)."""
        kd = self.resolved_kd_config()
        if kd is None:
            return None
        guard = int(kd.get("guard_rounds", 0))
        if self.bo_rounds > guard:
            return None
        need = self.num_sobol + guard * self.batch + 1
        if self.bo_rounds == 0:
            what = "no BO round (budget = num_sobol)"
            way = f"raise --budget to at least {need}"
        else:
            rounds = "the only BO round is a" if self.bo_rounds == 1 else "every BO round is a"
            what = (
                f"{rounds} guard round (guard_rounds="
                f"{guard}: Ax's default model chooses the points)"
            )
            way = f"raise --budget to at least {need}, or set guard_rounds=0 in --kd-config"
        return f"{what}, so no discovered kernel will be used ({way})"

    @property
    def result_path(self) -> Path:
        return Path(self.out) / f"{self.run_id}.json"

    @property
    def checkpoint_path(self) -> Path:
        return Path(self.out) / "checkpoints" / f"{self.run_id}.json"

    def resolved_kd_config(self) -> dict[str, Any] | None:
        """The :class:`~ax_kernel_discovery.KernelDiscoveryConfig` the run's surrogate runs
        with, as JSON (``None`` for a method without one): ``kd_config`` over the method's
        defaults, seeded with the run's seed, then the settings the method fixes.

        Raises:
            pydantic.ValidationError: A bad field of ``kd_config``.
        """
        config = method_kd_config(self.method, self.kd_config, self.seed)
        return None if config is None else config.model_dump(mode="json")

    def identity(self) -> dict[str, Any]:
        """Every setting that changes the run's result, as JSON: the method, its resolved
        kernel-discovery config, the seed, batch, Sobol count, acquisition settings, the
        method's and the problem's options.

        Left out: ``budget`` (a finished run may continue to a larger one), ``out`` and
        the device (where the run runs, not what it computes; so are kd's
        :data:`EXECUTION_FIELDS`).
        """
        identity = self.model_dump(mode="json", exclude={"budget", "out", "device", "kd_config"})
        identity["kd_config"] = _comparable_kd_config(self.method, self.resolved_kd_config())
        return identity


#: Fields of a :class:`~ax_kernel_discovery.KernelDiscoveryConfig` that change where and
#: how fast a run computes, not what: left out of a run's identity.
EXECUTION_FIELDS: frozenset[str] = frozenset(
    {"device", "fit_workers", "background_fits", "history_limit", "llm_max_workers"}
)

#: Fields read from the environment by default that only an LLM proposer uses.
_LLM_ENV_FIELDS = ("llm_model", "llm_api_base")


def _comparable_kd_config(method: str, config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A resolved kd config without the fields that do not change a run's result."""
    if config is None:
        return None
    out = {k: v for k, v in config.items() if k not in EXECUTION_FIELDS}
    # "auto" settings as the config resolves them: tie_break="auto" is "cost" under the
    # prequential criterion, so a run that named "cost" is the same run
    known = {k: v for k, v in config.items() if k in KernelDiscoveryConfig.model_fields}
    resolved = KernelDiscoveryConfig.model_construct(**known)
    if "tie_break" in out:
        out["tie_break"] = resolved.resolved_tie_break()
    if "proposal_format" in out:
        out["proposal_format"] = resolved.resolved_proposal_format()
    if method != "cake" and out.get("proposer") not in ("llm", "direct"):
        for key in _LLM_ENV_FIELDS:
            out.pop(key, None)
    return out


def identity_of_settings(config: Mapping[str, Any], resolved: Any = None) -> dict[str, Any]:
    """The identity (see :meth:`RunConfig.identity`) of a run from its recorded
    ``RunConfig`` fields, of this or an earlier version: the kd config is ``resolved``
    when the record has it, else resolved now from the recorded ``kd_config``."""
    fields = RunConfig.model_fields
    identity = {
        k: v
        for k, v in config.items()
        if k in fields and k not in ("budget", "out", "device", "kd_config")
    }
    method = str(config.get("method", "")).strip().lower()
    if method in KD_METHODS and not isinstance(resolved, Mapping):
        raw = config.get("kd_config")
        try:
            found = method_kd_config(method, raw, int(config.get("seed", 0) or 0))
            resolved = found.model_dump(mode="json") if found is not None else None
        except (ValueError, TypeError):  # settings of another version: compared as they are
            resolved = raw if isinstance(raw, Mapping) else None
    identity["kd_config"] = _comparable_kd_config(method, resolved)
    return identity


def identity_of_result(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The identity (see :meth:`RunConfig.identity`) of the run a result JSON records,
    ``None`` when it records no settings (a file of an early version)."""
    config = result.get("config")
    if not isinstance(config, Mapping):
        return None
    return identity_of_settings(config, result.get("resolved_kd_config"))


def setting_differences(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """``"name: stored -> current"`` for each setting that differs, kd config fields as
    ``kd_config.<field>``. A setting one side does not record (a field added or removed
    since) is not compared."""

    def flat(identity: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in identity.items() if k != "kd_config"}
        kd = identity.get("kd_config")
        if isinstance(kd, Mapping):
            out.update({f"kd_config.{k}": v for k, v in kd.items()})
        elif "kd_config" in identity:
            out["kd_config"] = kd
        return out

    def text(value: Any) -> str:
        return json.dumps(value, sort_keys=True, default=str)

    a, b = flat(stored), flat(current)
    return [
        f"{k}: {text(a[k])} -> {text(b[k])}"
        for k in sorted(a.keys() & b.keys())
        if text(a[k]) != text(b[k])
    ]


def check_out_folder(cfg: RunConfig) -> None:
    """Refuse a run whose result file in ``cfg.out`` was made with other settings.

    Result files are named by problem, method and seed only, so a rerun with other
    settings would otherwise be skipped as finished, or continue the other run. A result
    with the same settings and a smaller budget may continue; one that records no
    settings (an early version's) is taken as it is.

    Raises:
        UserInputError: The settings differ; the message names them and the way out.
    """
    result = load_result_file(cfg.result_path)
    stored = identity_of_result(result) if result is not None else None
    if stored is None:
        return
    differ = setting_differences(stored, cfg.identity())
    if differ:
        raise UserInputError(
            f"{cfg.result_path} holds a run of {cfg.run_id} with other settings "
            f"({'; '.join(differ)}; as: file -> now). Result files are named by problem, "
            "method and seed only: use another --out folder for these settings, or delete "
            f"{cfg.result_path} and {cfg.checkpoint_path} to replace that run"
        )


def load_result_file(path: Path) -> dict[str, Any] | None:
    """The JSON object at ``path``, ``None`` when it is missing or not one."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


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
    """Raise :class:`UserInputError` for unknown names, a method's budget limit, bad
    settings, or a result in ``cfg.out`` made with other settings
    (:func:`check_out_folder`)."""
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
            kd_config = KernelDiscoveryConfig.model_validate(cfg.kd_config)
        except ValidationError as e:
            raise UserInputError(f"invalid kd_config: {_pydantic_messages(e)}") from None
        try:  # as the run's surrogate will, before anything runs
            validate_start_kernels(kd_config)
        except KernelLibraryError as e:
            raise UserInputError(f"invalid kd_config: {e}") from None
    if cfg.method == "saasbo":
        if not has_jax():
            raise UserInputError(
                "method 'saasbo' needs JAX and NumPyro: pip install 'botorch[fully_bayesian]'"
            )
    check_out_folder(cfg)
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
