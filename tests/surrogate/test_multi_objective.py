"""Kernel discovery in a multi-objective experiment (issue 30 items 1, 2 and 14): Ax's
qLogNEHVI, one population per outcome, and the strike rule judged on the Pareto front."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from ax.api import Client

from ax_kernel_discovery import (
    KernelDiscoveryConfig,
    kernel_discovery_generation_strategy,
    surrogate_of,
)
from ax_kernel_discovery.testing import TINY_ACQUISITION, unit_box_client

torch.set_num_threads(1)

DIM = 3


def _client() -> Client:
    config = {"population_size": 3, "proposals_per_round": 0, "fit_maxiter": 5}
    strategy = kernel_discovery_generation_strategy(config, num_sobol=4, **TINY_ACQUISITION)
    return unit_box_client(DIM, strategy, objective="-a, -b")  # minimize both


def _complete(client: Client, trials: dict[int, dict[str, float]], a: float, b: float) -> None:
    for k, index in enumerate(trials):
        x = np.array([trials[index][f"x{i}"] for i in range(DIM)])
        noise = 1e-3 * (k + x.sum())  # distinct values, same side of the front
        client.complete_trial(index, raw_data={"a": a + noise, "b": b + noise})


def _last_records(client: Client) -> dict[str, object]:
    surrogate = surrogate_of(client)
    last = max(r.round for r in surrogate.history)
    return {r.outcome: r for r in surrogate.history if r.round == last}


def _complete_front(client: Client, trials: dict[int, dict[str, float]]) -> None:
    for k, index in enumerate(trials):  # a front: (1, 4), (2, 3), (3, 2), (4, 1)
        client.complete_trial(index, raw_data={"a": 1.0 + k, "b": 4.0 - k})


def test_the_strike_rule_judges_the_batch_on_the_pareto_front() -> None:
    client = _client()
    _complete_front(client, client.get_next_trials(max_trials=4))
    _complete(client, client.get_next_trials(max_trials=2), 5.0, 5.0)  # guard round's batch
    chosen = client.get_next_trials(max_trials=2)  # round 1 chooses a member per outcome
    _complete(client, chosen, 5.0, 5.0)  # dominated by every old row: no improvement
    client.get_next_trials(max_trials=2)
    records = _last_records(client)
    assert set(records) == {"a", "b"}
    for rec in records.values():  # both outcomes' choices are judged, and struck
        assert rec.previous_improved is False and rec.struck is not None
    # a batch better in b only: a new point on the front, so no strike (judged on a
    # alone, the old per-outcome rule struck it; outcome b was never judged)
    surrogate = surrogate_of(client)
    pending = [i for i, t in client._experiment.trials.items() if t.status.is_running]
    trials = {i: client._experiment.trials[i].arm.parameters for i in pending}
    _complete(client, trials, 4.5, 0.5)
    client.get_next_trials(max_trials=2)
    records = _last_records(client)
    for rec in records.values():
        assert rec.previous_improved is True and rec.struck is None
    # every outcome's round of one fit shares the round index (item 14)
    rounds = [r.round for r in surrogate.history]
    assert rounds == sorted(rounds) and len(set(rounds)) == len(rounds) // 2


def test_prefetched_proposals_are_used_for_every_outcome(
    tmp_path: Path, recording_proposer: Any
) -> None:
    """Issue 30 item 14: with overlap_proposals and two outcomes, each outcome's next
    proposals are asked for during the acquisition and used by the next round (the round
    index advanced once per outcome, so no prefetch key ever matched)."""
    config = KernelDiscoveryConfig(
        population_size=3,
        proposals_per_round=1,
        fit_maxiter=5,
        proposer="llm",
        llm_model="gpt-4o",  # replaced by the recorder; replay needs no key
        llm_mode="replay",
        llm_cache_dir=str(tmp_path),
        overlap_proposals=True,
    )
    strategy = kernel_discovery_generation_strategy(config, num_sobol=4, **TINY_ACQUISITION)
    client = unit_box_client(DIM, strategy, objective="-a, -b")
    recorder = recording_proposer
    surrogate_of(client).proposing.proposer = recorder
    _complete_front(client, client.get_next_trials(max_trials=4))
    for _ in range(3):
        _complete(client, client.get_next_trials(max_trials=2), 5.0, 5.0)
    surrogate = surrogate_of(client)
    main_thread = [r for r, t in recorder.calls if t == "MainThread"]
    assert main_thread == [0, 0]  # only the first round, once per outcome, waits for them
    later = [r for r in surrogate.history if r.round >= 1]
    assert {r.outcome for r in later} == {"a", "b"}
    assert all(r.prefetched for r in later)
