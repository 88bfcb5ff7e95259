"""The steps of a round around its fits: strike, admit, hand on, settle and record.

A round of kernel discovery
(:meth:`~ax_kernel_discovery.surrogate.core.KernelDiscoverySurrogate.model_selection`) opens, proposes, fits and ends. Its fits are
made in this process (:class:`~.fitting.KernelFitter`) or, for all kernels but the chosen
one, in a worker process while Ax optimizes the acquisition (:mod:`~ax_kernel_discovery.surrogate.executors`); either
way the round opens and ends through :class:`RoundSteps`, written once:

* :meth:`RoundSteps.open`: last round's choice is struck if its batch did not improve
  the best feasible value or the feasible Pareto front (:mod:`.strike`), last round's
  batch portfolio is credited, an empty population resets to the start set, and (a
  selection rule that judges forecasts, ``prequential``) the members' forecasts of the new
  batch are scored;
* :meth:`RoundSteps.admit`: the proposer's candidates are checked
  (:class:`~.admission.CandidateAdmission`);
* :meth:`RoundSteps.hand_on`: the chosen member's model (or the mixture, or Ax's default
  in a guard round) is what the acquisition gets, with the batch portfolio;
* :meth:`RoundSteps.end`: new kernels whose fit succeeded join, members whose fit failed
  leave, the population keeps its best, and the record gets the round's scores and
  population. A round fitted in process chooses here; a round fitted in the background
  chose before its fits, and ends here once they are in.

The steps know no Ax ``Surrogate``: they read and update the
:class:`~.state.RoundContext` they are handed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence

from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.models.model import Model

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.errors import UNEXPECTED, is_strict
from ax_kernel_discovery.mixture import KernelMixtureModel
from ax_kernel_discovery.population import HeldOut
from ax_kernel_discovery.surrogate.admission import CandidateAdmission
from ax_kernel_discovery.surrogate.choice import GUARD_NAME, Choice, Chooser
from ax_kernel_discovery.surrogate.fitting import FittedKernel, ModelBuilder
from ax_kernel_discovery.surrogate.heldout import HeldoutScorer
from ax_kernel_discovery.surrogate.portfolio import Portfolios
from ax_kernel_discovery.surrogate.state import FittedModels, LastChoice, RoundContext
from ax_kernel_discovery.surrogate.strike import batch_improved, goal_metrics
from ax_kernel_discovery.surrogate.trial_rows import FitRows

__all__ = ["AllKernelsRejectedWarning", "RoundSteps"]

#: Ax's objectives, one ``{outcome: weight}`` per objective.
Objectives = Sequence[Mapping[str, float]]


class AllKernelsRejectedWarning(RuntimeWarning):
    """No kernel of a round could be fitted: the round used Ax's default model."""


