"""A saved state says which format it is, is refused by name when it cannot be continued
(issue 30 item 10), and a surrogate handed another experiment starts afresh (item 8)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import torch
from ax.api import Client

from ax_kernel_discovery import (
    KernelDiscoverySurrogate,
    kernel_discovery_generation_strategy,
    surrogate_of,
)
from ax_kernel_discovery.surrogate.state import STATE_FORMAT
from ax_kernel_discovery.testing import TINY_ACQUISITION, unit_box_client

torch.set_num_threads(1)

CONFIG = {"population_size": 3, "proposals_per_round": 1, "fit_maxiter": 5}


def _run(dim: int, objective: str, surrogate: KernelDiscoverySurrogate | None, asks: int) -> Client:
    strategy = kernel_discovery_generation_strategy(
        CONFIG, num_sobol=4, surrogate=surrogate, **TINY_ACQUISITION
    )
    client = unit_box_client(dim, strategy, objective=objective)
    for _ in range(asks):
        for index, params in client.get_next_trials(max_trials=3).items():
            client.complete_trial(
                index, raw_data={"f": sum((v - 0.3) ** 2 for v in params.values())}
            )
    return client


def test_a_surrogate_used_on_another_experiment_starts_afresh(
    kd_caplog: pytest.LogCaptureFixture,
) -> None:
    first = _run(5, "-f", None, asks=5)
    surrogate = surrogate_of(first)
    assert len(surrogate.history) >= 3 and surrogate.history[-1].dim == 5
    with kd_caplog.at_level(logging.WARNING, logger="ax_kernel_discovery.surrogate.state"):
        second = _run(3, "f", surrogate, asks=3)  # 3-D, maximizing
    assert surrogate_of(second) is surrogate
    history = surrogate.history
    assert {r.dim for r in history} == {3}
    assert history[0].round == 0 and history[0].guarded  # a guard round, as a new run
    assert surrogate.state.objective_weights == {"f": 1.0}
    assert any("starts afresh" in r.message for r in kd_caplog.records)


def _saved(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    client = _run(3, "-f", None, asks=3)
    path = tmp_path / "run.json"
    client.save_to_json_file(str(path))
    return path, json.loads(path.read_text())


def _surrogate_kwargs(data: Any) -> list[dict[str, Any]]:
    """Every saved KernelDiscoverySurrogate's keyword arguments in a Client JSON."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("__type") == "KernelDiscoverySurrogate" or (
                "state" in node and "config" in node and isinstance(node.get("state"), dict)
            ):
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(data)
    return [n for n in found if "populations" in (n.get("state") or {})]


def test_a_saved_state_carries_its_format_and_bad_ones_are_refused_by_name(
    tmp_path: Path,
) -> None:
    path, data = _saved(tmp_path)
    saved = _surrogate_kwargs(data)
    assert saved and all(n["state"]["format"] == STATE_FORMAT for n in saved)
    assert Client.load_from_json_file(str(path))  # the state as written loads

    def edited(edit: Any) -> Path:
        copy = json.loads(path.read_text())
        for node in _surrogate_kwargs(copy):
            edit(node)
        out = tmp_path / "edited.json"
        out.write_text(json.dumps(copy))
        return out

    def no_populations(node: dict[str, Any]) -> None:
        del node["state"]["populations"]

    with pytest.raises(ValueError, match="no 'populations'.*lose every discovered kernel"):
        Client.load_from_json_file(str(edited(no_populations)))

    def newer(node: dict[str, Any]) -> None:
        node["state"]["format"] = STATE_FORMAT + 1

    with pytest.raises(ValueError, match="newer than this version of ax-kernel-discovery"):
        Client.load_from_json_file(str(edited(newer)))

    def future_setting(node: dict[str, Any]) -> None:
        node["config"]["future_setting"] = 1

    with pytest.raises(ValueError, match=r"does not know \(future_setting.*another release"):
        Client.load_from_json_file(str(edited(future_setting)))
