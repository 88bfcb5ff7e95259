"""Fits in the background: a round's other kernels fitted while Ax optimizes the acquisition.

Under the prequential criterion a round's choice compares forecasts that earlier fits
made, so it is known before the round's fits (:meth:`~.choice.Chooser.choice_before_fits`).
:class:`BackgroundFits` then fits the best-ranked member that fits (or builds Ax's
default model in a guard round), the round hands it on to Ax at once
(:meth:`~.round.RoundSteps.hand_on`), and the round's other kernels are fitted in a worker
process (:func:`fit_round_in_worker`: the same :meth:`~.fitting.KernelFitter.fit_all` on a
copy of the round's state, a :class:`BackgroundJob`). When the acquisition ends, or at the
latest when the state is next read, :meth:`BackgroundFits.complete` collects them and
ends the round through :meth:`~.round.RoundSteps.end`, as a round fitted in process ends.
The workers are :mod:`.worker`'s fresh interpreters; a worker that cannot start or fails
leaves the fits to this process, with the same result.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial

from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.surrogate import Surrogate
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from torch import Tensor

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.devices import usable_cores
from ax_kernel_discovery.population import Population
from ax_kernel_discovery.surrogate.choice import Choice, EarlyChoice
from ax_kernel_discovery.surrogate.fitting import FittedKernel, KernelFitter, StartRule
from ax_kernel_discovery.surrogate.round import Objectives, RoundSteps
from ax_kernel_discovery.surrogate.round_record import RoundRecord
from ax_kernel_discovery.surrogate.state import OutcomeState, PastRound, RoundContext
from ax_kernel_discovery.surrogate.trial_rows import FitRows, RowKey
from ax_kernel_discovery.surrogate.worker import CALL_FAILURES, SUBMIT_FAILURES, shared_pool

__all__ = [
    "BackgroundFit",
    "BackgroundFits",
    "BackgroundJob",
    "BackgroundResult",
    "PendingRound",
    "fit_round_in_worker",
]

logger = logging.getLogger(__name__)


@dataclass
class BackgroundJob:
    """A round's fits handed to a worker process (``background_fits``): everything the
    round's :meth:`~.fitting.KernelFitter.fit_all` reads, so that the worker fits them as this
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
        rounds: The outcome's earlier rounds, every one (for the criterion's batches;
            ``None``: read off ``history``).
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
    rounds: list[PastRound] | None = None

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
            earlier=self.rounds,
        )


@dataclass
class BackgroundFit:
    """One kernel fitted by a :class:`BackgroundJob`.

    Attributes:
        warm: Its warm start (:func:`~.state.warm_parameters`).
        state: The fitted model's full state dict (float64: rebuilds the model exactly).
        config: The ``ModelConfig`` it was built with.
        score: Its fit score.
        refit_seconds: How long its fit took (``None``: no fit).
    """

    warm: dict[str, Tensor]
    state: dict[str, Tensor]
    config: ModelConfig
    score: float
    refit_seconds: float | None = None


@dataclass
class BackgroundResult:
    """What a :class:`BackgroundJob` gives back: the fitted kernels (in the job's order),
    the rejections, timings and start-rule counts its round record gathered, and its
    seconds."""

    fitted: dict[str, BackgroundFit]
    rejected: list[Rejection]
    timings: dict[str, float]
    seconds: float
    fit_starts: dict[str, int] = field(default_factory=dict)


