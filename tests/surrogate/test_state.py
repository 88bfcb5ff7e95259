"""OutcomeState: one owner of an outcome's population, warm starts, choice and fits."""

from __future__ import annotations

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
