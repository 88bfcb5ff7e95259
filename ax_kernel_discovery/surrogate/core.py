"""``KernelDiscoverySurrogate``: Ax's ``Surrogate`` with an evolving kernel population.

Each time Ax fits the surrogate on new data, :meth:`KernelDiscoverySurrogate.model_selection`
runs one round of the method:

1. *strike*: the kernel chosen last round is struck if its batch did not improve the
   best observed value (base kernels are dropped after ``patience`` strikes, others at
   once); an empty population resets to the start set;
2. *propose*: the proposer (offline operator by default, or an LLM) gets the members'
   formulas and scores, never the data, and returns candidates;
3. *validate*: shapes, ``diag``, gradients, PSD, time (untrusted code in a sandboxed
   subprocess); functional duplicates are dropped;
4. *fit and score*: every member and accepted candidate is built and fitted the Ax way
   (``Surrogate._construct_model``, Ax's ``Normalize`` input transform, warm-started
   from last round's hyperparameters) and scored by the criterion on its noisy prior
   covariance (LOO-CRPS by default);
5. *update*: candidates join, the population keeps its best N, and the best-scoring
   kernel's model is returned to Ax, which uses it for the acquisition function.

Nothing here raises into the BO loop because of a bad kernel: every failure is recorded
in :attr:`KernelDiscoverySurrogate.history` with its reason.

The round's steps are collaborators the surrogate holds, each testable without Ax's
``Surrogate``: the candidate checks of step 3
(:class:`~ax_kernel_discovery.surrogate.admission.CandidateAdmission`), the fitting,
scoring and choice of steps 4 and 5
(:class:`~ax_kernel_discovery.surrogate.fitting.KernelFitter`). What a round carries to
the next has one owner per outcome,
:class:`~ax_kernel_discovery.surrogate.state.OutcomeState` (population, warm starts, last
choice, fitted models), and each step is handed a
:class:`~ax_kernel_discovery.surrogate.state.RoundContext`. This module holds the surrogate
that runs them, and its extension points: the strike rule (``config.strike_rule``), the
start candidates, the proposer factory and the start rule of new kernels' fits
(constructor arguments; CAKE and compositional search are configurations of them).
"""

from __future__ import annotations

import copy
import logging
import math
import re
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

import numpy as np
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.acquisition.acquisition import AcquisitionFunction
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from torch import Tensor

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.devices import usable_cores
from ax_kernel_discovery.library_format import library_start_candidates
from ax_kernel_discovery.mixture import KernelMixtureModel
from ax_kernel_discovery.population import MemberSummary, Population, start_candidates
from ax_kernel_discovery.proposers import make_proposer
from ax_kernel_discovery.proposers.base import Proposal, Proposer
from ax_kernel_discovery.surrogate.admission import CandidateAdmission
from ax_kernel_discovery.surrogate.fitting import (
    GUARD_NAME,
    BackgroundJob,
    BackgroundResult,
    Choice,
    EarlyChoice,
    FittedKernel,
    KernelFitter,
    StartRule,
    candidate_model_config,
    fit_pool,
    fit_round_in_worker,
)
from ax_kernel_discovery.surrogate.new_rows import NewRowsqLogNEI
from ax_kernel_discovery.surrogate.portfolio import Portfolio, batch_rewards, hedge_weights
from ax_kernel_discovery.surrogate.round_record import RoundRecord
from ax_kernel_discovery.surrogate.rows import FitRows, RowKey
from ax_kernel_discovery.surrogate.state import (
    FittedModels,
    LastChoice,
    OutcomeState,
    RoundContext,
    decode_tensors,
    encode_tensors,
    row_digests,
)
from ax_kernel_discovery.surrogate.worker import release_shared_pools

logger = logging.getLogger(__name__)

#: Two placeholder configs make Ax call ``model_selection`` on every new dataset.
_PLACEHOLDER_CONFIGS = [
    ModelConfig(name="kernel-discovery"),
    ModelConfig(name="kernel-discovery-population"),
]


#: Builds the start set of a new population for input dimension ``dim`` (``None``: unknown).
StartCandidates = Callable[[KernelDiscoveryConfig, "int | None"], list[KernelCandidate]]

#: Builds the proposer of a surrogate from its settings.
ProposerFactory = Callable[[KernelDiscoveryConfig], Proposer]


def default_start_candidates(
    config: KernelDiscoveryConfig, dim: int | None
) -> list[KernelCandidate]:
    """The paper's start set, or the kernel library of ``config.start_kernels`` (validated)."""
    if config.start_kernels:
        return library_start_candidates(config, dim)
    return start_candidates()


@dataclass
class _Pending:
    """A round handed on to the acquisition while its other kernels are fitted in a
    worker (``background_fits``): what :meth:`KernelDiscoverySurrogate.finish_background`
    needs to complete it."""

    ctx: RoundContext
    accepted: list[KernelCandidate]
    #: The choice handed on (its scores: the held-out losses of the members to choose
    #: from, narrowed to those whose fits succeed once they are known).
    choice: Choice
    #: The kernels fitted here before the hand-on (the chosen member).
    models: dict[str, FittedKernel]
    #: The worker's job: the round's other kernels (``job.members``: all of them).
    job: BackgroundJob
    future: Future[BackgroundResult] | None


