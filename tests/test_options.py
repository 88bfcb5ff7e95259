"""The options of each collaborator: built from the config, frozen, exactly what it reads."""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.options import (
    AdmissionOptions,
    ChoiceOptions,
    ComponentOptions,
    FitOptions,
    HeldoutOptions,
    PortfolioOptions,
    RunnerOptions,
    StepOptions,
)
from ax_kernel_discovery.selection_rules import LBOCRPS, RuleSettings
from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate
from ax_kernel_discovery.surrogate.admission import CandidateAdmission
from ax_kernel_discovery.surrogate.choice import Chooser
from ax_kernel_discovery.surrogate.executors import BackgroundFits, BackgroundJob
from ax_kernel_discovery.surrogate.fitting import KernelFitter
from ax_kernel_discovery.surrogate.heldout import HeldoutScorer
from ax_kernel_discovery.surrogate.portfolio import Portfolios
from ax_kernel_discovery.surrogate.round import RoundSteps
from ax_kernel_discovery.surrogate.runner import RoundRunner

SURROGATE = Path(__file__).parents[1] / "ax_kernel_discovery" / "surrogate"

#: The fields each collaborator reads. A field it starts to read is added here and to
#: its options (the rule's settings, ``heldout_score`` and ``score_batches``, are read by
#: the selection rule that ``criterion`` names).
READS: dict[type[ComponentOptions], set[str]] = {
    FitOptions: {
        "criterion",
        "heldout_score",
        "score_batches",
        "selection",
        "halving_max_new_fraction",
        "halving_keep",
        "halving_screen_maxiter",
        "fit_timeout",
        "slow_fit_factor",
        "fit_maxiter",
        "fit_lbfgs_memory",
        "converge_chosen",
        "warm_start",
        "inherit_parameters",
        "score_top_k",
    },
    ChoiceOptions: {
        "criterion",
        "heldout_score",
        "score_batches",
        "guard_rounds",
        "tie_break",
        "parsimony_tolerance",
        "mixture_top_k",
        "mixture_weights",
    },
    AdmissionOptions: {
        "seed",
        "fit_timeout",
        "max_kernel_memory_gb",
        "memory_probe_n",
        "dedup_threshold",
    },
    HeldoutOptions: {"fit_timeout"},
    PortfolioOptions: {"portfolio_size", "portfolio_eta", "portfolio_keep"},
    StepOptions: {"criterion", "heldout_score", "score_batches", "strike_rule", "portfolio_keep"},
    RunnerOptions: {
        "fit_workers",
        "background_fits",
        "converge_chosen",
        "converge_contenders",
        "refit_members",
        "fit_maxiter",
        "portfolio_size",
        "portfolio_keep",
    },
}

#: The collaborator of each options class, and the module it is in.
TAKEN_BY: dict[type[ComponentOptions], tuple[type[Any], str]] = {
    FitOptions: (KernelFitter, "fitting.py"),
    ChoiceOptions: (Chooser, "choice.py"),
    AdmissionOptions: (CandidateAdmission, "admission.py"),
    HeldoutOptions: (HeldoutScorer, "heldout.py"),
    PortfolioOptions: (Portfolios, "portfolio.py"),
    StepOptions: (RoundSteps, "round.py"),
    RunnerOptions: (RoundRunner, "runner.py"),
}

#: Fields some options read for the selection rule, not their collaborator itself.
RULE_SETTINGS = {name for name, v in vars(RuleSettings).items() if isinstance(v, property)}


def test_the_configs_options_have_exactly_the_fields_their_collaborator_reads() -> None:
    config = KernelDiscoveryConfig()
    built = {
        FitOptions: config.fit_options(),
        ChoiceOptions: config.choice_options(),
        AdmissionOptions: config.admission_options(),
        HeldoutOptions: config.heldout_options(),
        PortfolioOptions: config.portfolio_options(),
        StepOptions: config.step_options(),
        RunnerOptions: config.runner_options(),
    }
    assert set(built) == set(READS) == set(TAKEN_BY)
    for cls, options in built.items():
        assert type(options) is cls
        assert set(cls.model_fields) == READS[cls], cls.__name__
        assert options.model_dump() == {name: getattr(config, name) for name in READS[cls]}


