"""Benchmark runs: one problem x one method x one seed, driven by Ax, resumable.

:func:`run_experiment` builds an Ax :class:`~ax.api.client.Client` for a
:class:`~ax_kernel_discovery.benchmarks.BenchmarkProblem` (one float
``RangeParameterConfig`` per input, the objective in the problem's direction), sets the
method's ``GenerationStrategy`` (:func:`ax_kernel_discovery.baselines.get_method`) and
runs rounds until ``budget`` evaluations are done:

* round 0 is the Sobol design (``num_sobol`` points), every later round asks the
  strategy for one *joint* batch of ``batch`` points (``GenerationStrategy.gen(n=batch)``,
  as in the paper; each point becomes one Ax trial);
* the oracle evaluates the batch, the values are completed in Ax;
* the Ax client is checkpointed (``Client.save_to_json_file``) and the run's result JSON
  is rewritten after every round, so a killed run continues from its last round when
  started again, and a finished run (``status == "complete"``) is skipped.

The result JSON (``<out>/<problem>__<method>__seed<k>.json``) has the value and best-so-far
per evaluation, the chosen kernel per round, the time per phase (GP fit and selection,
proposal/LLM, validation, acquisition optimization, oracle evaluation, overhead), the
failures, the settings, package versions, device and torch threads.

:mod:`ax_kernel_discovery.sweep` runs many of them in parallel.

Example:
    >>> result = run_experiment("branin100", "rbf", seed=0, budget=30, batch=5, out="results/")  # doctest: +SKIP
    >>> result["best_value"]  # doctest: +SKIP
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import math
import os
import platform
import re
import time
import warnings
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ax_kernel_discovery.diagnostics import (
    boundary_hit_ratio,
    next_batch_scores,
    path_length,
    to_unit_cube,
)

logger = logging.getLogger(__name__)

METRIC = "objective"
"""Name of the Ax metric that holds the problem's value."""

RESULT_VERSION = 1

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
    from ax_kernel_discovery.baselines import UnknownMethodError, method_info
    from ax_kernel_discovery.benchmarks import PROBLEMS

    if cfg.problem not in PROBLEMS:
        raise UserInputError(
            f"unknown problem {cfg.problem!r}; valid names: {', '.join(sorted(PROBLEMS))}"
        )
    try:
        info = method_info(cfg.method)
    except UnknownMethodError as e:
        raise UserInputError(str(e)) from None
    if cfg.method == "cake":  # CAKE is an LLM method: say so before anything runs
        from ax_kernel_discovery.cake import NoLLMError, check_cake_config
        from ax_kernel_discovery.config import KernelDiscoveryConfig

        try:
            check_cake_config(KernelDiscoveryConfig.model_validate(cfg.kd_config or {}))
        except NoLLMError as e:
            raise UserInputError(str(e)) from None
        except ValueError:
            pass  # an invalid kd_config is reported below
    if cfg.method == "fixed":
        from ax_kernel_discovery.library import KernelLibraryError, get_kernel

        if "kernel" not in cfg.method_options:
            raise UserInputError(
                "method 'fixed' needs a kernel: --kernel kernels.json:NAME (a library file "
                "written by `ax-kernel-discovery export`)"
            )
        try:
            get_kernel(cfg.method_options["kernel"])
        except KernelLibraryError as e:
            raise UserInputError(str(e)) from None
    if info.max_budget is not None and cfg.budget > info.max_budget:
        raise UserInputError(
            f"method {cfg.method!r} is allowed only for budget <= {info.max_budget} (got {cfg.budget}): "
            "its model fit is too expensive for longer runs"
        )
    if cfg.kd_config is not None:
        from pydantic import ValidationError

        from ax_kernel_discovery.config import KernelDiscoveryConfig

        try:
            KernelDiscoveryConfig.model_validate(cfg.kd_config)
        except ValidationError as e:
            raise UserInputError(f"invalid kd_config: {e}") from None
    if cfg.method == "saasbo":
        from botorch.models import fully_bayesian

        if not getattr(fully_bayesian, "_HAS_JAX", False):
            raise UserInputError(
                "method 'saasbo' needs JAX and NumPyro: pip install 'botorch[fully_bayesian]'"
            )
    if build_problem:
        make_problem(cfg)