class KernelDiscoverySurrogate(Surrogate):
    """Ax ``Surrogate`` whose kernel is chosen from an evolving population each round.

    Use it as the ``surrogate`` of a ``BoTorchGenerator`` (see
    :func:`ax_kernel_discovery.kernel_discovery_generation_strategy`).

    Args:
        config: :class:`KernelDiscoveryConfig` (or a dict of its fields).
        state: Saved population/history state (what Ax's JSON storage passes back).
        surrogate_spec: Ignored except for its non-model fields; the model configs are
            the population's.
        start_candidates: Builds a new population's start set (default:
            :func:`default_start_candidates`).
        proposer_factory: Builds the proposer (default: ``proposers.make_proposer``, the
            one ``config.proposer`` names).
        start_rule: How a new kernel's fit starts (default: inheritance from the members
            it contains when ``config.inherit_parameters``; see
            :data:`~ax_kernel_discovery.surrogate.fitting.StartRule`).
        **kwargs: Passed to :class:`~ax.generators.torch.botorch_modular.surrogate.Surrogate`.

    The three callables are not saved with the state: a subclass that sets them (see
    :mod:`ax_kernel_discovery.baselines`) and registers itself with Ax's storage
    (:func:`~ax_kernel_discovery.storage.register_surrogate_class`) reloads with them.

    Attributes:
        population: The population of the objective outcome (members with ``.name``,
            ``.formula``, ``.origin``, ``.score``).
        populations: One population per modelled outcome.
        outcome_states: Everything kept per outcome (:class:`OutcomeState`).
        history: One :class:`RoundRecord` per round and outcome.
        admission: The candidate checks (:class:`CandidateAdmission`).
        fitter: The fit, score and choice steps (:class:`KernelFitter`).
        default_acqf_class: The acquisition function the package's strategy builders
            pair it with when none is named, by ``config.acquisition``:
            :class:`~ax_kernel_discovery.surrogate.new_rows.NewRowsqLogNEI` (the
            default: qLogNEI computed from the new rows, equal to BoTorch's to 1e-9,
            cheaper per optimizer step) or BoTorch's ``qLogNoisyExpectedImprovement``.
            The baselines built on this class keep BoTorch's, as in the study's runs.

    Example:
        >>> surrogate = KernelDiscoverySurrogate(KernelDiscoveryConfig(population_size=8))
        >>> [m.name for m in surrogate.population]
        ['RBF', 'Matern52', 'RQ', 'BOCK', 'SL']
    """

    def __init__(
        self,
        config: KernelDiscoveryConfig | Mapping[str, Any] | None = None,
        state: Mapping[str, Any] | None = None,
        surrogate_spec: SurrogateSpec | None = None,
        start_candidates: StartCandidates | None = None,
        proposer_factory: ProposerFactory | None = None,
        start_rule: StartRule | None = None,
        **kwargs: Any,
    ) -> None:
        if state:
            check_state_format(state)
        if config is None:
            config = KernelDiscoveryConfig()
        elif not isinstance(config, KernelDiscoveryConfig):
            config = _saved_config(config, state)
        spec = SurrogateSpec(model_configs=list(_PLACEHOLDER_CONFIGS))
        if surrogate_spec is not None:
            spec = SurrogateSpec(
                model_configs=list(_PLACEHOLDER_CONFIGS),
                allow_batched_models=surrogate_spec.allow_batched_models,
                outcomes=surrogate_spec.outcomes,
            )
        super().__init__(surrogate_spec=spec, **kwargs)
        self._config = config
        self.outcome_states: dict[str, OutcomeState] = {}
        self._history: list[RoundRecord] = []
        self.objective_weights: dict[str, float] = {}
        #: Ax's objectives, one ``{outcome: weight}`` per objective (see
        #: :meth:`record_objective_weights`).
        self.objective_matrix: list[dict[str, float]] = []
        self.round_index = 0
        self._start_candidates = start_candidates or default_start_candidates
        self._proposer_factory = proposer_factory or make_proposer
        self._proposer: Proposer | None = None
        #: The offline operator that stands in when an LLM round gives nothing
        #: (``fallback_to_offline``); built once, so it remembers what it proposed.
        self._fallback: Proposer | None = None
        self.admission = CandidateAdmission(config)
        self.fitter = KernelFitter(config, self._construct_model, start_rule)
        #: Loaded proposer states (main, fallback), applied when a proposer is next used.
        self._proposer_state: dict[str, Any] | None = None
        self._fallback_state: dict[str, Any] | None = None
        #: Set while Ax stores a generator run's copy (see :mod:`ax_kernel_discovery.storage`).
        self._record_only = False
        self._prefetch: dict[tuple[str, int, int], Future[Proposal]] = {}
        self._executor: ThreadPoolExecutor | None = None
        #: Rounds whose other kernels are being fitted in a worker, by outcome.
        self._pending: dict[str, _Pending] = {}
        #: This round's batch portfolio per outcome (:meth:`_set_portfolio`; not saved).
        self._portfolios: dict[str, Portfolio] = {}
        #: Whether a fit is in progress, and whether it ran a round (see :meth:`fit`).
        self._in_fit = False
        self._round_used = False
        #: The rows of the fit Ax is making, by outcome (see :meth:`observe_fit_rows`).
        self._fit_rows: dict[str, FitRows] = {}
        #: The experiment the state belongs to: its parameters (names, in order).
        self._features: list[str] | None = None
        if state:
            self._load_state(state)

    # --- public views ------------------------------------------------------------------

    @property
    def config(self) -> KernelDiscoveryConfig:
        """The settings (shared with the admission and fitting steps)."""
        return self._config

    @config.setter
    def config(self, value: KernelDiscoveryConfig) -> None:
        self._config = value
        self.admission.config = value
        self.fitter.config = value

    #: An acquisition function class that overrides ``config.acquisition`` (``None``: the
    #: config's). The study's baselines built on this class set BoTorch's qLogNEI, as in
    #: their runs.
    fixed_acqf_class: ClassVar[type[AcquisitionFunction] | None] = None

    @property
    def default_acqf_class(self) -> type[AcquisitionFunction]:
        """The acquisition function strategies pair this surrogate with when they name
        none (:attr:`fixed_acqf_class`, else ``config.acquisition``; see
        :func:`~ax_kernel_discovery.strategy.default_acqf_class`)."""
        if self.fixed_acqf_class is not None:
            return self.fixed_acqf_class
        if self._config.acquisition == "new_rows":
            return NewRowsqLogNEI
        return qLogNoisyExpectedImprovement

    @property
    def history(self) -> list[RoundRecord]:
        """One :class:`RoundRecord` per round and outcome, oldest first (the last
        ``history_limit``); a round fitted in the background is completed first."""
        self.finish_background()
        return self._history

    @history.setter
    def history(self, records: list[RoundRecord]) -> None:
        self._history = list(records)

    @property
    def populations(self) -> dict[str, Population]:
        """One population per modelled outcome (a view of :attr:`outcome_states`)."""
        self.finish_background()
        return {k: v.population for k, v in self.outcome_states.items()}

    @property
    def fitted_models(self) -> dict[str, MutableMapping[str, Model]]:
        """Last round's fitted model of every kernel, per outcome (not saved; diagnostics)."""
        self.finish_background()
        return {k: v.fitted_models for k, v in self.outcome_states.items()}

    @property
    def population(self) -> Population:
        """Population of the objective (the first outcome when the direction is unknown)."""
        self.finish_background()
        for name, weight in self.objective_weights.items():
            if weight != 0 and name in self.populations:
                return self.populations[name]
        if self.outcome_states:
            return next(iter(self.outcome_states.values())).population
        return self._new_population()

    @property
    def needs_llm(self) -> bool:
        """Whether this surrogate's proposer calls an LLM (checked before a run starts)."""
        return self.config.proposer in ("llm", "direct") and self.config.proposals_per_round > 0

    @property
    def proposer(self) -> Proposer:
        """The proposer (built by the proposer factory on first use)."""
        if self._proposer is None:
            self._proposer = self._proposer_factory(self.config)
        return self._proposer

    @property
    def fallback_proposer(self) -> Proposer:
        """The offline operator of LLM rounds that give nothing (``offline_grammar``)."""
        if self._fallback is None:
            self._fallback = make_proposer(self.config.model_copy(update={"proposer": "offline"}))
            if self._fallback_state is not None:
                self._fallback.load_state_dict(self._fallback_state)
                self._fallback_state = None
        return self._fallback

    def close(self) -> None:
        """Release what the proposer holds (a local LLM server), the prefetch thread and
        the fit worker processes this surrogate used (a pool no other user holds stops).

        The surrogate stays usable: a later round starts them again when needed. A round
        whose kernels are being fitted in the background is completed first.
        """
        self.finish_background()
        for future in self._prefetch.values():
            future.cancel()
        self._prefetch = {}
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        close = getattr(self._proposer, "close", None)
        if callable(close):
            close()
        release_shared_pools(self, self.fitter)

    def observe_fit_rows(self, rows: Mapping[str, FitRows]) -> None:
        """Take the rows of the fit Ax is about to make, keyed by trial and arm, with
        their raw values and the map of Ax's Y transforms (called by
        :class:`~ax_kernel_discovery.surrogate.rows.ShareRows`, the last transform of
        kernel discovery's BO step)."""
        self._fit_rows = dict(rows)

    def record_objective_weights(self, weights: Tensor) -> None:
        """Learn the objectives (called by the acquisition).

        ``weights`` are Ax's objective weights over the modelled outcomes: a vector for one
        objective (several nonzero entries: a scalarized objective), a matrix with one row
        per objective for several. :attr:`objective_matrix` keeps them as rows;
        :attr:`objective_weights` gives each outcome its direction (the sum of its column:
        0 for an outcome that is only constrained).
        """
        rows = weights.detach().cpu().double()
        rows = rows.reshape(1, -1) if rows.dim() < 2 else rows.reshape(-1, rows.shape[-1])
        outcomes = list(self.outcomes)
        self.objective_matrix = [
            {o: float(w) for o, w in zip(outcomes, row.tolist(), strict=False)} for row in rows
        ]
        for j, name in enumerate(outcomes):
            self.objective_weights[name] = float(rows[:, j].sum()) if j < rows.shape[1] else 0.0

    def acqf_class_for(self, chosen: type[AcquisitionFunction]) -> type[AcquisitionFunction]:
        """The class that computes the acquisition function Ax chose (see
        :class:`~ax_kernel_discovery.surrogate.acquisition.AcquisitionPartner`).

        Ax's qLogNEI (one objective) is computed by :attr:`default_acqf_class`
        (``NewRowsqLogNEI`` under ``config.acquisition="new_rows"``: the same values);
        every other choice (qLogNEHVI for several objectives, ...) is Ax's own.
        """
        if chosen is qLogNoisyExpectedImprovement:
            return self.default_acqf_class
        return chosen

    # --- Ax hooks ------------------------------------------------------------------------

    def fit(self, *args: Any, **kwargs: Any) -> None:
        """Ax's ``fit``; a fit that ran a round (for one outcome or several) advances the
        round counter once, so that every outcome's round of one fit shares its index.

        A surrogate handed another experiment (other parameters) starts afresh (see
        :meth:`_start_afresh_for`): a population, warm starts and a history belong to
        the experiment they were found on.
        """
        digest = kwargs.get("search_space_digest", args[1] if len(args) > 1 else None)
        if digest is not None:
            self._start_afresh_for(list(digest.feature_names))
        self._in_fit, self._round_used = True, False
        try:
            super().fit(*args, **kwargs)
        finally:
            if self._round_used:
                self.round_index += 1
            self._in_fit = self._round_used = False

    def model_selection(
        self,
        dataset: SupervisedDataset,
        model_configs: list[ModelConfig],
        search_space_digest: SearchSpaceDigest,
        candidate_metadata: Any = None,
    ) -> tuple[Model, ModelConfig]:
        """One round of kernel discovery; returns the best kernel's fitted model.

        With ``background_fits`` (see :meth:`_fits_in_background`) the round returns the
        chosen kernel's model as soon as it is fitted and fits the others in a worker
        process; the round is completed (:meth:`finish_background`) when the acquisition
        ends, or at the latest when the state is next read.
        """
        t_start = time.perf_counter()
        outcome = dataset.outcome_names[0]
        self._finish_background(outcome)
        rows = self._fit_rows.get(outcome)
        if rows is not None and not rows.matches(dataset.Y):
            rows = None  # not the rows of this dataset (Ax fitted it another way)
        X = dataset.X
        dim = X.shape[-1]
        if outcome not in self.outcome_states:
            self.outcome_states[outcome] = OutcomeState(self._new_population(dim))
        state = self.outcome_states[outcome]
        pop = state.population
        rec = RoundRecord(round=self.round_index, outcome=outcome, n=X.shape[0], dim=dim)
        ctx = RoundContext(
            outcome=outcome,
            state=state,
            dataset=dataset,
            search_space_digest=search_space_digest,
            rec=rec,
            history=[r for r in self._history if r.outcome == outcome],
            sign=self.objective_weights.get(outcome),
            rows=rows,
        )

        self._strike(ctx)
        self._credit_portfolio(ctx)
        rec.reset = pop.reset_if_empty()
        if self.config.criterion == "prequential":
            t0 = time.perf_counter()
            self.fitter.score_heldout(ctx)
            rec.timings["heldout"] = time.perf_counter() - t0
        state.note_rows(rows, rec.round)

        t0 = time.perf_counter()
        self._round_used = True
        proposal = self._propose(pop, dim, outcome, rec)
        rec.timings["propose"] = time.perf_counter() - t0
        rec.proposed = [c.name for c in proposal.candidates]
        rec.rejected.extend(proposal.rejections)
        rec.proposer_usage = dict(proposal.usage)
        rec.timings.update({f"proposer:{k}": v for k, v in proposal.timings.items()})

        t0 = time.perf_counter()
        accepted = self.admission.admit(
            proposal.candidates, pop, dim, rec, n=X.shape[0], device=X.device
        )
        rec.timings["validate"] = time.perf_counter() - t0

        cands = [m.candidate for m in pop] + accepted
        early = self.fitter.choice_before_fits(ctx) if self._fits_in_background(ctx) else None
        if early is not None:
            chosen = self._fit_chosen_first(ctx, cands, accepted, early, t_start)
            if chosen is not None:
                return chosen
            # every member the choice could take failed to fit: fit the rest here
            tried = set(early.ranked)
            cands = [c for c in cands if c.name not in tried]

        t0 = time.perf_counter()
        models = self.fitter.fit_all(cands, ctx)
        rec.timings["fit_and_score"] = time.perf_counter() - t0

        self._admit_fitted(ctx, accepted, models)
        if not models:
            # every kernel failed: fall back to Ax's default model so the run goes on
            self._no_kernel_fitted(ctx)
            model = self._construct_model(dataset, search_space_digest, ModelConfig(), None, True)
            best_config = ModelConfig()
        else:
            # choose before truncating, so that the choice always stays a member
            choice = self.fitter.select(models, ctx)
            model, best_config = self._chosen_model(ctx, choice, models)
            self._set_portfolio(ctx, choice, models)
            self._settle(ctx, choice, models)
        state.fitted_models = {k: v[0] for k, v in models.items()}
        self._record_population(ctx, accepted, models)
        self._close_round(ctx, t_start)
        self._after_update(ctx)
        return model, best_config

    # --- the round's steps after its fits ----------------------------------------------------

    def _admit_fitted(
        self, ctx: RoundContext, accepted: list[KernelCandidate], models: Mapping[str, Any]
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
                pop.set_score(member.name, self.fitter.member_score(member, models))
            else:
                state.drop(member.name)
                rec.dropped.append(member.name)

    def _no_kernel_fitted(self, ctx: RoundContext) -> None:
        ctx.rec.rejected.append(
            Rejection(name="*", stage="fit", reason="no kernel could be fitted; using Ax default")
        )
        ctx.population.reset_if_empty()

    def _chosen_model(
        self, ctx: RoundContext, choice: Choice, models: Mapping[str, FittedKernel]
    ) -> tuple[Model, ModelConfig]:
        """The model the acquisition gets for ``choice``; the choice is recorded."""
        rec, pop = ctx.rec, ctx.population
        if choice.guarded:
            model = self._construct_model(
                ctx.dataset, ctx.search_space_digest, ModelConfig(), None, True
            )
            rec.guarded, rec.chosen = True, GUARD_NAME
            return model, ModelConfig()
        best_name = choice.names[0]
        model, best_config, _ = models[best_name]
        if len(choice.names) > 1:
            model = KernelMixtureModel(
                [models[k][0] for k in choice.names], choice.counts, choice.names
            )
            rec.mixture = dict(zip(choice.names, choice.weights, strict=True))
        best = pop.get(best_name)
        best.times_chosen += 1
        rec.chosen, rec.chosen_formula = best_name, best.formula
        rec.chosen_score = choice.scores.get(best_name)
        ctx.state.last_choice = LastChoice.of(best_name, ctx.dataset.X, ctx.dataset.Y)
        return model, best_config

    def _settle(self, ctx: RoundContext, choice: Choice, models: Mapping[str, Any]) -> None:
        """The round's scores; the population keeps its best (the choice and, under
        ``prequential``, kernels that have not forecast a batch yet are kept)."""
        rec, pop = ctx.rec, ctx.population
        rec.scores = dict(choice.scores)
        if self.config.criterion == "prequential":
            rec.fit_scores = {k: v[2] for k, v in models.items()}
        protect = [] if choice.guarded else list(choice.names)
        if self.config.criterion == "prequential":  # new kernels: not yet forecast
            protect += [m.name for m in pop if not m.heldout]
        rec.dropped.extend(ctx.state.truncate(protect=protect))

    def _record_population(
        self, ctx: RoundContext, accepted: list[KernelCandidate], models: Mapping[str, Any]
    ) -> None:
        rec, pop = ctx.rec, ctx.population
        rec.population = pop.names
        rec.population_diversity = self.admission.diversity([m.candidate.key for m in pop])
        rec.accepted_diversity = (
            self.admission.diversity([c.key for c in accepted if c.name in models])
            if len(rec.accepted) > 1
            else None
        )

    def _close_round(self, ctx: RoundContext, t_start: float) -> None:
        """The round's record joins the history; the next round begins."""
        rec = ctx.rec
        rec.timings["total"] = time.perf_counter() - t_start
        self._history.append(rec)
        self._history = self._history[-self.config.history_limit :]
        if not self._in_fit:  # called on its own: the round is over
            self.round_index += 1
        logger.info(
            "kernel discovery round %d: chose %s (%.4g)",
            rec.round,
            rec.chosen,
            rec.chosen_score or math.nan,
        )

    def _after_update(self, ctx: RoundContext) -> None:
        """What follows the population's update: the proposer's feedback and prefetch."""
        rec, pop = ctx.rec, ctx.population
        if self._proposer is not None:  # what failed, for the next prompts (LLM proposers)
            self._proposer.record_feedback(
                rec.round, rec.rejected, rec.struck, pop.summaries(self.config.criterion)
            )
        self._start_prefetch(pop, ctx.dim, ctx.outcome, ctx.rec.round + 1)

    def _start_afresh_for(self, features: list[str]) -> None:
        """Forget another experiment's state when fitted on this one's parameters.

        The state (population, warm starts, history, strike bookkeeping, objectives)
        describes the experiment it was found on; in another one (other parameter names
        or dimension) its warm starts do not fit and its history would skip the guard
        round. Kernels travel between experiments through kernel libraries
        (``export_kernels``, ``KernelDiscoveryConfig(start_kernels=...)``).
        """
        previous, self._features = self._features, features
        if previous is None or previous == features:
            return
        if not (self.outcome_states or self._history):
            return
        self.finish_background()
        logger.warning(
            "kernel discovery: this surrogate was used on another experiment (parameters "
            "%s; now %s); it starts afresh: a new population, no history. To carry kernels "
            "over, export them (export_kernels) and start from them "
            "(KernelDiscoveryConfig(start_kernels=...))",
            _describe(previous),
            _describe(features),
        )
        self.outcome_states = {}
        self._history = []
        self.objective_weights = {}
        self.objective_matrix = []
        self.round_index = 0
        self._portfolios = {}
        self._fit_rows = {}

    # --- the batch portfolio ------------------------------------------------------------------

    def _portfolio_wanted(self) -> bool:
        """Whether rounds share their batch among members (one objective only)."""
        config = self.config
        wanted = config.portfolio_size > 1 or bool(config.portfolio_keep)
        return wanted and len(self.objective_matrix) <= 1

    def _set_portfolio(
        self, ctx: RoundContext, choice: Choice, models: Mapping[str, FittedKernel]
    ) -> None:
        """The members that share this round's batch (:mod:`.portfolio`): the chosen one,
        the next best of the choice order, and ``portfolio_keep``, with Hedge weights."""
        self._portfolios.pop(ctx.outcome, None)
        if choice.guarded or not choice.names or not self._portfolio_wanted():
            return
        order, _ = self.fitter.choice_order(ctx)
        ranked = [n for n in order if n in models and models[n][0] is not None]
        names = [choice.names[0]]
        names += [n for n in ranked if n not in names][: self.config.portfolio_size - 1]
        names += [
            n
            for n in self.config.portfolio_keep
            if n in models and models[n][0] is not None and n not in names
        ]
        if len(names) < 2:
            return
        weights = hedge_weights(
            [ctx.state.gains.get(n, 0.0) for n in names], self.config.portfolio_eta
        )
        portfolio = Portfolio(names, weights, {n: models[n][0] for n in names}, record=ctx.rec)
        self._portfolios[ctx.outcome] = portfolio
        ctx.rec.portfolio = portfolio.shares()

    def _credit_portfolio(self, ctx: RoundContext) -> None:
        """Credit last round's portfolio members with the progress their points made."""
        points, state = ctx.state.portfolio_points, ctx.state
        state.portfolio_points = {}
        if not points or not ctx.sign:
            return
        index = {d: i for i, d in enumerate(row_digests(ctx.dataset.X))}
        y = (ctx.dataset.Y.reshape(-1) * ctx.sign).detach().cpu().double().numpy()
        z = {m: [float(y[index[d]]) for d in ds if d in index] for m, ds in points.items()}
        rewards = batch_rewards(z)
        for name, reward in rewards.items():
            if name in ctx.population.names:
                state.gains[name] = state.gains.get(name, 0.0) + reward
        ctx.rec.portfolio_rewards = rewards

    def portfolio_plan(self, n: int) -> list[tuple[str, Model, int]] | None:
        """How the next ``n`` points are split among this round's portfolio members
        (``None``: no portfolio; called by the acquisition)."""
        if len(self._portfolios) != 1:
            return None
        portfolio = next(iter(self._portfolios.values()))
        return [(name, portfolio.models[name], count) for name, count in portfolio.plan(n)]

    def record_portfolio_points(self, name: str, X: Tensor) -> None:
        """``name`` generated the points ``X``; they are credited when their values arrive."""
        outcome, portfolio = next(iter(self._portfolios.items()))
        state = self.outcome_states[outcome]
        state.portfolio_points.setdefault(name, []).extend(row_digests(X))
        portfolio.note(name, int(X.shape[0]))
        record = portfolio.record
        if record is not None:
            record.portfolio_points[name] = record.portfolio_points.get(name, 0) + int(X.shape[0])

    # --- fits in the background ---------------------------------------------------------------

    def _fits_in_background(self, ctx: RoundContext) -> bool:
        """Whether this round may fit its kernels in a worker process (``background_fits``).

        Only a CPU run whose surrogate builds models the Ax way (no subclass or test
        replaces ``_construct_model``), in a round fitted in full (not halved), and not
        where ``fit_workers > 1`` fits the round side by side in worker processes.
        """
        mode = self.config.background_fits
        if mode == "off" or ctx.dataset.X.device.type != "cpu" or self.config.fit_workers > 1:
            return False
        if mode == "auto" and usable_cores() < 2:
            return False
        if type(self)._construct_model is not Surrogate._construct_model:
            return False
        if self.fitter.build_model != self._construct_model or self.fitter.halving(ctx):
            return False
        return True

    def _fit_chosen_first(
        self,
        ctx: RoundContext,
        cands: list[KernelCandidate],
        accepted: list[KernelCandidate],
        early: EarlyChoice,
        t_start: float,
    ) -> tuple[Model, ModelConfig] | None:
        """Fit the chosen member here and the round's other kernels in a worker.

        ``None`` (nothing handed on) when every member the choice could take failed to
        fit: the round then fits the rest in this process and chooses as usual.
        """
        rec = ctx.rec
        rec.selection = "full"
        by_name = {c.name: c for c in cands}
        t0 = time.perf_counter()
        models: dict[str, FittedKernel] = {}
        choice = Choice(names=[], guarded=True) if early.guarded else None
        # fitted here: the chosen member (and a batch portfolio's), those that failed before
        tried: set[str] = set()
        wanted = self.config.portfolio_size if self._portfolio_wanted() else 1
        for name in early.ranked:
            if len(models) >= wanted:
                break
            tried.add(name)
            fitted = self.fitter.fit_and_score(by_name[name], ctx, members=cands)
            if fitted is not None:
                models[name] = fitted
                if choice is None:
                    choice = Choice(names=[name], counts=[1], weights=[1.0], scores=early.scores)
        if choice is None:
            return None
        if not choice.guarded and self._portfolio_wanted():
            for name in self.config.portfolio_keep:
                if name in by_name and name not in tried:
                    tried.add(name)
                    fitted = self.fitter.fit_and_score(by_name[name], ctx, members=cands)
                    if fitted is not None:
                        models[name] = fitted
        model, best_config = self._chosen_model(ctx, choice, models)
        self._set_portfolio(ctx, choice, models)
        rec.timings["fit_and_score"] = time.perf_counter() - t0
        job = BackgroundJob(
            config=self.config,
            start_rule=self.fitter.start_rule,
            cands=[c for c in cands if c.name not in tried],
            members=cands,
            outcome=ctx.outcome,
            dataset=ctx.dataset,
            search_space_digest=ctx.search_space_digest,
            population=copy.deepcopy(ctx.population),  # pickled while the acquisition runs
            warm=dict(ctx.state.warm),
            history=list(ctx.history),
            sign=ctx.sign,
            round_index=rec.round,
            row_rounds=dict(ctx.state.row_rounds),
            rows=ctx.rows,
        )
        future: Future[BackgroundResult] | None = None
        if job.cands:
            try:
                future = fit_pool(1, user=self).submit(fit_round_in_worker, job)
            except Exception as e:  # noqa: BLE001 - the fits then run here, when collected
                logger.info("background fits could not start (%r); fitting in process", e)
        self._pending[ctx.outcome] = _Pending(ctx, accepted, choice, models, job, future)
        self._close_round(ctx, t_start)
        return model, best_config

    def finish_background(self) -> None:
        """Complete every round whose kernels are being fitted in the background.

        Waits for the worker's fits, then updates the population as a round fitted in
        this process would have (new kernels join, failed fits leave, the population
        keeps its best) and completes the round's record. Called by the acquisition when
        it ends, and by everything that reads or saves the state.
        """
        for outcome in list(self._pending):
            self._finish_background(outcome)

    def _finish_background(self, outcome: str) -> None:
        pending = self._pending.get(outcome)
        if pending is None:
            return
        ctx, rec, job = pending.ctx, pending.ctx.rec, pending.job
        t0 = time.perf_counter()
        result: BackgroundResult | None = None
        if pending.future is not None:
            try:
                # an interrupt (Ctrl-C, Jupyter's stop button) while waiting leaves the
                # round pending, to be completed at the next read: no round is lost
                result = pending.future.result()
            except Exception as e:  # noqa: BLE001 - a broken worker: fit them here instead
                logger.info("background fits failed (%r); fitting in process", e)
        del self._pending[outcome]
        rec.timings["background_wait"] = time.perf_counter() - t0
        # Models built from here on use a fresh builder: this surrogate's hands back the
        # model Ax cached for this dataset (the chosen one) once the round has returned it.
        build = Surrogate()._construct_model
        fitted: dict[str, Any] = dict(pending.models)
        builders: dict[str, Callable[[], Model]] = {}
        if result is not None:
            rec.timings["background_fits"] = result.seconds
            rec.rejected.extend(result.rejected)
            rec.timings.update(result.timings)
            for name, fit in result.fitted.items():
                ctx.state.warm[name] = fit.warm
                fitted[name] = (None, fit.config, fit.score)
                builders[name] = partial(
                    build, ctx.dataset, ctx.search_space_digest, fit.config, fit.state, False
                )
        elif job.cands:
            t1 = time.perf_counter()
            fitter = KernelFitter(self.config, build, self.fitter.start_rule)
            fitted.update(fitter.fit_all(job.cands, ctx, members=job.members, drop_slow=False))
            rec.timings["fit_and_score"] += time.perf_counter() - t1
        order = [c.name for c in job.members if c.name in fitted]
        models = self.fitter.drop_slow_fits({k: fitted[k] for k in order}, ctx)
        self._admit_fitted(ctx, pending.accepted, models)
        if not models:
            self._no_kernel_fitted(ctx)
        else:
            choice = pending.choice
            if choice.guarded:
                choice.scores = {k: v[2] for k, v in models.items()}
            else:
                choice.scores = {k: v for k, v in choice.scores.items() if k in models}
            self._settle(ctx, choice, models)
        ctx.state.fitted_models = FittedModels(
            {k: v[0] for k, v in models.items() if v[0] is not None},
            {k: b for k, b in builders.items() if k in models},
        )
        self._record_population(ctx, pending.accepted, models)
        self._after_update(ctx)

    def _serialize_attributes_as_kwargs(self) -> dict[str, Any]:
        kwargs = super()._serialize_attributes_as_kwargs()
        kwargs["config"] = self.config.model_dump(mode="json")
        kwargs["state"] = self.state_dict_json()
        return kwargs

    def clone_reset(self) -> KernelDiscoverySurrogate:
        return self.__class__(**self._serialize_attributes_as_kwargs())

    # --- state -----------------------------------------------------------------------------

    def state_dict_json(self) -> dict[str, Any]:
        """Everything the next round needs, as plain JSON data.

        Population, history (the last ``history_limit`` rounds) and round counter; the
        warm-start parameters of the members, the last choice (for the strike rule) and
        the proposer's dedup keys, so that a reloaded run continues exactly as an
        uninterrupted one (see :mod:`ax_kernel_discovery.surrogate.state`). While Ax
        stores a generator run's copy (``_record_only``), only the round counter and
        the objective weights: the generation strategy holds the state.
        """
        state: dict[str, Any] = {
            "format": STATE_FORMAT,
            "round_index": self.round_index,
            "objective_weights": dict(self.objective_weights),
            "objective_matrix": [dict(row) for row in self.objective_matrix],
        }
        if self._record_only:
            return {**state, "record": True}
        self.finish_background()
        warm: dict[str, dict[str, Any]] = {}
        for outcome, kept in self.outcome_states.items():
            members = set(kept.population.names)
            for name, params in kept.warm.items():
                if name in members:
                    warm.setdefault(outcome, {})[name] = encode_tensors(params)
        proposer = self._proposer_state
        if self._proposer is not None:
            proposer = self._proposer.state_dict()
        fallback = self._fallback_state
        if self._fallback is not None:
            fallback = self._fallback.state_dict()
        out = {
            **state,
            "populations": {k: v.population.to_dict() for k, v in self.outcome_states.items()},
            "history": [
                r.model_dump(mode="json") for r in self._history[-self.config.history_limit :]
            ],
            "last_choice": {
                k: v.last_choice.model_dump()
                for k, v in self.outcome_states.items()
                if v.last_choice is not None
            },
            "warm_parameters": warm,
            "features": self._features,
            "rows": {k: v.rows_to_dict() for k, v in self.outcome_states.items()},
            "proposer": proposer or {},
        }
        if fallback:
            out["fallback_proposer"] = fallback
        return out

    def _load_state(self, state: Mapping[str, Any]) -> None:
        self.round_index = int(state.get("round_index", 0))
        self.objective_weights = {
            k: float(v) for k, v in state.get("objective_weights", {}).items()
        }
        self.objective_matrix = [
            {k: float(v) for k, v in row.items()} for row in state.get("objective_matrix", [])
        ]
        last = state.get("last_choice", {})
        warm = state.get("warm_parameters", {})
        self.outcome_states = {
            outcome: OutcomeState(
                population=Population.from_dict(pop),
                warm={k: decode_tensors(v) for k, v in warm.get(outcome, {}).items()},
                last_choice=LastChoice.model_validate(last[outcome]) if outcome in last else None,
            )
            for outcome, pop in state.get("populations", {}).items()
        }
        features = state.get("features")
        self._features = list(features) if features is not None else None
        for outcome, rows in state.get("rows", {}).items():
            if outcome in self.outcome_states:
                self.outcome_states[outcome].rows_from_dict(rows)
        self._history = [RoundRecord.model_validate(r) for r in state.get("history", [])]
        self._proposer_state = dict(state.get("proposer") or {}) or None
        self._fallback_state = dict(state.get("fallback_proposer") or {}) or None

    # --- steps -----------------------------------------------------------------------------

    def _new_population(self, dim: int | None = None) -> Population:
        return Population(
            self._start_candidates(self.config, dim),
            size=self.config.population_size,
            patience=self.config.patience,
            keep=self.config.keep_kernels,
        )

    def _strike(self, ctx: RoundContext) -> None:
        """Step 1: judge last round's choice by its batch (``config.strike_rule``).

        One objective: the batch improved when it beat the best value seen at the choice.
        Several objectives (Ax's multi-objective experiments): when one of its rows is
        not weakly dominated by any earlier row (it adds hypervolume for every reference
        point the earlier rows dominate); every outcome's choice is judged by that.
        """
        if self.config.strike_rule == "none":
            return
        last, weight = ctx.state.last_choice, ctx.sign
        if last is None:
            return
        if len(self.objective_matrix) > 1:
            improved = self._pareto_improved(ctx)
        elif not weight:
            return
        else:
            improved = last.improved(ctx.dataset.X, ctx.dataset.Y, weight)
        if improved is None:
            return
        name, rec = last.name, ctx.rec
        rec.previous_improved = improved
        if not improved:
            rec.struck = name
            if ctx.state.strike(name):
                rec.dropped.append(name)

    def _pareto_improved(self, ctx: RoundContext) -> bool | None:
        """Whether a row no earlier fit saw is weakly dominated by no earlier row, in the
        objectives of :attr:`objective_matrix` (raw values; ``None``: rows not keyed, or
        nothing to compare)."""
        seen = ctx.state.row_rounds
        metrics = {o for row in self.objective_matrix for o, w in row.items() if w}
        if not seen or not metrics or not metrics <= set(self._fit_rows):
            return None
        values: dict[RowKey, list[float]] = {}
        keys = set.intersection(*(set(self._fit_rows[m].keys) for m in metrics))
        for key in keys:
            raw = {m: self._fit_rows[m].raw_mean[self._fit_rows[m].index[key]] for m in metrics}
            values[key] = [
                sum(w * raw[o] for o, w in row.items() if w) for row in self.objective_matrix
            ]
        old = np.array([v for k, v in values.items() if k in seen])
        new = np.array([v for k, v in values.items() if k not in seen])
        if not len(old) or not len(new):
            return None
        # a new row is weakly dominated when some old row is at least as good in every objective
        dominated = (old[None, :, :] >= new[:, None, :]).all(-1).any(-1)
        return bool((~dominated).any())

    def _propose(self, pop: Population, dim: int, outcome: str, rec: RoundRecord) -> Proposal:
        n = self.config.proposals_per_round
        if n == 0 or self.config.proposer == "none":
            return Proposal()
        if self._proposer_state is not None:  # reloaded: the proposer's dedup keys
            self.proposer.load_state_dict(self._proposer_state)
            self._proposer_state = None
        proposal = None
        prefetched = self._prefetch.pop((outcome, rec.round, dim), None)
        if prefetched is not None:
            try:
                proposal = prefetched.result(timeout=self.config.llm_timeout * 3)
                proposal.timings["prefetched"] = 1.0
            except Exception as e:  # noqa: BLE001 - fall through to a fresh call
                logger.info("prefetched proposal failed (%r); proposing again", e)
        if proposal is None:
            proposal = self._safe_propose(
                pop.summaries(self.config.criterion), dim, n, self.round_index
            )
        if not self.needs_llm:
            return proposal
        rec.llm_used = bool(proposal.candidates)
        fallback = (
            self.config.fallback_to_offline
            and self.config.proposer in ("llm", "direct")
            and not proposal.candidates
        )
        if not proposal.candidates:
            rec.llm_failure = _llm_failure(proposal.rejections)
            logger.warning(
                "kernel discovery round %d: the LLM proposer (%s) gave no usable kernel: %s; %s",
                self.round_index,
                self.config.llm_model,
                rec.llm_failure,
                "the offline operator proposed this round's kernels instead"
                if fallback
                else "no new kernel this round (fallback_to_offline=False)",
            )
        if fallback:
            offline = self.fallback_proposer.propose(
                pop.summaries(self.config.criterion), dim, n, self.round_index
            )
            proposal.candidates.extend(offline.candidates)
            proposal.rejections.extend(offline.rejections)
        return proposal

    def llm_rounds(self) -> dict[str, int]:
        """How many rounds of the history really used the LLM's proposals.

        Returns:
            ``{"rounds": ..., "used_llm": ..., "without_llm": ...}`` over the rounds with
            an LLM proposer (all zero for the offline operator).
        """
        flags = [r.llm_used for r in self.history if r.llm_used is not None]
        used = sum(flags)
        return {"rounds": len(flags), "used_llm": used, "without_llm": len(flags) - used}

    def llm_waiting(self) -> str | None:
        """What the proposer's LLM is being waited for now (``None``: nothing), for progress bars."""
        return self._proposer.waiting() if self._proposer is not None else None

    def _safe_propose(
        self, members: list[MemberSummary], dim: int, n: int, round_index: int
    ) -> Proposal:
        try:
            return self.proposer.propose(members, dim, n, round_index)
        except Exception as e:  # a proposer must not break the BO loop
            return Proposal(
                rejections=[Rejection(name=self.proposer.name, stage="proposal", reason=repr(e))]
            )

    def _start_prefetch(self, pop: Population, dim: int, outcome: str, next_round: int) -> None:
        """Ask the proposer for next round's kernels now, while Ax optimizes the acquisition.

        The proposals are made from the population as it stands after this round's
        update (next round's strike is not yet known), which hides LLM latency behind
        the acquisition optimization.
        """
        if not self.config.overlap_proposals or self.config.proposals_per_round == 0:
            return
        if self.config.proposer in ("offline", "none"):
            return  # nothing to hide: the offline operator takes milliseconds
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="axkd-propose")
        key = (outcome, next_round, dim)
        self._prefetch[key] = self._executor.submit(
            self._safe_propose,
            pop.summaries(self.config.criterion),
            dim,
            self.config.proposals_per_round,
            next_round,
        )

    def __getstate__(self) -> dict[str, Any]:
        # Ax deep-copies surrogates; in-flight proposals and their thread stay behind, and
        # a round whose fits run in the background is completed first
        self.finish_background()
        state = self.__dict__.copy()
        state["_prefetch"] = {}
        state["_executor"] = None
        state["_portfolios"] = {}
        state["outcome_states"] = {
            k: OutcomeState(
                v.population, v.warm, v.last_choice, row_rounds=v.row_rounds, ymap=v.ymap
            )  # no fitted models
            for k, v in self.outcome_states.items()
        }
        return state


