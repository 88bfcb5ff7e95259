"""Where a round's fits run: one protocol, three places.

A :class:`FitExecutor` fits kernels of a round (each by
:meth:`~.fitting.KernelFitter.fit_all`, on the round's context) and hands back
:class:`PendingFits`; their :meth:`~PendingFits.wait` gives the fitted kernels and their
report (:class:`~.fitting.Fits`, with a :class:`~.steps.FitReport`): a worker's
rejections and start counts come back as data, into the same report. The round (:mod:`~ax_kernel_discovery.surrogate.runner`) is the same code whichever executor fits it:

* :class:`InProcessFits`: one after another in this process;
* :class:`WorkerProcessFits`: side by side in ``fit_workers`` worker processes (the same
  fits, rebuilt here from their exact states);
* :class:`BackgroundFits`: in one worker process while Ax optimizes the acquisition
  (``background_fits``: :func:`fit_round_in_worker` on a copy of the round's context,
  :meth:`~.state.RoundContext.for_worker`). It is *deferred*: :meth:`~PendingFits.wait`
  is where the round waits for them. A worker that cannot start or fails leaves the fits
  to this process, with the same result.

The workers are :mod:`.worker`'s fresh interpreters, one torch thread each.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Protocol

from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.models.model import Model
from torch import Tensor

from ax_kernel_discovery._upstream.ax import fresh_model_builder
from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.options import FitOptions
from ax_kernel_discovery.surrogate.fitting import (
    FitPlan,
    Fits,
    FittedKernel,
    KernelFitter,
    StartRule,
)
from ax_kernel_discovery.surrogate.round_record import Stopwatch
from ax_kernel_discovery.surrogate.state import RoundContext
from ax_kernel_discovery.surrogate.steps import FitReport
from ax_kernel_discovery.surrogate.worker import CALL_FAILURES, SUBMIT_FAILURES, shared_pool

__all__ = [
    "BackgroundFit",
    "BackgroundFits",
    "BackgroundJob",
    "BackgroundResult",
    "FitExecutor",
    "Fits",
    "InProcessFits",
    "PendingFits",
    "WorkerProcessFits",
    "fit_round_in_worker",
]

logger = logging.getLogger(__name__)


class PendingFits(Protocol):
    """Fits submitted to a :class:`FitExecutor`."""

    #: Whether the fits may still run after :meth:`FitExecutor.submit` returns (the round
    #: is then ended later, by :meth:`wait`).
    deferred: bool

    def wait(self) -> Fits:
        """The fits, once they are done (blocks while a worker fits them; an interrupt
        while waiting leaves them pending, to be waited for again)."""
        ...  # pragma: no cover - a protocol

    def cancel(self) -> None:
        """Forget the fits (a worker still fitting finishes unheard)."""
        ...  # pragma: no cover - a protocol


class FitExecutor(Protocol):
    """Where a round's fits run (see the module docstring)."""

    def submit(
        self,
        fitter: KernelFitter,
        ctx: RoundContext,
        cands: Sequence[KernelCandidate],
        members: Sequence[KernelCandidate],
        plan: FitPlan = FitPlan(),
    ) -> PendingFits:
        """Fit and score ``cands`` as ``fitter.fit_all`` does on ``ctx`` (``members``: the
        round's kernels, which a start rule may inherit from; ``plan``: the kernels
        fitted to convergence and those not refitted), without the slow-fit rule (the
        round applies it over all its fits)."""
        ...  # pragma: no cover - a protocol


@dataclass
class _Done:
    """Fits that are done when submitted."""

    fits: Fits
    deferred: bool = False

    def wait(self) -> Fits:
        return self.fits

    def cancel(self) -> None:
        pass


class InProcessFits:
    """Fits one after another in this process."""

    def submit(
        self,
        fitter: KernelFitter,
        ctx: RoundContext,
        cands: Sequence[KernelCandidate],
        members: Sequence[KernelCandidate],
        plan: FitPlan = FitPlan(),
    ) -> PendingFits:
        return _Done(fitter.fit_all(list(cands), ctx, members=members, drop_slow=False, plan=plan))


class WorkerProcessFits:
    """Fits side by side in ``workers`` worker processes (a CPU run without a start rule;
    otherwise in this process, as :class:`InProcessFits`): the same fits and scores.

    Args:
        workers: The worker processes (``fit_workers``).
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def submit(
        self,
        fitter: KernelFitter,
        ctx: RoundContext,
        cands: Sequence[KernelCandidate],
        members: Sequence[KernelCandidate],
        plan: FitPlan = FitPlan(),
    ) -> PendingFits:
        fits = fitter.fit_all(
            list(cands),
            ctx,
            members=members,
            drop_slow=False,
            workers=self.workers,
            plan=plan,
        )
        return _Done(fits)


@dataclass
class BackgroundJob:
    """Fits handed to a worker process: the fitter's settings, the kernels and a copy of
    the round's context (:meth:`~.state.RoundContext.for_worker`).

    Attributes:
        options: The fitter's settings (:class:`~ax_kernel_discovery.options.FitOptions`).
        start_rule: The fitter's start rule (``None``: GPyTorch's initial values).
        cands: The kernels to fit, in the round's order (members, then new kernels).
        members: All the round's kernels (what the start rule may inherit from).
        ctx: The worker's copy of the round's context.
        plan: The kernels fitted to convergence and those not refitted.
    """

    options: FitOptions
    start_rule: StartRule | None
    cands: list[KernelCandidate]
    members: list[KernelCandidate]
    ctx: RoundContext
    plan: FitPlan = FitPlan()


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
    the rejections and start-rule counts of its fits' report, the timings its copy of the
    round's timer wrote, and its seconds."""

    fitted: dict[str, BackgroundFit]
    rejected: list[Rejection]
    timings: dict[str, float]
    seconds: float
    fit_starts: dict[str, int] = field(default_factory=dict)


