"""Strategy builders: Ax's own acquisition settings, checks before any evaluation, the
Sobol-to-BO hand-over, inf values."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from ax.api import Client
from ax.api.configs import RangeParameterConfig
from ax.generators.torch.botorch_modular.optimizer_argparse import optimizer_argparse
from ax.generators.torch.botorch_modular.optimizer_defaults import NUM_RESTARTS, RAW_SAMPLES
from botorch.acquisition.logei import qLogExpectedImprovement, qLogNoisyExpectedImprovement
from botorch.acquisition.multi_objective.logei import qLogNoisyExpectedHypervolumeImprovement
from pydantic import ValidationError

from ax_kernel_discovery import (
    KernelDiscoveryConfig,
    KernelDiscoverySurrogate,
    botorch_step,
    kernel_discovery_generation_strategy,
    library,
    surrogate_of,
)
from ax_kernel_discovery.baselines import methods as baselines
from ax_kernel_discovery.devices import DeviceUnavailableError
from ax_kernel_discovery.llm.setup_check import LLMSetupError
from ax_kernel_discovery.population import base_candidate
from ax_kernel_discovery.runner import RunConfig, method_options
from ax_kernel_discovery.runner.ax_client import split_generator_run
from ax_kernel_discovery.strategy import (
    ACQUISITION_ARGUMENTS,
    BO_NODE_NAME,
    PAPER_ACQUISITION,
    AcquisitionOptions,
    SobolHandOver,
    default_acqf_class,
    optimizer_options,
    sobol_then_botorch,
)
from ax_kernel_discovery.surrogate.new_rows_qlognei import NewRowsqLogNEI
from ax_kernel_discovery.testing import acquisitions_built, unit_box_client
from ax_kernel_discovery.transforms import NonFiniteObjectiveWarning

torch.set_num_threads(1)

DIM = 3
TINY = {"num_restarts": 1, "raw_samples": 16, "maxiter": 5}


def _client(num_sobol: int) -> Client:
    client = Client(random_seed=0)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(DIM)
        ]
    )
    client.configure_optimization("-f")
    config = {"population_size": 3, "proposals_per_round": 0, "fit_maxiter": 5}
    client.set_generation_strategy(
        kernel_discovery_generation_strategy(config, num_sobol=num_sobol, **TINY)  # a dict
    )
    return client


def _f(params: dict[str, float]) -> float:
    return sum((v - 0.3) ** 2 for v in params.values())


def test_the_hand_over_to_bo_returns_the_whole_request(tmp_path: Path) -> None:
    """get_next_trials(4) right after the Sobol design returns 4 BO trials, no warning."""
    client = _client(num_sobol=4)
    sobol = client.get_next_trials(max_trials=4)
    for index, params in sobol.items():
        client.complete_trial(index, raw_data={"f": _f(params)})
    bo = client.get_next_trials(max_trials=4)  # Ax's own cap returned 1 here
    assert len(bo) == 4
    surrogate = surrogate_of(client)
    assert isinstance(surrogate, KernelDiscoverySurrogate) and surrogate.history
    nodes = {client._experiment.trials[i].generator_runs[0]._generation_node_name for i in bo}
    assert len(nodes) == 1 and "Sobol" not in next(iter(nodes))
    # while Sobol trials are pending the node caps as Ax's does: no extra Sobol points
    pending = _client(num_sobol=4)
    assert len(pending.get_next_trials(max_trials=3)) == 3
    assert len(pending.get_next_trials(max_trials=3)) == 1
    # the cap survives Ax's JSON storage
    client.save_to_json_file(str(tmp_path / "run.json"))
    loaded = Client.load_from_json_file(str(tmp_path / "run.json"))
    criteria = loaded._generation_strategy.nodes_by_name["Sobol"].pausing_criteria
    assert [type(c) for c in criteria] == [SobolHandOver]


def test_inf_and_nan_are_kept_out_with_a_warning_naming_the_trial() -> None:
    client = _client(num_sobol=4)
    for index, params in client.get_next_trials(max_trials=4).items():
        value = {1: math.inf, 2: math.nan}.get(index, _f(params))
        client.complete_trial(index, raw_data={"f": value})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trials = client.get_next_trials(max_trials=2)  # Ax alone: DataRequiredError
    assert len(trials) == 2
    messages = {str(w.message) for w in caught if w.category is NonFiniteObjectiveWarning}
    assert any(m.startswith("trial 1: 'f' is inf; kept out of the model") for m in messages)
    assert any(m.startswith("trial 2: 'f' is NaN; kept out of the model") for m in messages)
    assert surrogate_of(client).history[-1].n == 2  # the two finite observations
    # once per trial: the next ask (a new transform, Ax builds one per fit) is quiet about
    # trials 1 and 2 and names only the new one
    for index in trials:
        client.complete_trial(index, raw_data={"f": math.nan})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        client.get_next_trials(max_trials=1)
    again = [str(w.message) for w in caught if w.category is NonFiniteObjectiveWarning]
    assert sorted(m.split(":")[0] for m in again) == sorted(f"trial {i}" for i in trials)


def test_builders_check_the_device_and_the_llm_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(DeviceUnavailableError, match="device 'cuda' was asked for"):
        kernel_discovery_generation_strategy(KernelDiscoveryConfig(device="cuda"))
    with pytest.raises(DeviceUnavailableError, match="CUDA is not available"):
        botorch_step(KernelDiscoverySurrogate(), device="cuda:0")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = KernelDiscoveryConfig(proposer="llm", llm_model="gpt-4o")
    with pytest.raises(LLMSetupError, match="needs OPENAI_API_KEY"):
        kernel_discovery_generation_strategy(llm)
    with pytest.raises(LLMSetupError, match="needs OPENAI_API_KEY"):
        botorch_step(KernelDiscoverySurrogate(llm))
    with pytest.raises(ValueError, match="did you mean 'population_size'"):
        kernel_discovery_generation_strategy({"populaton_size": 5})


def test_surrogate_of_a_client_and_a_strategy() -> None:
    gs = kernel_discovery_generation_strategy({"population_size": 5})
    surrogate = surrogate_of(gs)
    assert isinstance(surrogate, KernelDiscoverySurrogate)
    assert surrogate.config.population_size == 5
    client = _client(num_sobol=2)
    assert isinstance(surrogate_of(client), KernelDiscoverySurrogate)
    with pytest.raises(ValueError, match="set_generation_strategy"):
        surrogate_of(Client())


def _gen_kwargs(gs) -> dict:  # noqa: ANN001
    return gs._nodes[-1].generator_specs[0].generator_gen_kwargs


def test_switching_to_kd_keeps_axs_acquisition_optimizer() -> None:
    gs = kernel_discovery_generation_strategy(KernelDiscoveryConfig(), num_sobol=5)
    assert "model_gen_options" not in _gen_kwargs(gs)  # nothing overrides Ax's defaults
    resolved = optimizer_argparse(
        None, optimizer="optimize_acqf", optimizer_options=optimizer_options()
    )
    assert (resolved["num_restarts"], resolved["raw_samples"]) == (NUM_RESTARTS, RAW_SAMPLES)
    assert "sample_around_best" not in resolved["options"]


def test_the_papers_settings_are_one_argument_away() -> None:
    gs = kernel_discovery_generation_strategy(num_sobol=5, **PAPER_ACQUISITION)
    opts = _gen_kwargs(gs)["model_gen_options"]["optimizer_kwargs"]
    assert opts == {
        "num_restarts": 4,
        "raw_samples": 512,
        "options": {"sample_around_best": True, "sample_around_best_sigma": 0.1, "maxiter": 300},
    }
    resolved = optimizer_argparse(None, optimizer="optimize_acqf", optimizer_options=opts)
    assert (resolved["num_restarts"], resolved["options"]["maxiter"]) == (4, 300)
    # a single override keeps Ax's other defaults
    assert (
        optimizer_argparse(
            None, optimizer="optimize_acqf", optimizer_options=optimizer_options(num_restarts=8)
        )["raw_samples"]
        == RAW_SAMPLES
    )


def _bo_kwargs(gs) -> dict:  # noqa: ANN001
    return gs._nodes[-1].generator_specs[0].generator_kwargs


def _optimizer_kwargs(gs) -> dict:  # noqa: ANN001
    return _gen_kwargs(gs).get("model_gen_options", {}).get("optimizer_kwargs", {})


def test_acquisition_options_are_axs_defaults_or_the_papers() -> None:
    assert AcquisitionOptions().optimizer_kwargs() == {}
    assert AcquisitionOptions().botorch_acqf_class is None  # the surrogate's default
    paper = AcquisitionOptions.paper()
    assert paper == AcquisitionOptions(**PAPER_ACQUISITION)
    assert paper.optimizer_kwargs() == optimizer_options(**PAPER_ACQUISITION)
    assert optimizer_options(**PAPER_ACQUISITION)["options"]["sample_around_best_sigma"] == 0.1
    assert AcquisitionOptions(batch_limit=2).optimizer_kwargs() == {"options": {"batch_limit": 2}}
    # an update applies what is given and keeps the rest
    assert paper.updated(maxiter=50, num_restarts=None) == AcquisitionOptions.paper(maxiter=50)
    assert paper.updated() is paper


def test_the_acquisition_is_given_as_keyword_arguments_the_same_way_everywhere() -> None:
    """Issue 53 item 4: one form, the keyword arguments, in every builder."""
    paper_50 = {**AcquisitionOptions.paper(maxiter=50).optimizer_kwargs()}
    kd = kernel_discovery_generation_strategy(num_sobol=5, **{**PAPER_ACQUISITION, "maxiter": 50})
    fixed = library.fixed_kernel_generation_strategy(
        base_candidate("rbf"), 5, **{**PAPER_ACQUISITION, "maxiter": 50}
    )
    method = baselines.get_method("rbf", num_sobol=5, maxiter=50)  # the paper's by default
    assert _optimizer_kwargs(kd) == _optimizer_kwargs(fixed) == _optimizer_kwargs(method)
    assert _optimizer_kwargs(kd) == paper_50
    # None is "not given": the method keeps the paper's setting
    assert _optimizer_kwargs(baselines.get_method("rbf", num_restarts=None)) == (
        AcquisitionOptions.paper().optimizer_kwargs()
    )
    step = botorch_step(
        KernelDiscoverySurrogate(), botorch_acqf_class=qLogExpectedImprovement, device="cpu"
    )
    assert step.generator_specs[0].generator_kwargs["botorch_acqf_class"] is qLogExpectedImprovement
    gs = kernel_discovery_generation_strategy(
        botorch_acqf_class=qLogExpectedImprovement, acqf_options={"eta": 0.1}
    )
    assert _bo_kwargs(gs)["botorch_acqf_class"] is qLogExpectedImprovement
    assert _bo_kwargs(gs)["botorch_acqf_options"] == {"eta": 0.1}
    fixed = library.fixed_kernel_generation_strategy("rbf", 5, acqf_options={"eta": 0.1})
    assert _bo_kwargs(fixed)["botorch_acqf_options"] == {"eta": 0.1}
    gs = baselines.get_method(
        "ax_default", botorch_acqf_class=qLogExpectedImprovement, acqf_options={"eta": 0.1}
    )
    assert _bo_kwargs(gs)["botorch_acqf_options"] == {"eta": 0.1}
    # a bad setting is refused by name when the strategy is built
    with pytest.raises(ValueError, match="num_restarts"):
        baselines.get_method("ax_default", num_restarts=0)


def test_the_acquisition_object_is_not_a_second_way_in() -> None:
    """The ``acquisition=AcquisitionOptions(...)`` form is gone from the public builders."""
    acq = AcquisitionOptions.paper()
    with pytest.raises(TypeError, match="acquisition"):
        kernel_discovery_generation_strategy(acquisition=acq)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="acquisition"):
        library.fixed_kernel_generation_strategy("rbf", acquisition=acq)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="acquisition"):
        botorch_step(KernelDiscoverySurrogate(), acquisition=acq)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="acquisition"):
        sobol_then_botorch(KernelDiscoverySurrogate(), "kd", acquisition=acq)
    with pytest.raises(TypeError, match="acquisition"):
        baselines.get_method("rbf", acquisition=acq)


def _acqf_built(client: Client, n: int = 2) -> list[type]:
    """The classes of the acquisition functions Ax's Acquisition builds for one ask."""
    metrics = list(client._experiment.optimization_config.metric_names)
    with acquisitions_built() as built:
        trials = client.get_next_trials(max_trials=n)
    for index, params in trials.items():
        value = _f(params)
        client.complete_trial(index, raw_data={m: value * (1 + k) for k, m in enumerate(metrics)})
    return [type(f) for f in built]


