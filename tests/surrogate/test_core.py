"""KernelDiscoverySurrogate inside Ax: Client loop, history, storage round trip, failures."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from ax.api import Client
from ax.api.configs import RangeParameterConfig
from ax.generators.torch.botorch_modular.utils import ModelConfig
from ax.utils.common.logger import set_ax_logger_levels
from ax.utils.common.random import with_rng_seed

from ax_kernel_discovery import (
    KernelDiscoveryConfig,
    KernelDiscoverySurrogate,
    kernel_discovery_generation_strategy,
)
from ax_kernel_discovery.analysis import find_surrogate
from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.proposers.base import Proposal, Proposer
from ax_kernel_discovery.surrogate.fitting import FittedKernel
from ax_kernel_discovery.surrogate.round_record import RoundRecord
from ax_kernel_discovery.surrogate.state import OutcomeState, RoundContext
from ax_kernel_discovery.surrogate.steps import Proposed
from ax_kernel_discovery.testing import TINY_ACQUISITION

set_ax_logger_levels(logging.WARNING)

DIM = 20
FAST = {"num_restarts": 2, "raw_samples": 64, "maxiter": 30}
# the in-sample path (LBO-CRPS, no guard round, every member may go: the previous default);
# the default held-out path (prequential, guard, kept kernels) is tested in
# test_surrogate_selection.py
CONFIG = KernelDiscoveryConfig(
    population_size=6,
    proposals_per_round=2,
    fit_maxiter=60,
    seed=0,
    criterion="lbo_crps",
    guard_rounds=0,
    keep_kernels=(),
    start_kernels=None,  # the start set alone: these test the surrogate, not SAAS
)


def objective(params: dict) -> float:
    x = np.array([params[f"x{i}"] for i in range(DIM)])
    return float(((x[:3] - 0.3) ** 2).sum() + 0.1 * np.sin(5 * x[3]))


def make_client(config: KernelDiscoveryConfig = CONFIG) -> Client:
    client = Client(random_seed=0)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(DIM)
        ]
    )
    client.configure_optimization("-f")
    client.set_generation_strategy(
        kernel_discovery_generation_strategy(config, num_sobol=10, **FAST)
    )
    return client


def run_batch(client: Client, q: int) -> None:
    """Ask until q trials are out (Ax hands out one trial at a node transition), then complete."""
    trials: dict = {}
    while len(trials) < q:
        trials.update(client.get_next_trials(max_trials=q - len(trials)))
    for index, params in trials.items():
        client.complete_trial(index, raw_data={"f": objective(params)})


@pytest.fixture(scope="module")
def two_rounds() -> Client:
    client = make_client()
    run_batch(client, 10)
    run_batch(client, 4)
    run_batch(client, 4)
    return client


def test_client_loop_runs_rounds_of_kernel_discovery(two_rounds: Client) -> None:
    s = find_surrogate(two_rounds)
    assert [r.round for r in s.history] == [0, 1]
    assert [r.n for r in s.history] == [10, 14]
    for rec in s.history:
        assert rec.chosen is not None
        assert rec.chosen == min(rec.scores, key=rec.scores.get), (
            "chosen is not the LOO-CRPS minimizer"
        )
        assert rec.chosen_score == pytest.approx(rec.scores[rec.chosen])
        assert set(rec.accepted) <= set(rec.proposed)
        assert len(rec.proposed) == 2
        assert {"propose", "validate", "fit_and_score", "total"} <= set(rec.timings)
        assert all(np.isfinite(v) and v > 0 for v in rec.scores.values())
    assert len(s.population) <= CONFIG.population_size
    assert all(m.score is not None for m in s.population)
    assert [m.score for m in s.population] == sorted(m.score for m in s.population)
    assert s.state.objective_weights == {"f": -1.0}, (
        "the acquisition did not report the objective direction"
    )
    assert s.history[1].previous_improved is not None
    # the chosen kernel's model is the one Ax used: each BO trial's generator run names
    # the choice of the round that generated it (trials 10-13: round 0, 14-17: round 1)
    trials = two_rounds._experiment.trials
    used = [trials[i].generator_runs[0].gen_metadata.get("models_used") for i in range(10, 18)]
    chosen = [rec.chosen for rec in s.history]
    assert used == [[{"f": chosen[0]}]] * 4 + [[{"f": chosen[1]}]] * 4
    assert len(two_rounds._experiment.trials) == 18


def test_json_save_load_keeps_population_and_continues(two_rounds: Client, tmp_path: Path) -> None:
    s = find_surrogate(two_rounds)
    path = tmp_path / "run.json"
    two_rounds.save_to_json_file(str(path))
    loaded = Client.load_from_json_file(str(path))
    s2 = find_surrogate(loaded)
    assert isinstance(s2, KernelDiscoverySurrogate)
    assert s2 is not s
    assert [m.name for m in s2.population] == [m.name for m in s.population]
    assert [m.score for m in s2.population] == pytest.approx([m.score for m in s.population])
    assert [m.formula for m in s2.population] == [m.formula for m in s.population]
    assert len(s2.history) == len(s.history) and s2.state.round_index == s.state.round_index
    assert s2.config == s.config
    run_batch(loaded, 4)
    assert len(s2.history) == 3 and s2.history[-1].round == 2 and s2.history[-1].n == 18
    survivors = set(m.name for m in s.population) & set(s2.history[-1].scores)
    assert survivors, "the reloaded run did not start from the saved population"


class _Exploding(Proposer):
    name = "exploding"

    def propose(self, members, dim, num_proposals, round_index):  # type: ignore[no-untyped-def]
        raise RuntimeError("LLM unreachable")


class _BadCode(Proposer):
    name = "badcode"

    def propose(self, members, dim, num_proposals, round_index):  # type: ignore[no-untyped-def]
        code = (
            "import torch\nfrom gpytorch.kernels import Kernel\n"
            "class Bad(Kernel):\n"
            "    def __init__(self, ard_num_dims=None, **kw):\n        super().__init__(**kw)\n"
            "    def forward(self, x1, x2, diag=False, **params):\n"
            "        d = torch.cdist(x1, x2)\n        return torch.cos(3.14159 * d ** 2) + torch.eye(x1.size(-2))\n"
        )
        return Proposal(
            candidates=[
                KernelCandidate(
                    name="bad", formula="cos(pi d^2) + I", origin="discovery", code=code
                )
            ],
            rejections=[Rejection(name="garbage", stage="parse", reason="no formula block")],
        )


@pytest.mark.parametrize("proposer", [_Exploding(), _BadCode()], ids=["raises", "bad-code"])
def test_bad_proposals_are_recorded_and_the_run_goes_on(proposer: Proposer) -> None:
    client = make_client(
        KernelDiscoveryConfig(population_size=5, proposals_per_round=1, fit_maxiter=40)
    )
    find_surrogate(client).proposing.proposer = proposer
    run_batch(client, 10)
    run_batch(client, 2)
    rec = find_surrogate(client).history[-1]
    assert rec.chosen is not None
    reasons = {r.name: r for r in rec.rejected}
    if isinstance(proposer, _Exploding):
        assert (
            reasons["exploding"].stage == "proposal"
            and "LLM unreachable" in reasons["exploding"].reason
        )
    else:
        assert reasons["garbage"].stage == "parse"
        assert reasons["bad"].stage in ("shape", "psd")
        assert "bad" not in [m.name for m in find_surrogate(client).population]
    assert len(client._experiment.trials) == 12


def test_overlap_asks_for_next_rounds_proposals_during_acquisition(
    tmp_path: Path, recording_proposer: Any
) -> None:
    config = KernelDiscoveryConfig(
        population_size=5,
        proposals_per_round=2,
        fit_maxiter=40,
        proposer="llm",
        llm_model="gpt-4o",  # replaced by the recorder; replay needs no key
        llm_mode="replay",
        llm_cache_dir=str(tmp_path),
        overlap_proposals=True,
    )
    client = make_client(config)
    recorder = recording_proposer
    find_surrogate(client).proposing.proposer = recorder
    run_batch(client, 10)
    run_batch(client, 2)
    run_batch(client, 2)
    s = find_surrogate(client)
    assert recorder.calls[0] == (0, "MainThread")
    assert recorder.criteria == {"prequential"}  # prompts name the configured criterion
    assert (1, "MainThread") not in recorder.calls
    assert any(r == 1 and t.startswith("axkd-propose") for r, t in recorder.calls)
    assert s.history[1].prefetched
    assert s.history[1].proposed and all(n.startswith("off_r1_") for n in s.history[1].proposed)
    import copy

    copied = copy.deepcopy(s).proposing  # Ax deep-copies surrogates: no thread state travels
    assert copied._prefetch == {} and copied._executor is None


def test_functional_duplicates_are_rejected_but_iso_twins_are_not() -> None:
    from ax_kernel_discovery.expression import formula, leaf

    s = KernelDiscoverySurrogate(KernelDiscoveryConfig())
    pop = s._new_population()
    # same kernel as the base RBF, written differently (defaults spelled out vs omitted)
    twin = KernelCandidate(name="twin", formula="f", origin="offline", spec={"kernel": "rbf"})
    iso_spec = leaf("rbf", ard=False)
    iso = KernelCandidate(name="iso", formula=formula(iso_spec), origin="offline", spec=iso_spec)
    assert twin.key != pop.get("RBF").candidate.key
    admitted = s.admission.admit([twin, iso], pop, 6)
    assert [c.name for c in admitted.accepted] == ["iso"]
    assert admitted.rejected[0].name == "twin" and admitted.rejected[0].stage == "duplicate"
    assert "Gram matrix" in admitted.rejected[0].reason


@pytest.mark.slow
def test_a_kernel_that_would_fail_on_a_gpu_is_rejected_on_a_cpu_with_its_reason() -> None:
    """Issue 21: acceptance must not differ between CPU and GPU runs (meta-device probe)."""

    corpus = Path(__file__).parents[1] / "kernel_corpus"
    s = KernelDiscoverySurrogate(KernelDiscoveryConfig())
    pop = s._new_population()
    cands = [
        KernelCandidate(
            name=name,
            formula="exp(-d^2 / 2) + 1e-3 I",
            origin="discovery",
            code=(corpus / f"{name}.py").read_text(),
        )
        for name in ("broken_deviceless_nugget", "valid_device_aware_nugget")
    ]
    admitted = s.admission.admit(cands, pop, 6, device=torch.device("cpu"))
    assert [c.name for c in admitted.accepted] == ["valid_device_aware_nugget"]
    (rejection,) = admitted.rejected
    assert (rejection.name, rejection.stage) == ("broken_deviceless_nugget", "device")
    assert "without device=" in rejection.reason


def test_a_dropped_members_twin_may_come_back() -> None:
    s = KernelDiscoverySurrogate(KernelDiscoveryConfig())
    pop = s._new_population()
    twin = KernelCandidate(name="twin", formula="f", origin="offline", spec={"kernel": "rbf"})
    assert s.admission.admit([twin], pop, 6).accepted == ()  # RBF is a member: duplicate
    pop.remove("RBF")
    assert [c.name for c in s.admission.admit([twin], pop, 6).accepted] == ["twin"]


def test_halving_refits_only_the_finalists_and_scores_every_member() -> None:
    config = KernelDiscoveryConfig(
        population_size=6,
        proposals_per_round=2,
        fit_maxiter=30,
        seed=0,
        selection="halving",
        halving_keep=2,
        tie_break="none",  # the best score chooses
    )
    client = make_client(config)
    surrogate = find_surrogate(client)
    refits: list[tuple[str, bool]] = []
    fit_and_score = surrogate.fitter.fit_and_score

    def spy(cand, ctx, *args, refit=True, **kwargs):  # type: ignore[no-untyped-def]
        warm = cand.name in ctx.state.warm
        refits.append((cand.name, refit or not warm))
        return fit_and_score(cand, ctx, *args, refit=refit, **kwargs)

    surrogate.fitter.fit_and_score = spy  # type: ignore[method-assign]
    run_batch(client, 10)
    run_batch(client, 4)  # first BO round: no warm states, every kernel is fitted
    refits.clear()
    run_batch(client, 4)  # second round: members are screened at their warm states
    rec = surrogate.history[-1]
    fitted = [name for name, did_fit in refits if did_fit]
    members = set(rec.scores) - set(rec.proposed)
    screened_only = [name for name in members if name not in fitted]
    # the 2 best *screened* members are refitted, whatever the new kernels scored
    assert rec.selection == "halving" and rec.finalists == 2
    assert len(screened_only) == len(members) - 2
    # a new kernel is fitted once, as full selection fits it (no screen, no refit)
    assert rec.accepted and all(fitted.count(name) == 1 for name in rec.accepted)
    assert rec.chosen in rec.scores and len(rec.scores) >= len(members)
    assert rec.chosen == min(rec.scores, key=rec.scores.get)


def _context(s: KernelDiscoverySurrogate, outcome: str, n: int) -> RoundContext:
    """The context a round of ``s`` on ``n`` points of ``outcome`` hands its steps."""
    from ax.core.search_space import SearchSpaceDigest
    from botorch.utils.datasets import SupervisedDataset

    names = [f"x{i}" for i in range(6)]
    dataset = SupervisedDataset(
        X=torch.rand(n, 6, dtype=torch.float64),
        Y=torch.rand(n, 1, dtype=torch.float64),
        feature_names=names,
        outcome_names=[outcome],
    )
    return RoundContext(
        outcome=outcome,
        state=OutcomeState(s._new_population()),
        dataset=dataset,
        search_space_digest=SearchSpaceDigest(feature_names=names, bounds=[(0.0, 1.0)] * 6),
        round=len(s.history),
        history=[r for r in s.history if r.outcome == outcome],
    )


def _halving(s: KernelDiscoverySurrogate, outcome: str, n: int) -> bool:
    return s.fitter.halving(_context(s, outcome, n))


def test_auto_selection_halves_only_rounds_that_add_few_points() -> None:
    s = KernelDiscoverySurrogate(
        KernelDiscoveryConfig(selection="auto", halving_max_new_fraction=0.1)
    )
    assert not _halving(s, "f", 300)  # first round: nothing to screen with
    s.history.append(RoundRecord(round=0, outcome="f", n=300, dim=6))
    s.history.append(RoundRecord(round=1, outcome="g", n=20, dim=6))
    assert _halving(s, "f", 304)  # 4 new points on 300
    assert _halving(s, "f", 330)  # exactly 10%
    assert not _halving(s, "f", 331)
    assert not _halving(s, "g", 35)  # 15 new points on 20: hyperparameters move
    assert not _halving(s, "f", 250)  # fewer points than last round (new data set)
    assert _halving(KernelDiscoverySurrogate(KernelDiscoveryConfig(selection="halving")), "f", 9)
    assert not _halving(KernelDiscoverySurrogate(KernelDiscoveryConfig(selection="full")), "f", 9)
    default = KernelDiscoverySurrogate()  # auto, halving up to 5% new points
    default.history.append(RoundRecord(round=0, outcome="f", n=300, dim=6))
    assert _halving(default, "f", 304) and not _halving(default, "f", 316)


def test_a_fit_over_fit_timeout_is_rejected_only_when_far_slower_than_the_fastest() -> None:

    s = KernelDiscoverySurrogate(KernelDiscoveryConfig(fit_timeout=60.0, slow_fit_factor=3.0))

    def fitted(**seconds: float) -> dict[str, FittedKernel]:
        # 'screened' was scored at last round's hyperparameters: no fit, no seconds
        names = ("RBF", "SL", "big", "screened")
        return {k: FittedKernel(None, ModelConfig(), 0.1, seconds.get(k)) for k in names}

    ctx = _context(s, "f", 10)
    # every fit needs more than fit_timeout (the Humanoid scale on a CPU)
    kept = s.fitter.drop_slow_fits(fitted(RBF=88.0, SL=137.0, big=300.0), ctx)
    # 300 s > 3 x 88 s; 'screened' had no fit
    assert set(kept.models) == {"RBF", "SL", "screened"}
    assert [(r.name, r.stage) for r in kept.report.rejected] == [("big", "timeout")]
    assert "264.0s" in kept.report.rejected[0].reason
    assert kept.report.fit_capped == ("RBF", "SL", "big")
    # at a normal scale, fit_timeout is the limit
    kept = s.fitter.drop_slow_fits(fitted(RBF=0.5, SL=59.0, big=61.0), _context(s, "f", 10))
    assert set(kept.models) == {"RBF", "SL", "screened"}
    assert kept.report.fit_capped == ("big",)


def test_a_round_where_every_fit_passes_fit_timeout_still_chooses_a_kernel() -> None:
    config = KernelDiscoveryConfig(
        population_size=4, proposals_per_round=1, fit_maxiter=5, seed=0,
        fit_timeout=1e-6, slow_fit_factor=1e9,
    )  # fmt: skip
    client = make_client(config)
    run_batch(client, 10)
    run_batch(client, 2)
    rec = find_surrogate(client).history[-1]
    assert rec.chosen is not None and len(rec.scores) >= 4
    assert not [r for r in rec.rejected if r.stage in ("timeout", "fit")]


def test_parsimony_prefers_fewer_hyperparameters_among_near_ties() -> None:
    class _Model:
        def __init__(self, k: int) -> None:
            import torch

            self.covar_module = torch.nn.Linear(k, 1, bias=False)

    models = {
        "big": FittedKernel(_Model(50), ModelConfig(), 0.100),  # type: ignore[arg-type]
        "small": FittedKernel(_Model(2), ModelConfig(), 0.101),  # type: ignore[arg-type]
    }
    loose = KernelDiscoverySurrogate(KernelDiscoveryConfig(parsimony_tolerance=0.01))
    assert loose.chooser.choose(models) == "small"
    assert KernelDiscoverySurrogate().chooser.choose(models) == "big"


def test_lbo_crps_scores_the_last_batches_a_round_added() -> None:
    from ax_kernel_discovery.surrogate import RoundRecord

    s = KernelDiscoverySurrogate(KernelDiscoveryConfig(criterion="lbo_crps", score_batches=2))
    assert s.fitter._score_blocks(_context(s, "f", 20), 20) is None  # initial design: LOO
    s.history = [RoundRecord(round=i, outcome="f", n=n, dim=3) for i, n in enumerate([20, 35, 50])]
    s.history.append(RoundRecord(round=0, outcome="g", n=27, dim=3))  # another outcome
    blocks = s.fitter._score_blocks(_context(s, "f", 65), 65)
    assert [b.tolist() for b in blocks] == [list(range(35, 50)), list(range(50, 65))]
    loo = KernelDiscoverySurrogate(KernelDiscoveryConfig(criterion="loo_crps"))
    loo.history = s.history
    assert loo.fitter._score_blocks(_context(loo, "f", 65), 65) is None  # loo_crps: no blocks


@pytest.mark.slow  # the blocks are the unit test's above; this is the whole Client loop
def test_lbo_crps_scores_the_last_batch_in_a_client_run() -> None:
    from ax_kernel_discovery.selection import lbo_crps, prior_covariance

    config = CONFIG.model_copy(update={"criterion": "lbo_crps", "score_batches": 1})
    client = make_client(config)
    run_batch(client, 10)
    run_batch(client, 4)
    run_batch(client, 4)
    sur = find_surrogate(client)
    rec = sur.history[-1]
    assert rec.n == 14 and rec.chosen == min(rec.scores, key=rec.scores.get)
    K, y = prior_covariance(sur.fitted_models["f"][rec.chosen])
    expected = float(lbo_crps(K, y, [torch.arange(10, 14)]))
    assert rec.chosen_score == pytest.approx(expected, rel=1e-6)


@pytest.mark.slow  # the inheritance itself: tests/test_inheritance.py; this is a Client run
def test_new_composites_inherit_their_members_fitted_parameters() -> None:
    client = make_client(CONFIG.model_copy(update={"inherit_parameters": True}))
    for q in (10, 4, 4, 4):
        run_batch(client, q)
    s = find_surrogate(client)
    inherited = [r for r in s.history if r.fit_starts.get("inherited")]
    assert inherited, [r.proposed for r in s.history]
    for rec in inherited:
        assert rec.chosen == min(rec.scores, key=rec.scores.get)
        assert set(rec.accepted) <= set(rec.scores)  # every inheriting kernel was fitted


def test_the_round_log_line_names_the_outcome_and_no_nan(
    kd_caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 52 item 19: in a multi-objective run each outcome's line names it (it read
    "round 1: chose RBF" then "round 1: chose SL"), and a guard round says it is one
    (it logged "(nan)")."""
    from ax_kernel_discovery import kernel_discovery_generation_strategy
    from ax_kernel_discovery.testing import TINY_ACQUISITION, unit_box_client

    config = {"population_size": 3, "proposals_per_round": 0, "fit_maxiter": 5}
    strategy = kernel_discovery_generation_strategy(config, num_sobol=4, **TINY_ACQUISITION)
    client = unit_box_client(3, strategy, objective="-a, -b")
    with kd_caplog.at_level(logging.INFO, logger="ax_kernel_discovery.surrogate.core"):
        for size in (4, 2, 2):
            for index, p in client.get_next_trials(max_trials=size).items():
                a = sum((v - 0.3) ** 2 for v in p.values())
                client.complete_trial(index, raw_data={"a": a, "b": 1.0 - a + 0.1 * p["x0"]})
    lines = [r.getMessage() for r in kd_caplog.records if "kernel discovery round" in r.message]
    assert lines[:2] == [
        f"kernel discovery round 0: chose AxDefault for {o} (a guard round: Ax's default model)"
        for o in ("a", "b")
    ]
    assert [line.split(" for ")[1].split(" ")[0] for line in lines[2:]] == ["a", "b"]
    assert all(" (score " in line for line in lines[2:])
    assert not any("nan" in line for line in lines)


