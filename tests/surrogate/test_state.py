"""OutcomeState: one owner of an outcome's population, warm starts, choice and fits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import formula, leaf
from ax_kernel_discovery.population import Population, start_candidates
from ax_kernel_discovery.surrogate.state import FittedModels, LastChoice, OutcomeState


def _state() -> OutcomeState:
    pop = Population(start_candidates(), size=3, patience=2, keep=("RBF",))
    state = OutcomeState(pop)
    for name in pop.names + ["new"]:
        state.warm[name] = {"raw": torch.zeros(2)}
        state.fitted_models[name] = object()  # type: ignore[assignment]
    return state


def test_drop_removes_the_member_its_warm_start_and_its_fit() -> None:
    state = _state()
    state.drop("SL")
    assert "SL" not in state.population and "SL" not in state.warm
    assert "SL" not in state.fitted_models
    state.drop("new")  # a kernel of this round that never joined
    assert "new" not in state.warm and len(state.population) == 4


def test_a_struck_out_member_leaves_no_warm_start_and_a_kept_one_stays() -> None:
    state = _state()
    spec = leaf("rbf", "tanh")
    state.population.add(
        KernelCandidate(name="x", formula=formula(spec), origin="offline", spec=spec), 1
    )
    state.warm["x"] = {"raw": torch.ones(1)}
    assert state.strike("x")  # not a start kernel: out at once
    assert "x" not in state.warm
    assert not state.strike("SL") and "SL" in state.warm  # a start kernel: patience 2
    assert state.strike("SL") and "SL" not in state.warm
    for _ in range(5):
        assert not state.strike("RBF")  # kept
    assert "RBF" in state.warm


def test_truncate_drops_the_worst_with_their_warm_starts() -> None:
    state = _state()
    for score, name in enumerate(state.population.names):
        state.population.set_score(name, float(score))
    dropped = state.truncate()
    assert dropped == ["BOCK", "SL"] and len(state.population) == 3
    assert not set(dropped) & set(state.warm) and "RQ" in state.warm


def test_last_choice_is_kept_per_outcome() -> None:
    X = torch.rand(5, 2, dtype=torch.float64)
    state = _state()
    state.last_choice = LastChoice.of("RBF", X, X.sum(-1))
    assert state.last_choice.name == "RBF" and state.last_choice.n == 5


def test_fitted_models_built_on_first_access_read_iterate_and_drop_alike() -> None:
    built: list[str] = []

    def builder(name: str) -> object:
        def build() -> object:
            built.append(name)
            return {"model": name}

        return build

    models = FittedModels({"RBF": "rbf model"}, {"SL": builder("SL"), "BOCK": builder("BOCK")})  # type: ignore[dict-item]
    assert len(models) == 3 and built == []
    # iterating while reading (which builds) sees each name once
    assert [(name, models[name]) for name in models] == [
        ("RBF", "rbf model"),
        ("SL", {"model": "SL"}),
        ("BOCK", {"model": "BOCK"}),
    ]
    assert built == ["SL", "BOCK"]
    assert models["SL"] is models["SL"] and built == ["SL", "BOCK"]  # built once
    state = OutcomeState(Population(start_candidates(), size=5), fitted_models=models)
    state.drop("BOCK")
    assert sorted(state.fitted_models) == ["RBF", "SL"]
    lazy = FittedModels(builders={"x": builder("x")})  # type: ignore[dict-item]
    del lazy["x"]
    assert list(lazy) == [] and built == ["SL", "BOCK"]  # dropped unbuilt: never built


def _history_limited_run(limit: int, reload: Path | None = None) -> list[tuple[Any, ...]]:
    """A tiny run with ``history_limit=limit`` (saved and reloaded before every BO round
    with ``reload``): each round's choice, units, population and scores, and the arms."""
    from ax.api import Client

    from ax_kernel_discovery import kernel_discovery_generation_strategy, surrogate_of
    from ax_kernel_discovery.testing import TINY_ACQUISITION, unit_box_client

    config = {
        "population_size": 3,
        "proposals_per_round": 0,
        "fit_maxiter": 5,
        "background_fits": "off",
        "guard_rounds": 2,
        "history_limit": limit,
    }
    strategy = kernel_discovery_generation_strategy(config, num_sobol=4, **TINY_ACQUISITION)
    client = unit_box_client(3, strategy)
    seen: list[tuple[Any, ...]] = []
    for size in (4, 2, 2, 2, 2):
        if reload is not None and size == 2:
            client.save_to_json_file(str(reload))
            client = Client.load_from_json_file(str(reload))
        torch.manual_seed(len(seen))  # a reloaded Client does not restore its seed
        trials = client.get_next_trials(max_trials=size)
        if size == 2:
            r = surrogate_of(client).history[-1]
            seen.append((r.round, r.chosen, r.guarded, r.heldout_units, r.population, r.scores))
        for index, params in trials.items():
            x = [params[f"x{i}"] for i in range(3)]
            client.complete_trial(index, raw_data={"f": sum((v - 0.3) ** 2 for v in x)})
        seen.append(tuple(sorted(tuple(p.items()) for p in trials.values())))
    return seen


def test_history_limit_changes_nothing_but_memory(tmp_path: Path) -> None:
    """Issue 52 item 9: the guard count, the held-out forecast and the batches read the
    rounds kept in the state, not the trimmed history: ``history_limit=1`` (reloaded
    before every round, too) makes the run ``history_limit=200`` makes; it made every
    round a guard round (AxDefault), as fewer than ``guard_rounds=2`` records were kept."""
    full = _history_limited_run(200)
    rounds = [s for s in full if len(s) == 6]
    assert [r[2] for r in rounds] == [True, True, False, False]  # two guard rounds
    assert all(r[3] == "fit" for r in rounds[1:])  # a forecast scored each round
    assert _history_limited_run(1) == full
    path = tmp_path / "run.json"
    assert _history_limited_run(1, reload=path) == _history_limited_run(200, reload=path)
