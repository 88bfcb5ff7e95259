"""kd's BO step handed Ax's default model against stock Ax: the first BO batch, point by point.

The hold-out study's diagnostic ``guard_all`` (``benchmarks/results/holdout2``, amendment 2)
runs kd with ``guard_rounds`` covering every round: kd's BO step (its transforms,
:class:`~ax_kernel_discovery.surrogate.acquisition.KernelDiscoveryAcquisition`, qLogNEI
computed by ``NewRowsqLogNEI``) with Ax's default model. This script runs stock
``ax_default`` and that kd, exactly as the study runs them (the runner, the study's
settings), for the initial design and one BO batch on the same seed, and prints for each
point of the batch the largest coordinate difference between the two.

The two compute the same model and the same acquisition values up to rounding
(``tests/test_strategy.py::test_a_guard_round_proposes_the_batch_stock_ax_proposes``);
Ax builds the batch point by point (``sequential``), each point's optimization starting
from the points before it, so a rounding difference in the first point grows along the
batch. Where the differences grow to the scale of the box, the two runs go separate ways
from the first BO batch, and their paired differences measure how far two runs of the
same method drift apart, not a difference between the methods.

Runs go into a temporary folder (about a minute per seed on hartmann6_100).

Usage:
    python benchmarks/guard_twins.py --problem hartmann6_100 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ax_kernel_discovery.runner import RunConfig
from ax_kernel_discovery.runner.ax_client import load_client
from ax_kernel_discovery.runner.experiment import run_experiment
from ax_kernel_discovery.runner.rounds import trial_point
from ax_kernel_discovery.study.protocol import HOLDOUT

#: kd with every round guarded (the study's ``guard_all``: 10 BO rounds).
GUARD_ALL = {"guard_rounds": 10}


def first_batch(cfg: RunConfig) -> np.ndarray:
    """The points of the run's first BO batch (run to the end of it), one row per trial."""
    run_experiment(cfg)
    client = load_client(cfg)
    assert client is not None
    trials = client._experiment.trials
    return np.array(
        [trial_point(trials[i]) for i in range(cfg.num_sobol, cfg.num_sobol + cfg.batch)]
    )


def point_differences(problem: str, seed: int, out: str, **overrides: Any) -> np.ndarray:
    """Per point of the first BO batch: max |x_kd - x_stock| over the coordinates.

    Args:
        problem: Benchmark problem.
        seed: Seed of both runs.
        out: Folder of the runs' files.
        **overrides: :class:`RunConfig` fields other than the study's (``batch``,
            ``num_sobol``, the acquisition settings).
    """
    settings = HOLDOUT.run_settings() | overrides | {"problem": problem, "seed": seed, "out": out}
    settings["budget"] = settings["num_sobol"] + settings["batch"]
    stock = first_batch(RunConfig(method="ax_default", **settings))
    guarded = first_batch(RunConfig(method="kd", kd_config=GUARD_ALL, **settings))
    return np.abs(guarded - stock).max(axis=1)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="hartmann6_100")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(f"{args.problem}: max |x_kd - x_stock| per point of the first BO batch")
    with tempfile.TemporaryDirectory() as out:
        for seed in args.seeds:
            diffs = point_differences(args.problem, seed, out)
            cells = " ".join(f"{d:.1e}" for d in diffs)
            print(f"seed {seed}: {cells}")


if __name__ == "__main__":
    main()