# ------------------------------------------------ a round cut short (issue 52 items 14, 15)

CUT_CONFIG = KernelDiscoveryConfig(
    population_size=3, proposals_per_round=1, fit_maxiter=5, seed=0, background_fits="off"
)


def _cut_client() -> Client:
    client = Client()  # no random_seed: a reloaded Client has none; _ask seeds every ask
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(3)
        ]
    )
    client.configure_optimization("-f")
    client.set_generation_strategy(
        kernel_discovery_generation_strategy(CUT_CONFIG, num_sobol=4, **TINY_ACQUISITION)
    )
    return client


def _ask(client: Client, q: int = 2) -> None:
    """Ask (seeded alike in every run) until ``q`` trials are out, then complete them with
    integer values (they survive Ax's JSON round trip exactly: see tests/test_storage.py)."""
    trials: dict = {}
    while len(trials) < q:
        with with_rng_seed(len(client._experiment.trials)):
            trials.update(client.get_next_trials(max_trials=q - len(trials)))
    for index, params in trials.items():
        value = round(1e6 * sum((v - 0.3) ** 2 for v in params.values()))
        client.complete_trial(index, raw_data={"f": float(value)})


def _cut_run(
    monkeypatch: pytest.MonkeyPatch | None = None, resume: Callable[[Client], Client] | None = None
) -> Client:
    """Sobol, then three rounds of kernel discovery. With ``monkeypatch``, the proposer of
    round 1 raises ``KeyboardInterrupt`` once (Ctrl-C during a slow LLM call); the run
    then goes on with ``resume(client)`` (default: the same client), asking again."""
    client = _cut_client()
    _ask(client, 4)
    _ask(client)
    if monkeypatch is not None:
        s = find_surrogate(client)
        before = s.state_dict_json()
        host, real = s.proposing, s.proposing.propose

        def interrupted(*args: Any, **kwargs: Any) -> Any:
            monkeypatch.setattr(host, "propose", real)
            raise KeyboardInterrupt

        monkeypatch.setattr(host, "propose", interrupted)
        with pytest.raises(KeyboardInterrupt):
            _ask(client)
        # the round left no trace: the state is the one before it, round 1 is next
        assert s.state.round_index == 1 and [r.round for r in s.history] == [0]
        assert s.state_dict_json() == before
        client = resume(client) if resume is not None else client
    _ask(client)
    _ask(client)
    return client