def _kd_client(objective: str, config: dict[str, Any] | None = None) -> Client:
    kd = {
        "population_size": 3,
        "proposals_per_round": 0,
        "fit_maxiter": 5,
        "start_kernels": None,  # the start set alone: the acquisition is tested, not SAAS
        **(config or {}),
    }
    strategy = kernel_discovery_generation_strategy(kd, num_sobol=4, **TINY)
    client = unit_box_client(DIM, strategy, objective=objective)
    _acqf_built(client, 4)  # the initial design
    return client


def test_kd_uses_the_acquisition_ax_chooses_for_the_experiment() -> None:
    """Issue 30 item 1: one objective, Ax's qLogNEI (computed by NewRowsqLogNEI, or by
    BoTorch's class under acquisition='botorch'); two objectives, qLogNEHVI as Ax's own
    step builds it, never a scalarized qLogNEI."""
    assert set(_acqf_built(_kd_client("-f"))) == {NewRowsqLogNEI}
    assert set(_acqf_built(_kd_client("-f", {"acquisition": "botorch"}))) == {
        qLogNoisyExpectedImprovement
    }
    moo = _kd_client("-a, -b")
    assert set(_acqf_built(moo)) == {qLogNoisyExpectedHypervolumeImprovement}
    surrogate = surrogate_of(moo)
    # item 2: the objective weights are kept as Ax's matrix, one row per objective
    assert surrogate.state.objective_matrix == [{"a": -1.0, "b": 0.0}, {"a": 0.0, "b": -1.0}]
    assert surrogate.state.objective_weights == {"a": -1.0, "b": -1.0}
    assert {r.outcome for r in surrogate.history} == {"a", "b"}