def make_problem(cfg: RunConfig) -> Any:
    """Build the run's problem (:class:`UserInputError` for missing data/dependencies)."""
    from ax_kernel_discovery.benchmarks import (
        MissingDependencyError,
        UnknownProblemError,
        get_problem,
    )

    try:
        return get_problem(cfg.problem, **cfg.problem_options)
    except (UnknownProblemError, FileNotFoundError, MissingDependencyError) as e:
        raise UserInputError(f"{cfg.problem}: {e}") from None


# --------------------------------------------------------------------------- environment


def package_versions() -> dict[str, str | None]:
    """Versions of the packages that decide the numbers."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in (
        "ax-platform",
        "botorch",
        "gpytorch",
        "torch",
        "ax-kernel-discovery",
        "numpy",
        "scipy",
        "scikit-learn",
    ):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def device_info(device: str = "cpu") -> dict[str, Any]:
    """Where the run happened: torch device, CPU, cores, threads."""
    import torch

    info: dict[str, Any] = {
        "torch_device": device,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "cuda_available": torch.cuda.is_available(),
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        info["cuda_device"] = torch.cuda.get_device_name(torch.device(device))
    return info


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _atomic_write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, default=_json_default)
    os.replace(tmp, path)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    return repr(obj)


def load_result(path: str | Path) -> dict[str, Any] | None:
    """A result JSON, or ``None`` when it is missing or unreadable."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return None


# --------------------------------------------------------------------------- Ax plumbing


def _new_client(cfg: RunConfig, problem: Any) -> Any:
    from ax.api import Client
    from ax.api.configs import RangeParameterConfig

    from ax_kernel_discovery.baselines import get_method

    width = len(str(problem.dim - 1))
    client = Client()
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(
                name=f"x{i:0{width}d}", parameter_type="float", bounds=(float(lo), float(hi))
            )
            for i, (lo, hi) in enumerate(zip(problem.lower, problem.upper, strict=True))
        ],
        name=cfg.run_id,
        description=json.dumps(cfg.identity(), sort_keys=True, default=str),
    )
    client.configure_optimization(f"-{METRIC}" if problem.minimize else METRIC)
    client.set_generation_strategy(get_method(cfg.method, **method_options(cfg)))
    return client


def method_options(cfg: RunConfig) -> dict[str, Any]:
    """Keyword arguments of :func:`~ax_kernel_discovery.baselines.get_method` for ``cfg``."""
    opts: dict[str, Any] = {
        "num_sobol": cfg.num_sobol,
        "seed": cfg.seed,
        "num_restarts": cfg.num_restarts,
        "raw_samples": cfg.raw_samples,
        "maxiter": cfg.maxiter,
        "sample_around_best": cfg.sample_around_best,
    }
    if cfg.device is not None:
        opts["device"] = cfg.device
    if cfg.method in KD_METHODS and cfg.kd_config is not None:
        from ax_kernel_discovery.config import KernelDiscoveryConfig

        defaults: dict[str, Any] = {"seed": cfg.seed}
        if cfg.method == "compositional":
            from ax_kernel_discovery.baselines import COMPOSITIONAL_DEFAULTS

            defaults.update(COMPOSITIONAL_DEFAULTS)
        opts["config"] = KernelDiscoveryConfig.model_validate({**defaults, **cfg.kd_config})
    opts.update(cfg.method_options)
    return opts


