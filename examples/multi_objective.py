"""Kernel discovery in a multi-objective Ax experiment, with the Ax Client.

Two objectives on 12 parameters, both minimized: kd keeps one kernel population per
objective, and the acquisition is what Ax's own BO step uses for this experiment,
qLogNoisyExpectedHypervolumeImprovement (qLogNEHVI). A round's chosen kernels are struck
when its batch added no point to the Pareto front. Run it with::

    python examples/multi_objective.py

(about a minute on 2 CPU cores).
"""

from __future__ import annotations

import logging

import numpy as np
import torch
from ax.api import Client
from ax.api.configs import RangeParameterConfig
from ax.utils.common.logger import set_ax_logger_levels

from ax_kernel_discovery import kernel_discovery_generation_strategy, surrogate_of

D = 12


def objectives(params: dict[str, float]) -> dict[str, float]:
    """Two conflicting costs: distance to two different targets in the first 3 inputs."""
    x = np.array([params[f"x{i}"] for i in range(D)])
    return {
        "cost_a": float(np.sum((x[:3] - 0.2) ** 2) + 0.05 * np.sum(x[3:])),
        "cost_b": float(np.sum((x[:3] - 0.8) ** 2) + 0.05 * np.sum(x[3:] ** 2)),
    }


def main() -> Client:
    torch.set_num_threads(1)
    set_ax_logger_levels(logging.WARNING)
    client = Client(random_seed=0)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(D)
        ]
    )
    client.configure_optimization(objective="-cost_a, -cost_b")  # minimize both
    client.set_generation_strategy(
        kernel_discovery_generation_strategy(
            {"population_size": 6}, num_sobol=8, num_restarts=2, raw_samples=128
        )
    )
    for _ in range(5):  # 2 asks of the initial design, then one round of kd per ask
        for index, params in client.get_next_trials(max_trials=4).items():
            client.complete_trial(index, raw_data=objectives(params))

    surrogate = surrogate_of(client)
    for record in surrogate.history:  # one record per round and objective
        print(
            f"round {record.round} {record.outcome}: chose {record.chosen}, struck {record.struck}"
        )
    front = client.get_pareto_frontier(use_model_predictions=False)
    print(f"{len(front)} points on the Pareto front")
    for name, population in surrogate.populations.items():
        print(f"{name}: best kernel {population.best().formula}")
    return client


if __name__ == "__main__":
    main()