def test_the_builders_leave_the_acquisition_function_to_ax_unless_named() -> None:
    """kd's strategies name no class (Ax chooses per experiment); an explicit class or the
    keyword argument names one; Ax's own strategies are Ax's."""
    assert _bo_kwargs(kernel_discovery_generation_strategy())["botorch_acqf_class"] is None
    assert _bo_kwargs(baselines.get_method("kd"))["botorch_acqf_class"] is None
    named = kernel_discovery_generation_strategy(botorch_acqf_class=qLogNoisyExpectedImprovement)
    assert _bo_kwargs(named)["botorch_acqf_class"] is qLogNoisyExpectedImprovement
    for name in ("ax_default", "rbf", "bock"):  # Ax's own strategy: Ax chooses
        kwargs = _bo_kwargs(baselines.get_method(name))
        assert "botorch_acqf_class" not in kwargs and "acquisition_class" not in kwargs, name
        assert "surrogate" not in kwargs and "surrogate_spec" in kwargs, name
    assert default_acqf_class(KernelDiscoverySurrogate()) is NewRowsqLogNEI
    botorch = KernelDiscoverySurrogate(KernelDiscoveryConfig(acquisition="botorch"))
    assert default_acqf_class(botorch) is qLogNoisyExpectedImprovement
    assert default_acqf_class(object()) is qLogNoisyExpectedImprovement
    with pytest.raises(ValueError, match="acquisition"):
        KernelDiscoveryConfig(acquisition="fast")  # type: ignore[arg-type]


