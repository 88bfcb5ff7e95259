"""KernelFitter: the fit and score steps, run without an Ax surrogate."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.fit import fit_gpytorch_mll
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from gpytorch.mlls import ExactMarginalLogLikelihood
from linear_operator.utils.errors import NanError, NotPSDError

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.errors import UNEXPECTED, UnexpectedErrorWarning, strict_errors
from ax_kernel_discovery.gp import KernelDiscoveryGP
from ax_kernel_discovery.population import Population, base_candidate, start_candidates
from ax_kernel_discovery.selection import loo_crps, prior_covariance
from ax_kernel_discovery.selection_rules import LOOCRPS
from ax_kernel_discovery.surrogate.choice import Chooser
from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel
from ax_kernel_discovery.surrogate.fitting import (
    MEMBER_FIT_ATTEMPTS,
    FitJob,
    FitStart,
    KernelFitter,
    candidate_model_config,
    fit_in_worker,
)
from ax_kernel_discovery.surrogate.state import OutcomeState, RoundContext

DIM = 4
NAMES = [f"x{i}" for i in range(DIM)]


def build(
    dataset: SupervisedDataset,
    search_space_digest: SearchSpaceDigest,
    model_config: ModelConfig,
    state_dict: Mapping[str, torch.Tensor] | None,
    refit: bool,
) -> Model:
    """A model builder without Ax: the candidate's GP, fitted by BoTorch."""
    options = model_config.covar_module_options or {}
    covar = DiscoveredKernel(options["candidate"], dataset.X.shape[-1])
    model = KernelDiscoveryGP(dataset.X, dataset.Y, covar_module=covar)
    if state_dict is not None:
        model.load_state_dict(state_dict, strict=False)
    if refit:
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model.eval()


def _context(pop: Population, n: int = 14) -> RoundContext:
    X = torch.quasirandom.SobolEngine(DIM, scramble=True, seed=0).draw(n, dtype=torch.float64)
    y = (X - 0.4).pow(2).sum(-1, keepdim=True)
    dataset = SupervisedDataset(
        X, (y - y.mean()) / y.std(), feature_names=NAMES, outcome_names=["f"]
    )
    return RoundContext(
        outcome="f",
        state=OutcomeState(pop),
        dataset=dataset,
        search_space_digest=SearchSpaceDigest(feature_names=NAMES, bounds=[(0.0, 1.0)] * DIM),
        round=0,
    )


def test_the_fitter_fits_and_scores_with_any_model_builder() -> None:
    config = KernelDiscoveryConfig(criterion="loo_crps", fit_maxiter=20, guard_rounds=0)
    fitter = KernelFitter(config.fit_options(), build)
    pop = Population(start_candidates()[:3], size=3)
    ctx = _context(pop)
    fits = fitter.fit_all([m.candidate for m in pop], ctx)
    models = dict(fits.models)
    assert set(models) == {"RBF", "Matern52", "RQ"}
    assert fits.report.selection == "full" and fits.report.rejected == ()
    for name, fitted in models.items():
        assert fitted.config.name == name and fitted.model is not None
        K, y = prior_covariance(fitted.model)
        # the score is the criterion of the fit, and the fit's seconds are kept with it
        assert fitted.score == float(loo_crps(K, y).detach())
        assert fitted.refit_seconds == ctx.timings[f"refit:{name}"] > 0
        assert set(ctx.state.warm[name]) == {k for k, _ in fitted.model.named_parameters()}
    # the choice is another step's (choice.py): the best score, or Ax's default model
    choice = Chooser(config.choice_options()).select(models, ctx)
    assert choice.names == [min(models, key=lambda k: models[k].score)] and not choice.guarded
    guarded = Chooser(config.model_copy(update={"guard_rounds": 1}).choice_options())
    assert guarded.select(models, ctx).guarded  # the first BO round: Ax's default model