def _load_client(cfg: RunConfig) -> Any | None:
    from ax.api import Client

    import ax_kernel_discovery.baselines  # noqa: F401 - registers the storage of the baselines

    path = cfg.checkpoint_path
    if not path.is_file():
        return None
    client = Client.load_from_json_file(str(path))
    stored = client._experiment.description
    try:
        stored_identity = json.loads(stored) if stored else None
    except json.JSONDecodeError:
        stored_identity = None
    if stored_identity is not None and stored_identity != json.loads(
        json.dumps(cfg.identity(), sort_keys=True, default=str)
    ):
        diff = sorted(
            k
            for k in set(stored_identity) | set(cfg.identity())
            if stored_identity.get(k) != cfg.identity().get(k)
        )
        raise UserInputError(
            f"checkpoint {path} was made with other settings ({', '.join(diff)} differ); "
            "use another --out folder or delete the checkpoint to start over"
        )
    return client


def _split_generator_run(gr: Any) -> list[Any]:
    """One single-arm ``GeneratorRun`` per arm of a joint batch (node name kept).

    Ax counts a node's trials by the node name on each trial's generator run, so the
    split keeps it; the full run (with the model state and the search space) stays in
    the strategy's own list. The parts leave out the search space, which would make the
    checkpoint grow by ~D x 240 bytes per trial.
    """
    from ax.core.generator_run import GeneratorRun

    parts = []
    cand_meta = gr.candidate_metadata_by_arm_signature or {}
    for i, arm in enumerate(gr.arms):
        parts.append(
            GeneratorRun(
                arms=[arm],
                optimization_config=gr.optimization_config,
                type=gr.generator_run_type,
                fit_time=gr.fit_time if i == 0 else 0.0,
                gen_time=gr.gen_time if i == 0 else 0.0,
                generator_key=gr._generator_key,
                gen_metadata={
                    k: v for k, v in (gr.gen_metadata or {}).items() if k == "models_used"
                },
                candidate_metadata_by_arm_signature=(
                    {arm.signature: cand_meta[arm.signature]}
                    if arm.signature in cand_meta
                    else None
                ),
                generation_node_name=gr._generation_node_name,
            )
        )
    return parts


def _trial_values(client: Any) -> tuple[list[float | None], list[str]]:
    """Objective value per trial index (``None`` when failed) and the trials' statuses."""
    experiment = client._experiment
    n = len(experiment.trials)
    values: list[float | None] = [None] * n
    df = experiment.lookup_data().df
    if len(df):
        df = df[df["metric_name"] == METRIC]
        for idx, mean in zip(df["trial_index"].tolist(), df["mean"].tolist(), strict=True):
            if 0 <= int(idx) < n and math.isfinite(float(mean)):
                values[int(idx)] = float(mean)
    statuses = [experiment.trials[i].status.name.lower() for i in range(n)]
    for i, status in enumerate(statuses):
        if status != "completed":
            values[i] = None
    return values, statuses


def best_so_far(values: Sequence[float | None], minimize: bool) -> list[float | None]:
    """Running best in the problem's direction (``None`` until a value exists)."""
    out: list[float | None] = []
    best: float | None = None
    for v in values:
        if v is not None and (best is None or (v < best if minimize else v > best)):
            best = v
        out.append(best)
    return out


def _chosen_from_metadata(gr: Any) -> str | None:
    used = (gr.gen_metadata or {}).get("models_used")
    if not used:
        return None
    first = used[0] if isinstance(used, list) else used
    name = next(iter(first.values())) if isinstance(first, dict) and first else first
    name = str(name)
    if name.startswith("ModelConfig("):
        return "Ax default"
    return name


# --------------------------------------------------------------------------- one run


PHASES: tuple[str, ...] = ("fit", "propose", "validate", "acquisition", "evaluate", "overhead")
"""Timed phases of a round: GP fit and kernel selection, proposal (LLM or operator),
validation of proposals, acquisition optimization, oracle evaluation, and the rest
(Ax bookkeeping, checkpointing)."""