#: The format of :meth:`KernelDiscoverySurrogate.state_dict_json`: 1, the states before
#: the format was written down; 2, with the rows keyed by trial, the objectives' matrix,
#: the batch portfolio's bookkeeping and the experiment's parameters.
STATE_FORMAT = 2


def check_state_format(state: Mapping[str, Any]) -> None:
    """Refuse a saved state this version cannot continue, saying why and what to do.

    Raises:
        ValueError: The state was written by a newer format, or lacks what a run's state
            holds (its populations): loading it would silently start over and lose every
            discovered kernel.
    """
    version = state.get("format", 1)
    if not isinstance(version, int) or version > STATE_FORMAT:
        raise ValueError(
            f"the saved kernel-discovery state has format {version!r}, newer than this "
            f"version of ax-kernel-discovery reads (formats 1-{STATE_FORMAT}): it was saved by "
            "a newer release; install that release (or newer) to continue this run"
        )
    if not state.get("record") and "populations" not in state:
        raise ValueError(
            "the saved kernel-discovery state has no 'populations' (keys: "
            f"{sorted(state)}): it is not a state this package wrote, or it was cut short; "
            "continuing from it would start a new population and lose every discovered "
            "kernel. Load the run's complete JSON, or start a new strategy"
        )


def _saved_config(
    config: Mapping[str, Any], state: Mapping[str, Any] | None
) -> KernelDiscoveryConfig:
    """A config read back with its state: an unknown setting names the version skew."""
    from pydantic import ValidationError

    try:
        return KernelDiscoveryConfig.model_validate(dict(config))
    except ValidationError as e:
        unknown = [str(err["loc"][0]) for err in e.errors() if err["type"] == "extra_forbidden"]
        unknown += re.findall(r"unknown setting '(\w+)'", str(e))
        if state is None or not unknown:
            raise
        raise ValueError(
            f"the saved kernel-discovery config has settings this version of "
            f"ax-kernel-discovery does not know ({', '.join(unknown)}; state format "
            f"{state.get('format', 1)}, this version writes {STATE_FORMAT}): the run was saved "
            "by another release. Install that release to continue it, or remove those "
            "settings from the saved JSON to continue without them"
        ) from None


def _describe(features: Sequence[str]) -> str:
    """A parameter list in a few words (``x0..x4, 5 parameters``)."""
    if len(features) <= 4:
        return ", ".join(features) or "none"
    return f"{features[0]}..{features[-1]}, {len(features)} parameters"


def _llm_failure(rejections: list[Rejection]) -> str:
    """Why an LLM round gave nothing, in one line: the call's error, else the rejections."""
    for rejection in rejections:
        if rejection.stage == "proposal":
            return rejection.reason[:300]
    if rejections:
        stages: dict[str, int] = {}
        for rejection in rejections:
            stages[rejection.stage] = stages.get(rejection.stage, 0) + 1
        counts = ", ".join(f"{k} {v}" for k, v in stages.items())
        return f"every proposal was rejected ({counts}; see the round's history)"
    return "the reply held no kernel"


__all__ = [
    "STATE_FORMAT",
    "KernelDiscoverySurrogate",
    "ProposerFactory",
    "RoundRecord",
    "StartCandidates",
    "default_start_candidates",
    "candidate_model_config",
]