class RoundSteps:
    """The steps before and after a round's fits, for rounds fitted in this process and in
    the background alike.

    Args:
        config: The surrogate's settings.
        admission: The candidate checks.
        chooser: The choice step.
        heldout: The held-out forecast scores (a rule that judges forecasts).
        portfolios: The batch portfolios.
        build_model: Builds Ax's default model for a guard round, or when no kernel fits.
    """

    def __init__(
        self,
        config: KernelDiscoveryConfig,
        admission: CandidateAdmission,
        chooser: Chooser,
        heldout: HeldoutScorer,
        portfolios: Portfolios,
        build_model: ModelBuilder,
    ) -> None:
        self.config = config
        self.admission = admission
        self.chooser = chooser
        self.heldout = heldout
        self.portfolios = portfolios
        self.build_model = build_model

    # --- before the fits ---------------------------------------------------------------

    def open(self, ctx: RoundContext, objectives: Objectives, rows: Mapping[str, FitRows]) -> None:
        """Strike, credit last round's portfolio, reset an empty population, score the
        members' forecasts of the new batch (a rule that
        :attr:`~ax_kernel_discovery.selection_rules.SelectionRule.scores_forecasts`:
        ``prequential``) and note the fit's rows."""
        self.strike(ctx, objectives, rows)
        self.portfolios.credit(ctx)
        ctx.rec.reset = ctx.population.reset_if_empty()
        if self.config.selection_rule().scores_forecasts:
            with ctx.rec.timer().phase("heldout"):
                self._keep_forecasts(ctx, self.heldout.score_heldout(ctx))
        ctx.state.note_rows(ctx.rows, ctx.rec.round)

    def strike(
        self, ctx: RoundContext, objectives: Objectives, rows: Mapping[str, FitRows]
    ) -> None:
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
        """
        if self.config.strike_rule == "none":
            return
        last = ctx.state.last_choice
        if last is None:
            return
        improved = self._verdict(ctx, last, objectives, rows)
        if improved is None:
            return
        ctx.state.last_choice = None
        name, rec = last.name, ctx.rec
        rec.previous_improved = improved
        if not improved:
            rec.struck = name
            if ctx.state.strike(name):
                rec.dropped.append(name)

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
            before = last.rows_before(ctx.first_seen, ctx.rec.round)
            return batch_improved(rows, before, goal)
        if len(objectives) > 1 or not ctx.sign:
            return None
        return last.improved(ctx.dataset.X, ctx.dataset.Y, ctx.sign)

    def _keep_forecasts(self, ctx: RoundContext, scored: Mapping[str, HeldOut]) -> None:
        """Each member keeps its forecasts of the last ``score_batches`` batches."""
        window = self.config.score_batches
        for member in ctx.population:
            if member.name in scored:
                member.heldout = [*member.heldout, scored[member.name]][-window:]

    def admit(self, ctx: RoundContext, candidates: list[KernelCandidate]) -> list[KernelCandidate]:
        """Step 3: the proposed candidates that pass the checks and are no duplicates."""
        X = ctx.dataset.X
        with ctx.rec.timer().phase("validate"):
            accepted = self.admission.admit(
                candidates, ctx.population, ctx.dim, ctx.rec, n=X.shape[0], device=X.device
            )
        return accepted

    # --- the hand-on and the end -----------------------------------------------------------

    def hand_on(
        self,
        ctx: RoundContext,
        choice: Choice,
        models: Mapping[str, FittedKernel],
        objectives: Objectives,
    ) -> tuple[Model, ModelConfig]:
        """The model the acquisition gets for ``choice`` (and the batch portfolio); the
        choice is recorded."""
        handed = self._chosen_model(ctx, choice, models)
        self.portfolios.choose(ctx, choice, models, len(objectives))
        return handed

    def end(
        self,
        ctx: RoundContext,
        accepted: list[KernelCandidate],
        models: dict[str, FittedKernel],
        objectives: Objectives,
        handed: Choice | None = None,
        builders: Mapping[str, Callable[[], Model]] | None = None,
        on_choice: Callable[[Sequence[str], dict[str, FittedKernel]], None] | None = None,
    ) -> tuple[Model, ModelConfig] | None:
        """Step 5, once the round's fits are in: new kernels join, failed fits leave, the
        round chooses (unless it ``handed`` on its choice before its fits), the population
        keeps its best and the record gets the round's scores and population.

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
                fits the choice on to convergence; it may replace those kernels' fits).

        Returns:
            The model the acquisition gets, when the round chose here (``handed=None``).
        """
        self._admit_fitted(ctx, accepted, models)
        out: tuple[Model, ModelConfig] | None = None
        if not models:
            # every kernel failed: fall back to Ax's default model so the run goes on
            self._warn_all_rejected(ctx)
            ctx.rec.rejected.append(
                Rejection(
                    name="*", stage="fit", reason="no kernel could be fitted; using Ax default"
                )
            )
            ctx.population.reset_if_empty()
            if handed is None:
                out = self._default_model(ctx), ModelConfig()
        else:
            choice = handed
            if choice is None:  # choose before truncating: the choice stays a member
                choice = self.chooser.select(models, ctx)
                if on_choice is not None and not choice.guarded:
                    on_choice(choice.names, models)
                out = self.hand_on(ctx, choice, models, objectives)
            elif choice.guarded:
                choice.scores = {k: v.score for k, v in models.items()}
            else:
                choice.scores = {k: v for k, v in choice.scores.items() if k in models}
            self._settle(ctx, choice, models)
        ctx.state.fitted_models = FittedModels(
            {k: v.model for k, v in models.items() if v.model is not None},
            {k: b for k, b in (builders or {}).items() if k in models},
        )
        self._record_population(ctx, accepted, models)
        return out

    @staticmethod
    def _warn_all_rejected(ctx: RoundContext) -> None:
        """Say loudly that no kernel could be fitted, and why (in strict mode, a round
        whose kernels were not all rejected for their own failures raises)."""
        rejected = ctx.rec.rejected
        reasons = "; ".join(f"{r.name} ({r.stage}): {r.reason[:200]}" for r in rejected[-5:])
        bugs = [r for r in rejected if r.stage == UNEXPECTED]
        message = (
            f"kernel discovery round {ctx.rec.round} ({ctx.outcome}): no kernel could be "
            f"fitted, the round uses Ax's default model; {len(rejected)} rejections"
            + (f", the last: {reasons}" if rejected else "")
        )
        if bugs and is_strict():
            raise RuntimeError(f"{message} ({len(bugs)} unexpected errors, not kernel failures)")
        warnings.warn(message, AllKernelsRejectedWarning, stacklevel=3)

    def _admit_fitted(
        self,
        ctx: RoundContext,
        accepted: list[KernelCandidate],
        models: Mapping[str, FittedKernel],
    ) -> None:
        """New kernels whose fit succeeded join; members whose fit failed leave; the
        members get their scores."""
        pop, state, rec = ctx.population, ctx.state, ctx.rec
        for cand in accepted:
            if cand.name in models:
                pop.add(cand, rec.round)
                rec.accepted.append(cand.name)
            else:
                state.drop(cand.name)  # no warm start outlives a failed or too slow fit
        for member in list(pop):
            if member.name in models:
                pop.set_score(member.name, self.chooser.member_score(member, models))
            else:
                state.drop(member.name)
                rec.dropped.append(member.name)

    def _default_model(self, ctx: RoundContext) -> Model:
        """Ax's default model of the round's data."""
        return self.build_model(ctx.dataset, ctx.search_space_digest, ModelConfig(), None, True)

    def _chosen_model(
        self, ctx: RoundContext, choice: Choice, models: Mapping[str, FittedKernel]
    ) -> tuple[Model, ModelConfig]:
        """The model the acquisition gets for ``choice``; the choice is recorded."""
        rec, pop = ctx.rec, ctx.population
        if choice.guarded:
            model = self._default_model(ctx)
            rec.guarded, rec.chosen = True, GUARD_NAME
            return model, ModelConfig()
        best_name = choice.names[0]
        chosen = models[best_name]
        assert chosen.model is not None  # the chosen kernel is fitted in this process
        model = chosen.model
        if len(choice.names) > 1:
            mixed = [models[k].model for k in choice.names]
            model = KernelMixtureModel(mixed, choice.counts, choice.names)  # type: ignore[arg-type]
            rec.mixture = dict(zip(choice.names, choice.weights, strict=True))
        best = pop.get(best_name)
        best.times_chosen += 1
        rec.chosen, rec.chosen_formula = best_name, best.formula
        rec.chosen_score = choice.scores.get(best_name)
        ctx.state.last_choice = LastChoice.of(
            best_name, ctx.dataset.X, ctx.dataset.Y, round_index=rec.round
        )
        return model, chosen.config

    def _settle(
        self, ctx: RoundContext, choice: Choice, models: Mapping[str, FittedKernel]
    ) -> None:
        """The round's scores; the population keeps its best (the choice, the batch
        portfolio's ``portfolio_keep`` and those the selection rule protects are kept:
        under ``prequential``, kernels that have not forecast a batch yet)."""
        rec, pop = ctx.rec, ctx.population
        rule = self.config.selection_rule()
        rec.scores = dict(choice.scores)
        if rule.scores_forecasts:
            rec.fit_scores = {k: v.score for k, v in models.items()}
        protect = [] if choice.guarded else list(choice.names)
        # members with a share of every batch whatever their forecasts: truncation, which
        # ranks by forecasts, would take that share away (they still leave when struck)
        protect += list(self.config.portfolio_keep)
        protect += rule.protected(pop)  # prequential: new kernels, not yet forecast
        rec.dropped.extend(ctx.state.truncate(protect=protect))

    def _record_population(
        self,
        ctx: RoundContext,
        accepted: list[KernelCandidate],
        models: Mapping[str, FittedKernel],
    ) -> None:
        rec, pop = ctx.rec, ctx.population
        rec.population = pop.names
        rec.population_diversity = self.admission.diversity([m.candidate.key for m in pop])
        rec.accepted_diversity = (
            self.admission.diversity([c.key for c in accepted if c.name in models])
            if len(rec.accepted) > 1
            else None
        )
