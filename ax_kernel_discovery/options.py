"""The settings each collaborator of a round reads: its own frozen options.

:class:`~ax_kernel_discovery.config.KernelDiscoveryConfig` is the one form users write; a
collaborator of the surrogate takes only the fields it reads, as a frozen model built from
the config (:meth:`ComponentOptions.from_config`, or the config's ``fit_options()``,
``choice_options()`` and ``admission_options()``):

* :class:`FitOptions`: :class:`~ax_kernel_discovery.surrogate.fitting.KernelFitter`
  (also what a worker process is handed to fit a round's kernels);
* :class:`ChoiceOptions`: :class:`~ax_kernel_discovery.surrogate.choice.Chooser`;
* :class:`AdmissionOptions`:
  :class:`~ax_kernel_discovery.surrogate.admission.CandidateAdmission`;
* :class:`HeldoutOptions`: :class:`~ax_kernel_discovery.surrogate.heldout.HeldoutScorer`;
* :class:`PortfolioOptions`: :class:`~ax_kernel_discovery.surrogate.portfolio.Portfolios`;
* :class:`StepOptions`: :class:`~ax_kernel_discovery.surrogate.round.RoundSteps`;
* :class:`RunnerOptions`: :class:`~ax_kernel_discovery.surrogate.runner.RoundRunner`.

The proposer host (:class:`~ax_kernel_discovery.surrogate.proposing.ProposerHost`) keeps
the config: it builds proposers, and a proposer's registry entry
(:data:`~ax_kernel_discovery.proposers.from_config.PROPOSERS`) builds it from the config.

Each field has the name and type of the config's field. The values are validated by the
config (ranges, and the rules between fields); an option model checks their types only.

The fitter and the chooser ask the selection rule that ``criterion`` names
(:meth:`RuleOptions.selection_rule`): the options carry the rule's name and the settings
the rule reads (``heldout_score``, ``score_batches``), not a rule object, so that they stay
plain data (compared, printed, pickled to a worker process) and a rule is looked up in
:data:`~ax_kernel_discovery.selection_rules.SELECTION_RULES` where it is used, as the
config's :meth:`~ax_kernel_discovery.config.KernelDiscoveryConfig.selection_rule` does.
"""

from __future__ import annotations

from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from ax_kernel_discovery.selection_rules import SelectionRule, selection_rule

__all__ = [
    "AdmissionOptions",
    "ChoiceOptions",
    "ComponentOptions",
    "FitOptions",
    "HeldoutOptions",
    "PortfolioOptions",
    "RuleOptions",
    "RunnerOptions",
    "StepOptions",
]

_OptionsT = TypeVar("_OptionsT", bound="ComponentOptions")