def _seed_everything(seed: int) -> None:
    import torch

    torch.manual_seed(seed)
    np.random.seed(seed % (2**32))


def run_experiment(
    problem: str | RunConfig,
    method: str | None = None,
    *,
    progress: bool | Any = False,
    on_round: Callable[[dict[str, Any]], None] | None = None,
    **settings: Any,
) -> dict[str, Any]:
    """Run (or resume, or skip) one problem x method x seed; returns the result dict.

    Args:
        problem: Problem name, or a complete :class:`RunConfig`.
        method: Method name (when ``problem`` is a name).
        progress: Show a progress bar of the rounds (True), or a ``rich.progress.Progress``
            to add the task to.
        on_round: Called with each round's record after its checkpoint is written
            (e.g. for live monitoring; an exception raised there stops the run).
        **settings: Fields of :class:`RunConfig` (``seed``, ``budget``, ``batch``,
            ``num_sobol``, ``out``, ``num_restarts``, ``raw_samples``, ``maxiter``,
            ``kd_config``...).

    Returns:
        The result (also written to ``<out>/<problem>__<method>__seed<k>.json``).

    Raises:
        UserInputError: Unknown problem/method, ``budget < num_sobol``, missing data,
            or a checkpoint made with different settings.
    """
    import torch
    from ax.utils.common.logger import set_ax_logger_levels

    cfg = (
        problem
        if isinstance(problem, RunConfig)
        else make_run_config(problem=problem, method=method, **settings)
    )
    check_run_config(cfg)
    torch.set_num_threads(1)
    set_ax_logger_levels(logging.WARNING)

    previous = load_result(cfg.result_path)
    if (
        previous
        and previous.get("status") == "complete"
        and previous.get("n_evaluations", 0) >= cfg.budget
    ):
        previous["skipped"] = True
        return previous

    prob = make_problem(cfg)
    started = time.perf_counter()
    client = _load_client(cfg)
    resumed = client is not None
    if client is None:
        client = _new_client(cfg, prob)
    gs = client._generation_strategy
    from ax_kernel_discovery.baselines import surrogate_of

    surrogate = surrogate_of(gs)

    rounds: list[dict[str, Any]] = []
    sessions: list[dict[str, Any]] = []
    if resumed and previous:
        n_ckpt = len(client._experiment.trials)
        rounds = [
            r for r in previous.get("rounds", []) if max(r.get("trials", [-1]), default=-1) < n_ckpt
        ]
        sessions = list(previous.get("sessions", []))
        covered = {t for r in rounds for t in r.get("trials", [])}
        lost = [t for t in range(n_ckpt) if t not in covered]
        if lost:  # the result lagged the checkpoint by a round: keep what Ax knows
            rounds.append(
                {
                    "round": len(rounds),
                    "trials": lost,
                    "q": len(lost),
                    "recovered": True,
                    "timings": {},
                }
            )
    session = {"started_at": _now(), "n_start": len(client._experiment.trials), "resumed": resumed}
    sessions.append(session)

    result: dict[str, Any] = {}

    def write(status: str) -> dict[str, Any]:
        values, statuses = _trial_values(client)
        for r in rounds:  # full precision (Ax's JSON keeps 10 digits of the data it stores)
            for t, v in zip(r.get("trials", []), r.get("values") or [], strict=False):
                if t < len(values) and v is not None and statuses[t] == "completed":
                    values[t] = float(v)
        best = best_so_far(values, prob.minimize)
        failures = [f for r in rounds for f in r.get("failures", [])]
        totals = {
            p: float(sum(r.get("timings", {}).get(p, 0.0) or 0.0 for r in rounds)) for p in PHASES
        }
        bo_rounds = [r for r in rounds if r.get("kind") == "bo"]
        per_round = {
            p: (
                float(np.mean([r["timings"].get(p, 0.0) for r in bo_rounds])) if bo_rounds else None
            )
            for p in PHASES
        }
        best_idx = None
        finite = [(v, i) for i, v in enumerate(values) if v is not None]
        if finite:
            best_idx = (min if prob.minimize else max)(finite)[1]
        result.clear()
        result.update(
            {
                "format": RESULT_VERSION,
                "status": status,
                "problem": cfg.problem,
                "problem_label": prob.name,
                "problem_description": prob.description,
                "dim": prob.dim,
                "direction": "minimize" if prob.minimize else "maximize",
                "method": cfg.method_label,
                "seed": cfg.seed,
                "budget": cfg.budget,
                "batch": cfg.batch,
                "num_sobol": cfg.num_sobol,
                "config": cfg.model_dump(mode="json"),
                "n_evaluations": len(values),
                "values": values,
                "trial_status": statuses,
                "best_so_far": best,
                "best_value": best[-1] if best else None,
                "best_trial": best_idx,
                "best_parameters": (
                    list(client._experiment.trials[best_idx].arm.parameters.values())
                    if best_idx is not None
                    else None
                ),
                "chosen_kernels": [
                    {
                        "round": r["round"],
                        "chosen": r.get("chosen"),
                        "formula": r.get("chosen_formula"),
                        "score": r.get("chosen_score"),
                    }
                    for r in rounds
                    if r.get("kind") == "bo"
                ],
                "rounds": rounds,
                "failures": failures,
                "timings": {
                    "total": totals,
                    "mean_per_bo_round": per_round,
                    "bo_rounds": len(bo_rounds),
                },
                "wall_time": float(sum(s.get("wall", 0.0) for s in sessions)),
                "sessions": sessions,
                "versions": package_versions(),
                "device": device_info(_resolved_device(cfg)),
                "torch_threads": torch.get_num_threads(),
                "result_path": str(cfg.result_path),
                "checkpoint_path": str(cfg.checkpoint_path),
                "updated_at": _now(),
            }
        )
        _atomic_write_json(cfg.result_path, result)
        return result

    bar, task, own_bar = _round_bar(progress, cfg)
    try:
        n_done = len(client._experiment.trials)
        if bar is not None:
            bar.update(task, completed=n_done)
        while n_done < cfg.budget:
            record = _one_round(cfg, client, gs, surrogate, prob, n_done, len(rounds))
            rounds.append(record)
            t0 = time.perf_counter()
            client.save_to_json_file(str(_tmp_checkpoint(cfg)))
            os.replace(_tmp_checkpoint(cfg), cfg.checkpoint_path)
            n_done = len(client._experiment.trials)
            session["n_end"] = n_done
            session["wall"] = time.perf_counter() - started
            record["timings"]["overhead"] += time.perf_counter() - t0
            record["timings"]["round_wall"] += time.perf_counter() - t0
            write("running")
            if bar is not None:
                bar.update(task, completed=n_done, description=_bar_text(cfg, record))
            if on_round is not None:
                on_round(record)
        session["n_end"] = len(client._experiment.trials)
        session["wall"] = time.perf_counter() - started
        session["finished_at"] = _now()
        return write("complete")
    finally:
        prob.close()
        if surrogate is not None and hasattr(surrogate, "close"):
            surrogate.close()  # stops a local LLM server the proposer started
        if own_bar and bar is not None:
            bar.stop()


