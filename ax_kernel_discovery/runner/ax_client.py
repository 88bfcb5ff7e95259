"""The Ax side of a run: the client, its checkpoint, trials and generator runs."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ax_kernel_discovery._upstream.ax import client_experiment, generation_node_name, generator_key
from ax_kernel_discovery.baselines.compositional import COMPOSITIONAL_DEFAULTS
from ax_kernel_discovery.baselines.methods import get_method
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.runner.run_config import (
    KD_METHODS,
    METRIC,
    RunConfig,
    UserInputError,
    identity_of_settings,
    setting_differences,
)

__all__ = [
    "chosen_from_metadata",
    "load_client",
    "method_options",
    "new_client",
    "restore_full_precision",
    "split_generator_run",
    "trial_values",
]


def new_client(cfg: RunConfig, problem: Any) -> Any:
    """A new Ax ``Client`` for the run: the problem's box, its objective, the method's strategy.

    The experiment's description holds the run's identity, which :func:`load_client`
    compares with the settings of a resumed run.
    """
    from ax.api import Client
    from ax.api.configs import RangeParameterConfig

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
        defaults: dict[str, Any] = {"seed": cfg.seed}
        if cfg.method == "compositional":
            defaults.update(COMPOSITIONAL_DEFAULTS)
        opts["config"] = KernelDiscoveryConfig.model_validate({**defaults, **cfg.kd_config})
    opts.update(cfg.method_options)
    return opts


def load_client(cfg: RunConfig) -> Any | None:
    """The run's Ax ``Client`` from its checkpoint, or ``None`` when there is none yet.

    Raises:
        UserInputError: The checkpoint cannot be read, or was made with other settings.
    """
    from ax.api import Client

    path = cfg.checkpoint_path
    if not path.is_file():
        return None
    try:
        client = Client.load_from_json_file(str(path))
    except (ValueError, KeyError, TypeError) as e:  # JSONDecodeError is a ValueError
        raise UserInputError(
            f"checkpoint {path} cannot be read ({type(e).__name__}: {str(e)[:200]}); it is "
            f"truncated or corrupt (was the run killed while writing it?): delete {path} to "
            "start the run over"
        ) from None
    stored = client_experiment(client).description
    try:
        recorded = json.loads(stored) if stored else None
    except json.JSONDecodeError:
        recorded = None
    if isinstance(recorded, dict):
        differ = setting_differences(identity_of_settings(recorded), cfg.identity())
        if differ:
            raise UserInputError(
                f"checkpoint {path} was made with other settings ({'; '.join(differ)}; as: "
                "checkpoint -> now): use another --out folder for these settings, or delete "
                "the checkpoint to start over"
            )
    return client


def split_generator_run(gr: Any) -> list[Any]:
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
                generator_key=generator_key(gr),
                gen_metadata={
                    k: v for k, v in (gr.gen_metadata or {}).items() if k == "models_used"
                },
                candidate_metadata_by_arm_signature=(
                    {arm.signature: cand_meta[arm.signature]}
                    if arm.signature in cand_meta
                    else None
                ),
                generation_node_name=generation_node_name(gr),
            )
        )
    return parts


def restore_full_precision(client: Any, rounds: Sequence[Mapping[str, Any]]) -> int:
    """Give a reloaded experiment its observations back at full precision.

    Ax's JSON storage writes observed means with 10 decimals; a run resumed from its
    checkpoint would fit its next model on rounded values and part from the run that
    never stopped. The result file keeps every value at full precision (its rounds'
    ``values``): they replace the stored ones (Ax's ``attach_data`` replaces an arm's
    observation of a metric). Only values that the checkpoint rounds to are replaced.

    Returns:
        How many observations were replaced.
    """
    from ax.core.data import Data

    experiment = client_experiment(client)
    exact = {
        int(t): float(v)
        for r in rounds
        for t, v in zip(r.get("trials", []), r.get("values") or [], strict=False)
        if v is not None and math.isfinite(float(v))
    }
    df = experiment.lookup_data().df
    if not len(df) or not exact:
        return 0
    df = df.copy()
    rows = (df["metric_name"] == METRIC) & df["trial_index"].isin(list(exact))
    full = df.loc[rows, "trial_index"].map(exact)
    close = (full - df.loc[rows, "mean"]).abs() <= 1e-9 * (1 + full.abs())
    keep = close[close].index
    if not len(keep):
        return 0
    df.loc[keep, "mean"] = full[keep]
    experiment.attach_data(Data(df=df.loc[keep]))
    return len(keep)


def trial_values(client: Any) -> tuple[list[float | None], list[str]]:
    """Objective value per trial index (``None`` when failed) and the trials' statuses."""
    experiment = client_experiment(client)
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


def chosen_from_metadata(gr: Any) -> str | None:
    """The model a generator run used, from Ax's ``models_used`` (``"Ax default"`` for a
    bare ``ModelConfig``); ``None`` when it does not say."""
    used = (gr.gen_metadata or {}).get("models_used")
    if not used:
        return None
    first = used[0] if isinstance(used, list) else used
    name = next(iter(first.values())) if isinstance(first, dict) and first else first
    name = str(name)
    if name.startswith("ModelConfig("):
        return "Ax default"
    return name
