"""The steps of a round around its fits: strike, admit, hand on and settle.

A round of kernel discovery
(:meth:`~ax_kernel_discovery.surrogate.core.KernelDiscoverySurrogate.model_selection`) opens, proposes, fits and ends. Its fits are
made in this process (:class:`~.fitting.KernelFitter`) or, for all kernels but the chosen
one, in a worker process while Ax optimizes the acquisition (:mod:`~ax_kernel_discovery.surrogate.executors`); either
way the round opens and ends through :class:`RoundSteps`, written once. Each step
returns a typed, frozen result (:mod:`.steps`); none writes the round's record, which
the runner builds from those results at the round's end
(:meth:`~.round_record.RoundRecord.from_steps`):

* :meth:`RoundSteps.open` (:class:`~.steps.Opened`): last round's choice is struck if
  its batch did not improve the best feasible value or the feasible Pareto front
  (:mod:`.strike`), last round's batch portfolio is credited, an empty population resets
  to the start set, and (a selection rule that judges forecasts, ``prequential``) the
  members' forecasts of the new batch are scored (:class:`~.steps.HeldoutScores`);
* :meth:`RoundSteps.admit` (:class:`~.steps.Admitted`): the proposer's candidates are
  checked (:class:`~.admission.CandidateAdmission`);
* :meth:`RoundSteps.hand_on` (the model, and :class:`~.steps.Chosen`): the chosen
  member's model (or the mixture, or Ax's default in a guard round) is what the
  acquisition gets, with the batch portfolio;
* :meth:`RoundSteps.end` (:class:`~.steps.Ended`): new kernels whose fit succeeded join,
  members whose fit failed leave, the population keeps its best; the result holds the
  round's scores and population. A round fitted in process chooses here; a round fitted
  in the background chose before its fits, and ends here once they are in.

The steps know no Ax ``Surrogate``: they read and update the
:class:`~.state.RoundContext` they are handed (the outcome's state; their seconds go to
its timer).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence

from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.models.model import Model

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.errors import UNEXPECTED, is_strict
from ax_kernel_discovery.mixture import KernelMixtureModel
from ax_kernel_discovery.options import StepOptions
from ax_kernel_discovery.population import HeldOut
from ax_kernel_discovery.surrogate.admission import CandidateAdmission
from ax_kernel_discovery.surrogate.choice import GUARD_NAME, Choice, Chooser
from ax_kernel_discovery.surrogate.fitting import FittedKernel, ModelBuilder
from ax_kernel_discovery.surrogate.heldout import HeldoutScorer
from ax_kernel_discovery.surrogate.portfolio import Portfolios
from ax_kernel_discovery.surrogate.state import FittedModels, LastChoice, RoundContext
from ax_kernel_discovery.surrogate.steps import (
    Admitted,
    Chosen,
    Ended,
    FitReport,
    HeldoutScores,
    Opened,
)
from ax_kernel_discovery.surrogate.strike import batch_improved, goal_metrics
from ax_kernel_discovery.surrogate.trial_rows import FitRows

__all__ = ["AllKernelsRejectedWarning", "RoundSteps"]

#: Ax's objectives, one ``{outcome: weight}`` per objective.
Objectives = Sequence[Mapping[str, float]]

#: The model the acquisition gets and its ``ModelConfig``.
Handed = tuple[Model, ModelConfig]


class AllKernelsRejectedWarning(RuntimeWarning):
    """No kernel of a round could be fitted: the round used Ax's default model."""


