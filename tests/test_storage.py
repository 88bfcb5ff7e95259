"""Ax storage of kernel discovery: SQL (SQLite) and JSON, and a reload that changes nothing.

* a ``Client`` backed by SQLite runs kernel discovery, is reloaded from the database and
  continues; SQL and JSON restore the same population, history and next-round state;
* two runs with the same seeds, one straight and one saved to JSON and reloaded before
  every round, choose the same kernels and reach the same population;
* the full state is written once per file (the generation strategy's node); generator
  runs keep a record.

Ax's ``Client`` does not save its ``random_seed``, so these tests seed every ask
themselves (what ``Client(random_seed=...)`` does inside ``get_next_trials``), in both
runs alike.
"""

from __future__ import annotations

import io
import json
import logging
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from ax.api import Client
from ax.api.configs import RangeParameterConfig
from ax.storage.json_store.decoder import object_from_json
from ax.storage.json_store.encoder import object_to_json
from ax.utils.common.logger import set_ax_logger_levels
from ax.utils.common.random import with_rng_seed
from botorch.acquisition.logei import qLogNoisyExpectedImprovement

from ax_kernel_discovery import (
    KernelDiscoveryConfig,
    KernelDiscoverySurrogate,
    kernel_discovery_generation_strategy,
)
from ax_kernel_discovery.analysis import find_surrogate
from ax_kernel_discovery.storage import prepare_sql_storage
from ax_kernel_discovery.surrogate import RoundRecord
from ax_kernel_discovery.surrogate.acquisition import KernelDiscoveryAcquisition
from ax_kernel_discovery.surrogate.new_rows_qlognei import NewRowsqLogNEI
from ax_kernel_discovery.surrogate.state import STATE_FORMAT

pytest.importorskip("sqlalchemy", reason="Ax's SQL store needs the [sql] extra")
# SQLAlchemy 2 on Ax's own column type (Ax's code, harmless)
pytestmark = pytest.mark.filterwarnings("ignore:TypeDecorator JSONEncodedText")

set_ax_logger_levels(logging.WARNING)

DIM = 10
NUM_SOBOL = 6
Q = 1
SEED = 0
# the in-sample path, where every round chooses a member and strikes are judged from round 1
# (the default's guard round and held-out path: test_prequential_selection_reloads_...)
CONFIG = KernelDiscoveryConfig(
    population_size=4,
    proposals_per_round=2,
    fit_maxiter=10,
    seed=SEED,
    fit_timeout=120.0,
    criterion="lbo_crps",
    guard_rounds=0,
    keep_kernels=(),
    start_kernels=None,  # the start set alone: these test storage, not SAAS
)
FAST = {"num_restarts": 1, "raw_samples": 32, "maxiter": 20}


def objective(params: dict) -> float:
    """A smooth function of 10 inputs, reported in micro-units (integers: see below).

    Ax's JSON and SQL storage write observations with pandas' ``DataFrame.to_json``
    (10 decimal places) and read them back with its fast, not correctly rounded parser:
    a reloaded experiment's values can differ from the reported ones in the last
    digits, and GP fits of a few dozen L-BFGS steps amplify that. Integers survive the
    round trip exactly, so the reload tests see Ax's data unchanged and test what the
    surrogate saves.
    """
    x = np.array([params[f"x{i}"] for i in range(DIM)])
    value = ((x[:3] - 0.3) ** 2).sum() + 0.1 * np.sin(5 * x[3])
    return float(np.round(1e6 * value))


def make_client(config: KernelDiscoveryConfig = CONFIG, **client_kwargs: object) -> Client:
    client = Client(**client_kwargs)  # type: ignore[arg-type]
    client.configure_experiment(
        name="kd_storage",
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(DIM)
        ],
    )
    client.configure_optimization("-f")
    client.set_generation_strategy(
        kernel_discovery_generation_strategy(config, num_sobol=NUM_SOBOL, **FAST)
    )
    return client


def run_batch(client: Client, q: int) -> None:
    """Ask (seeded) until q trials are out, then complete them."""
    trials: dict = {}
    while len(trials) < q:
        with with_rng_seed(SEED + len(client._experiment.trials)):
            trials.update(client.get_next_trials(max_trials=q - len(trials)))
    for index, params in trials.items():
        client.complete_trial(index, raw_data={"f": objective(params)})