class ComponentOptions(BaseModel):
    """The settings one collaborator reads (frozen; no field beyond its own)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def from_config(cls: type[_OptionsT], config: BaseModel) -> _OptionsT:
        """These options' fields of ``config`` (a
        :class:`~ax_kernel_discovery.config.KernelDiscoveryConfig`), with their values.

        Example:
            >>> from ax_kernel_discovery.config import KernelDiscoveryConfig
            >>> AdmissionOptions.from_config(KernelDiscoveryConfig(seed=3)).seed
            3
        """
        return cls.model_validate(config.model_dump(include=set(cls.model_fields)))


class RuleOptions(ComponentOptions):
    """The options of a collaborator that asks the selection rule: its name
    (``criterion``) and the settings the rule reads
    (:class:`~ax_kernel_discovery.selection_rules.RuleSettings`)."""

    criterion: str
    heldout_score: Literal["log", "crps"]
    score_batches: int

    def selection_rule(self) -> SelectionRule:
        """The selection rule that ``criterion`` names, reading these options."""
        return selection_rule(self.criterion, self)


class FitOptions(RuleOptions):
    """What :class:`~ax_kernel_discovery.surrogate.fitting.KernelFitter` reads: how a
    round fits its kernels (the config's ``fitting`` section, less the fields of where
    the fits run, ``fit_workers`` and ``background_fits``, which the round runner reads)
    and how it scores them (the rule, ``score_top_k``)."""

    selection: Literal["full", "halving", "auto"]
    halving_max_new_fraction: float
    halving_keep: int
    halving_screen_maxiter: int
    fit_timeout: float | None
    slow_fit_factor: float
    fit_maxiter: int | None
    fit_lbfgs_memory: int | None
    converge_chosen: bool
    warm_start: bool
    inherit_parameters: bool
    score_top_k: int | None


class ChoiceOptions(RuleOptions):
    """What :class:`~ax_kernel_discovery.surrogate.choice.Chooser` reads: the rule, the
    guard rounds, the tie rules and the mixture (the config's ``choice`` section, less
    ``score_top_k``, which the fitter reads, and the batch portfolio's fields)."""

    guard_rounds: int
    tie_break: Literal["auto", "none", "cost"]
    parsimony_tolerance: float
    mixture_top_k: int
    mixture_weights: Literal["stacking", "pseudo_bma", "equal"]

    def resolved_tie_break(self) -> Literal["none", "cost"]:
        """The tie rule in force: ``auto`` is the rule's own (``cost`` under the
        prequential criterion, :attr:`~.selection_rules.SelectionRule.default_tie_break`)."""
        if self.tie_break == "auto":
            return self.selection_rule().default_tie_break
        return self.tie_break


class AdmissionOptions(ComponentOptions):
    """What :class:`~ax_kernel_discovery.surrogate.admission.CandidateAdmission` reads:
    the validation's time cap and points, the memory limit and the duplicate threshold."""

    seed: int
    fit_timeout: float | None
    max_kernel_memory_gb: float | None
    memory_probe_n: int
    dedup_threshold: float


class HeldoutOptions(ComponentOptions):
    """What :class:`~ax_kernel_discovery.surrogate.heldout.HeldoutScorer` reads: the fit's
    time cap of a member refitted to forecast (opt-in)."""

    fit_timeout: float | None


class PortfolioOptions(ComponentOptions):
    """What :class:`~ax_kernel_discovery.surrogate.portfolio.Portfolios` reads: the batch
    portfolio's size, its kept members and the Hedge learning rate."""

    portfolio_size: int
    portfolio_eta: float
    portfolio_keep: tuple[str, ...]

    @property
    def configured(self) -> bool:
        """Whether a batch portfolio is asked for (more than one member, or kept ones)."""
        return self.portfolio_size > 1 or bool(self.portfolio_keep)


class StepOptions(RuleOptions):
    """What :class:`~ax_kernel_discovery.surrogate.round.RoundSteps` reads: the strike
    rule, the selection rule (whether it keeps forecasts, which members truncation
    keeps) and the portfolio's kept members (never truncated)."""

    strike_rule: Literal["batch", "none"]
    portfolio_keep: tuple[str, ...]


class RunnerOptions(ComponentOptions):
    """What :class:`~ax_kernel_discovery.surrogate.runner.RoundRunner` reads: where the
    fits run (``fit_workers``, ``background_fits``), whether the choice is fitted to
    convergence (``converge_chosen`` with a ``fit_maxiter`` budget) with how many
    contenders (``converge_contenders``) and whether the others are refitted
    (``refit_members``), and which members a batch portfolio fits before the hand-on."""

    fit_workers: int
    background_fits: Literal["auto", "on", "off"]
    converge_chosen: bool
    converge_contenders: int
    refit_members: Literal["all", "contenders"]
    fit_maxiter: int | None
    portfolio_size: int
    portfolio_keep: tuple[str, ...]

    @property
    def converging(self) -> bool:
        """Whether the chosen member is fitted on to convergence (``converge_chosen``, with
        a ``fit_maxiter`` budget for the others; without a budget every fit converges)."""
        return self.converge_chosen and self.fit_maxiter is not None
