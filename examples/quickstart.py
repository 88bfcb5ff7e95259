"""Quickstart: kernel discovery inside an Ax Client run on a 100-D problem (no key, no GPU).

Hartmann-6 hidden in 100 dimensions (94 coordinates do nothing). Sobol first, then each
BO round evolves the kernel population with the offline operator, picks the kernel with
the best score (by default the held-out log score of each kernel's forecast of the latest
batches; the first BO round uses Ax's default model) and proposes a batch with
qLogNoisyExpectedImprovement.

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
    surrogate_of,
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
    surrogate: KernelDiscoverySurrogate = surrogate_of(strategy)

    def evaluate(trials: dict) -> None:
        for index, params in trials.items():
            x = np.array([[params[f"x{i}"] for i in range(args.dim)]])
            client.complete_trial(index, raw_data={"hartmann6": float(problem.evaluate(x)[0])})

    def ask_bo(q: int) -> dict:
        # the Sobol node of the strategy lets the first BO request return all q trials
        trials = client.get_next_trials(max_trials=q)
        assert len(trials) == q, f"asked Ax for {q} trials, got {len(trials)}"
        return trials

    def best() -> float:
        df = client._experiment.lookup_data().df
        return float(df["mean"].min())

    criterion = surrogate.config.criterion.upper().replace("_", "-")
    print(
        f"Hartmann-6 in {args.dim}-D (optimum {problem.optimum:.4f}): {args.sobol} Sobol points, "
        f"then {args.rounds} BO rounds of {args.batch}; torch threads = {torch.get_num_threads()}"
    )
    evaluate(client.get_next_trials(max_trials=args.sobol))  # the whole Sobol design
    print(f"Sobol: best {best():.4f}")
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        evaluate(ask_bo(args.batch))
        rec = surrogate.history[-1]
        print(
            f"round {rec.round}  n={rec.n:3d}  chose {short(rec.chosen, 30):<30s}  "
            f"{criterion} {number(rec.chosen_score)}  kept {len(rec.population):2d}  "
            f"new {len(rec.accepted)}/{len(rec.proposed)}  best {best():.4f}  "
            f"{time.perf_counter() - t0:3.0f}s"
        )

    print(f"\nbest value {best():.4f} after {len(client._experiment.trials)} evaluations")
    chosen = Counter(short(r.chosen, 30) for r in surrogate.history)
    print("kernels chosen:", ", ".join(f"{name} x{count}" for name, count in chosen.items()))
    rejected = Counter(r.stage for rec in surrogate.history for r in rec.rejected)
    print("rejected proposals by stage:", dict(rejected) or "none")
    members = list(surrogate.population)
    print(f"population, best {min(5, len(members))} of {len(members)} ({criterion}, origin, name):")
    for m in members[:5]:
        print(f"  {number(m.score):>7s}  {m.origin:8s}  {short(m.name, 60)}")
    top = surrogate.population.best()
    print(f"best kernel {top.name}:\n  {short(top.formula, 220)}")


def number(value: float | None) -> str:
    """A score to 4 decimals; ``-`` where there is none (Ax's default model chosen in the
    guard round, or a new kernel that has not forecast a batch yet)."""
    return "-" if value is None else f"{value:.4f}"


def short(text: str | None, width: int) -> str:
    """``text`` cut to ``width`` characters (the offline operator's names can be long)."""
    text = str(text)
    return text if len(text) <= width else text[: width - 3] + "..."


if __name__ == "__main__":
    main()
