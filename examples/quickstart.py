"""Quickstart: kernel discovery inside an Ax Client run on a 100-D problem (no key, no GPU).

Hartmann-6 hidden in 100 dimensions (94 coordinates do nothing). Sobol first, then each
BO round evolves the kernel population with the offline operator, picks the kernel with
the best LOO-CRPS and proposes a batch with qLogNoisyExpectedImprovement.

    python examples/quickstart.py                # ~3-5 min on 2 CPU cores
    python examples/quickstart.py --rounds 3 --batch 2 --dim 50

Torch runs single-threaded (``torch.set_num_threads(1)``): on small shared machines two
threads made GP fits 25-50x slower.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections import Counter

import numpy as np
import torch
from ax.api import Client
from ax.api.configs import RangeParameterConfig
from ax.utils.common.logger import set_ax_logger_levels

from ax_kernel_discovery import (
    KernelDiscoveryConfig,
    KernelDiscoverySurrogate,
    kernel_discovery_generation_strategy,
)
from ax_kernel_discovery.benchmarks import Hartmann6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--sobol", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    set_ax_logger_levels(logging.WARNING)

    problem = Hartmann6(dim=args.dim, seed=args.seed)
    client = Client(random_seed=args.seed)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(args.dim)
        ]
    )
    client.configure_optimization("-hartmann6")
    config = KernelDiscoveryConfig(seed=args.seed)
    strategy = kernel_discovery_generation_strategy(config, num_sobol=args.sobol)
    client.set_generation_strategy(strategy)
    surrogate: KernelDiscoverySurrogate = (
        strategy._nodes[-1].generator_specs[0].generator_kwargs["surrogate"]
    )

    def run_batch(q: int) -> None:
        trials: dict = {}
        while len(trials) < q:  # Ax hands out a single trial at the Sobol -> BO transition
            trials.update(client.get_next_trials(max_trials=q - len(trials)))
        for index, params in trials.items():
            x = np.array([[params[f"x{i}"] for i in range(args.dim)]])
            client.complete_trial(index, raw_data={"hartmann6": float(problem.evaluate(x)[0])})

    def best() -> float:
        df = client._experiment.lookup_data().df
        return float(df["mean"].min())

    print(
        f"Hartmann-6 in {args.dim}-D (optimum {problem.optimum:.4f}); {args.sobol} Sobol points, "
        f"{args.rounds} rounds of {args.batch}; torch threads = {torch.get_num_threads()}"
    )
    run_batch(args.sobol)
    print(f"Sobol: best {best():.4f}")
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        run_batch(args.batch)
        rec = surrogate.history[-1]
        print(
            f"round {rec.round:2d}  n={rec.n:3d}  chose {rec.chosen:<40s} LOO-CRPS {rec.chosen_score:.4f}  "
            f"population {len(rec.population):2d}  accepted {len(rec.accepted)}/{len(rec.proposed)}  "
            f"best {best():.4f}  ({time.perf_counter() - t0:.0f}s)"
        )

    print("\n=== summary ===")
    print(
        f"best value {best():.4f} after {len(client._experiment.trials)} evaluations (optimum {problem.optimum:.4f})"
    )
    print("kernels chosen:", dict(Counter(r.chosen for r in surrogate.history)))
    rejected = Counter(r.stage for rec in surrogate.history for r in rec.rejected)
    print("rejections by stage:", dict(rejected) or "none")
    print("final population (best first):")
    for m in surrogate.population:
        print(f"  {m.score:8.4f}  {m.origin:8s}  {m.name}")
    top = surrogate.population.best()
    print(f"\nbest kernel: {top.name}\n  {top.formula}")


if __name__ == "__main__":
    main()
