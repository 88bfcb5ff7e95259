"""A saved state says which format it is, is refused by name when it cannot be continued
(issue 30 item 10), and a surrogate handed another experiment starts afresh (item 8).

Issue 52: another experiment is told by its identity, not only by its parameter names
(item 5), ``clone_reset`` starts afresh (item 5), the fit that starts afresh keeps its rows
(item 6), and a state saved before rows were keyed by trial (format 1) is continued with
its batches (item 10)."""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import torch
from ax.api import Client
from ax.core.experiment import Experiment

from ax_kernel_discovery import (
    KernelDiscoverySurrogate,
    kernel_discovery_generation_strategy,
    surrogate_of,
)
from ax_kernel_discovery.baselines.compositional import CompositionalSearchSurrogate
from ax_kernel_discovery.proposers.offline import OfflineEvolutionProposer
from ax_kernel_discovery.surrogate.state import STATE_FORMAT
from ax_kernel_discovery.surrogate.trial_rows import ExperimentKey
from ax_kernel_discovery.testing import TINY_ACQUISITION, unit_box_client

torch.set_num_threads(1)

CONFIG = {"population_size": 3, "proposals_per_round": 1, "fit_maxiter": 5}


def _run(
    dim: int,
    objective: str,
    surrogate: KernelDiscoverySurrogate | None,
    asks: int,
    centre: float = 0.3,
) -> Client:
    strategy = kernel_discovery_generation_strategy(
        CONFIG, num_sobol=4, surrogate=surrogate, **TINY_ACQUISITION
    )
    client = unit_box_client(dim, strategy, objective=objective)
    for _ in range(asks):
        _ask(client, centre)
    return client


def _ask(client: Client, centre: float = 0.3) -> None:
    for index, params in client.get_next_trials(max_trials=3).items():
        client.complete_trial(
            index, raw_data={"f": sum((v - centre) ** 2 for v in params.values())}
        )