def fit_round_in_worker(job: BackgroundJob) -> BackgroundResult:
    """Fit a :class:`BackgroundJob` with Ax's ``Surrogate._construct_model`` (in a worker
    process), as :meth:`~.fitting.KernelFitter.fit_all` fits in the surrogate's process,
    without the slow-fit rule (the round applies it over all its fits)."""
    watch = Stopwatch()
    fitter = KernelFitter(job.options, fresh_model_builder(), job.start_rule)
    ctx = job.ctx
    fits = fitter.fit_all(job.cands, ctx, members=job.members, drop_slow=False, plan=job.plan)
    fitted = {
        name: BackgroundFit(
            warm=ctx.state.warm[name],
            state={k: v.detach().clone() for k, v in fit.model.state_dict().items()},
            config=fit.config,
            score=fit.score,
            refit_seconds=fit.refit_seconds,
        )
        for name, fit in fits.models.items()
        if fit.model is not None
    }
    return BackgroundResult(
        fitted=fitted,
        rejected=list(fits.report.rejected),
        timings=dict(ctx.timings),
        seconds=watch.elapsed(),
        fit_starts=dict(fits.report.fit_starts),
    )


class BackgroundFits:
    """Fits in one worker process while Ax optimizes the acquisition (deferred).

    Args:
        user: Who holds the worker (:func:`~.worker.shared_pool`'s ``user``: the
            surrogate, which releases it on ``close``).
    """

    def __init__(self, user: object) -> None:
        self.user = user

    def submit(
        self,
        fitter: KernelFitter,
        ctx: RoundContext,
        cands: Sequence[KernelCandidate],
        members: Sequence[KernelCandidate],
        plan: FitPlan = FitPlan(),
    ) -> PendingFits:
        job = BackgroundJob(
            fitter.options,
            fitter.start_rule,
            list(cands),
            list(members),
            ctx,
            plan,
        )
        future: Future[BackgroundResult] | None = None
        if job.cands:
            worker_job = replace(job, ctx=ctx.for_worker())  # what crosses to the worker
            try:
                future = shared_pool(1, user=self.user).submit(fit_round_in_worker, worker_job)
            except SUBMIT_FAILURES as e:  # the fits then run here, when waited for
                logger.info("background fits could not start (%r); fitting in process", e)
        return _PendingBackground(job, future)


@dataclass
class _PendingBackground:
    """A :class:`BackgroundJob` in a worker (``future``; ``None``: to be fitted here)."""

    job: BackgroundJob
    future: Future[BackgroundResult] | None
    deferred: bool = True

    def cancel(self) -> None:
        if self.future is not None:
            self.future.cancel()

    def wait(self) -> Fits:
        ctx, job = self.job.ctx, self.job
        timer = ctx.timer()
        result: BackgroundResult | None = None
        with timer.phase("background_wait"):
            if self.future is not None:
                try:
                    result = self.future.result()
                except CALL_FAILURES as e:  # a broken worker: fit them here instead
                    logger.info("background fits failed (%r); fitting in process", e)
                self.future = None  # waited for: a second wait fits here
        # Models built from here on use a fresh builder: the surrogate's hands back the
        # model Ax cached for this dataset (the chosen one) once the round has returned it.
        build = fresh_model_builder()
        fitted: dict[str, FittedKernel] = {}
        builders: dict[str, Callable[[], Model]] = {}
        report = FitReport()
        if result is not None:
            timer.record("background_fits", result.seconds)
            # the worker's report, as data: its rejections and start counts
            report = FitReport(rejected=tuple(result.rejected), fit_starts=result.fit_starts)
            timer.update(result.timings)
            for name, fit in result.fitted.items():
                ctx.state.warm[name] = fit.warm
                fitted[name] = FittedKernel(None, fit.config, fit.score, fit.refit_seconds)
                builders[name] = partial(
                    build, ctx.dataset, ctx.search_space_digest, fit.config, fit.state, False
                )
        elif job.cands:
            fitter = KernelFitter(job.options, build, job.start_rule)
            with timer.phase("fit_and_score", add=True):
                here = fitter.fit_all(
                    job.cands, ctx, members=job.members, drop_slow=False, plan=job.plan
                )
            fitted.update(here.models)
            report = here.report
        return Fits(fitted, builders, report)
