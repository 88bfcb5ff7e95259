"""Check that kernel discovery runs on the GPU: a short Ax Client loop with ``device="auto"``.

Prints the device of the chosen model's training data and parameters, the chosen kernels
and per-round timings. Exits non-zero if CUDA is available but the model is not on it.

    python benchmarks/device_check.py --dim 100 --rounds 2
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

import numpy as np
import torch
from ax.api import Client
from ax.api.configs import RangeParameterConfig
from ax.utils.common.logger import set_ax_logger_levels

from ax_kernel_discovery import (
    KernelDiscoveryConfig,
    kernel_discovery_generation_strategy,
    surrogate_of,
)
from ax_kernel_discovery.benchmarks import Ackley
from ax_kernel_discovery.runner.report import format_value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    set_ax_logger_levels(logging.ERROR)
    config = KernelDiscoveryConfig(device=args.device)
    device = config.resolved_device()
    print(
        f"torch {torch.__version__}; cuda available: {torch.cuda.is_available()}; running on {device}"
    )
    problem = Ackley(dim=args.dim, effective_dim=10)
    client = Client(random_seed=0)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(args.dim)
        ]
    )
    client.configure_optimization("-f")
    gs = kernel_discovery_generation_strategy(config, num_sobol=20)
    client.set_generation_strategy(gs)
    surrogate = surrogate_of(gs)
    for r in range(args.rounds + 1):
        q, trials = (20 if r == 0 else args.batch), {}
        t0 = time.perf_counter()
        while len(trials) < q:
            trials.update(client.get_next_trials(max_trials=q - len(trials)))
        for index, p in trials.items():
            x = np.array([[p[f"x{i}"] for i in range(args.dim)]])
            client.complete_trial(index, raw_data={"f": float(problem.evaluate(x)[0])})
        if r:
            rec = surrogate.history[-1]
            print(
                f"round {rec.round}: chose {rec.chosen} ({format_value(rec.chosen_score)}); "
                f"{len(rec.scores)} kernels scored; "
                f"selection {rec.timings['total']:.1f}s, round {time.perf_counter() - t0:.1f}s"
            )
    model = surrogate.model
    where = {str(model.train_inputs[0].device), *(str(p.device) for p in model.parameters())}
    print(f"model tensors on: {sorted(where)}; dtype {model.train_inputs[0].dtype}")
    if device.startswith("cuda") and not all(w.startswith("cuda") for w in where):
        print("FAIL: CUDA requested but the model is not on the GPU")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