def test_a_start_rule_decides_where_a_new_kernels_fit_begins() -> None:
    seen: list[tuple[str, list[str], list[str]]] = []

    def rule(cand, members, warm, dim):  # type: ignore[no-untyped-def]
        seen.append((cand.name, [m.name for m in members], sorted(warm)))
        return FitStart({}, warm_steps=True, label="custom")

    config = KernelDiscoveryConfig(fit_maxiter=5)
    fitter = KernelFitter(config.fit_options(), build, start_rule=rule)
    pop = Population(start_candidates()[:1], size=2)
    ctx = _context(pop)
    ctx.state.warm["RBF"] = {}
    new = KernelCandidate.model_validate(base_candidate("matern52").model_dump())
    fits = fitter.fit_and_score(new, ctx, members=[pop.get("RBF").candidate])
    assert seen == [("Matern52", ["RBF"], ["RBF"])]
    assert fits.report.fit_starts == {"custom": 1} and "custom" not in ctx.timings
    assert KernelFitter(config.fit_options(), build).start_rule is None  # inherit_parameters is off
    assert KernelFitter(
        config.model_copy(update={"inherit_parameters": True}).fit_options(), build
    ).start_rule


def test_a_worker_fit_returns_the_exact_state_or_the_error() -> None:
    ctx = _context(Population(start_candidates()[:1], size=1))
    rbf = start_candidates()[0]
    job = FitJob("RBF", candidate_model_config(rbf, maxiter=20), None, True)
    state, seconds, error = fit_in_worker(ctx.dataset, ctx.search_space_digest, job)
    assert error is None and seconds > 0 and state is not None
    assert all(v.dtype == torch.float64 for v in state.values())  # rebuilt exactly
    bad = rbf.model_copy(update={"name": "bad", "spec": {"kernel": "nope"}})
    job = FitJob("bad", candidate_model_config(bad), None, True)
    state, _, error = fit_in_worker(ctx.dataset, ctx.search_space_digest, job)
    assert state is None and error is not None and "nope" in error


def test_members_are_fitted_with_kds_attempts() -> None:
    config = KernelDiscoveryConfig(criterion="loo_crps", fit_maxiter=5, guard_rounds=0)
    pop = Population(start_candidates()[:1], size=1)
    models = KernelFitter(config.fit_options(), build).fit_all(
        [m.candidate for m in pop], _context(pop)
    )
    fit_options = models.models["RBF"].config.mll_options["fit_options"]
    assert fit_options["max_attempts"] == MEMBER_FIT_ATTEMPTS
    assert "lbfgs_memory" not in fit_options  # scipy's memory unless the config sets one


def test_members_are_fitted_with_the_configs_lbfgs_memory() -> None:
    config = KernelDiscoveryConfig(
        criterion="loo_crps", fit_maxiter=5, guard_rounds=0, fit_lbfgs_memory=100
    )
    pop = Population(start_candidates()[:2], size=2)
    fitter = KernelFitter(config.fit_options(), build)
    ctx = _context(pop)
    models = fitter.fit_all([m.candidate for m in pop], ctx)
    for fitted in models.models.values():  # cold starts, then a warm start below
        assert fitted.config.mll_options["fit_options"]["lbfgs_memory"] == 100
    job = fitter._prepare(pop.members[0].candidate, ctx, True, None, (), converge=True)
    assert job.config.mll_options["fit_options"] == {
        "timeout_sec": None,
        "maxiter": None,
        "max_attempts": MEMBER_FIT_ATTEMPTS,
        "lbfgs_memory": 100,
    }


def _slowed(clock: Callable[[], float], factor: float) -> Callable[[], float]:
    """``clock`` running ``factor`` times faster: every interval reads ``factor`` times
    longer, as on a machine ``factor`` times slower."""
    start = clock()
    return lambda: start + (clock() - start) * factor