def _resolved_device(cfg: RunConfig) -> str:
    """The torch device the BO step runs on (kernel discovery's ``auto`` resolved)."""
    if cfg.device is not None:
        return cfg.device
    if cfg.method in KD_METHODS:
        from ax_kernel_discovery.config import KernelDiscoveryConfig

        return KernelDiscoveryConfig.model_validate(cfg.kd_config or {}).resolved_device()
    return "cpu"


def _tmp_checkpoint(cfg: RunConfig) -> Path:
    path = cfg.checkpoint_path
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(path.name + ".tmp")


def _bar_text(cfg: RunConfig, record: dict[str, Any] | None = None) -> str:
    text = f"{cfg.run_id}"
    if record and record.get("chosen"):
        text += f" [{record['chosen'][:28]}]"
    return text


def _round_bar(progress: bool | Any, cfg: RunConfig) -> tuple[Any, Any, bool]:
    if progress is False or progress is None:
        return None, None, False
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    own = progress is True
    bar: Any = progress
    if own:
        bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
        )
        bar.start()
    task = bar.add_task(_bar_text(cfg), total=cfg.budget)
    return bar, task, own


def _one_round(
    cfg: RunConfig, client: Any, gs: Any, surrogate: Any, prob: Any, n_done: int, round_index: int
) -> dict[str, Any]:
    """Generate one joint batch, evaluate it, complete the trials; returns the round record."""
    experiment = client._experiment
    q = cfg.num_sobol - n_done if n_done < cfg.num_sobol else min(cfg.batch, cfg.budget - n_done)
    q = min(q, cfg.budget - n_done)
    _seed_everything(cfg.seed * 1_000_003 + n_done)
    history_before = getattr(surrogate, "round_index", None)
    t_round = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        grs = gs.gen(experiment=experiment, n=q)
        t_gen = time.perf_counter() - t0
    gr = grs[0][0]
    node = gr._generation_node_name
    is_bo = gr._generator_key not in (None, "Sobol")
    record: dict[str, Any] = {
        "round": round_index,
        "kind": "bo" if is_bo else "init",
        "node": node,
        "generator": gr._generator_key,
        "n_before": n_done,
        "q": len(gr.arms),
        "trials": [],
        "chosen": None,
        "chosen_formula": None,
        "chosen_score": None,
        "failures": [],
        "timings": dict.fromkeys(PHASES, 0.0),
    }
    fit_time = float(gr.fit_time or 0.0) if is_bo else 0.0
    kd_records = []
    if history_before is not None and is_bo:
        kd_records = [h for h in surrogate.history if h.round >= history_before]
    if kd_records:
        objective = [
            h for h in kd_records if surrogate.objective_weights.get(h.outcome)
        ] or kd_records
        main = objective[-1]
        record["chosen"], record["chosen_formula"], record["chosen_score"] = (
            main.chosen,
            main.chosen_formula,
            main.chosen_score,
        )
        record["population"] = list(main.population)
        record["accepted"] = list(main.accepted)
        record["kd_scores"] = dict(main.scores)
        record["population_diversity"] = main.population_diversity
        record["accepted_diversity"] = main.accepted_diversity
        for h in kd_records:
            for rej in h.rejected:
                record["failures"].append(
                    {
                        "round": round_index,
                        "kind": "rejection",
                        "name": rej.name,
                        "stage": rej.stage,
                        "reason": rej.reason[:300],
                    }
                )
        propose = sum(h.timings.get("propose", 0.0) for h in kd_records)
        validate = sum(h.timings.get("validate", 0.0) for h in kd_records)
        selection_total = sum(h.timings.get("total", 0.0) for h in kd_records)
        record["timings"]["propose"] = propose
        record["timings"]["validate"] = validate
        record["timings"]["fit"] = max(selection_total - propose - validate, 0.0)
        fit_time = max(fit_time, selection_total)
        record["llm_usage"] = {k: v for h in kd_records for k, v in h.proposer_usage.items()}
    elif is_bo:
        record["chosen"] = _chosen_from_metadata(gr)
        record["timings"]["fit"] = fit_time
    record["timings"]["acquisition"] = max(t_gen - fit_time, 0.0)
    record["warnings"] = _warning_lines(caught)

    train_values = _trial_values(client)[0] if kd_records else []
    previous_point = _trial_point(experiment.trials[n_done - 1]) if n_done > 0 else None
    trials = []
    for part in _split_generator_run(gr):
        trial = experiment.new_trial(generator_run=part)
        trial.mark_running(no_runner_required=True)
        trials.append(trial)
    record["trials"] = [t.index for t in trials]
    X = np.array([_trial_point(t) for t in trials])
    t0 = time.perf_counter()
    values = _evaluate(prob, X, record)
    record["timings"]["evaluate"] = time.perf_counter() - t0
    for trial, value in zip(trials, values, strict=True):
        if value is None:
            client.mark_trial_failed(trial.index, failed_reason="evaluation failed")
        else:
            client.complete_trial(trial.index, raw_data={METRIC: value})
    record["values"] = values
    _search_diagnostics(record, prob, X, previous_point)
    if kd_records:
        models = surrogate.fitted_models.get(kd_records[-1].outcome, {})
        record["next_batch"] = next_batch_scores(models, X, values, train_values)
    total = time.perf_counter() - t_round
    accounted = sum(record["timings"][p] for p in PHASES if p != "overhead")
    record["timings"]["overhead"] = max(total - accounted, 0.0)
    record["timings"]["round_wall"] = total
    return record