@pytest.fixture(scope="module")
def never_cut() -> Client:
    return _cut_run()


def _assert_same_run(a: Client, b: Client) -> None:
    ha, hb = find_surrogate(a).history, find_surrogate(b).history
    assert [r.round for r in hb] == [r.round for r in ha] == [0, 1, 2]
    assert [r.n for r in hb] == [r.n for r in ha] == [4, 6, 8]
    for ra, rb in zip(ha, hb, strict=True):
        assert (rb.chosen, rb.struck, rb.proposed, rb.population) == (
            ra.chosen,
            ra.struck,
            ra.proposed,
            ra.population,
        )
        assert rb.scores == ra.scores
    arms = [[t.arms[0].parameters for t in c._experiment.trials.values()] for c in (a, b)]
    assert arms[1] == arms[0]


def test_an_interrupted_round_runs_again_on_the_retried_ask(
    never_cut: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 52 item 14: Ctrl-C early in round 1 lost it (the counter moved on, no record)
    and the retried ask, which Ax answers without a fit (same data), used round 0's model:
    history [0, 2]. Now the retry runs round 1 on the current data: the same run."""
    _assert_same_run(never_cut, _cut_run(monkeypatch))


def test_a_state_saved_after_an_interrupt_resumes_as_the_run_never_cut(
    never_cut: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 52 item 15: saved in the ``except KeyboardInterrupt`` handler and resumed, the
    run repeated a round on the same data (by the in-sample fallback). Now the saved
    state is the one before the round, and the resumed run is the run never cut."""
    path = tmp_path / "cut.json"

    def save_and_load(client: Client) -> Client:
        client.save_to_json_file(str(path))
        return Client.load_from_json_file(str(path))

    _assert_same_run(never_cut, _cut_run(monkeypatch, save_and_load))


def test_an_interrupt_in_one_outcome_s_round_undoes_the_fit_s_other_rounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two objectives, one fit: Ctrl-C in the second outcome's round, after the first
    outcome's round was done and its other kernels handed to a worker, undoes both; the
    retried ask runs both rounds on the current data."""
    config = CUT_CONFIG.model_copy(update={"background_fits": "on"})
    client = Client()
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(3)
        ]
    )
    client.configure_optimization("-a, -b")
    client.set_generation_strategy(
        kernel_discovery_generation_strategy(config, num_sobol=4, **TINY_ACQUISITION)
    )

    def ask() -> None:
        for index, params in client.get_next_trials(max_trials=2).items():
            a = sum((v - 0.3) ** 2 for v in params.values())
            client.complete_trial(index, raw_data={"a": a, "b": 1.0 - a})

    while len(client._experiment.trials) < 4:
        ask()
    ask()
    s = find_surrogate(client)
    before = s.state_dict_json()
    host, real = s.proposing, s.proposing.propose
    outcomes: list[str] = []

    def interrupted(ctx: RoundContext) -> Proposed:
        outcomes.append(ctx.outcome)
        if len(outcomes) == 2:
            monkeypatch.setattr(host, "propose", real)
            raise KeyboardInterrupt
        return real(ctx)

    monkeypatch.setattr(host, "propose", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ask()
    assert outcomes == ["a", "b"] and not s.runner.open_rounds
    assert s.state_dict_json() == before  # outcome a's round is undone too
    ask()
    assert [(r.round, r.outcome, r.n) for r in s.history] == [
        (0, "a", 4),
        (0, "b", 4),
        (1, "a", 6),
        (1, "b", 6),
    ]