def population_of(s: KernelDiscoverySurrogate) -> list[tuple[str, float | None, int, int]]:
    return [(m.name, m.score, m.strikes, m.times_chosen) for m in s.population]


def arms_of(client: Client) -> list[dict]:
    return [t.arms[0].parameters for t in client._experiment.trials.values()]


ROUNDS = 4


@pytest.fixture(scope="module")
def straight() -> Client:
    """A run that never stops: Sobol, then ROUNDS rounds of kernel discovery."""
    client = make_client()
    run_batch(client, NUM_SOBOL)
    for _ in range(ROUNDS):
        run_batch(client, Q)
    return client


def assert_same_rounds(a: list[RoundRecord], b: list[RoundRecord]) -> None:
    """Same kernels chosen, struck, proposed, accepted and dropped; same scores (exactly)."""
    assert [r.round for r in b] == [r.round for r in a]
    for ra, rb in zip(a, b, strict=True):
        assert (rb.chosen, rb.struck, rb.previous_improved) == (
            ra.chosen,
            ra.struck,
            ra.previous_improved,
        )
        assert (rb.proposed, rb.accepted, rb.dropped) == (ra.proposed, ra.accepted, ra.dropped)
        # exact: warm starts are stored bit for bit and every ask is seeded alike
        assert rb.scores == ra.scores


# ------------------------------------------------------------- a reload between rounds