def _trial_point(trial: Any) -> np.ndarray:
    """A trial's parameters as a float vector, in the search space's order."""
    return np.array([float(v) for v in trial.arm.parameters.values()])


def _search_diagnostics(
    record: dict[str, Any], prob: Any, X: np.ndarray, previous: np.ndarray | None
) -> None:
    """The batch's boundary hit ratio and path-length increment (the paper's OTSD)."""
    lower, upper = np.asarray(prob.lower, dtype=float), np.asarray(prob.upper, dtype=float)
    U = to_unit_cube(X, lower, upper)
    record["boundary_hit"] = boundary_hit_ratio(U)
    prev = None if previous is None else to_unit_cube(previous, lower, upper)
    record["path_length"] = path_length(U, prev)


_IGNORED_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


def _warning_lines(caught: Sequence[warnings.WarningMessage], limit: int = 5) -> list[str]:
    """Distinct model/optimizer warnings of a round (deprecations and pandas noise left out)."""
    lines = []
    for w in caught:
        if issubclass(w.category, _IGNORED_WARNINGS) or "pandas" in w.category.__module__.lower():
            continue
        if "Pandas" in w.category.__name__:
            continue
        line = f"{w.category.__name__}: {str(w.message)[:160]}"
        if line not in lines:
            lines.append(line)
    return lines[:limit]