def _row_keys(client: Client) -> set[tuple[int, str]]:
    """The (trial, arm) keys of the client's completed trials."""
    return {(t.index, t.arms[0].name) for t in client._experiment.completed_trials}


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 3-D run (Sobol, then one round of kernel discovery) saved to JSON."""
    path = tmp_path_factory.mktemp("saved") / "run.json"
    _run(3, "-f", None, asks=3).save_to_json_file(str(path))
    return path


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
    # issue 52 item 6: the fit that started afresh kept the rows Ax had handed over: its
    # rows (the Sobol trials) are noted as first seen in round 0, its batch will be scored
    assert [r.round for r in history] == [0]
    sobol = {k for k in _row_keys(second) if k[0] < 4}
    assert surrogate.state.outcomes["f"].row_rounds == dict.fromkeys(sobol, 0)


def test_a_surrogate_reused_on_an_experiment_with_the_same_parameters_starts_afresh(
    kd_caplog: pytest.LogCaptureFixture, saved_run: Path
) -> None:
    """Issue 52 item 5: the experiment is told by its name and creation time, not by its
    parameter names alone; the same experiment, reloaded, goes on."""
    surrogate = surrogate_of(Client.load_from_json_file(str(saved_run)))
    assert [r.round for r in surrogate.history] == [0]
    with kd_caplog.at_level(logging.WARNING, logger="ax_kernel_discovery.surrogate.state"):
        second = _run(3, "-f", surrogate, asks=4, centre=0.7)  # same names x0..x2
    history = surrogate.history
    assert [r.round for r in history] == [0, 1]  # its own rounds, from 0
    assert history[0].guarded and history[0].n == 4  # a guard round on its Sobol rows
    assert history[1].heldout_units is not None  # its first batch is scored
    seen = {k for k in _row_keys(second) if k[0] < history[-1].n}  # what its fits saw
    assert set(surrogate.state.outcomes["f"].row_rounds) == seen
    assert any("starts afresh" in r.message and "created" in r.message for r in kd_caplog.records)

    resumed = Client.load_from_json_file(str(saved_run))
    kd_caplog.clear()
    with kd_caplog.at_level(logging.WARNING, logger="ax_kernel_discovery.surrogate.state"):
        _ask(resumed)
    assert [r.round for r in surrogate_of(resumed).history] == [0, 1]  # it goes on
    assert not any("starts afresh" in r.message for r in kd_caplog.records)


def test_an_experiment_key_survives_storage() -> None:
    """The key matches the experiment read back from JSON (microseconds) or from SQL
    (whole seconds), and no other experiment."""
    experiment = Experiment(search_space=unit_box_client(2)._experiment.search_space)
    key = ExperimentKey.of(experiment)
    assert key == ExperimentKey(None, experiment.time_created.isoformat())
    assert key.same_as(ExperimentKey.from_dict(json.loads(json.dumps(key.to_dict()))))
    made = ExperimentKey(None, "2026-12-01T21:35:22.573151")
    from_sql = ExperimentKey(None, "2026-12-01T21:35:22")  # SQL keeps whole seconds
    assert made.same_as(from_sql) and from_sql.same_as(made)
    named = ExperimentKey("later_named", made.created)  # a name given after the fit
    assert made.same_as(named) and named.same_as(made)
    assert not named.same_as(ExperimentKey("another", made.created))
    assert not made.same_as(ExperimentKey(None, "2026-12-01T21:35:22.573152"))
    assert not from_sql.same_as(ExperimentKey(None, "2026-12-01T21:35:23.573151"))


def test_clone_reset_starts_afresh(saved_run: Path) -> None:
    """Issue 52 item 5: Ax's ``Surrogate.clone_reset`` and ``GenerationStrategy.
    clone_reset`` (a deep copy) copy the settings and none of the run."""
    client = Client.load_from_json_file(str(saved_run))
    surrogate = surrogate_of(client)
    assert surrogate.history and surrogate.proposing.state_dict()["proposer"]
    strategy = client._generation_strategy.clone_reset()
    for clone in (surrogate.clone_reset(), surrogate_of(strategy)):
        assert clone is not surrogate and clone.config == surrogate.config
        assert clone.history == [] and clone.state.round_index == 0
        assert clone.state.outcomes == {} and clone.state.features is None
        assert clone.population.names == KernelDiscoverySurrogate(CONFIG).population.names
        assert clone.proposing.state_dict() == {"proposer": {}}
    assert surrogate.history  # the original keeps its run
    second = unit_box_client(3, strategy)
    for _ in range(3):
        _ask(second)
    history = surrogate_of(second).history
    assert [r.round for r in history] == [0] and history[0].guarded

    def factory(config: Any) -> OfflineEvolutionProposer:
        return OfflineEvolutionProposer(seed=7)

    given = KernelDiscoverySurrogate(CONFIG, proposer_factory=factory)
    for clone in (given.clone_reset(), copy.deepcopy(given)):
        assert clone.proposing.factory is factory  # what was given comes along
    search = CompositionalSearchSurrogate(max_depth=2)
    for clone in (search.clone_reset(), copy.deepcopy(search)):
        assert isinstance(clone, CompositionalSearchSurrogate) and clone.max_depth == 2
        assert clone.proposing.factory == clone.expansion_proposer  # bound to the copy


def test_a_format_1_state_is_continued_with_its_batches(saved_run: Path, tmp_path: Path) -> None:
    """Issue 52 item 10: a state saved before the rows were keyed by trial (format 1) has
    its rows keyed by position on its first round, as that format assumed; the round
    then scores its kernels on the batch since (lbo_crps), as the same run saved in
    format 2 does, instead of falling back to LOO-CRPS."""
    data = json.loads(saved_run.read_text())
    for node in _surrogate_kwargs(data):
        for key in ("format", "objective_matrix", "features", "experiment", "rows"):
            node["state"].pop(key, None)  # what format 1 did not have
    old = tmp_path / "format1.json"
    old.write_text(json.dumps(data))
    rounds = []
    for path in (saved_run, old):
        client = Client.load_from_json_file(str(path))
        _ask(client)
        rounds.append(surrogate_of(client).history[-1])
    now, then = rounds
    assert now.round == then.round == 1 and now.n == then.n == 7
    assert then.fit_scores.keys() == now.fit_scores.keys() and now.fit_scores
    for name, value in now.fit_scores.items():
        assert then.fit_scores[name] == pytest.approx(value, rel=1e-9, abs=1e-12), name


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
