"""Kernel discovery on your own Python function, with Ax's Client API.

Replace ``my_function`` by your black box (any callable taking the parameter dict).
Runs in about 2-3 minutes on 2 CPU cores::

    python examples/own_function.py
"""

from __future__ import annotations

import logging

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

torch.set_num_threads(1)  # one thread: much faster GP fits on small shared machines
set_ax_logger_levels(logging.WARNING)

DIM = 30


def my_function(params: dict[str, float]) -> float:
    """Your black box: here a shifted sphere on 5 of 30 inputs (to minimize)."""
    x = np.array([params[f"x{i}"] for i in range(DIM)])
    return float(np.sum((x[:5] - 0.3) ** 2) + 0.01 * np.sum(x[5:]))


client = Client()
client.configure_experiment(
    parameters=[
        RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
        for i in range(DIM)
    ]
)
client.configure_optimization(objective="-loss")  # minimize "loss"
strategy = kernel_discovery_generation_strategy(
    KernelDiscoveryConfig(population_size=6, proposals_per_round=3),
    num_sobol=8,
    num_restarts=2,
    raw_samples=128,
)
client.set_generation_strategy(strategy)

for _ in range(6):  # 2 calls of Sobol points, then one kernel-discovery round per call
    for index, params in client.get_next_trials(max_trials=4).items():
        client.complete_trial(index, raw_data={"loss": my_function(params)})

best_params, prediction, index, _ = client.get_best_parameterization()
print(
    f"best trial {index}: loss {my_function(best_params):.4f} (model mean {prediction['loss'][0]:.4f})"
)
surrogate = surrogate_of(strategy)
for record in surrogate.history:
    # the first BO round uses Ax's default model (chosen "AxDefault"): it has no score
    score = "-" if record.chosen_score is None else f"{record.chosen_score:.4f}"
    print(f"round {record.round}: n={record.n}, chose {record.chosen} (score {score})")
print("best kernel now:", surrogate.population.best().formula)
client.save_to_json_file("own_function_experiment.json")  # reload with Client.load_from_json_file