def _evaluate(prob: Any, X: np.ndarray, record: dict[str, Any]) -> list[float | None]:
    """Values of a batch; a point that fails (exception or non-finite) is ``None``."""
    try:
        values = [float(v) for v in prob.evaluate(X, n_workers=1)]
    except Exception:  # noqa: BLE001 - fall back to one point at a time to isolate failures
        values = []
        for i, x in enumerate(X):
            try:
                values.append(float(prob.evaluate_one(x)))
            except Exception as e:  # noqa: BLE001 - an oracle failure is recorded, not raised
                values.append(math.nan)
                record["failures"].append(
                    {
                        "round": record["round"],
                        "kind": "evaluation",
                        "trial": record["trials"][i],
                        "reason": f"{type(e).__name__}: {e}"[:300],
                    }
                )
    out: list[float | None] = []
    for i, v in enumerate(values):
        if math.isfinite(v):
            out.append(v)
        else:
            out.append(None)
            if not any(f.get("trial") == record["trials"][i] for f in record["failures"]):
                record["failures"].append(
                    {
                        "round": record["round"],
                        "kind": "evaluation",
                        "trial": record["trials"][i],
                        "reason": "non-finite value",
                    }
                )
    return out


__all__ = [
    "METRIC",
    "PHASES",
    "RunConfig",
    "UserInputError",
    "best_so_far",
    "check_run_config",
    "device_info",
    "load_result",
    "make_problem",
    "make_run_config",
    "method_options",
    "package_versions",
    "run_experiment",
]