def fit_round_in_worker(job: BackgroundJob) -> BackgroundResult:
    """Fit a :class:`BackgroundJob` with Ax's ``Surrogate._construct_model`` (in a worker
    process), as :meth:`~.fitting.KernelFitter.fit_all` fits in the surrogate's process, without the
    slow-fit rule (the caller applies it over the whole round)."""
    t0 = time.perf_counter()
    config = job.config.model_copy(update={"fit_workers": 1})
    fitter = KernelFitter(config, Surrogate()._construct_model, job.start_rule)
    ctx = job.context()
    models = fitter.fit_all(job.cands, ctx, members=job.members, drop_slow=False)
    fitted = {
        name: BackgroundFit(
            warm=ctx.state.warm[name],
            state={k: v.detach().clone() for k, v in fit.model.state_dict().items()},
            config=fit.config,
            score=fit.score,
            refit_seconds=fit.refit_seconds,
        )
        for name, fit in models.items()
        if fit.model is not None
    }
    return BackgroundResult(
        fitted=fitted,
        rejected=list(ctx.rec.rejected),
        timings=dict(ctx.rec.timings),
        seconds=time.perf_counter() - t0,
        fit_starts=dict(ctx.rec.fit_starts),
    )


@dataclass
class PendingRound:
    """A round handed on to the acquisition while its other kernels are fitted in a
    worker: what :meth:`BackgroundFits.complete` needs to end it."""

    ctx: RoundContext
    accepted: list[KernelCandidate]
    #: The choice handed on (its scores: the held-out losses of the members to choose
    #: from, narrowed to those whose fits succeed once they are known).
    choice: Choice
    #: The kernels fitted here before the hand-on (the chosen member, a portfolio's).
    models: dict[str, FittedKernel]
    #: The worker's job: the round's other kernels (``job.members``: all of them).
    job: BackgroundJob
    future: Future[BackgroundResult] | None


