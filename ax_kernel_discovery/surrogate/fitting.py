"""How a round fits and scores its kernels (step 4 of a round).

:class:`KernelFitter` is a collaborator of
:class:`~ax_kernel_discovery.surrogate.core.KernelDiscoverySurrogate`: it builds every
member and accepted candidate the Ax way (through a model builder, Ax's
``Surrogate._construct_model`` in a run), fits it (in full, by successive halving, or side
by side in worker processes), scores it by the criterion and refuses fits far slower than
the round's fastest. It chooses nothing (that is :mod:`.choice`); it reads the
:class:`~ax_kernel_discovery.surrogate.state.RoundContext` it is handed and updates only
the outcome's warm starts (and times its fits on the round's timer), so it is tested
without an Ax surrogate. Every fit returns :class:`Fits`: the fitted kernels and a
:class:`~.steps.FitReport` of what else the fits found (rejections, start-rule counts,
capped fits, the selection), from which the round's record is built.
:func:`candidate_model_config` is the Ax ``ModelConfig`` of one candidate, also used by the
fixed-kernel baselines and the kernel library.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from torch import Tensor

from ax_kernel_discovery._upstream.ax import fresh_model_builder
from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.errors import is_kernel_failure, rejection_stage
from ax_kernel_discovery.gp import KernelDiscoveryGP
from ax_kernel_discovery.inheritance import inherited_parameters
from ax_kernel_discovery.options import FitOptions
from ax_kernel_discovery.selection import best_points, num_hyperparameters, prior_covariance
from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel
from ax_kernel_discovery.surrogate.round_record import Stopwatch
from ax_kernel_discovery.surrogate.state import RoundContext, warm_parameters
from ax_kernel_discovery.surrogate.steps import FitReport
from ax_kernel_discovery.surrogate.worker import CALL_FAILURES, shared_pool

logger = logging.getLogger(__name__)


class FittedKernel(NamedTuple):
    """A kernel fitted and scored this round.

    Attributes:
        model: Its fitted GP (``None``: fitted in a worker process and built from its
            state only when read, see :class:`~.state.FittedModels`).
        config: The ``ModelConfig`` that built it.
        score: Its score by the criterion (lower is better).
        refit_seconds: How long its L-BFGS fit took (``None``: scored at last round's
            hyperparameters, without a fit); the slow-fit rule compares these.
    """

    model: Model | None
    config: ModelConfig
    score: float
    refit_seconds: float | None = None


class FitPlan(NamedTuple):
    """How a round's fits treat particular kernels, beyond ``fit_maxiter``.

    Attributes:
        converge: Kernels fitted to convergence (``converge_contenders``).
        frozen: Kernels scored at their last round's hyperparameters, conditioned on
            today's data, without L-BFGS steps (``refit_members="contenders"``); one
            without such hyperparameters (a new kernel) is fitted as always.
    """

    converge: frozenset[str] = frozenset()
    frozen: frozenset[str] = frozenset()


class FitSpec(NamedTuple):
    """One fit :meth:`KernelFitter.fit_all` asks for: the kernel, whether it is refitted
    (else scored at last round's hyperparameters), its step budget (``None``: the
    fitter's ``fit_maxiter``) and whether it runs to convergence instead."""

    cand: KernelCandidate
    refit: bool
    maxiter: int | None
    converge: bool


@dataclass(frozen=True)
class Fits:
    """What fits returned: the fitted kernels and their report.

    Attributes:
        models: The kernels that fitted, in the order they were given.
        builders: Builders of the models fitted in a worker, by name (their
            :attr:`FittedKernel.model` is ``None``: built when first read).
        report: What else the fits found (:class:`~.steps.FitReport`: the failed fits'
            rejections, the start rule's counts, ...).
    """

    models: Mapping[str, FittedKernel] = field(default_factory=dict)
    builders: Mapping[str, Callable[[], Model]] = field(default_factory=dict)
    report: FitReport = field(default_factory=FitReport)

    def get(self, name: str) -> FittedKernel | None:
        """The fitted kernel ``name`` (``None``: it did not fit)."""
        return self.models.get(name)


#: Fit attempts of a population member (BoTorch's ``fit_gpytorch_mll`` tries 5 times): a
#: member that fails three times is rejected for the round instead of costing two more.
MEMBER_FIT_ATTEMPTS = 3


def candidate_model_config(
    candidate: KernelCandidate,
    fit_timeout: float | None = None,
    maxiter: int | None = None,
    max_attempts: int | None = None,
    lbfgs_memory: int | None = None,
) -> ModelConfig:
    """The Ax ``ModelConfig`` that builds and fits ``candidate`` (storable in Ax's JSON).

    Options left ``None`` are BoTorch's (no time limit, its iterations, its fit attempts
    and scipy's L-BFGS-B memory of 10 corrections), so that a fixed kernel is fitted as
    Ax fits its own model; kernel discovery passes its own for population members.
    """
    fit_options: dict[str, Any] = {"timeout_sec": fit_timeout, "maxiter": maxiter}
    if max_attempts is not None:
        fit_options["max_attempts"] = max_attempts
    if lbfgs_memory is not None:
        fit_options["lbfgs_memory"] = lbfgs_memory
    return ModelConfig(
        botorch_model_class=KernelDiscoveryGP,
        covar_module_class=DiscoveredKernel,
        covar_module_options={"candidate": candidate.model_dump_json()},
        mll_options={"fit_options": fit_options},
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
        label: Counted in the fits' ``fit_starts`` (:class:`~.steps.FitReport`) under this
            key (``None``: not counted).
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
    """The fit and score steps of a round of kernel discovery.

    Args:
        options: The settings it reads (the config's
            :meth:`~ax_kernel_discovery.config.KernelDiscoveryConfig.fit_options`).
        build_model: Builds and fits one kernel's GP (:class:`ModelBuilder`).
        start_rule: How a kernel without a warm start begins its fit (:data:`StartRule`;
            default: :func:`inherit_from_members` when ``options.inherit_parameters``).
    """

    def __init__(
        self,
        options: FitOptions,
        build_model: ModelBuilder,
        start_rule: StartRule | None = None,
    ) -> None:
        self.options = options
        self.build_model = build_model
        self._start_rule = start_rule

    @property
    def start_rule(self) -> StartRule | None:
        """The start rule given, else the one ``options.inherit_parameters`` asks for."""
        if self._start_rule is not None:
            return self._start_rule
        return inherit_from_members if self.options.inherit_parameters else None

    @start_rule.setter
    def start_rule(self, rule: StartRule | None) -> None:
        """Give the rule (``None``: the one ``options.inherit_parameters`` asks for)."""
        self._start_rule = rule

    def fit_all(
        self,
        cands: list[KernelCandidate],
        ctx: RoundContext,
        members: Sequence[KernelCandidate] | None = None,
        drop_slow: bool = True,
        workers: int = 1,
        plan: FitPlan = FitPlan(),
    ) -> Fits:
        """Fit and score every kernel: in full, or by successive halving.

        ``members`` are the round's kernels the start rule may inherit from (default:
        ``cands``); ``drop_slow=False`` leaves the slow-fit rule (:meth:`drop_slow_fits`)
        to the caller, which applies it over the whole round when these are a part of it.
        ``workers > 1`` fits side by side in that many worker processes where it can (a
        CPU run without a start rule), with the same fits. ``plan`` names the kernels
        fitted to convergence, whatever ``fit_maxiter`` says, and those scored at their
        last hyperparameters without a fit (:class:`FitPlan`).

        ``selection="full"`` fits every member (warm-started, ``fit_maxiter`` steps; new
        kernels 4x). ``selection="halving"`` first *screens*: a member with last round's
        hyperparameters is scored at them without refitting (a round adds a few points
        to many, so its hyperparameters barely move); a new kernel has no such state and
        is fitted exactly as full selection fits it, once. Then the ``halving_keep`` best
        screened members are refitted exactly as the full procedure refits them (from the
        same warm start, with the same number of steps) and scored again. Every finalist's
        score is thus the one full selection would give it; members that were only
        screened keep their screen hyperparameters and scores.

        Returns:
            The fitted kernels, in ``cands``' order, and the fits' report (with the
            selection, ``"full"`` or ``"halving"``, and the finalists of a halving).
        """
        models: dict[str, FittedKernel] = {}
        warm = ctx.state.warm
        halving = self.halving(ctx) and len(cands) > self.options.halving_keep
        report = FitReport(selection="halving" if halving else "full")
        warm_before = dict(warm) if halving else {}
        screened: set[str] = set()
        jobs = []
        for cand in cands:
            screen = halving and cand.name in warm
            jobs.append(
                FitSpec(
                    cand,
                    (not screen or self.options.halving_screen_maxiter > 0)
                    and cand.name not in plan.frozen,
                    self.options.halving_screen_maxiter if screen else None,
                    cand.name in plan.converge and not screen,
                )
            )
            if screen:
                screened.add(cand.name)
        round_kernels = cands if members is None else members
        fits = self._fit_jobs(jobs, ctx, members=round_kernels, workers=workers)
        for cand, one in zip(cands, fits, strict=True):
            report = report.then(one.report)
            fitted = one.get(cand.name)
            if fitted is not None:
                models[cand.name] = fitted
            else:
                screened.discard(cand.name)
        if not halving:
            return self._ended(models, report, ctx, drop_slow)
        # New kernels were fitted as in full selection: the finalist slots go to the
        # best screened members (a screen scores last round's fit, which has not seen the
        # newest batch, so under lbo_crps it trails every refitted kernel's score).
        ranked = sorted(screened, key=lambda k: models[k].score)
        finalists = ranked[: self.options.halving_keep]
        by_name = {c.name: c for c in cands}
        for name in finalists:
            warm[name] = warm_before[name]
            one = self.fit_and_score(by_name[name], ctx, converge=name in plan.converge)
            report = report.then(one.report)
            fitted = one.get(name)
            if fitted is None:
                models.pop(name)
            else:
                models[name] = fitted
        report = report.then(FitReport(finalists=len(finalists)))
        return self._ended(models, report, ctx, drop_slow)

    def _ended(
        self,
        models: dict[str, FittedKernel],
        report: FitReport,
        ctx: RoundContext,
        drop_slow: bool,
    ) -> Fits:
        """The fits of :meth:`fit_all`, after the slow-fit rule where it applies it."""
        if not drop_slow:
            return Fits(models, report=report)
        kept = self.drop_slow_fits(models, ctx)
        return Fits(kept.models, report=report.then(kept.report))

    def converge_choice(
        self,
        ctx: RoundContext,
        names: Sequence[str],
        models: dict[str, FittedKernel],
        cands: Sequence[KernelCandidate],
    ) -> FitReport:
        """``converge_chosen`` in a round that chose from its fits: fit the chosen
        members on to convergence from this round's fits (``models`` is updated; a fit
        that fails keeps the round's fit). Returns the fits' report."""
        report = FitReport()
        if not self.options.converge_chosen or self.options.fit_maxiter is None:
            return report
        by_name = {c.name: c for c in cands}
        for name in names:
            if name in by_name and name in models:
                one = self.fit_and_score(by_name[name], ctx, members=cands, converge=True)
                report = report.then(one.report)
                fitted = one.get(name)
                if fitted is not None:
                    models[name] = fitted
        return report

    def drop_slow_fits(self, models: dict[str, FittedKernel], ctx: RoundContext) -> Fits:
        """With a wall-clock cap (``fit_timeout``, opt-in): name the fits that reached it
        (the report's ``fit_capped``), and reject the kernels whose fit took more than
        ``fit_timeout`` and more than ``slow_fit_factor`` times the round's fastest fit (a
        recorded ``timeout``). Without one (the default) nothing here reads the clock.

        The limit is relative so that a problem where every fit needs the time cap (a
        large n and D on a CPU) still has kernels to choose from, while a kernel far
        slower than its peers (it also slows every acquisition step) is refused.

        Returns:
            The kept kernels (``models``, updated in place) and the rule's report.
        """
        timeout = self.options.fit_timeout
        seconds = {k: v.refit_seconds for k, v in models.items() if v.refit_seconds is not None}
        if timeout is None or not seconds:
            return Fits(models)
        capped = tuple(k for k, t in seconds.items() if t >= timeout)
        rejected: list[Rejection] = []
        limit = max(timeout, self.options.slow_fit_factor * min(seconds.values()))
        for name, elapsed in seconds.items():
            if elapsed > limit:
                models.pop(name)  # the round then drops it (and its warm start)
                rejected.append(
                    Rejection(
                        name=name,
                        stage="timeout",
                        reason=f"fit took {elapsed:.1f}s > {limit:.1f}s (fit_timeout="
                        f"{self.options.fit_timeout}s, {self.options.slow_fit_factor}x the "
                        "fastest fit)",
                    )
                )
        return Fits(models, report=FitReport(rejected=tuple(rejected), fit_capped=capped))

    def halving(self, ctx: RoundContext) -> bool:
        """Whether this round selects by successive halving (``options.selection``).

        ``auto`` halves when the outcome's last round had ``n_last`` points and this one
        adds at most ``halving_max_new_fraction * n_last``: a member's hyperparameters
        then barely move, so its score at last round's hyperparameters ranks it as a refit
        would.
        """
        if self.options.selection != "auto":
            return self.options.selection == "halving"
        last = ctx.past[-1].n if ctx.past else None
        n = ctx.n
        return last is not None and 0 <= n - last <= self.options.halving_max_new_fraction * last

    def _score_blocks(self, ctx: RoundContext, n: int) -> list[Tensor] | None:
        """The last ``score_batches`` BO batches of the outcome, as row indices, for a
        selection rule that :attr:`~ax_kernel_discovery.selection_rules.SelectionRule.scores_batches`
        (``lbo_crps``, ``prequential``).

        A batch is the rows a round's fit saw first. With the rows keyed by trial
        (:attr:`RoundContext.rows`) they are found by key, wherever they sit in Ax's
        order; otherwise by position (Ax hands the rows in trial order, so round ``r``
        added rows ``n_{r-1} .. n_r - 1``, unless trials completed out of order). The
        initial design is never a batch; before the first BO batch there is none
        (``None``: LOO-CRPS).
        """
        if not self.options.selection_rule().scores_batches:
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
            return keyed[-self.options.score_batches :] or None
        edges = sorted({r.n for r in ctx.past if r.n < n})
        edges.append(n)
        blocks = [torch.arange(a, b) for a, b in zip(edges, edges[1:], strict=False)]
        return blocks[-self.options.score_batches :] or None

    def fit_and_score(
        self,
        cand: KernelCandidate,
        ctx: RoundContext,
        refit: bool = True,
        maxiter: int | None = None,
        members: Sequence[KernelCandidate] = (),
        converge: bool = False,
    ) -> Fits:
        """Build ``cand``'s GP (warm-started), fit it unless ``refit=False``, score it.

        A cold start gets 4 times ``fit_maxiter`` steps (``maxiter`` overrides
        ``fit_maxiter``); ``refit=False`` scores the model at last round's hyperparameters
        (it needs a warm state). A kernel without a warm state starts where the start
        rule puts it (``inherit_parameters``: the fitted parameters of the ``members`` it
        contains, :mod:`.inheritance`, still with a cold start's steps). ``converge``:
        no step budget, the fit runs to convergence (the member that drives the
        acquisition under ``converge_chosen``).

        Returns:
            The fitted kernel (none: its fit failed) and the fit's report (a failed fit's
            rejection, the start rule's label).
        """
        job = self._prepare(cand, ctx, refit, maxiter, members, converge)
        watch = Stopwatch()
        try:
            model = _build_and_fit(self.build_model, ctx.dataset, ctx.search_space_digest, job)
        except Exception as e:  # noqa: BLE001 - a kernel failure is a recorded rejection
            return self._reject(cand, job, f"{type(e).__name__}: {e}", rejection_stage(e, "fit"))
        seconds = None
        if job.refit:
            seconds = ctx.timer().record(f"refit:{cand.name}", watch)
        return self._score(cand, ctx, model, job, watch, seconds)

    def _prepare(
        self,
        cand: KernelCandidate,
        ctx: RoundContext,
        refit: bool,
        maxiter: int | None,
        members: Sequence[KernelCandidate],
        converge: bool = False,
    ) -> FitJob:
        """Where ``cand``'s fit starts and how many steps it gets (see :meth:`fit_and_score`)."""
        warm = ctx.state.warm.get(cand.name) if self.options.warm_start else None
        start = None
        if warm is None and self.options.warm_start and self.start_rule is not None:
            start = self.start_rule(cand, members, ctx.state.warm, ctx.dim)
        maxiter = self.options.fit_maxiter if maxiter is None else maxiter
        if converge:
            maxiter = None
        elif maxiter is not None and warm is None and not (start and start.warm_steps):
            maxiter *= 4  # a cold start needs more iterations than a warm one
        refit = refit or warm is None
        label = None
        if start is not None:
            warm = start.parameters
            label = start.label or None
        config = candidate_model_config(
            cand,
            self.options.fit_timeout,
            maxiter,
            MEMBER_FIT_ATTEMPTS,
            self.options.fit_lbfgs_memory,
        )
        return FitJob(cand.name, config, warm, refit, label)

    def _fit_jobs(
        self,
        jobs: Sequence[FitSpec],
        ctx: RoundContext,
        members: Sequence[KernelCandidate],
        workers: int = 1,
    ) -> list[Fits]:
        """Fit and score the jobs, in ``workers`` worker processes where it can (a CPU
        run, no start rule), else one by one."""
        parallel = (
            workers > 1
            and len(jobs) > 1
            and self.start_rule is None
            and ctx.dataset.X.device.type == "cpu"
        )
        if not parallel:
            return [
                self.fit_and_score(c, ctx, refit=r, maxiter=m, members=members, converge=v)
                for c, r, m, v in jobs
            ]
        prepared = [(c, self._prepare(c, ctx, r, m, members, v), m, v) for c, r, m, v in jobs]
        pool = shared_pool(workers, user=self)
        timer = ctx.timer()
        wall = Stopwatch()
        futures = [
            pool.submit(fit_in_worker, ctx.dataset, ctx.search_space_digest, job)
            for _, job, _, _ in prepared
        ]
        out: list[Fits] = []
        for (cand, job, maxiter, converge), future in zip(prepared, futures, strict=True):
            try:
                state, seconds, error = future.result()
            except CALL_FAILURES as e:  # a broken worker: fit it here instead
                # (shared_pool starts a new pool next time if a worker died; an error that
                # is no kernel failure raised there too, and is classified here)
                logger.info("fit worker failed (%r); fitting %s in this process", e, cand.name)
                out.append(
                    self.fit_and_score(
                        cand,
                        ctx,
                        refit=job.refit,
                        maxiter=maxiter,
                        members=members,
                        converge=converge,
                    )
                )
                continue
            if error is not None or state is None:
                out.append(self._reject(cand, job, error or "no fitted state"))
                continue
            refit_seconds = None
            if job.refit:
                refit_seconds = timer.record(f"refit:{cand.name}", seconds)
            watch = Stopwatch(already=seconds)  # the worker's fit, then this rebuild
            try:  # the fitted GP, rebuilt from its exact (float64) state: no refit
                model = self.build_model(
                    ctx.dataset, ctx.search_space_digest, job.config, state, False
                )
            except Exception as e:  # noqa: BLE001 - a kernel failure is a recorded rejection
                stage = rejection_stage(e, "fit", "rebuilding a worker's fit")
                out.append(self._reject(cand, job, f"{type(e).__name__}: {e}", stage))
                continue
            # "fit:" counts the worker's fit and this rebuild, as a serial fit counts both
            out.append(self._score(cand, ctx, model, job, watch, refit_seconds))
        timer.record("parallel_fit_wall", wall)
        return out

    @staticmethod
    def _reject(cand: KernelCandidate, job: FitJob, reason: str, stage: str = "fit") -> Fits:
        """A failed fit: no kernel, and its rejection (stage ``fit``, or ``unexpected`` for
        an error that is no kernel failure,
        :func:`~ax_kernel_discovery.errors.rejection_stage`)."""
        rejection = Rejection(name=cand.name, stage=stage, reason=reason[:500])
        return Fits(report=FitReport(rejected=(rejection,), fit_starts=job.starts))

    def _score(
        self,
        cand: KernelCandidate,
        ctx: RoundContext,
        model: Model,
        job: FitJob,
        watch: Stopwatch,
        refit_seconds: float | None = None,
    ) -> Fits:
        """Score a fitted model by the selection rule's
        :meth:`~ax_kernel_discovery.selection_rules.SelectionRule.fit_score`; keep its
        parameters as the warm start (``watch``: the fit's stopwatch, its seconds to the
        end of the score are ``timings["fit:NAME"]``)."""
        try:
            with torch.no_grad():
                K, y = prior_covariance(model)
                top_k, sign = self.options.score_top_k, ctx.sign
                if top_k is not None and sign:
                    values = torch.as_tensor(model.train_targets).reshape(-1) * sign
                    K, y = best_points(K, y, values, top_k)
                covar = model.covar_module
                value = self.options.selection_rule().fit_score(
                    K,
                    y,
                    num_hyperparameters(covar),  # type: ignore[arg-type]
                    blocks=self._score_blocks(ctx, K.shape[-1]),
                )
        except Exception as e:  # noqa: BLE001 - a kernel failure is a recorded rejection
            stage = rejection_stage(e, "fit", f"scoring ({self.options.criterion})")
            return self._reject(cand, job, f"{type(e).__name__}: {e}", stage)
        if not math.isfinite(value):
            return self._reject(cand, job, f"non-finite {self.options.criterion} score")
        ctx.timer().record(f"fit:{cand.name}", watch, add=True)
        ctx.state.warm[cand.name] = warm_parameters(model)
        fitted = FittedKernel(model, job.config, value, refit_seconds)
        return Fits({cand.name: fitted}, report=FitReport(fit_starts=job.starts))


@dataclass(frozen=True)
class FitJob:
    """One kernel's fit: its Ax ``ModelConfig``, where it starts and whether it is fitted."""

    name: str
    config: ModelConfig
    warm: Mapping[str, Tensor] | None
    refit: bool
    #: The start rule's label, where it placed the start (:attr:`FitStart.label`).
    start: str | None = None

    @property
    def starts(self) -> dict[str, int]:
        """The fit's count for the report's ``fit_starts``."""
        return {self.start: 1} if self.start else {}


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

    Raises:
        Exception: An error that is no kernel failure: the call fails, and the parent
            fits the kernel in its own process, where the error is classified.
    """
    watch = Stopwatch()
    try:
        model = _build_and_fit(fresh_model_builder(), dataset, digest, job)
    except Exception as e:  # noqa: BLE001 - a kernel failure is reported as a rejection
        if not is_kernel_failure(e):
            raise
        return None, watch.elapsed(), f"{type(e).__name__}: {e}"
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return state, watch.elapsed(), None


__all__ = [
    "FitJob",
    "FitPlan",
    "FitSpec",
    "FitStart",
    "Fits",
    "FittedKernel",
    "KernelFitter",
    "ModelBuilder",
    "StartRule",
    "candidate_model_config",
    "fit_in_worker",
    "inherit_from_members",
]