class RoundSteps:
    """The steps before and after a round's fits, for rounds fitted in this process and in
    the background alike.

    Args:
        options: Its settings (:class:`~ax_kernel_discovery.options.StepOptions`).
        admission: The candidate checks.
        chooser: The choice step.
        heldout: The held-out forecast scores (a rule that judges forecasts).
        portfolios: The batch portfolios.
        build_model: Builds Ax's default model for a guard round, or when no kernel fits.
    """

    def __init__(
        self,
        options: StepOptions,
        admission: CandidateAdmission,
        chooser: Chooser,
        heldout: HeldoutScorer,
        portfolios: Portfolios,
        build_model: ModelBuilder,
    ) -> None:
        self.options = options
        self.admission = admission
        self.chooser = chooser
        self.heldout = heldout
        self.portfolios = portfolios
        self.build_model = build_model

    # --- before the fits ---------------------------------------------------------------

    def open(
        self, ctx: RoundContext, objectives: Objectives, rows: Mapping[str, FitRows]
    ) -> Opened:
        """Strike, credit last round's portfolio, reset an empty population, score the
        members' forecasts of the new batch (a rule that
        :attr:`~ax_kernel_discovery.selection_rules.SelectionRule.scores_forecasts`:
        ``prequential``) and note the fit's rows; returns what it found."""
        struck = self.strike(ctx, objectives, rows)
        rewards = self.portfolios.credit(ctx)
        reset = ctx.population.reset_if_empty()
        heldout = HeldoutScores()
        if self.options.selection_rule().scores_forecasts:
            with ctx.timer().phase("heldout"):
                heldout = self.heldout.score_heldout(ctx)
                self._keep_forecasts(ctx, heldout.scores)
        ctx.state.note_rows(ctx.rows, ctx.round)
        return dataclasses.replace(struck, reset=reset, portfolio_rewards=rewards, heldout=heldout)

    def strike(
        self, ctx: RoundContext, objectives: Objectives, rows: Mapping[str, FitRows]
    ) -> Opened:
        """Step 1: judge last round's choice by its batch (``config.strike_rule``).

        With the fit's rows keyed by trial and arm and Ax's optimization config (what
        kernel discovery's strategy hands every fit), the verdict is
        :func:`~.strike.batch_improved`: the rows since the choice against those before
        it, by the best feasible value (one objective, scalarized or not) or the feasible
        Pareto front (several), in Ax's terms. Every outcome that the optimization config
        names (objectives and constraints) is judged by that one verdict; a tracking
        metric is not. A fit without keyed rows judges one objective by its parameters
        (:meth:`~.state.LastChoice.improved`) and several not at all. A judged choice is
        forgotten: its batch is judged once.

        Returns:
            The verdict (``previous_improved``), the struck member and whether it was
            dropped (the rest of :class:`~.steps.Opened` is left at its defaults).
        """
        if self.options.strike_rule == "none":
            return Opened()
        last = ctx.state.last_choice
        if last is None:
            return Opened()
        improved = self._verdict(ctx, last, objectives, rows)
        if improved is None:
            return Opened()
        ctx.state.last_choice = None
        name = last.name
        if improved:
            return Opened(previous_improved=True)
        dropped = (name,) if ctx.state.strike(name) else ()
        return Opened(struck=name, previous_improved=False, dropped=dropped)

    def _verdict(
        self,
        ctx: RoundContext,
        last: LastChoice,
        objectives: Objectives,
        rows: Mapping[str, FitRows],
    ) -> bool | None:
        """Whether last round's batch improved (``None``: nothing to judge)."""
        goal = ctx.goal
        if goal is not None and ctx.rows is not None:  # this fit's rows, keyed
            if ctx.outcome not in goal_metrics(goal).values():
                return None  # a tracking metric: its model made no part of the batch
            before = last.rows_before(ctx.first_seen, ctx.round)
            return batch_improved(rows, before, goal)
        if len(objectives) > 1 or not ctx.sign:
            return None
        return last.improved(ctx.dataset.X, ctx.dataset.Y, ctx.sign)

    def _keep_forecasts(self, ctx: RoundContext, scored: Mapping[str, HeldOut]) -> None:
        """Each member keeps its forecasts of the last ``score_batches`` batches."""
        window = self.options.score_batches
        for member in ctx.population:
            if member.name in scored:
                member.heldout = [*member.heldout, scored[member.name]][-window:]

    def admit(self, ctx: RoundContext, candidates: Sequence[KernelCandidate]) -> Admitted:
        """Step 3: the proposed candidates that pass the checks and are no duplicates, and
        the others' rejections."""
        X = ctx.dataset.X
        with ctx.timer().phase("validate"):
            admitted = self.admission.admit(
                list(candidates), ctx.population, ctx.dim, n=X.shape[0], device=X.device
            )
        return admitted

    # --- the hand-on and the end -----------------------------------------------------------

    def hand_on(
        self,
        ctx: RoundContext,
        choice: Choice,
        models: Mapping[str, FittedKernel],
        objectives: Objectives,
    ) -> tuple[Handed, Chosen]:
        """The model the acquisition gets for ``choice`` (and the batch portfolio), and
        the choice as the round's record keeps it."""
        handed, chosen = self._chosen_model(ctx, choice, models)
        portfolio = self.portfolios.choose(ctx, choice, models, len(objectives))
        return handed, dataclasses.replace(chosen, portfolio=portfolio)

    def end(
        self,
        ctx: RoundContext,
        accepted: Sequence[KernelCandidate],
        models: dict[str, FittedKernel],
        objectives: Objectives,
        handed: Choice | None = None,
        builders: Mapping[str, Callable[[], Model]] | None = None,
        on_choice: Callable[[Sequence[str], dict[str, FittedKernel]], FitReport] | None = None,
        rejected: Sequence[Rejection] = (),
    ) -> tuple[Handed | None, Ended]:
        """Step 5, once the round's fits are in: new kernels join, failed fits leave, the
        round chooses (unless it ``handed`` on its choice before its fits) and the
        population keeps its best.

        Args:
            ctx: The round.
            accepted: The new kernels the round fitted.
            models: The fitted kernels, in the round's order.
            objectives: Ax's objectives.
            handed: The choice handed on before the fits (a round fitted in the
                background); its scores are narrowed to the kernels that fitted.
            builders: Builders of the models fitted in a worker, by name.
            on_choice: Called with the choice's names and the fitted kernels when the round
                chooses here, before the chosen model is handed on (``converge_chosen``
                fits the choice on to convergence; it may replace those kernels' fits);
                returns its fits' report.
            rejected: The round's rejections so far (what a round whose every kernel
                failed warns with).

        Returns:
            The model the acquisition gets, when the round chose here (``handed=None``),
            and what the end settled (with the choice, when the round chose here).
        """
        joined, dropped = self._admit_fitted(ctx, accepted, models)
        out: Handed | None = None
        chosen: Chosen | None = None
        report = FitReport()
        failed: tuple[Rejection, ...] = ()
        scores: dict[str, float] = {}
        fit_scores: dict[str, float] = {}
        if not models:
            # every kernel failed: fall back to Ax's default model so the run goes on
            self._warn_all_rejected(ctx, rejected)
            failed = (
                Rejection(
                    name="*", stage="fit", reason="no kernel could be fitted; using Ax default"
                ),
            )
            ctx.population.reset_if_empty()
            if handed is None:
                out = self._default_model(ctx), ModelConfig()
        else:
            choice = handed
            if choice is None:  # choose before truncating: the choice stays a member
                choice = self.chooser.select(models, ctx)
                if on_choice is not None and not choice.guarded:
                    report = on_choice(choice.names, models)
                out, chosen = self.hand_on(ctx, choice, models, objectives)
            elif choice.guarded:
                choice.scores = {k: v.score for k, v in models.items()}
            else:
                choice.scores = {k: v for k, v in choice.scores.items() if k in models}
            scores, fit_scores, truncated = self._settle(ctx, choice, models)
            dropped += truncated
        ctx.state.fitted_models = FittedModels(
            {k: v.model for k, v in models.items() if v.model is not None},
            {k: b for k, b in (builders or {}).items() if k in models},
        )
        pop = ctx.population
        ended = Ended(
            accepted=joined,
            dropped=dropped,
            scores=scores,
            fit_scores=fit_scores,
            population=tuple(pop.names),
            population_diversity=self.admission.diversity([m.candidate.key for m in pop]),
            accepted_diversity=(
                self.admission.diversity([c.key for c in accepted if c.name in models])
                if len(joined) > 1
                else None
            ),
            rejected=failed,
            fits=report,
            chosen=chosen,
        )
        return out, ended

    @staticmethod
    def _warn_all_rejected(ctx: RoundContext, rejected: Sequence[Rejection]) -> None:
        """Say loudly that no kernel could be fitted, and why, from the round's
        ``rejected`` so far (in strict mode, a round whose kernels were not all rejected
        for their own failures raises)."""
        reasons = "; ".join(f"{r.name} ({r.stage}): {r.reason[:200]}" for r in rejected[-5:])
        bugs = [r for r in rejected if r.stage == UNEXPECTED]
        message = (
            f"kernel discovery round {ctx.round} ({ctx.outcome}): no kernel could be "
            f"fitted, the round uses Ax's default model; {len(rejected)} rejections"
            + (f", the last: {reasons}" if rejected else "")
        )
        if bugs and is_strict():
            raise RuntimeError(f"{message} ({len(bugs)} unexpected errors, not kernel failures)")
        warnings.warn(message, AllKernelsRejectedWarning, stacklevel=3)

    def _admit_fitted(
        self,
        ctx: RoundContext,
        accepted: Sequence[KernelCandidate],
        models: Mapping[str, FittedKernel],
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """New kernels whose fit succeeded join; members whose fit failed leave; the
        members get their scores. Returns the names that joined and those that left."""
        pop, state = ctx.population, ctx.state
        joined: list[str] = []
        left: list[str] = []
        for cand in accepted:
            if cand.name in models:
                pop.add(cand, ctx.round)
                joined.append(cand.name)
            else:
                state.drop(cand.name)  # no warm start outlives a failed or too slow fit
        for member in list(pop):
            if member.name in models:
                pop.set_score(member.name, self.chooser.member_score(member, models))
            else:
                state.drop(member.name)
                left.append(member.name)
        return tuple(joined), tuple(left)

    def _default_model(self, ctx: RoundContext) -> Model:
        """Ax's default model of the round's data."""
        return self.build_model(ctx.dataset, ctx.search_space_digest, ModelConfig(), None, True)

    def _chosen_model(
        self, ctx: RoundContext, choice: Choice, models: Mapping[str, FittedKernel]
    ) -> tuple[Handed, Chosen]:
        """The model the acquisition gets for ``choice``, and the choice (no portfolio)."""
        pop = ctx.population
        if choice.guarded:
            model = self._default_model(ctx)
            return (model, ModelConfig()), Chosen(chosen=GUARD_NAME, guarded=True)
        best_name = choice.names[0]
        chosen = models[best_name]
        assert chosen.model is not None  # the chosen kernel is fitted in this process
        model = chosen.model
        mixture: dict[str, float] = {}
        if len(choice.names) > 1:
            mixed = [models[k].model for k in choice.names]
            model = KernelMixtureModel(mixed, choice.counts, choice.names)  # type: ignore[arg-type]
            mixture = dict(zip(choice.names, choice.weights, strict=True))
        best = pop.get(best_name)
        best.times_chosen += 1
        ctx.state.last_choice = LastChoice.of(
            best_name, ctx.dataset.X, ctx.dataset.Y, round_index=ctx.round
        )
        made = Chosen(
            chosen=best_name,
            chosen_formula=best.formula,
            chosen_score=choice.scores.get(best_name),
            mixture=mixture,
        )
        return (model, chosen.config), made

    def _settle(
        self, ctx: RoundContext, choice: Choice, models: Mapping[str, FittedKernel]
    ) -> tuple[dict[str, float], dict[str, float], tuple[str, ...]]:
        """The population keeps its best (the choice, the batch portfolio's
        ``portfolio_keep`` and those the selection rule protects are kept: under
        ``prequential``, kernels that have not forecast a batch yet). Returns the round's
        scores, its fit scores (a rule that scores forecasts) and the members dropped."""
        pop = ctx.population
        rule = self.options.selection_rule()
        scores = dict(choice.scores)
        fit_scores = {k: v.score for k, v in models.items()} if rule.scores_forecasts else {}
        protect = [] if choice.guarded else list(choice.names)
        # members with a share of every batch whatever their forecasts: truncation, which
        # ranks by forecasts, would take that share away (they still leave when struck)
        protect += list(self.options.portfolio_keep)
        protect += rule.protected(pop)  # prequential: new kernels, not yet forecast
        return scores, fit_scores, tuple(ctx.state.truncate(protect=protect))
