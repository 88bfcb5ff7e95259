"""Baselines: every method builds a strategy; compositional search; storage round trips."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest
import torch
from ax.generators.torch.botorch_modular.surrogate import Surrogate

from ax_kernel_discovery import KernelDiscoveryConfig, KernelDiscoverySurrogate
from ax_kernel_discovery.baselines import (
    FIXED_KERNELS,
    METHODS,
    CompositionalSearchSurrogate,
    UnknownMethodError,
    get_method,
)
from ax_kernel_discovery.baselines.cake import CakeSurrogate
from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import formula, leaf
from ax_kernel_discovery.population import Population, base_candidate, start_candidates
from ax_kernel_discovery.proposers.compositional import (
    CompositionalProposer,
    expand,
    num_base_kernels,
)
from ax_kernel_discovery.strategy import surrogate_of

torch.set_num_threads(1)

SMALL = {"num_sobol": 4, "num_restarts": 2, "raw_samples": 16, "maxiter": 10}


@pytest.mark.parametrize("name", list(METHODS))
def test_each_method_builds_a_strategy(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    extra = {"kernel": base_candidate("sl", origin="offline")} if name == "fixed" else {}
    if name == "cake":  # an LLM method: its setup is checked (a key), none is called here
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
        extra = {"config": KernelDiscoveryConfig(llm_model="gpt-4o")}
    gs = get_method(name, **SMALL, **extra)
    surrogate = surrogate_of(gs)
    if name == "sobol":
        assert surrogate is None and len(gs._nodes) == 1
        return
    assert [n.name for n in gs._nodes] == ["CenterOfSearchSpace", "Sobol", "MBM"]
    assert gs._nodes[1].generator_specs[0].generator_kwargs["seed"] == 0
    bo = gs._nodes[2].generator_specs[0]
    opts = bo.generator_gen_kwargs["model_gen_options"]["optimizer_kwargs"]
    assert (opts["num_restarts"], opts["raw_samples"], opts["options"]["maxiter"]) == (2, 16, 10)
    if name in ("ax_default", "map_saas") or name in FIXED_KERNELS:  # Ax's own strategy
        assert surrogate is None
        spec = bo.generator_kwargs["surrogate_spec"]
        own = {"ax_default": "MBM defaults", "map_saas": "MAP-SAAS"}
        expected = [own[name] if name in own else base_candidate(name).name]
        assert [c.name for c in spec.model_configs] == expected
        return
    kind = {
        "kd": KernelDiscoverySurrogate,
        "compositional": CompositionalSearchSurrogate,
        "cake": CakeSurrogate,
    }.get(name, Surrogate)
    assert isinstance(surrogate, kind)
    if name == "fixed":  # a library kernel
        assert [c.name for c in surrogate.surrogate_spec.model_configs] == ["SL"]
        with pytest.raises(TypeError, match="method 'fixed' needs kernel="):
            get_method("fixed", **SMALL)
    if name == "greedy":
        assert surrogate.surrogate_spec.eval_criterion == "BIC"
        assert [c.name for c in surrogate.surrogate_spec.model_configs] == [
            "RBF",
            "Matern52",
            "RQ",
            "BOCK",
            "SL",
        ]


def _bo_device(name: str, **options: object) -> torch.device:
    extra: dict[str, object] = {"kernel": base_candidate("sl")} if name == "fixed" else {}
    if name == "cake":  # its LLM setup is checked (a key in the environment), none is called
        extra = {"config": KernelDiscoveryConfig(llm_model="gpt-4o")}
    gs = get_method(name, **SMALL, **extra, **options)
    device = gs._nodes[-1].generator_specs[0].generator_kwargs["torch_device"]
    return torch.device("cpu") if device is None else device  # None: Ax's choice, the CPU


BO_METHODS = [m for m in METHODS if m != "sobol"]


@pytest.mark.parametrize("cuda", [False, True])
def test_every_method_resolves_its_device_the_same_way(
    cuda: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By default every method runs where Ax runs, on the CPU, even where CUDA is
    available (issue 30 item 12); ``auto`` is CUDA when available, for all methods."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    cpu = torch.device("cpu")
    assert {m: _bo_device(m) for m in BO_METHODS} == dict.fromkeys(BO_METHODS, cpu)
    expected = torch.device("cuda" if cuda else "cpu")
    assert {m: _bo_device(m, device="auto") for m in BO_METHODS} == dict.fromkeys(
        BO_METHODS, expected
    )
    # an explicit device wins for every method, kd's config included
    assert {m: _bo_device(m, device="cpu") for m in BO_METHODS} == dict.fromkeys(
        BO_METHODS, torch.device("cpu")
    )


def test_method_options_and_errors() -> None:
    gs = get_method("kd", seed=3, config=KernelDiscoveryConfig(population_size=4))
    assert surrogate_of(gs).config.population_size == 4
    assert gs.nodes_by_name["Sobol"].generator_specs[0].generator_kwargs["seed"] == 3
    assert surrogate_of(get_method("compositional")).config.criterion == "bic"
    with pytest.raises(UnknownMethodError, match="valid names: kd, rbf"):
        get_method("nope")
    with pytest.raises(TypeError, match="unexpected options"):
        get_method("rbf", population_size=3)
    with pytest.raises(ValueError, match="num_sobol"):
        get_method("rbf", num_sobol=0)


# --------------------------------------------------------------------------- compositional proposer


def _scored_population(order: list[str]) -> Population:
    pop = Population(start_candidates())
    for i, name in enumerate(order):
        pop.set_score(name, float(i))
    return pop


def test_compositional_first_round_only_scores() -> None:
    out = CompositionalProposer().propose(Population(start_candidates()).summaries(), 10, 10, 0)
    assert out.candidates == []


def test_compositional_expands_best_member() -> None:
    pop = _scored_population(["BOCK", "RBF", "Matern52", "RQ", "SL"])
    out = CompositionalProposer().propose(pop.summaries(), 10, 10, 1)
    assert len(out.candidates) == 10
    assert all(c.parents[0] == "BOCK" for c in out.candidates)
    assert {c.parents[1] for c in out.candidates} == {"RBF", "Matern52", "RQ", "BOCK", "SL"}
    assert {c.spec["op"] for c in out.candidates} == {"sum", "product"}
    assert out.candidates[0].spec == {"op": "sum", "args": [leaf("bock"), leaf("rbf")]}


def test_compositional_flattens_sums_and_respects_depth() -> None:
    s = expand(leaf("rbf"), leaf("rq"), "sum")
    assert expand(s, leaf("sl"), "sum") == {
        "op": "sum",
        "args": [leaf("rbf"), leaf("rq"), leaf("sl")],
    }
    assert expand(s, leaf("sl"), "product") == {"op": "product", "args": [s, leaf("sl")]}
    deep = expand(s, leaf("sl"), "sum")
    assert num_base_kernels(deep) == 3
    pop = Population(
        [KernelCandidate(name="deep", formula=formula(deep), spec=deep), *start_candidates()]
    )
    for i, name in enumerate(["deep", "RQ", "RBF", "Matern52", "BOCK", "SL"]):
        pop.set_score(name, float(i))
    out = CompositionalProposer(max_depth=3).propose(pop.summaries(), 10, 4, 1)
    assert len(out.candidates) == 4 and all(c.parents[0] == "RQ" for c in out.candidates)


def test_compositional_moves_on_and_exhausts() -> None:
    proposer = CompositionalProposer(base_kernels=("rbf",), max_depth=2)
    pop = _scored_population(["RBF", "SL", "RQ", "BOCK", "Matern52"])
    first = proposer.propose(pop.summaries(), 10, 10, 1)
    assert [c.spec["op"] for c in first.candidates] == ["sum", "product"]
    second = proposer.propose(pop.summaries(), 10, 10, 2)  # RBF's expansions were tried: SL next
    assert all(c.parents[0] == "SL" for c in second.candidates) and len(second.candidates) == 2
    for r in range(3, 6):
        proposer.propose(pop.summaries(), 10, 10, r)
    last = proposer.propose(pop.summaries(), 10, 10, 6)
    assert last.candidates == [] and "exhausted" in last.rejections[0].reason


# --------------------------------------------------------------------------- hyperparameter reuse


# --------------------------------------------------------------------------- storage round trip


def _tiny_client(method: str, **options):  # type: ignore[no-untyped-def]
    from ax.api import Client
    from ax.api.configs import RangeParameterConfig
    from ax.utils.common.logger import set_ax_logger_levels

    set_ax_logger_levels(logging.WARNING)
    client = Client()
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(3)
        ]
    )
    client.configure_optimization("-f")
    client.set_generation_strategy(get_method(method, **SMALL, **options))
    return client


def _step(client, n: int) -> None:  # type: ignore[no-untyped-def]
    for k, p in client.get_next_trials(max_trials=n).items():
        x = np.array([p[f"x{i}"] for i in range(3)])
        client.complete_trial(k, raw_data={"f": float(((x - 0.3) ** 2).sum())})


@pytest.mark.parametrize("method", ["rbf", "map_saas", "greedy", "compositional"])
def test_storage_round_trip(method: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ax.api import Client

    options = {}
    if method == "compositional":
        options["config"] = KernelDiscoveryConfig(
            population_size=3, proposals_per_round=2, fit_maxiter=20
        )
    if method == "greedy":
        options["kernels"] = ("rbf", "rq")
    client = _tiny_client(method, **options)
    _step(client, 4)
    _step(client, 1)
    _step(client, 1)
    path = tmp_path / "ckpt.json"
    client.save_to_json_file(str(path))
    loaded = Client.load_from_json_file(str(path))
    s0, s1 = surrogate_of(client._generation_strategy), surrogate_of(loaded._generation_strategy)
    assert type(s1) is type(s0)

    def configs(gs: Any) -> list[str | None]:  # a surrogate's, or Ax's own node's spec
        surrogate = surrogate_of(gs)
        bo = gs.nodes_by_name["MBM"].generator_specs[0].generator_kwargs
        spec = surrogate.surrogate_spec if surrogate is not None else bo["surrogate_spec"]
        return [c.name for c in spec.model_configs]

    assert configs(loaded._generation_strategy) == configs(client._generation_strategy)
    assert configs(client._generation_strategy) != []
    if method == "compositional":
        assert s1.max_depth == 3 and s1.config.criterion == "bic"
        assert len(s1.history) == len(s0.history) == 2
        assert s1.history[-1].accepted  # the second round expanded the best base kernel
        assert isinstance(s1.proposer, CompositionalProposer)
    _step(loaded, 1)  # the reloaded strategy keeps working
    assert len(loaded._experiment.trials) == 7