def test_reload_before_every_round_changes_nothing(straight: Client, tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    resumed = make_client()
    run_batch(resumed, NUM_SOBOL)
    for _ in range(ROUNDS):
        resumed.save_to_json_file(str(path))
        resumed = Client.load_from_json_file(str(path))
        run_batch(resumed, Q)

    a, b = find_surrogate(straight), find_surrogate(resumed)
    assert [r.round for r in b.history] == list(range(ROUNDS))
    assert_same_rounds(a.history, b.history)
    assert sum(r.struck is not None for r in a.history) > 0, "no strike was exercised"
    assert any(r.previous_improved for r in a.history), "no improvement was judged"
    assert population_of(b) == population_of(a)
    assert arms_of(resumed) == arms_of(straight)


def test_prequential_selection_reloads_without_changing_anything(tmp_path: Path) -> None:
    # held-out forecasts are scored from the saved warm starts, and the mixture's members
    # from the saved held-out records: a reload changes none of them. Equal weights make
    # every unguarded round a two-member mixture; stacking may put all 12 slots on one
    # member on some platforms' numerics, and then no mixture would be exercised.
    config = KernelDiscoveryConfig.model_validate(
        {
            **CONFIG.model_dump(),
            "criterion": "prequential",
            "guard_rounds": 1,
            "keep_kernels": ["RBF", "Matern52"],
            "mixture_top_k": 2,
            "mixture_weights": "equal",
        }
    )
    straight, resumed = make_client(config), make_client(config)
    path = tmp_path / "run.json"
    run_batch(straight, NUM_SOBOL)
    run_batch(resumed, NUM_SOBOL)
    for _ in range(ROUNDS):
        run_batch(straight, 2)
        resumed.save_to_json_file(str(path))
        resumed = Client.load_from_json_file(str(path))
        run_batch(resumed, 2)
    a, b = find_surrogate(straight), find_surrogate(resumed)
    assert_same_rounds(a.history, b.history)
    assert [r.mixture for r in b.history] == [r.mixture for r in a.history]
    assert a.history[0].guarded and all(len(r.mixture) == 2 for r in a.history[1:])
    assert [m.heldout for m in b.population] == [m.heldout for m in a.population]
    assert any(m.heldout for m in a.population)
    assert arms_of(resumed) == arms_of(straight)


# ------------------------------------------------------------------------- SQL storage


def assert_same_state(a: KernelDiscoverySurrogate, b: KernelDiscoverySurrogate) -> None:
    assert b.state.round_index == a.state.round_index
    assert b.config == a.config
    assert population_of(b) == population_of(a)
    assert [m.formula for m in b.population] == [m.formula for m in a.population]
    assert [r.model_dump() for r in b.history] == [r.model_dump() for r in a.history]
    assert b.state.outcomes.keys() == a.state.outcomes.keys()
    for outcome, state in a.state.outcomes.items():
        loaded = b.state.outcomes[outcome]
        assert loaded.last_choice == state.last_choice
        assert loaded.warm.keys() == state.warm.keys()
        for key, params in state.warm.items():
            assert loaded.warm[key].keys() == params.keys()
            for name, value in params.items():
                assert torch.equal(loaded.warm[key][name], value), (outcome, key, name)
    assert b.state_dict_json() == a.state_dict_json()


def test_sqlite_backed_client_reloads_and_continues(straight: Client, tmp_path: Path) -> None:
    storage_config = prepare_sql_storage(f"sqlite:///{tmp_path / 'runs.db'}")
    client = make_client(storage_config=storage_config)
    run_batch(client, NUM_SOBOL)
    for _ in range(2):
        run_batch(client, Q)
    live = find_surrogate(client)
    kept = live.state.outcomes["f"]
    assert kept.warm and kept.last_choice, "nothing to carry over"

    json_path = tmp_path / "run.json"
    client.save_to_json_file(str(json_path))
    from_sql = Client.load_from_database("kd_storage", storage_config=storage_config)
    from_json = Client.load_from_json_file(str(json_path))
    assert_same_state(live, find_surrogate(from_sql))
    assert_same_state(find_surrogate(from_json), find_surrogate(from_sql))
    # the BO node names no acquisition function (Ax chooses one for the experiment), and
    # the reloaded surrogate computes Ax's qLogNEI with kd's NewRowsqLogNEI again
    for reloaded in (from_sql, from_json):
        node = reloaded._generation_strategy._nodes[-1]
        kwargs = node.generator_specs[0].generator_kwargs
        assert kwargs["acquisition_class"] is KernelDiscoveryAcquisition
        assert kwargs["botorch_acqf_class"] is None
        chosen = find_surrogate(reloaded).acqf_class_for(qLogNoisyExpectedImprovement)
        assert chosen is NewRowsqLogNEI
    # and kd's acquisition function class itself is registered with Ax's storage
    assert object_from_json(object_to_json(NewRowsqLogNEI)) is NewRowsqLogNEI

    # the reloaded client continues, saving to the database, as the straight run did
    run_batch(from_sql, Q)
    continued = find_surrogate(from_sql)
    assert continued.state.round_index == 3
    assert_same_rounds(find_surrogate(straight).history[:3], continued.history)
    again = find_surrogate(Client.load_from_database("kd_storage", storage_config=storage_config))
    assert_same_state(continued, again)


def test_the_full_state_is_written_once_per_file(straight: Client, tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    straight.save_to_json_file(str(path))
    text = path.read_text()
    assert text.count('"warm_parameters"') == 1, "the state must be written once (the node)"
    snapshot = json.loads(text)
    records = [
        gr["generator_kwargs"]["surrogate"]
        for gr in snapshot["generation_strategy"]["generator_runs"]
        if "surrogate" in (gr.get("generator_kwargs") or {})
    ]
    assert len(records) == ROUNDS
    record = {
        "format": STATE_FORMAT,
        "round_index": ROUNDS,
        "objective_weights": {"f": -1.0},
        "objective_matrix": [{"f": -1.0}],
        "record": True,
    }
    assert all(r["state"] == record for r in records)
    loaded = Client.load_from_json_file(str(path))
    assert_same_state(find_surrogate(straight), find_surrogate(loaded))


# -------------------------------------------------------------------------- pickling


def test_the_fitted_surrogate_and_its_model_pickle(straight: Client) -> None:
    surrogate = find_surrogate(straight)
    model = surrogate.model
    X_test = torch.rand(5, DIM, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    with torch.no_grad():
        want = model.posterior(X_test)
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    copy = pickle.loads(pickle.dumps(surrogate))
    assert copy.state_dict_json() == surrogate.state_dict_json()
    for other in (
        pickle.loads(pickle.dumps(model)),
        torch.load(buffer, weights_only=False),
        copy.model,
    ):
        with torch.no_grad():
            got = other.posterior(X_test)
        torch.testing.assert_close(got.mean, want.mean)
        torch.testing.assert_close(got.variance, want.variance)