@pytest.mark.parametrize("cls", list(TAKEN_BY), ids=lambda c: c.__name__)
def test_a_collaborator_reads_only_its_options_and_all_of_them(
    cls: type[ComponentOptions],
) -> None:
    """What ``self.options.<name>`` reads in the collaborator's module: each a field or
    a method of its options, every field read (the rule's settings by the rule)."""
    collaborator, module = TAKEN_BY[cls]
    source = (SURROGATE / module).read_text()
    read = set(re.findall(r"self\.options\.(\w+)", source))
    assert read <= set(cls.model_fields) | {n for n in dir(cls) if not n.startswith("_")}
    todo = list(read)
    while todo:  # and what the options' methods it calls read
        method = getattr(cls, todo.pop(), None)
        if isinstance(method, property):
            method = method.fget
        if inspect.isfunction(method):
            found = set(re.findall(r"self\.(\w+)", inspect.getsource(method))) - read
            read |= found
            todo += found
    unread = set(cls.model_fields) - read
    assert not unread or ("selection_rule" in read and unread <= RULE_SETTINGS), unread
    assert not re.search(r"self\.config\b", source)  # the whole config is not handed to it
    assert typing.get_type_hints(collaborator.__init__)["options"] is cls


@pytest.mark.parametrize("cls", list(TAKEN_BY), ids=lambda c: c.__name__)
def test_an_option_has_the_type_of_the_configs_field(cls: type[ComponentOptions]) -> None:
    for name, field in cls.model_fields.items():
        assert field.annotation == KernelDiscoveryConfig.model_fields[name].annotation, name


def test_options_are_frozen_and_refuse_other_fields() -> None:
    options = KernelDiscoveryConfig(fit_maxiter=7).fit_options()
    with pytest.raises(ValidationError, match="frozen"):
        options.fit_maxiter = 8  # type: ignore[misc]
    assert options.fit_maxiter == 7
    fields = options.model_dump()
    with pytest.raises(ValidationError, match="population_size"):
        FitOptions(**fields, population_size=3)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="selection"):
        FitOptions(**{**fields, "selection": "quick"})
    assert FitOptions(**fields) == options  # built directly: the same options


def test_options_ask_the_rule_their_criterion_names() -> None:
    config = KernelDiscoveryConfig(criterion="lbo_crps", score_batches=2)
    for options in (config.fit_options(), config.choice_options()):
        rule = options.selection_rule()
        assert isinstance(rule, LBOCRPS) and rule.settings.score_batches == 2
    assert config.choice_options().resolved_tie_break() == config.resolved_tie_break() == "none"
    assert KernelDiscoveryConfig().choice_options().resolved_tie_break() == "cost"
    assert KernelDiscoveryConfig(tie_break="none").choice_options().resolved_tie_break() == "none"


def test_the_surrogate_hands_each_collaborator_its_options() -> None:
    config = KernelDiscoveryConfig(fit_maxiter=9, guard_rounds=2, dedup_threshold=0.9)
    s = KernelDiscoverySurrogate(config)
    assert s.fitter.options == config.fit_options()
    assert s.chooser.options == config.choice_options()
    assert s.admission.options == config.admission_options()
    assert s.heldout.options == config.heldout_options()
    assert s.steps.options == config.step_options()
    assert s.steps.portfolios.options == config.portfolio_options()
    assert s.runner.options == config.runner_options()


def _settings(s: KernelDiscoverySurrogate) -> dict[str, object]:
    """What each collaborator of ``s`` holds of the settings: its config or its options."""
    found: dict[str, object] = {}
    steps = {name: step for name, step in vars(s).items() if hasattr(step, "__dict__")}
    steps["steps.portfolios"] = s.steps.portfolios
    for name, step in steps.items():
        for attr in ("config", "options"):
            if attr in vars(step):
                found[f"{name}.{attr}"] = vars(step)[attr]
    return found


def test_setting_the_config_hands_the_collaborators_the_new_settings() -> None:
    """``surrogate.config = ...`` (``benchmarks/selection_agreement.py``): every
    collaborator then holds what a surrogate built with the new config holds."""
    s = KernelDiscoverySurrogate(KernelDiscoveryConfig())
    variant = s.config.model_copy(
        update={"selection": "halving", "guard_rounds": 3, "dedup_threshold": 0.5}
    )
    s.config = variant
    fresh = _settings(KernelDiscoverySurrogate(variant))
    assert {
        "fitter.options",
        "chooser.options",
        "admission.options",
        "heldout.options",
        "steps.options",
        "steps.portfolios.options",
        "runner.options",
        "proposing.config",  # builds proposers from the config (their registry entries)
    } <= set(fresh)
    assert _settings(s) == fresh
    assert s.config is variant and s.fitter.options.selection == "halving"


def test_a_background_job_carries_the_fitters_options() -> None:
    options = KernelDiscoveryConfig(fit_maxiter=4).fit_options()
    fitter = KernelFitter(options, lambda *args: None)  # type: ignore[arg-type,return-value]
    pending = BackgroundFits(user=object()).submit(fitter, None, [], [])  # type: ignore[arg-type]
    job = pending.job  # type: ignore[attr-defined]
    assert isinstance(job, BackgroundJob) and job.options is options
    assert "config" not in BackgroundJob.__dataclass_fields__