def _clocked_run(
    monkeypatch: pytest.MonkeyPatch, factor: float, **fields: Any
) -> tuple[list[tuple[Any, ...]], list[Any]]:
    """A tiny Client run under the defaults (but ``fit_maxiter=5``, for speed, and the
    fits in this process), with every clock the code reads slowed ``factor`` times: each
    round's choice, population, admissions, rejections, scores and capped fits, and each
    batch's arms."""
    from ax_kernel_discovery import kernel_discovery_generation_strategy, surrogate_of
    from ax_kernel_discovery.testing import TINY_ACQUISITION, unit_box_client

    config = {
        "population_size": 3,
        "proposals_per_round": 1,
        "fit_maxiter": 5,
        "background_fits": "off",
    }
    strategy = kernel_discovery_generation_strategy(
        {**config, **fields}, num_sobol=4, **TINY_ACQUISITION
    )
    client = unit_box_client(3, strategy)
    arms = []
    with monkeypatch.context() as m:
        if factor != 1:
            for name in ("perf_counter", "monotonic", "time"):
                m.setattr(time, name, _slowed(getattr(time, name), factor))
        for size in (4, 2, 2, 2):
            trials = client.get_next_trials(max_trials=size)
            for index, params in trials.items():
                x = [params[f"x{i}"] for i in range(3)]
                value = sum((v - 0.3) ** 2 for v in x) + 0.1 * math.sin(9 * x[0])
                client.complete_trial(index, raw_data={"f": value})
            arms.append(sorted(tuple(p.values()) for p in trials.values()))
    history = surrogate_of(client).history
    rounds = [
        (r.round, r.chosen, r.population, r.accepted, r.rejected, r.scores, r.fit_capped)
        for r in history
    ]
    return rounds, arms