class BackgroundFits:
    """The rounds whose other kernels a worker process fits while the acquisition runs
    (``background_fits``), by outcome.

    Args:
        fitter: The surrogate's fitter (settings, start rule, slow-fit rule).
        steps: The round's steps (the hand-on and the end).
    """

    def __init__(self, fitter: KernelFitter, steps: RoundSteps) -> None:
        self.fitter = fitter
        self.steps = steps
        self.pending: dict[str, PendingRound] = {}

    @property
    def config(self) -> KernelDiscoveryConfig:
        return self.fitter.config

    def allowed(self, ctx: RoundContext, ax_builder: bool) -> bool:
        """Whether this round may fit its kernels in a worker process (``background_fits``).

        Only a CPU run whose surrogate builds models the Ax way (``ax_builder``: no
        subclass or test replaces ``_construct_model``), in a round fitted in full (not
        halved), and not where ``fit_workers > 1`` fits the round side by side in worker
        processes.
        """
        mode = self.config.background_fits
        if mode == "off" or ctx.dataset.X.device.type != "cpu" or self.config.fit_workers > 1:
            return False
        if mode == "auto" and usable_cores() < 2:
            return False
        return ax_builder and not self.fitter.halving(ctx)

    def fit_the_choice(
        self, ctx: RoundContext, cands: list[KernelCandidate], early: EarlyChoice, n_objectives: int
    ) -> tuple[Choice, dict[str, FittedKernel], set[str]] | None:
        """Fit the member the early choice takes (the first of its order that fits) and a
        batch portfolio's ``portfolio_keep``, in this process; to convergence under
        ``converge_chosen``.

        Returns:
            The choice, the fitted kernels and the names tried (fitted or failed); ``None``
            when every member the choice could take failed to fit.
        """
        ctx.rec.selection = "full"
        by_name = {c.name: c for c in cands}
        converge = self.config.converge_chosen
        models: dict[str, FittedKernel] = {}
        choice = Choice(names=[], guarded=True) if early.guarded else None
        tried: set[str] = set()
        portfolio = self.steps.portfolios.wanted(n_objectives)
        wanted = self.config.portfolio_size if portfolio else 1
        for name in early.ranked:
            if len(models) >= wanted:
                break
            tried.add(name)
            fitted = self.fitter.fit_and_score(by_name[name], ctx, members=cands, converge=converge)
            if fitted is not None:
                models[name] = fitted
                if choice is None:
                    choice = Choice(names=[name], counts=[1], weights=[1.0], scores=early.scores)
        if choice is None:
            return None
        if not choice.guarded and portfolio:
            for name in self.config.portfolio_keep:
                if name in by_name and name not in tried:
                    tried.add(name)
                    fitted = self.fitter.fit_and_score(
                        by_name[name], ctx, members=cands, converge=converge
                    )
                    if fitted is not None:
                        models[name] = fitted
        return choice, models, tried

    def hand_over(
        self,
        ctx: RoundContext,
        cands: list[KernelCandidate],
        accepted: list[KernelCandidate],
        early: EarlyChoice,
        objectives: Objectives,
    ) -> tuple[Model, ModelConfig] | None:
        """Fit the chosen member here (and a batch portfolio's), hand its model on, and
        start the round's other kernels in a worker.

        Returns:
            The model the acquisition gets; ``None`` (nothing handed on) when every member
            the choice could take failed to fit: the round then fits the rest in this
            process and chooses as usual.
        """
        rec = ctx.rec
        t0 = time.perf_counter()
        first = self.fit_the_choice(ctx, cands, early, len(objectives))
        if first is None:
            return None
        choice, models, tried = first
        handed = self.steps.hand_on(ctx, choice, models, objectives)
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
            rounds=list(ctx.past),
        )
        future: Future[BackgroundResult] | None = None
        if job.cands:
            try:
                future = shared_pool(1, user=self).submit(fit_round_in_worker, job)
            except SUBMIT_FAILURES as e:  # the fits then run here, when collected
                logger.info("background fits could not start (%r); fitting in process", e)
        self.pending[ctx.outcome] = PendingRound(ctx, accepted, choice, models, job, future)
        return handed

    def discard(self) -> None:
        """Forget the pending rounds (they were cut short: see
        :meth:`~ax_kernel_discovery.KernelDiscoverySurrogate.fit`); a worker still fitting
        finishes unheard."""
        for pending in self.pending.values():
            if pending.future is not None:
                pending.future.cancel()
        self.pending = {}

    def complete(self, outcome: str, objectives: Objectives) -> RoundContext | None:
        """Wait for the worker's fits of ``outcome``'s pending round and end the round as a
        round fitted in this process ends (:meth:`~.round.RoundSteps.end`).

        An interrupt (Ctrl-C, Jupyter's stop button) while waiting leaves the round
        pending, to be completed at the next read: no round is lost.

        Returns:
            The round's context (``None``: no round of ``outcome`` was pending).
        """
        pending = self.pending.get(outcome)
        if pending is None:
            return None
        ctx, rec, job = pending.ctx, pending.ctx.rec, pending.job
        t0 = time.perf_counter()
        result: BackgroundResult | None = None
        if pending.future is not None:
            try:
                result = pending.future.result()
            except CALL_FAILURES as e:  # a broken worker: fit them here instead
                logger.info("background fits failed (%r); fitting in process", e)
        del self.pending[outcome]
        rec.timings["background_wait"] = time.perf_counter() - t0
        # Models built from here on use a fresh builder: the surrogate's hands back the
        # model Ax cached for this dataset (the chosen one) once the round has returned it.
        build = Surrogate()._construct_model
        fitted = dict(pending.models)
        builders: dict[str, Callable[[], Model]] = {}
        if result is not None:
            rec.timings["background_fits"] = result.seconds
            rec.rejected.extend(result.rejected)
            rec.timings.update(result.timings)
            for label, count in result.fit_starts.items():
                rec.fit_starts[label] = rec.fit_starts.get(label, 0) + count
            for name, fit in result.fitted.items():
                ctx.state.warm[name] = fit.warm
                fitted[name] = FittedKernel(None, fit.config, fit.score, fit.refit_seconds)
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
        self.steps.end(
            ctx, pending.accepted, models, objectives, handed=pending.choice, builders=builders
        )
        return ctx
