"""The choice of a round: which member (or mixture) the acquisition gets.

:class:`Chooser` is a collaborator of
:class:`~ax_kernel_discovery.surrogate.core.KernelDiscoverySurrogate`: it ranks the members
by the scores the selection rule gives them before the fits
(:meth:`~ax_kernel_discovery.selection_rules.SelectionRule.score_before_fits`;
``prequential``: the lowest held-out loss first; with the cost tie rule, the members within
noise of the best cheapest first), weighs a mixture of the best members, and takes the best
fit score where no member has such a score (the other criteria). It fits nothing
(:mod:`.fitting`) and scores no forecast (:mod:`.heldout`), and changes no state: it reads
the population and the round's fitted kernels and returns a :class:`Choice`.

Where members have scores before the fits (``prequential``: forecasts that earlier fits
made), the choice is known before the round's fits (:meth:`Chooser.choice_before_fits`,
from the same order as :meth:`Chooser.select`): that is what lets a round fit its other
kernels in the background (:mod:`~ax_kernel_discovery.surrogate.executors`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.errors import is_kernel_failure, unexpected
from ax_kernel_discovery.options import ChoiceOptions
from ax_kernel_discovery.population import Member, Population
from ax_kernel_discovery.selection import (
    mixture_counts,
    num_hyperparameters,
    pseudo_bma_weights,
    stacking_weights,
    within_noise,
)
from ax_kernel_discovery.selection_rules import SelectionRule
from ax_kernel_discovery.surrogate.fitting import FittedKernel
from ax_kernel_discovery.surrogate.state import RoundContext

#: What a round records as chosen when ``guard_rounds`` hands the acquisition Ax's default.
GUARD_NAME = "AxDefault"

#: Mixture weights are rounded to multiples of 1 / MIXTURE_SLOTS.
MIXTURE_SLOTS = 12

#: ``tie_break="cost"``: a member whose held-out loss is worse than the best's by more than
#: this per point never ties with it, however noisy the points (``log``: nats, a density
#: 10% lower; ``crps``: a tenth of the best's mean CRPS).
TIE_BOUND = 0.1


@dataclass
class Choice:
    """What a round hands the acquisition: one member, a weighted mixture, or Ax's default.

    Attributes:
        names: The chosen members, the main one (largest weight) first.
        counts: Integer mixture weights (see :class:`~.mixture.KernelMixtureModel`).
        weights: ``counts`` normalized.
        scores: The scores the choice compared (lower is better).
        guarded: Ax's default model instead of a member (``guard_rounds``).
    """

    names: list[str]
    counts: list[int] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    guarded: bool = False


@dataclass
class EarlyChoice:
    """A round's choice known before its fits (see :meth:`KernelFitter.choice_before_fits`).

    Attributes:
        guarded: Ax's default model (``guard_rounds``).
        ranked: The members to try, best held-out loss first: the first whose fit
            succeeds is chosen.
        scores: The held-out losses the choice compares (of the members whose fits
            succeed, once they are known).
    """

    guarded: bool = False
    ranked: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)


class Chooser:
    """The choice step of a round of kernel discovery.

    Args:
        options: The settings it reads (``criterion``: its selection rule, ``guard_rounds``,
            ``heldout_score``, ``score_batches``, ``tie_break``, ``mixture_top_k``,
            ``mixture_weights``, ``parsimony_tolerance``; the config's
            :meth:`~ax_kernel_discovery.config.KernelDiscoveryConfig.choice_options`).
    """

    def __init__(self, options: ChoiceOptions) -> None:
        self.options = options
        self._sizes: dict[tuple[str, int], int] = {}  # (candidate key, dim) -> hyperparameters

    @property
    def rule(self) -> SelectionRule:
        """The selection rule of ``options.criterion``."""
        return self.options.selection_rule()

    def member_score(self, member: Member, models: Mapping[str, FittedKernel]) -> float | None:
        """The score a member is ranked by (the rule's
        :meth:`~ax_kernel_discovery.selection_rules.SelectionRule.member_score`): held-out
        (``prequential``) or its fit's score."""
        return self.rule.member_score(member, models[member.name].score)

    def select(self, models: dict[str, FittedKernel], ctx: RoundContext) -> Choice:
        """The round's choice among the fitted members (see :class:`Choice`).

        * the first ``guard_rounds`` BO rounds hand the acquisition Ax's default model;
        * the first fitted member in :meth:`choice_order` (``prequential``: the lowest
          held-out loss among those that have forecast a batch; with
          ``tie_break="cost"``, the cheapest member within noise of it), or a mixture of
          it and the next best of the ``mixture_top_k``;
        * where no fitted member is in that order (a rule that scores members by their
          fits only; under ``prequential``, before any member has forecast a batch), the
          best fit score (:meth:`choose`; ``prequential``: ``lbo_crps``, LOO-CRPS before
          the first batch).
        """
        pop = ctx.population
        fit_scores = {k: v.score for k, v in models.items()}
        done = len(ctx.past)
        if done < self.options.guard_rounds:
            return Choice(names=[], scores=fit_scores, guarded=True)
        order, losses = self.choice_order(ctx)
        eligible = {k: v for k, v in losses.items() if k in models}
        if eligible:
            best = next(k for k in order if k in models)
            if self.options.mixture_top_k <= 1:
                return Choice(names=[best], counts=[1], weights=[1.0], scores=eligible)
            ranked = sorted(eligible, key=lambda k: (eligible[k], k))
            top = [best] + [k for k in ranked if k != best][: self.options.mixture_top_k - 1]
            return self._mixture(pop, top, eligible)
        return Choice(names=[self.choose(models)], counts=[1], weights=[1.0], scores=fit_scores)

    def choice_before_fits(self, ctx: RoundContext) -> EarlyChoice | None:
        """The round's choice as :meth:`select` will make it, known before the fits.

        Where members have scores before the fits (``prequential``, one member: held-out
        forecasts of earlier fits), this round's fits decide only which members can still
        be chosen: the first member of :meth:`choice_order` whose fit succeeds, as in
        :meth:`select`. A guard round hands on Ax's default model whatever the fits give.
        ``None`` where the choice needs this round's fit scores (a rule that scores by the
        fits, no member with a forecast yet) or several fitted members (a mixture).
        """
        if len(ctx.past) < self.options.guard_rounds:
            return EarlyChoice(guarded=True)
        if self.options.mixture_top_k > 1:
            return None
        order, losses = self.choice_order(ctx)
        if not order:
            return None
        return EarlyChoice(ranked=order, scores=losses)

    def choice_order(self, ctx: RoundContext) -> tuple[list[str], dict[str, float]]:
        """The members that have a score before the fits (the rule's
        :meth:`~ax_kernel_discovery.selection_rules.SelectionRule.score_before_fits`;
        ``prequential``: those that have forecast a batch), in the order the choice takes
        them (the first whose fit succeeds), and those scores (held-out losses).

        Best held-out loss first; with ``tie_break="cost"``, the members tied with the
        best (:meth:`tied_with`) come first, cheapest for the acquisition first
        (:meth:`acquisition_cost`). The order is fixed before the round's fits, so a
        round that fits its other kernels in the background chooses as one that fits
        them all first.
        """
        pop = ctx.population
        losses, ranked = self.heldout_ranking(list(pop))
        if self.options.resolved_tie_break() != "cost" or not ranked:
            return ranked, losses
        lead = pop.get(ranked[0])
        tied = [ranked[0]] + [
            k for k in ranked[1:] if self.tied_with(lead, pop.get(k), losses[ranked[0]], losses[k])
        ]
        tied.sort(
            key=lambda k: (*self.acquisition_cost(pop.get(k).candidate, ctx.dim), losses[k], k)
        )
        return tied + [k for k in ranked if k not in tied], losses

    def tied_with(self, lead: Member, other: Member, lead_loss: float, other_loss: float) -> bool:
        """Whether ``other`` ties with ``lead``, the member with the best held-out loss.

        Judged on the lead's whole score window (its last ``score_batches`` forecast
        batches), which ``other`` must have forecast too: their per-point losses there
        are within one paired standard error (:func:`~.selection.within_noise`), and
        neither that paired mean difference nor the difference of their held-out losses
        (``lead_loss``, ``other_loss``: what the choice ranks) exceeds :data:`TIE_BOUND`.
        """
        bound = TIE_BOUND if self.options.heldout_score == "log" else TIE_BOUND * abs(lead_loss)
        if other_loss - lead_loss > bound:
            return False
        window = [h.round for h in lead.heldout[-self.options.score_batches :] if h.logpdf]
        forecast = {h.round for h in other.heldout if h.logpdf}
        if not window or not set(window) <= forecast:
            return False
        return within_noise(
            self._heldout_losses(lead, window), self._heldout_losses(other, window), bound=bound
        )

    def acquisition_cost(self, candidate: KernelCandidate, dim: int) -> tuple[int, int]:
        """What ``tie_break="cost"`` compares: the kernel's structure (leaves, warps,
        projections; :attr:`~.candidate.KernelCandidate.acquisition_cost`), then its
        number of hyperparameters at ``dim`` inputs (a kernel that cannot be built
        counts as the most expensive)."""
        key = (candidate.key, dim)
        if key not in self._sizes:
            try:
                self._sizes[key] = num_hyperparameters(candidate.build(dim))
            except Exception as e:  # noqa: BLE001 - its fit will fail and say why
                if not is_kernel_failure(e):
                    unexpected(e, f"the acquisition cost of {candidate.name}")
                self._sizes[key] = sys.maxsize
        return candidate.acquisition_cost, self._sizes[key]

    def heldout_ranking(self, members: Sequence[Member]) -> tuple[dict[str, float], list[str]]:
        """The members that have a score before the fits, with those scores, and their
        names best first (ties by name): what the choice compares (``prequential``: the
        members that have forecast a batch, by their held-out losses)."""
        rule = self.rule
        losses = {m.name: rule.score_before_fits(m) for m in members}
        eligible = {k: v for k, v in losses.items() if v is not None}
        return eligible, sorted(eligible, key=lambda k: (eligible[k], k))

    def _heldout_losses(self, member: Member, rounds: Sequence[int]) -> Tensor:
        """A member's per-point held-out losses on the batches of ``rounds``, concatenated."""
        by_round = {h.round: h for h in member.heldout}
        return torch.tensor(
            [v for r in rounds for v in by_round[r].loss(self.options.heldout_score)],
            dtype=torch.float64,
        )

    def _common_rounds(self, members: Sequence[Member]) -> list[int]:
        """The batches (by round) in the window that every one of ``members`` forecast."""
        window = self.options.score_batches
        sets = [{h.round for h in m.heldout[-window:]} for m in members]
        return sorted(set.intersection(*sets)) if sets else []

    def _mixture(self, pop: Population, top: list[str], eligible: dict[str, float]) -> Choice:
        """Weights of the members ``top`` from their held-out log densities on common points."""
        members = [pop.get(k) for k in top]
        rounds = self._common_rounds(members)
        if self.options.mixture_weights == "equal" or not rounds:
            weights = [1.0 / len(top)] * len(top)
        else:
            by_round = [{h.round: h for h in m.heldout} for m in members]
            log_density = torch.tensor(
                [[v for r in rounds for v in b[r].logpdf] for b in by_round], dtype=torch.float64
            )
            w = (
                stacking_weights(log_density)
                if self.options.mixture_weights == "stacking"
                else pseudo_bma_weights(log_density)
            )
            weights = w.tolist()
        counts = mixture_counts(weights, MIXTURE_SLOTS)
        order = sorted((i for i in range(len(top)) if counts[i] > 0), key=lambda i: (-counts[i], i))
        total = sum(counts)
        return Choice(
            names=[top[i] for i in order],
            counts=[counts[i] for i in order],
            weights=[counts[i] / total for i in order],
            scores=eligible,
        )

    def choose(self, models: dict[str, FittedKernel]) -> str:
        """The best-scoring kernel; with ``parsimony_tolerance``, the simplest near-best one.

        Kernels whose score is within ``parsimony_tolerance`` of the best are taken as
        tied, and the one with the fewest hyperparameters wins (the acquisition optimizer
        evaluates the chosen kernel thousands of times).
        """
        best = min(models, key=lambda k: models[k].score)
        tol = self.options.parsimony_tolerance
        if tol <= 0:
            return best
        near = [k for k in models if models[k].score <= models[best].score + tol]

        def cost(name: str) -> tuple[int, float]:
            model = models[name].model
            covar = model.covar_module if model is not None else None
            size = num_hyperparameters(covar) if isinstance(covar, torch.nn.Module) else 0
            return size, models[name].score

        return min(near, key=cost)


__all__ = ["GUARD_NAME", "MIXTURE_SLOTS", "Choice", "Chooser", "EarlyChoice"]