def test_no_decision_reads_the_clock_under_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 52 item 11: the same seed and code make the same run on a machine 10^5
    times slower. Fits were capped at fit_timeout=60 s of wall time and kernels rejected
    as slow ("fit took 60.4s > 60.0s"); by default the fits are bounded by iterations only
    (fit_maxiter, else L-BFGS-B's own cap) and no rule reads the clock."""
    rounds, arms = _clocked_run(monkeypatch, 1.0)
    assert len(rounds) == 3 and any(r[3] for r in rounds)  # new kernels were fitted
    assert _clocked_run(monkeypatch, 1e5) == (rounds, arms)


def test_an_opt_in_wall_clock_cap_is_named_in_the_record_when_it_fires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``fit_timeout`` (opt-in) caps each fit's wall time: on a clock 10^5 times slow the
    fits reach 5 s, and each round's record names the capped fits (``fit_capped``)."""
    rounds, _ = _clocked_run(monkeypatch, 1e5, fit_timeout=5.0)
    assert all(r[6] for r in rounds)  # every round names its capped fits
    for r in rounds:
        assert set(r[6]) <= {*r[2], *r[3], *r[5], *(x.name for x in r[4])}
        slow = [x.reason for x in r[4] if x.stage == "timeout"]
        assert all("fit_timeout=5.0s" in reason for reason in slow)


# --- errors by kind (issue 49 item 5): a kernel's failure is a rejection, a bug is not ----


def _raising_builder(error: Exception) -> Callable[..., Model]:
    def builder(*args: Any) -> Model:
        raise error

    return builder


@pytest.mark.parametrize(
    "error",
    [NotPSDError("not PSD"), NanError("NaNs"), torch.linalg.LinAlgError("singular")],
    ids=type,
)
def test_a_kernel_that_fails_numerically_is_a_rejection_even_in_strict_mode(
    error: Exception,
) -> None:
    ctx = _context(Population(start_candidates()[:1], size=1))
    fitter = KernelFitter(
        KernelDiscoveryConfig(fit_maxiter=5).fit_options(), _raising_builder(error)
    )
    fits = fitter.fit_and_score(start_candidates()[0], ctx)
    assert fits.models == {}
    (rejection,) = fits.report.rejected
    assert rejection.stage == "fit" and type(error).__name__ in rejection.reason


def test_a_kernel_whose_own_code_raises_is_a_rejection_even_in_strict_mode() -> None:
    """A TypeError in an LLM kernel's forward is the kernel's failure, not kd's bug."""
    code = (
        "import torch\nfrom gpytorch.kernels import Kernel\n\n\nclass Raising(Kernel):\n"
        "    def __init__(self, ard_num_dims=None, **kw):\n        super().__init__(**kw)\n\n"
        "    def forward(self, x1, x2, diag=False, **params):\n"
        "        return x1 @ 'not a tensor'\n"
    )
    cand = KernelCandidate(name="raising", formula="k", origin="discovery", code=code)
    ctx = _context(Population(start_candidates()[:1], size=1))
    fitter = KernelFitter(KernelDiscoveryConfig(fit_maxiter=5).fit_options(), build)
    fits = fitter.fit_and_score(cand, ctx)
    assert fits.get(cand.name) is None
    (rejection,) = fits.report.rejected
    assert rejection.stage == "fit" and "TypeError" in rejection.reason


def _buggy_criterion(monkeypatch: pytest.MonkeyPatch, calls: int) -> None:
    """``loo_crps`` raises ZeroDivisionError in its first ``calls`` calls (a bug in the
    selection rule's fit score)."""
    real = LOOCRPS.fit_score
    count = [0]

    def buggy(self: LOOCRPS, *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        if count[0] <= calls:
            raise ZeroDivisionError("division by zero")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LOOCRPS, "fit_score", buggy)


def test_a_bug_in_the_criterion_raises_in_strict_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    _buggy_criterion(monkeypatch, calls=1)
    config = KernelDiscoveryConfig(criterion="loo_crps", fit_maxiter=5)
    pop = Population(start_candidates()[:2], size=2)
    with pytest.raises(ZeroDivisionError):
        KernelFitter(config.fit_options(), build).fit_all([m.candidate for m in pop], _context(pop))


def test_a_bug_in_the_criterion_warns_and_is_recorded_in_a_users_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _buggy_criterion(monkeypatch, calls=1)
    config = KernelDiscoveryConfig(criterion="loo_crps", fit_maxiter=5)
    pop = Population(start_candidates()[:3], size=3)
    ctx = _context(pop)
    with (
        strict_errors(False),
        pytest.warns(UnexpectedErrorWarning, match=r"scoring \(loo_crps\): ZeroDivisionError"),
    ):
        fits = KernelFitter(config.fit_options(), build).fit_all([m.candidate for m in pop], ctx)
    assert set(fits.models) == {"Matern52", "RQ"}  # the round goes on with the others
    (rejection,) = fits.report.rejected
    assert (rejection.name, rejection.stage) == ("RBF", UNEXPECTED)
    assert "ZeroDivisionError" in rejection.reason


def test_a_worker_fit_raises_a_bug_for_the_parent_to_fit_and_classify(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In a worker a kernel failure is an error message (a rejection), a bug fails the
    call: the parent then fits the kernel in its own process (:meth:`_fit_jobs`)."""
    from ax.generators.torch.botorch_modular.surrogate import Surrogate

    ctx = _context(Population(start_candidates()[:1], size=1))
    job = FitJob("RBF", candidate_model_config(start_candidates()[0], maxiter=5), None, True)
    for error in (NotPSDError("not PSD"), KeyError("a bug")):
        monkeypatch.setattr(Surrogate, "_construct_model", _raising_builder(error))
        if isinstance(error, KeyError):
            with pytest.raises(KeyError):
                fit_in_worker(ctx.dataset, ctx.search_space_digest, job)
        else:
            state, _, message = fit_in_worker(ctx.dataset, ctx.search_space_digest, job)
            assert state is None and message is not None and "NotPSDError" in message