def test_a_run_config_is_built_with_its_acquisition_settings() -> None:
    cfg = RunConfig(
        problem="branin",
        method="rbf",
        num_restarts=3,
        raw_samples=64,
        maxiter=20,
        sample_around_best=False,
    )
    options = method_options(cfg)
    assert {k: options[k] for k in ACQUISITION_ARGUMENTS if k in options} == {
        "num_restarts": 3,
        "raw_samples": 64,
        "maxiter": 20,
        "sample_around_best": False,
    }
    opts = _optimizer_kwargs(baselines.get_method("rbf", **options))
    assert opts == {
        "num_restarts": 3,
        "raw_samples": 64,
        "options": {"sample_around_best": False, "maxiter": 20},
    }


def test_a_bad_acquisition_setting_is_refused_before_any_evaluation() -> None:
    with pytest.raises(ValidationError, match="num_restarts"):
        kernel_discovery_generation_strategy(num_restarts=0)
    with pytest.raises(ValidationError, match="raw_samples"):
        baselines.get_method("rbf", raw_samples=0)
    with pytest.raises(ValidationError, match="subclass of AcquisitionFunction"):
        library.fixed_kernel_generation_strategy(base_candidate("rbf"), botorch_acqf_class=int)


def test_the_package_s_strategies_share_ax_s_initialization(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kd and a library kernel go through sobol_then_botorch; a fixed kernel of the
    benchmarks is Ax's own strategy; all of them start with Ax's initial design (the
    centre, then Sobol, under Ax's transition rules) and hand over to a node named MBM."""
    import ax_kernel_discovery.strategy as strategy

    built: list[tuple[str, int, int, str]] = []
    builder = strategy.sobol_then_botorch

    def spy(surrogate, name, num_sobol=20, seed=0, **options):  # noqa: ANN001, ANN003, ANN202
        built.append((name, num_sobol, seed, options["generator_name"]))
        return builder(surrogate, name, num_sobol, seed, **options)

    monkeypatch.setattr(strategy, "sobol_then_botorch", spy)  # fixed kernels' builder too
    monkeypatch.setattr(baselines, "sobol_then_botorch", spy)
    gs = kernel_discovery_generation_strategy(KernelDiscoveryConfig(seed=3), num_sobol=7)
    rbf = baselines.get_method("rbf", num_sobol=4, seed=2)
    library.fixed_kernel_generation_strategy(base_candidate("sl"), num_sobol=5, seed=1)
    assert built == [
        ("Sobol+KernelDiscovery", 7, 3, "KernelDiscovery"),
        ("Sobol+fixed:SL", 5, 1, "Fixed-SL"),
    ]
    for strat, threshold in ((gs, 7), (rbf, 4)):
        center, sobol, bo = strat._nodes
        assert (center.name, sobol.name, bo.name) == ("CenterOfSearchSpace", "Sobol", "MBM")
        # Ax's rules: the budget counts every trial; half of them observed suffice
        assert [(c.threshold, c.transition_to) for c in sobol.transition_criteria] == [
            (threshold, "MBM"),
            (threshold // 2, "MBM"),
        ]
    assert [c.threshold for c in gs._nodes[1].pausing_criteria] == [7]
    assert [type(c) for c in gs._nodes[1].pausing_criteria] == [SobolHandOver]
    assert gs._nodes[2].generator_specs[0].generator_kwargs["surrogate"] is surrogate_of(gs)


def test_an_unreported_initialization_trial_does_not_stall_the_run() -> None:
    """Issue 30 item 9: one Sobol trial left RUNNING; kd carries on as Ax's own does."""

    def asks(client: Client) -> list[tuple[int, set[str]]]:
        first = client.get_next_trials(max_trials=4)
        for index, params in list(first.items())[:-1]:  # the last one never reports
            client.complete_trial(index, raw_data={"f": _f(params)})
        out = []
        for _ in range(2):
            trials = client.get_next_trials(max_trials=2)
            experiment = client._experiment
            nodes = {experiment.trials[i].generator_runs[0]._generation_node_name for i in trials}
            out.append((len(trials), nodes))
            for index, params in trials.items():
                client.complete_trial(index, raw_data={"f": _f(params)})
        return out

    ax_own = Client(random_seed=0)
    ax_own.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(DIM)
        ]
    )
    ax_own.configure_optimization("-f")
    ax_own.configure_generation_strategy(initialization_budget=4)
    expected = asks(ax_own)
    assert expected == [(1, {"MBM"}), (2, {"MBM"})]  # Ax's own: one trial, then BO goes on
    assert asks(_client(num_sobol=4)) == expected


def test_one_num_sobol_message_before_any_other_work(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_validation(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("the kernel was validated before num_sobol was checked")

    import ax_kernel_discovery.strategy as strategy

    monkeypatch.setattr(strategy, "model_config_for", no_validation)
    message = "num_sobol must be >= 1 (a GP needs data to start from), got 0"
    for build in (
        lambda: kernel_discovery_generation_strategy(num_sobol=0),
        lambda: baselines.get_method("rbf", num_sobol=0),
        lambda: library.fixed_kernel_generation_strategy(base_candidate("sl"), num_sobol=0),
        lambda: sobol_then_botorch(KernelDiscoverySurrogate(), "Sobol+KD", num_sobol=0),
    ):
        with pytest.raises(ValueError) as err:
            build()
        assert str(err.value) == message


def _first_bo_batch(strategy: Any, dim: int, num_sobol: int, q: int) -> np.ndarray:
    """The initial design, then one joint BO batch of ``q`` points, generated as the
    benchmark runner does (``GenerationStrategy.gen``, one trial per arm, seeded torch)."""
    client = unit_box_client(dim, strategy)
    experiment = client._experiment
    while True:
        done = len(experiment.trials)
        torch.manual_seed(done)
        gr = strategy.gen(experiment=experiment, n=num_sobol - done if done < num_sobol else q)
        gr = gr[0][0]
        if gr._generation_node_name == BO_NODE_NAME:
            return np.array([[a.parameters[f"x{i}"] for i in range(dim)] for a in gr.arms])
        for part in split_generator_run(gr):
            trial = experiment.new_trial(generator_run=part)
            trial.mark_running(no_runner_required=True)
            x = np.array([part.arms[0].parameters[f"x{i}"] for i in range(dim)])
            f = float(np.sum((x - 0.3) ** 2) + 0.3 * np.sin(5.0 * x).sum())
            client.complete_trial(trial.index, {"f": f})


def test_a_guard_round_proposes_the_batch_stock_ax_proposes() -> None:
    """kd's BO step (its transforms, KernelDiscoveryAcquisition computing qLogNEI with
    NewRowsqLogNEI, the optimizer settings) handed Ax's default model in a guard round
    proposes stock Ax's joint batch from the same data; the chosen kernel (no guard
    round) proposes another. What the hold-out study's guard_all diagnostic relies on."""
    dim, num_sobol, q = 6, 8, 3
    options = {"num_sobol": num_sobol, "seed": 0, "num_restarts": 2, "raw_samples": 64}
    small = {"population_size": 3, "proposals_per_round": 0, "fit_maxiter": 20}
    stock = _first_bo_batch(baselines.get_method("ax_default", **options), dim, num_sobol, q)
    guarded = KernelDiscoveryConfig(guard_rounds=1, **small)
    kd = _first_bo_batch(baselines.get_method("kd", config=guarded, **options), dim, num_sobol, q)
    assert stock.shape == kd.shape == (q, dim)
    np.testing.assert_allclose(kd, stock, rtol=0, atol=1e-6)
    chosen = KernelDiscoveryConfig(guard_rounds=0, keep_kernels=(), **small)
    own = _first_bo_batch(baselines.get_method("kd", config=chosen, **options), dim, num_sobol, q)
    assert np.abs(own - stock).max() > 1e-3  # another model, another batch
