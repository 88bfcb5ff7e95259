"""How a round fits, scores and chooses kernels (step 4 and the choice of step 5).

:class:`KernelFitter` is a collaborator of
:class:`~ax_kernel_discovery.surrogate.KernelDiscoverySurrogate`: it builds every member
and accepted candidate the Ax way (through a model builder, Ax's
``Surrogate._construct_model`` in a run), fits it (in full or by successive halving),
scores it by the criterion and chooses the kernel returned to Ax. It reads and updates
only the :class:`~ax_kernel_discovery.surrogate.state.RoundContext` it is handed (the
outcome's state and the round's record), so it can be tested without an Ax surrogate.
:func:`candidate_model_config` is the Ax ``ModelConfig`` of one candidate, also used by the
fixed-kernel baselines and the kernel library.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.surrogate import Surrogate
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from torch import Tensor

from ax_kernel_discovery._deprecated import moved_names
from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.gp import KernelDiscoveryGP
from ax_kernel_discovery.inheritance import inherited_parameters
from ax_kernel_discovery.population import HeldOut, Member, Population
from ax_kernel_discovery.selection import (
    best_points,
    gaussian_crps,
    gaussian_log_density,
    heldout_predictive,
    mixture_counts,
    num_hyperparameters,
    prior_covariance,
    pseudo_bma_weights,
    score,
    stacking_weights,
    within_noise,
)
from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel
from ax_kernel_discovery.surrogate.round_record import RoundRecord
from ax_kernel_discovery.surrogate.rows import FitRows, RowKey
from ax_kernel_discovery.surrogate.state import OutcomeState, RoundContext, warm_parameters
from ax_kernel_discovery.surrogate.worker import WorkerPool, shared_pool

logger = logging.getLogger(__name__)

#: A fitted kernel: its model, the ``ModelConfig`` that built it, and its score.
FittedKernel = tuple[Model, ModelConfig, float]

#: What a round records as chosen when ``guard_rounds`` hands the acquisition Ax's default.
GUARD_NAME = "AxDefault"

#: Mixture weights are rounded to multiples of 1 / MIXTURE_SLOTS.
MIXTURE_SLOTS = 12


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


def candidate_model_config(
    candidate: KernelCandidate, fit_timeout: float | None = None, maxiter: int | None = None
) -> ModelConfig:
    """The Ax ``ModelConfig`` that builds and fits ``candidate`` (storable in Ax's JSON)."""
    return ModelConfig(
        botorch_model_class=KernelDiscoveryGP,
        covar_module_class=DiscoveredKernel,
        covar_module_options={"candidate": candidate.model_dump_json()},
        mll_options={"fit_options": {"timeout_sec": fit_timeout, "maxiter": maxiter}},
        name=candidate.name,
    )


class ModelBuilder(Protocol):
    """Builds (and fits, with ``refit``) the GP of a ``ModelConfig`` on a dataset.

    In a run this is Ax's ``Surrogate._construct_model``: the same transforms, priors and
    fitting routine as every Ax model.
    """

    def __call__(
        self,
        dataset: SupervisedDataset,
        search_space_digest: SearchSpaceDigest,
        model_config: ModelConfig,
        state_dict: Mapping[str, Tensor] | None,
        refit: bool,
    ) -> Model: ...


@dataclass(frozen=True)
class FitStart:
    """Where the fit of a kernel with no warm start of its own begins.

    Attributes:
        parameters: A (partial) state dict to start from.
        warm_steps: Fit with a warm start's step budget (``fit_maxiter``) instead of a
            cold start's (4x).
        label: Counted in the round's timings under this key (``None``: not counted).
    """

    parameters: dict[str, Tensor]
    warm_steps: bool = False
    label: str | None = None


#: How a new kernel starts its fit (an extension point of the surrogate): given the
#: kernel, the round's kernels, the outcome's warm starts by name and the input dimension,
#: a :class:`FitStart`, or ``None`` for GPyTorch's initial values.
StartRule = Callable[
    [KernelCandidate, Sequence[KernelCandidate], Mapping[str, Mapping[str, Tensor]], int],
    "FitStart | None",
]


def inherit_from_members(
    cand: KernelCandidate,
    members: Sequence[KernelCandidate],
    warm: Mapping[str, Mapping[str, Tensor]],
    dim: int,
) -> FitStart | None:
    """The ``inherit_parameters`` start rule: the fitted parameters of the members ``cand``
    contains (:func:`~ax_kernel_discovery.inheritance.inherited_parameters`), with a cold
    start's step budget."""
    fitted = [(m, warm[m.name]) for m in members if m.name in warm]
    params = inherited_parameters(cand, fitted, dim)
    return FitStart(params, label="inherited") if params else None


class KernelFitter:
    """The fit, score and choice steps of a round of kernel discovery.

    Args:
        config: The surrogate's settings.
        build_model: Builds and fits one kernel's GP (:class:`ModelBuilder`).
        start_rule: How a kernel without a warm start begins its fit (:data:`StartRule`;
            default: :func:`inherit_from_members` when ``config.inherit_parameters``).
    """

    def __init__(
        self,
        config: KernelDiscoveryConfig,
        build_model: ModelBuilder,
        start_rule: StartRule | None = None,
    ) -> None:
        self.config = config
        self.build_model = build_model
        self._start_rule = start_rule
        self._sizes: dict[tuple[str, int], int] = {}  # (candidate key, dim) -> hyperparameters

    @property
    def start_rule(self) -> StartRule | None:
        """The start rule given, else the one ``config.inherit_parameters`` asks for."""
        if self._start_rule is not None:
            return self._start_rule
        return inherit_from_members if self.config.inherit_parameters else None

    def fit_all(
        self,
        cands: list[KernelCandidate],
        ctx: RoundContext,
        members: Sequence[KernelCandidate] | None = None,
        drop_slow: bool = True,
    ) -> dict[str, FittedKernel]:
        """Fit and score every kernel: in full, or by successive halving.

        ``members`` are the round's kernels the start rule may inherit from (default:
        ``cands``); ``drop_slow=False`` leaves the slow-fit rule (:meth:`drop_slow_fits`)
        to the caller, which applies it over the whole round when these are a part of it.

        ``selection="full"`` fits every member (warm-started, ``fit_maxiter`` steps; new
        kernels 4x). ``selection="halving"`` first *screens*: a member with last round's
        hyperparameters is scored at them without refitting (a round adds a few points
        to many, so its hyperparameters barely move); a new kernel has no such state and
        is fitted exactly as full selection fits it, once. Then the ``halving_keep`` best
        screened members are refitted exactly as the full procedure refits them (from the
        same warm start, with the same number of steps) and scored again. Every finalist's
        score is thus the one full selection would give it; members that were only
        screened keep their screen hyperparameters and scores.
        """
        models: dict[str, FittedKernel] = {}
        rec, warm = ctx.rec, ctx.state.warm
        halving = self.halving(ctx) and len(cands) > self.config.halving_keep
        rec.selection = "halving" if halving else "full"
        warm_before = dict(warm) if halving else {}
        screened: set[str] = set()
        jobs = []
        for cand in cands:
            screen = halving and cand.name in warm
            jobs.append(
                (
                    cand,
                    not screen or self.config.halving_screen_maxiter > 0,
                    self.config.halving_screen_maxiter if screen else None,
                )
            )
            if screen:
                screened.add(cand.name)
        round_kernels = cands if members is None else members
        fits = self._fit_jobs(jobs, ctx, members=round_kernels)
        for cand, fitted in zip(cands, fits, strict=True):
            if fitted is not None:
                models[cand.name] = fitted
            else:
                screened.discard(cand.name)
        if not halving:
            return self.drop_slow_fits(models, ctx) if drop_slow else models
        # New kernels were fitted as in full selection: the finalist slots go to the
        # best screened members (a screen scores last round's fit, which has not seen the
        # newest batch, so under lbo_crps it trails every refitted kernel's score).
        ranked = sorted(screened, key=lambda k: models[k][2])
        finalists = ranked[: self.config.halving_keep]
        by_name = {c.name: c for c in cands}
        for name in finalists:
            warm[name] = warm_before[name]
            fitted = self.fit_and_score(by_name[name], ctx)
            if fitted is None:
                models.pop(name)
            else:
                models[name] = fitted
        rec.timings["finalists"] = float(len(finalists))
        return self.drop_slow_fits(models, ctx) if drop_slow else models

    def drop_slow_fits(self, models: dict[str, Any], ctx: RoundContext) -> dict[str, Any]:
        """Reject the kernels whose fit took more than ``fit_timeout`` and more than
        ``slow_fit_factor`` times the round's fastest fit (a recorded ``timeout``).

        The limit is relative so that a problem where every fit needs the time cap (a
        large n and D on a CPU) still has kernels to choose from, while a kernel far
        slower than its peers (it also slows every acquisition step) is refused.
        """
        rec = ctx.rec
        seconds = {k: rec.timings[f"refit:{k}"] for k in models if f"refit:{k}" in rec.timings}
        if not seconds:
            return models
        limit = max(self.config.fit_timeout, self.config.slow_fit_factor * min(seconds.values()))
        for name, elapsed in seconds.items():
            if elapsed > limit:
                models.pop(name)  # the round then drops it (and its warm start)
                rec.rejected.append(
                    Rejection(
                        name=name,
                        stage="timeout",
                        reason=f"fit took {elapsed:.1f}s > {limit:.1f}s (fit_timeout="
                        f"{self.config.fit_timeout}s, {self.config.slow_fit_factor}x the "
                        "fastest fit)",
                    )
                )
        return models

    def halving(self, ctx: RoundContext) -> bool:
        """Whether this round selects by successive halving (``config.selection``).

        ``auto`` halves when the outcome's last round had ``n_last`` points and this one
        adds at most ``halving_max_new_fraction * n_last``: a member's hyperparameters
        then barely move, so its score at last round's hyperparameters ranks it as a refit
        would.
        """
        if self.config.selection != "auto":
            return self.config.selection == "halving"
        last = ctx.history[-1].n if ctx.history else None
        n = ctx.rec.n
        return last is not None and 0 <= n - last <= self.config.halving_max_new_fraction * last

    def _score_blocks(self, ctx: RoundContext, n: int) -> list[Tensor] | None:
        """The last ``score_batches`` BO batches of the outcome, as row indices (lbo_crps).

        A batch is the rows a round's fit saw first. With the rows keyed by trial
        (:attr:`RoundContext.rows`) they are found by key, wherever they sit in Ax's
        order; otherwise by position (Ax hands the rows in trial order, so round ``r``
        added rows ``n_{r-1} .. n_r - 1``, unless trials completed out of order). The
        initial design is never a batch; before the first BO batch there is none
        (``None``: LOO-CRPS).
        """
        if self.config.criterion not in ("lbo_crps", "prequential"):
            return None
        rows, seen = ctx.rows, ctx.state.row_rounds
        if rows is not None and len(rows.keys) == n and seen:
            first = min(seen.values())
            by_round: dict[int, list[int]] = {}
            for i, key in enumerate(rows.keys):
                r = seen.get(key)
                if r is not None and r > first:
                    by_round.setdefault(r, []).append(i)
            keyed = [torch.tensor(by_round[r]) for r in sorted(by_round)]
            return keyed[-self.config.score_batches :] or None
        edges = sorted({r.n for r in ctx.history if r.n < n})
        edges.append(n)
        blocks = [torch.arange(a, b) for a, b in zip(edges, edges[1:], strict=False)]
        return blocks[-self.config.score_batches :] or None

    def member_score(self, member: Member, models: Mapping[str, Any]) -> float | None:
        """The score a member is ranked by: held-out (``prequential``) or its fit's score."""
        if self.config.criterion == "prequential":
            return member.heldout_loss(self.config.heldout_score, self.config.score_batches)
        return models[member.name][2]

    def select(self, models: dict[str, FittedKernel], ctx: RoundContext) -> Choice:
        """The round's choice among the fitted members (see :class:`Choice`).

        * the first ``guard_rounds`` BO rounds hand the acquisition Ax's default model;
        * ``prequential``: the first fitted member in :meth:`choice_order` (the lowest
          held-out loss among those that have forecast a batch; with
          ``tie_break="cost"``, the cheapest member within noise of it), or a mixture of
          it and the next best of the ``mixture_top_k``; before any member has
          forecast a batch, the fit scores decide (``lbo_crps``, LOO-CRPS before the
          first batch);
        * otherwise the best fit score (:meth:`choose`).
        """
        pop = ctx.population
        fit_scores = {k: v[2] for k, v in models.items()}
        done = len(ctx.history)
        if done < self.config.guard_rounds:
            return Choice(names=[], scores=fit_scores, guarded=True)
        if self.config.criterion == "prequential":
            order, losses = self.choice_order(ctx)
            eligible = {k: v for k, v in losses.items() if k in models}
            if eligible:
                best = next(k for k in order if k in models)
                if self.config.mixture_top_k <= 1:
                    return Choice(names=[best], counts=[1], weights=[1.0], scores=eligible)
                ranked = sorted(eligible, key=lambda k: (eligible[k], k))
                top = [best] + [k for k in ranked if k != best][: self.config.mixture_top_k - 1]
                return self._mixture(pop, top, eligible)
        return Choice(names=[self.choose(models)], counts=[1], weights=[1.0], scores=fit_scores)

    def choice_before_fits(self, ctx: RoundContext) -> EarlyChoice | None:
        """The round's choice as :meth:`select` will make it, known before the fits.

        Under ``prequential`` (one member) the choice compares held-out forecasts of
        earlier fits, so this round's fits decide only which members can still be chosen:
        the first member of :meth:`choice_order` whose fit succeeds. A guard round hands
        on Ax's default model whatever the fits give. ``None`` where the choice needs this
        round's fit scores (another criterion, no member with a forecast yet) or several
        fitted members (a mixture).
        """
        if len(ctx.history) < self.config.guard_rounds:
            return EarlyChoice(guarded=True)
        if self.config.criterion != "prequential" or self.config.mixture_top_k > 1:
            return None
        order, losses = self.choice_order(ctx)
        if not order:
            return None
        return EarlyChoice(ranked=order, scores=losses)

    def choice_order(self, ctx: RoundContext) -> tuple[list[str], dict[str, float]]:
        """The members that have forecast a batch, in the order the ``prequential``
        choice takes them (the first whose fit succeeds), and their held-out losses.

        Best held-out loss first; with ``tie_break="cost"``, the members within one
        paired standard error of the best come first, cheapest for the acquisition first
        (:meth:`acquisition_cost`). The order is fixed before the round's fits, so a
        round that fits its other kernels in the background chooses as one that fits
        them all first.
        """
        pop = ctx.population
        losses, ranked = self.heldout_ranking(list(pop))
        if self.config.resolved_tie_break() != "cost" or not ranked:
            return ranked, losses
        lead = pop.get(ranked[0])
        tied = [ranked[0]]
        for name in ranked[1:]:
            rounds = self._common_rounds([lead, pop.get(name)])
            if rounds and within_noise(
                self._heldout_losses(lead, rounds), self._heldout_losses(pop.get(name), rounds)
            ):
                tied.append(name)
        tied.sort(
            key=lambda k: (*self.acquisition_cost(pop.get(k).candidate, ctx.dim), losses[k], k)
        )
        return tied + [k for k in ranked if k not in tied], losses

    def acquisition_cost(self, candidate: KernelCandidate, dim: int) -> tuple[int, int]:
        """What ``tie_break="cost"`` compares: the kernel's structure (leaves, warps,
        projections; :attr:`~.candidate.KernelCandidate.acquisition_cost`), then its
        number of hyperparameters at ``dim`` inputs (a kernel that cannot be built
        counts as the most expensive)."""
        key = (candidate.key, dim)
        if key not in self._sizes:
            try:
                self._sizes[key] = num_hyperparameters(candidate.build(dim))
            except Exception:  # noqa: BLE001 - its fit will fail and say why
                self._sizes[key] = sys.maxsize
        return candidate.acquisition_cost, self._sizes[key]

    def heldout_ranking(self, members: Sequence[Member]) -> tuple[dict[str, float], list[str]]:
        """The members that have forecast a batch, with their held-out losses, and their
        names best first (ties by name): what the ``prequential`` choice compares."""
        kind, window = self.config.heldout_score, self.config.score_batches
        losses = {m.name: m.heldout_loss(kind, window) for m in members}
        eligible = {k: v for k, v in losses.items() if v is not None}
        return eligible, sorted(eligible, key=lambda k: (eligible[k], k))

    def _heldout_losses(self, member: Member, rounds: Sequence[int]) -> Tensor:
        """A member's per-point held-out losses on the batches of ``rounds``, concatenated."""
        by_round = {h.round: h for h in member.heldout}
        return torch.tensor(
            [v for r in rounds for v in by_round[r].loss(self.config.heldout_score)],
            dtype=torch.float64,
        )

    def _common_rounds(self, members: Sequence[Member]) -> list[int]:
        """The batches (by round) in the window that every one of ``members`` forecast."""
        window = self.config.score_batches
        sets = [{h.round for h in m.heldout[-window:]} for m in members]
        return sorted(set.intersection(*sets)) if sets else []

    def _mixture(self, pop: Population, top: list[str], eligible: dict[str, float]) -> Choice:
        """Weights of the members ``top`` from their held-out log densities on common points."""
        members = [pop.get(k) for k in top]
        rounds = self._common_rounds(members)
        if self.config.mixture_weights == "equal" or not rounds:
            weights = [1.0 / len(top)] * len(top)
        else:
            by_round = [{h.round: h for h in m.heldout} for m in members]
            log_density = torch.tensor(
                [[v for r in rounds for v in b[r].logpdf] for b in by_round], dtype=torch.float64
            )
            w = (
                stacking_weights(log_density)
                if self.config.mixture_weights == "stacking"
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

    def score_heldout(self, ctx: RoundContext) -> None:
        """Score each member's last-round forecast of the batch that arrived since.

        The member's GP is rebuilt at the hyperparameters it was fitted to last round (its
        warm start, saved with the state, so a reloaded run scores identically) and the
        new rows are predicted from the rows that fit saw, in closed form, in the units
        and transform of that fit (:meth:`forecast_data`). The score is the forecast's
        log density (and CRPS) at each new row, kept per member for the choice.
        """
        last = ctx.history[-1] if ctx.history else None
        forecast = self.forecast_data(ctx, last) if last is not None else None
        if last is None or forecast is None:
            return
        data, block = forecast
        rec, window = ctx.rec, self.config.score_batches
        rec.heldout_units = "fit" if ctx.rows is not None else "restandardized"
        for member in ctx.population:
            warm = ctx.state.warm.get(member.name)
            if warm is None or any(h.round == last.round for h in member.heldout):
                continue
            config = candidate_model_config(member.candidate, self.config.fit_timeout)
            try:
                model = self.build_model(data, ctx.search_space_digest, config, warm, False)
                with torch.no_grad():
                    K, centred = prior_covariance(model)
                    mu, var = heldout_predictive(K, centred, block.to(K.device))
                    std = var.sqrt()
                    logpdf = gaussian_log_density(mu, std, centred[block.to(K.device)])
                    crps = gaussian_crps(mu, std, centred[block.to(K.device)])
                if not (torch.isfinite(logpdf).all() and torch.isfinite(crps).all()):
                    raise ValueError("non-finite held-out forecast")
            except Exception as e:  # noqa: BLE001 - an unscored batch is recorded, not raised
                logger.info("held-out score of %s failed: %r", member.name, e)
                rec.heldout_failed.append(member.name)
                continue
            member.heldout = [
                *member.heldout,
                HeldOut(round=last.round, logpdf=logpdf.tolist(), crps=crps.tolist()),
            ][-window:]

    def forecast_data(
        self, ctx: RoundContext, last: RoundRecord
    ) -> tuple[SupervisedDataset, Tensor] | None:
        """The data last round's fits forecast from, and which of its rows are the batch.

        Returns a dataset whose first rows are those last round's fit saw and whose last
        rows (the returned indices) arrived since, with targets and known noise in the
        units of that fit; ``None`` when there is no batch to score (no new row, or
        fewer than two rows before it).

        * With the rows keyed by trial (:attr:`RoundContext.rows`, kernel discovery's BO
          step): the new rows are those no earlier fit saw, wherever they sit in Ax's
          order (trials complete out of order), and every row is mapped from its raw
          value by Ax's Y transforms *as fitted last round* (Winsorize cutoffs,
          standardization), SEMs included: exactly the targets that fit saw, and the
          batch in its units.
        * Otherwise (no keyed rows, or a Y transform the map does not know): the last
          ``n - last.n`` rows are the batch and the older rows are standardized again
          (Ax's ``StandardizeY``: mean, ``ddof=1`` std), the known noise with them.
        """
        dataset, state, rows = ctx.dataset, ctx.state, ctx.rows
        Yvar = dataset.Yvar
        if rows is not None and state.ymap is not None and state.row_rounds:
            old = [i for i, k in enumerate(rows.keys) if k in state.row_rounds]
            new = [i for i, k in enumerate(rows.keys) if k not in state.row_rounds]
            if len(old) < 2 or not new:
                return None
            order = old + new
            mean, sem = state.ymap(rows.raw_mean[order], rows.raw_sem[order])
            X = dataset.X[torch.as_tensor(order, device=dataset.X.device)]
            like = dataset.Y
            Y = torch.as_tensor(mean, dtype=like.dtype, device=like.device).reshape(-1, 1)
            var = None
            if Yvar is not None:
                var = torch.as_tensor(sem**2, dtype=like.dtype, device=like.device).reshape(-1, 1)
                if not torch.isfinite(var).all():
                    return None
            block = torch.arange(len(old), len(order))
        else:
            n = ctx.n
            if not 1 < last.n < n:
                return None
            head = dataset.Y[: last.n].reshape(-1)
            scale = float(head.std(unbiased=True))
            scale = scale if math.isfinite(scale) and scale > 0 else 1.0
            X = dataset.X
            Y = (dataset.Y - head.mean()) / scale
            var = None if Yvar is None else Yvar / scale**2
            block = torch.arange(last.n, n)
        data = SupervisedDataset(
            X=X,
            Y=Y,
            Yvar=var,
            feature_names=dataset.feature_names,
            outcome_names=dataset.outcome_names,
        )
        return data, block

    def choose(self, models: dict[str, FittedKernel]) -> str:
        """The best-scoring kernel; with ``parsimony_tolerance``, the simplest near-best one.

        Kernels whose score is within ``parsimony_tolerance`` of the best are taken as
        tied, and the one with the fewest hyperparameters wins (the acquisition optimizer
        evaluates the chosen kernel thousands of times).
        """
        best = min(models, key=lambda k: models[k][2])
        tol = self.config.parsimony_tolerance
        if tol <= 0:
            return best
        near = [k for k in models if models[k][2] <= models[best][2] + tol]

        def cost(name: str) -> tuple[int, float]:
            covar = models[name][0].covar_module
            size = num_hyperparameters(covar) if isinstance(covar, torch.nn.Module) else 0
            return size, models[name][2]

        return min(near, key=cost)

    def fit_and_score(
        self,
        cand: KernelCandidate,
        ctx: RoundContext,
        refit: bool = True,
        maxiter: int | None = None,
        members: Sequence[KernelCandidate] = (),
    ) -> FittedKernel | None:
        """Build ``cand``'s GP (warm-started), fit it unless ``refit=False``, score it.

        A cold start gets 4 times ``fit_maxiter`` steps (``maxiter`` overrides
        ``fit_maxiter``); ``refit=False`` scores the model at last round's hyperparameters
        (it needs a warm state). A kernel without a warm state starts where the start
        rule puts it (``inherit_parameters``: the fitted parameters of the ``members`` it
        contains, :mod:`.inheritance`, still with a cold start's steps).
        """
        job = self._prepare(cand, ctx, refit, maxiter, members)
        t0 = time.perf_counter()
        try:
            model = _build_and_fit(self.build_model, ctx.dataset, ctx.search_space_digest, job)
        except Exception as e:  # noqa: BLE001 - any kernel failure is a recorded rejection
            return self._reject(cand, ctx, f"{type(e).__name__}: {e}")
        if job.refit:
            ctx.rec.timings[f"refit:{cand.name}"] = time.perf_counter() - t0
        return self._score(cand, ctx, model, job.config, t0)

    def _prepare(
        self,
        cand: KernelCandidate,
        ctx: RoundContext,
        refit: bool,
        maxiter: int | None,
        members: Sequence[KernelCandidate],
    ) -> FitJob:
        """Where ``cand``'s fit starts and how many steps it gets (see :meth:`fit_and_score`)."""
        warm = ctx.state.warm.get(cand.name) if self.config.warm_start else None
        start = None
        if warm is None and self.config.warm_start and self.start_rule is not None:
            start = self.start_rule(cand, members, ctx.state.warm, ctx.dim)
        maxiter = self.config.fit_maxiter if maxiter is None else maxiter
        if maxiter is not None and warm is None and not (start and start.warm_steps):
            maxiter *= 4  # a cold start needs more iterations than a warm one
        refit = refit or warm is None
        if start is not None:
            warm = start.parameters
            if start.label:
                ctx.rec.timings[start.label] = ctx.rec.timings.get(start.label, 0.0) + 1.0
        config = candidate_model_config(cand, self.config.fit_timeout, maxiter)
        return FitJob(cand.name, config, warm, refit)

    def _fit_jobs(
        self,
        jobs: Sequence[tuple[KernelCandidate, bool, int | None]],
        ctx: RoundContext,
        members: Sequence[KernelCandidate],
    ) -> list[FittedKernel | None]:
        """Fit and score ``(candidate, refit, maxiter)`` jobs, in worker processes when
        ``fit_workers > 1`` allows it (a CPU run, no start rule), else one by one."""
        workers = self.config.fit_workers
        parallel = (
            workers > 1
            and len(jobs) > 1
            and self.start_rule is None
            and ctx.dataset.X.device.type == "cpu"
        )
        if not parallel:
            return [
                self.fit_and_score(c, ctx, refit=r, maxiter=m, members=members) for c, r, m in jobs
            ]
        prepared = [(c, self._prepare(c, ctx, r, m, members), m) for c, r, m in jobs]
        pool = fit_pool(workers, user=self)
        t0 = time.perf_counter()
        futures = [
            pool.submit(fit_in_worker, ctx.dataset, ctx.search_space_digest, job)
            for _, job, _ in prepared
        ]
        out: list[FittedKernel | None] = []
        for (cand, job, maxiter), future in zip(prepared, futures, strict=True):
            try:
                state, seconds, error = future.result()
            except Exception as e:  # noqa: BLE001 - a broken worker: fit it here instead
                # (shared_pool starts a new pool next time if a worker died)
                logger.info("fit worker failed (%r); fitting %s in this process", e, cand.name)
                out.append(
                    self.fit_and_score(cand, ctx, refit=job.refit, maxiter=maxiter, members=members)
                )
                continue
            if error is not None or state is None:
                out.append(self._reject(cand, ctx, error or "no fitted state"))
                continue
            if job.refit:
                ctx.rec.timings[f"refit:{cand.name}"] = seconds
            t1 = time.perf_counter()
            try:  # the fitted GP, rebuilt from its exact (float64) state: no refit
                model = self.build_model(
                    ctx.dataset, ctx.search_space_digest, job.config, state, False
                )
            except Exception as e:  # noqa: BLE001
                out.append(self._reject(cand, ctx, f"{type(e).__name__}: {e}"))
                continue
            # "fit:" counts the worker's fit and this rebuild, as a serial fit counts both
            out.append(self._score(cand, ctx, model, job.config, t1 - seconds))
        ctx.rec.timings["parallel_fit_wall"] = time.perf_counter() - t0
        return out

    def _reject(self, cand: KernelCandidate, ctx: RoundContext, reason: str) -> FittedKernel | None:
        """Record a failed fit (stage ``fit``); returns ``None``, the failed fit."""
        ctx.rec.rejected.append(Rejection(name=cand.name, stage="fit", reason=reason[:500]))
        return None

    def _score(
        self,
        cand: KernelCandidate,
        ctx: RoundContext,
        model: Model,
        config: ModelConfig,
        t0: float,
    ) -> FittedKernel | None:
        """Score a fitted model by the criterion; keep its parameters as the warm start."""
        try:
            with torch.no_grad():
                K, y = prior_covariance(model)
                top_k, sign = self.config.score_top_k, ctx.sign
                if top_k is not None and sign:
                    values = torch.as_tensor(model.train_targets).reshape(-1) * sign
                    K, y = best_points(K, y, values, top_k)
                covar = model.covar_module
                value = score(
                    self.config.criterion,
                    K,
                    y,
                    num_hyperparameters(covar),  # type: ignore[arg-type]
                    blocks=self._score_blocks(ctx, K.shape[-1]),
                )
        except Exception as e:  # noqa: BLE001 - any kernel failure is a recorded rejection
            return self._reject(cand, ctx, f"{type(e).__name__}: {e}")
        if not math.isfinite(value):
            return self._reject(cand, ctx, f"non-finite {self.config.criterion} score")
        key = f"fit:{cand.name}"
        ctx.rec.timings[key] = ctx.rec.timings.get(key, 0.0) + time.perf_counter() - t0
        ctx.state.warm[cand.name] = warm_parameters(model)
        return model, config, value


@dataclass(frozen=True)
class FitJob:
    """One kernel's fit: its Ax ``ModelConfig``, where it starts and whether it is fitted."""

    name: str
    config: ModelConfig
    warm: Mapping[str, Tensor] | None
    refit: bool


def _build_and_fit(
    build_model: ModelBuilder,
    dataset: SupervisedDataset,
    digest: SearchSpaceDigest,
    job: FitJob,
) -> Model:
    """The job's model; a warm start that cannot be loaded falls back to a cold fit."""
    try:
        return build_model(dataset, digest, job.config, job.warm, job.refit)
    except RuntimeError:
        if job.warm is None:
            raise
        return build_model(dataset, digest, job.config, None, True)


def fit_in_worker(
    dataset: SupervisedDataset, digest: SearchSpaceDigest, job: FitJob
) -> tuple[dict[str, Tensor] | None, float, str | None]:
    """Fit one job with Ax's ``Surrogate._construct_model`` (in a worker process).

    Returns:
        The fitted model's full state dict (float64, so the parent rebuilds the same
        model exactly), the seconds the fit took, and an error message or ``None``.
    """
    t0 = time.perf_counter()
    try:
        model = _build_and_fit(Surrogate()._construct_model, dataset, digest, job)
    except Exception as e:  # noqa: BLE001 - reported to the parent as a rejection
        return None, time.perf_counter() - t0, f"{type(e).__name__}: {e}"
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return state, time.perf_counter() - t0, None


@dataclass
class BackgroundJob:
    """A round's fits handed to a worker process (``background_fits``): everything the
    round's :meth:`KernelFitter.fit_all` reads, so that the worker fits them as this
    process would.

    Attributes:
        config: The surrogate's settings.
        start_rule: The fitter's start rule (``None``: GPyTorch's initial values).
        cands: The kernels to fit, in the round's order (members, then new kernels).
        members: All the round's kernels (what the start rule may inherit from).
        outcome: The modelled outcome.
        dataset: The round's training data.
        search_space_digest: Ax's digest of the search space.
        population: The outcome's population (a copy).
        warm: The warm starts as the round stands (a copy).
        history: The outcome's earlier rounds (for the criterion's batches).
        sign: The objective weight of the outcome.
        round_index: The round.
        row_rounds: The round each row was first fitted in (for the criterion's batches).
        rows: The round's rows keyed by trial (``None``: not known).
    """

    config: KernelDiscoveryConfig
    start_rule: StartRule | None
    cands: list[KernelCandidate]
    members: list[KernelCandidate]
    outcome: str
    dataset: SupervisedDataset
    search_space_digest: SearchSpaceDigest
    population: Population
    warm: dict[str, dict[str, Tensor]]
    history: list[RoundRecord]
    sign: float | None
    round_index: int
    row_rounds: dict[RowKey, int] = field(default_factory=dict)
    rows: FitRows | None = None

    def context(self) -> RoundContext:
        """A round context over copies of the job's state (the worker's, or this process's)."""
        n, dim = self.dataset.X.shape[0], self.dataset.X.shape[-1]
        return RoundContext(
            outcome=self.outcome,
            state=OutcomeState(
                self.population, warm=dict(self.warm), row_rounds=dict(self.row_rounds)
            ),
            dataset=self.dataset,
            search_space_digest=self.search_space_digest,
            rec=RoundRecord(round=self.round_index, outcome=self.outcome, n=n, dim=dim),
            history=self.history,
            sign=self.sign,
            rows=self.rows,
        )


@dataclass
class BackgroundFit:
    """One kernel fitted by a :class:`BackgroundJob`.

    Attributes:
        warm: Its warm start (:func:`~.state.warm_parameters`).
        state: The fitted model's full state dict (float64: rebuilds the model exactly).
        config: The ``ModelConfig`` it was built with.
        score: Its fit score.
    """

    warm: dict[str, Tensor]
    state: dict[str, Tensor]
    config: ModelConfig
    score: float


@dataclass
class BackgroundResult:
    """What a :class:`BackgroundJob` gives back: the fitted kernels (in the job's order),
    the rejections and timings its round record gathered, and its seconds."""

    fitted: dict[str, BackgroundFit]
    rejected: list[Rejection]
    timings: dict[str, float]
    seconds: float


def fit_round_in_worker(job: BackgroundJob) -> BackgroundResult:
    """Fit a :class:`BackgroundJob` with Ax's ``Surrogate._construct_model`` (in a worker
    process), as :meth:`KernelFitter.fit_all` fits in the surrogate's process, without the
    slow-fit rule (the caller applies it over the whole round)."""
    t0 = time.perf_counter()
    config = job.config.model_copy(update={"fit_workers": 1})
    fitter = KernelFitter(config, Surrogate()._construct_model, job.start_rule)
    ctx = job.context()
    models = fitter.fit_all(job.cands, ctx, members=job.members, drop_slow=False)
    fitted = {
        name: BackgroundFit(
            warm=ctx.state.warm[name],
            state={k: v.detach().clone() for k, v in model.state_dict().items()},
            config=config_,
            score=score,
        )
        for name, (model, config_, score) in models.items()
    }
    return BackgroundResult(
        fitted=fitted,
        rejected=list(ctx.rec.rejected),
        timings=dict(ctx.rec.timings),
        seconds=time.perf_counter() - t0,
    )


def fit_pool(workers: int, user: object | None = None) -> WorkerPool:
    """The process's pool of ``workers`` fit workers (one torch thread each, kept for
    later rounds; :mod:`.worker`: fresh interpreters that never run the user's
    ``__main__``). The first round that uses a pool pays their start (importing Ax and
    torch). ``user`` (a surrogate, a fitter) holds the pool until it releases it
    (:func:`~.worker.release_shared_pools`, ``KernelDiscoverySurrogate.close()``) or is
    garbage-collected."""
    return shared_pool(workers, user)


__all__ = [
    "GUARD_NAME",
    "BackgroundFit",
    "BackgroundJob",
    "BackgroundResult",
    "Choice",
    "EarlyChoice",
    "FitJob",
    "FitStart",
    "FittedKernel",
    "KernelFitter",
    "ModelBuilder",
    "StartRule",
    "candidate_model_config",
    "fit_in_worker",
    "fit_pool",
    "fit_round_in_worker",
    "inherit_from_members",
]

# renamed: the public ax_kernel_discovery.model_config_for is the library's (a library entry)
__getattr__ = moved_names(
    __name__, {"model_config_for": "ax_kernel_discovery.surrogate.fitting:candidate_model_config"}
)
