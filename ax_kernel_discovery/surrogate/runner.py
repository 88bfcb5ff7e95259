"""One round of kernel discovery, written once: open, propose, admit, fit, choose, hand on,
end.

:class:`RoundRunner` runs a round's steps in order for whichever
:class:`~ax_kernel_discovery.surrogate.executors.FitExecutor` fits it. Each step returns
a typed, frozen result (:mod:`.steps`); the runner collects them (:class:`OpenRound`) and
builds the round's record once, at its end, from them
(:meth:`~.round_record.RoundRecord.from_steps`, in :meth:`RoundRunner.end`); the seconds
go through the round's one timer (:meth:`~.state.RoundContext.timer`):

1. **open** (:meth:`~.round.RoundSteps.open` → :class:`~.steps.Opened`): strike, credit
   the portfolio, reset an empty population, score the members' forecasts of the new
   batch;
2. **propose** (:meth:`~.proposing.ProposerHost.propose` → :class:`~.steps.Proposed`)
   and **admit** (:meth:`~.round.RoundSteps.admit` → :class:`~.steps.Admitted`) new
   kernels;
3. **fit** (→ :class:`~.fitting.Fits`, each with a :class:`~.steps.FitReport`): where the
   choice is known before the fits (:meth:`~.choice.Chooser.choice_before_fits`: the
   ``prequential`` rule, and a deferred executor or ``converge_chosen`` that needs it),
   the member it takes is fitted first, here (:meth:`RoundRunner.fit_the_choice`), and
   handed on at once; the round's other kernels go to the executor;
4. **choose** and **hand on** (:meth:`~.round.RoundSteps.hand_on` → the model and
   :class:`~.steps.Chosen`): a round that needs its fits to choose waits for them,
   chooses (:meth:`~.choice.Chooser.select`) and hands the choice on;
5. **end** (:meth:`RoundRunner.end`; :meth:`~.round.RoundSteps.end` →
   :class:`~.steps.Ended`): the fits are waited for, the slow-fit rule applied over all
   of them, the population settled, the record built and kept, and the proposer told. A
   round whose executor is deferred (``background_fits``) ends when its outcome's next
   round begins, or when the state is next read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.devices import usable_cores
from ax_kernel_discovery.options import RunnerOptions
from ax_kernel_discovery.surrogate.choice import Choice, Chooser, EarlyChoice
from ax_kernel_discovery.surrogate.executors import (
    BackgroundFits,
    FitExecutor,
    InProcessFits,
    PendingFits,
    WorkerProcessFits,
)
from ax_kernel_discovery.surrogate.fitting import FitPlan, FittedKernel, KernelFitter
from ax_kernel_discovery.surrogate.proposing import ProposerHost
from ax_kernel_discovery.surrogate.round import Handed, Objectives, RoundSteps
from ax_kernel_discovery.surrogate.round_record import RoundRecord, Stopwatch
from ax_kernel_discovery.surrogate.state import RoundContext
from ax_kernel_discovery.surrogate.steps import (
    Admitted,
    Chosen,
    FitReport,
    Opened,
    Proposed,
    rejections,
)
from ax_kernel_discovery.surrogate.trial_rows import FitRows

__all__ = ["OpenRound", "RoundRunner"]

logger = logging.getLogger(__name__)


@dataclass
class OpenRound:
    """A round that has begun and not ended: what its end needs, and the results of its
    steps so far (what its record is built from).

    Attributes:
        ctx: The round.
        members: All its kernels, in the round's order (members, then new kernels).
        objectives: Ax's objectives.
        choice: The choice handed on before the fits (``None``: the round chooses from
            its fits, at its end).
        models: The kernels fitted before the hand-on (the choice, a portfolio's).
        pending: The executor's fits of the round's other kernels.
        opened: What the opening found.
        proposed: What the proposer gave.
        admitted: What the admission let in.
        fitted: The report of the fits made before the hand-on.
        chosen: The choice as handed on before the fits (``None``: not yet).
        total: The round's stopwatch (its ``total`` seconds, where it ends in
            :meth:`RoundRunner.run`).
    """

    ctx: RoundContext
    members: list[KernelCandidate]
    objectives: Objectives
    choice: Choice | None
    models: dict[str, FittedKernel]
    pending: PendingFits
    opened: Opened = field(default_factory=Opened)
    proposed: Proposed = field(default_factory=Proposed)
    admitted: Admitted = field(default_factory=Admitted)
    fitted: FitReport = field(default_factory=FitReport)
    chosen: Chosen | None = None
    total: Stopwatch | None = None


class RoundRunner:
    """Runs a round's steps in order (see the module docstring).

    Args:
        options: Its settings (:class:`~ax_kernel_discovery.options.RunnerOptions`).
        fitter: Fits and scores kernels.
        chooser: The choice step.
        steps: The steps around the fits.
        proposing: The proposer host.
        keep: Keeps a round's record once the round has ended (the surrogate's history).
    """

    def __init__(
        self,
        options: RunnerOptions,
        fitter: KernelFitter,
        chooser: Chooser,
        steps: RoundSteps,
        proposing: ProposerHost,
        keep: Callable[[RoundRecord], None],
        announce: Callable[[RoundContext, Chosen], None] = lambda ctx, chosen: None,
    ) -> None:
        self.options = options
        self.fitter = fitter
        self.chooser = chooser
        self.steps = steps
        self.proposing = proposing
        self.keep = keep
        #: Told the round's choice when it is handed on (the round's log line): before
        #: the acquisition, whether the round's fits end then or later.
        self.announce = announce
        #: The rounds that have begun and not ended, by outcome.
        self.open_rounds: dict[str, OpenRound] = {}

    # --- where the fits run --------------------------------------------------------------

    def executor(self, ctx: RoundContext, ax_builder: bool) -> FitExecutor:
        """Where this round's fits run: in the background (``background_fits``: a CPU run
        whose surrogate builds models the Ax way, ``ax_builder``, in a round fitted in full,
        without ``fit_workers``), in ``fit_workers`` worker processes, or here."""
        workers = self.options.fit_workers
        if workers > 1:
            return WorkerProcessFits(workers)
        mode = self.options.background_fits
        if (
            mode == "off"
            or ctx.dataset.X.device.type != "cpu"
            or (mode == "auto" and usable_cores() < 2)
            or not ax_builder
            or self.fitter.halving(ctx)
        ):
            return InProcessFits()
        return BackgroundFits(user=self)  # the runner holds the worker (see close)

    # --- the round ----------------------------------------------------------------------

    def run(
        self,
        ctx: RoundContext,
        objectives: Objectives,
        rows: Mapping[str, FitRows],
        ax_builder: bool,
    ) -> Handed:
        """Run one round (its end may wait for a deferred executor: :meth:`end`).

        Args:
            ctx: The round.
            objectives: Ax's objectives.
            rows: The fit's rows of every outcome (the strike rule's verdict).
            ax_builder: Whether the surrogate builds its models the Ax way (a background
                worker builds them so).

        Returns:
            The model the acquisition gets and its ``ModelConfig``.
        """
        total = Stopwatch()
        timer = ctx.timer()
        opened = self.steps.open(ctx, objectives, rows)
        proposed = self.proposing.propose(ctx)
        admitted = self.steps.admit(ctx, proposed.candidates)
        cands = [m.candidate for m in ctx.population] + list(admitted.accepted)
        executor = self.executor(ctx, ax_builder)
        deferred = isinstance(executor, BackgroundFits)
        converging = self.options.converging
        early = self.chooser.choice_before_fits(ctx) if deferred or converging else None
        fit_and_score = Stopwatch()
        first = None
        fitted = FitReport()
        if early is not None:
            first, fitted = self.fit_the_choice(ctx, cands, early, len(objectives))
        handed: Handed | None = None
        chosen: Chosen | None = None
        choice: Choice | None = None
        models: dict[str, FittedKernel] = {}
        members, rest = cands, cands
        plan = FitPlan()
        if first is not None:
            choice, models, tried = first
            handed, chosen = self.steps.hand_on(ctx, choice, models, objectives)
            self.announce(ctx, chosen)
            rest = [c for c in cands if c.name not in tried]
            assert early is not None  # the choice was fitted from its order
            plan = self.plan(early, tried, rest)
        else:
            if early is not None:  # every member the choice could take failed to fit
                members = rest = [c for c in cands if c.name not in set(early.ranked)]
            if deferred:  # the round chooses from its fits: they run here
                executor = InProcessFits()
        pending = executor.submit(self.fitter, ctx, rest, members, plan=plan)
        timer.record("fit_and_score", fit_and_score)
        self.open_rounds[ctx.outcome] = OpenRound(
            ctx,
            members,
            objectives,
            choice,
            models,
            pending,
            opened=opened,
            proposed=proposed,
            admitted=admitted,
            fitted=fitted,
            chosen=chosen,
            total=None if pending.deferred else total,
        )
        if pending.deferred:
            timer.record("total", total)  # the round ends later, at its next round
        else:
            ended = self.end(ctx.outcome)
            handed = handed or ended
        assert handed is not None  # handed on before the fits, or chosen at the end
        return handed

    def fit_the_choice(
        self,
        ctx: RoundContext,
        cands: Sequence[KernelCandidate],
        early: EarlyChoice,
        n_objectives: int,
    ) -> tuple[tuple[Choice, dict[str, FittedKernel], set[str]] | None, FitReport]:
        """Fit the member the early choice takes (the first of its order that fits) and a
        batch portfolio's ``portfolio_keep``, here; to convergence under
        ``converge_chosen``.

        Returns:
            The choice, the fitted kernels and the names tried (fitted or failed), or
            ``None`` when every member the choice could take failed to fit; and the fits'
            report (``selection="full"``).
        """
        report = FitReport(selection="full")
        by_name = {c.name: c for c in cands}
        converge = self.options.converge_chosen
        models: dict[str, FittedKernel] = {}
        choice = Choice(names=[], guarded=True) if early.guarded else None
        tried: set[str] = set()

        def fit(name: str) -> bool:
            """Fit ``name`` (tried, its report added); whether its fit succeeded."""
            nonlocal report
            tried.add(name)
            one = self.fitter.fit_and_score(by_name[name], ctx, members=cands, converge=converge)
            report = report.then(one.report)
            fitted = one.get(name)
            if fitted is not None:
                models[name] = fitted
            return fitted is not None

        portfolio = self.steps.portfolios.wanted(n_objectives)
        wanted = self.options.portfolio_size if portfolio else 1
        for name in early.ranked:
            if len(models) >= wanted:
                break
            if fit(name) and choice is None:
                choice = Choice(names=[name], counts=[1], weights=[1.0], scores=early.scores)
        if choice is None:
            return None, report
        if not choice.guarded and portfolio:
            for name in self.options.portfolio_keep:
                if name in by_name and name not in tried:
                    fit(name)
        return (choice, models, tried), report

    def plan(self, early: EarlyChoice, tried: set[str], rest: Sequence[KernelCandidate]) -> FitPlan:
        """What the round's fits of ``rest`` (after the choice's, ``tried``) do beyond
        ``fit_maxiter``, under ``converge_chosen``: the contenders, the
        ``converge_contenders`` members after the choice in the early choice's order (the
        likeliest next choices), are fitted to convergence; with
        ``refit_members="contenders"`` the others are not refitted. Nothing without."""
        if not self.options.converging:
            return FitPlan()
        after = [name for name in early.ranked if name not in tried]
        contenders = frozenset(after[: self.options.converge_contenders])
        frozen: frozenset[str] = frozenset()
        if self.options.refit_members == "contenders":
            frozen = frozenset(c.name for c in rest if c.name not in contenders)
        return FitPlan(converge=contenders, frozen=frozen)

    def end(self, outcome: str) -> Handed | None:
        """End ``outcome``'s open round; **waits** for its fits where a worker still runs
        them (an interrupt while waiting leaves the round open, to be ended at the next
        call: no round is lost). The round's record is built here, once, from its steps'
        results (:meth:`~.round_record.RoundRecord.from_steps`), and kept.

        Returns:
            The model the acquisition gets where the round chose here, from its fits
            (``None``: no round was open, or it handed its choice on before its fits).
        """
        open_round = self.open_rounds.get(outcome)
        if open_round is None:
            return None
        fits = open_round.pending.wait()
        del self.open_rounds[outcome]
        ctx, members = open_round.ctx, open_round.members
        fitted = {**open_round.models, **fits.models}
        order = [c.name for c in members if c.name in fitted]
        kept = self.fitter.drop_slow_fits({k: fitted[k] for k in order}, ctx)
        report = FitReport.of(open_round.fitted, fits.report, kept.report)
        so_far = rejections(open_round.proposed, open_round.admitted, report)
        handed, ended = self.steps.end(
            ctx,
            open_round.admitted.accepted,
            dict(kept.models),
            open_round.objectives,
            handed=open_round.choice,
            builders=fits.builders,
            on_choice=lambda names, fitted: self.fitter.converge_choice(
                ctx, names, fitted, members
            ),
            rejected=so_far,
        )
        if open_round.total is not None:  # ended where it ran: its total ends here
            ctx.timer().record("total", open_round.total)
        portfolios = self.steps.portfolios
        record = RoundRecord.from_steps(
            round=ctx.round,
            outcome=ctx.outcome,
            n=ctx.n,
            dim=ctx.dim,
            opened=open_round.opened,
            proposed=open_round.proposed,
            admitted=open_round.admitted,
            fits=report,
            chosen=open_round.chosen or ended.chosen,
            ended=ended,
            timings=ctx.timings,
            portfolio_points=portfolios.points(ctx.outcome, ctx.round),
        )
        if open_round.chosen is None:  # the round chose here, from its fits
            self.announce(ctx, ended.chosen or Chosen())  # none: every kernel failed
        portfolios.attach(record)
        self.keep(record)
        self.proposing.after_round(ctx, record)
        return handed

    def end_all(self) -> None:
        """End every open round (**waits** for their fits: see :meth:`end`)."""
        for outcome in list(self.open_rounds):
            self.end(outcome)

    def discard(self) -> None:
        """Forget the open rounds (they were cut short: see
        :meth:`~ax_kernel_discovery.KernelDiscoverySurrogate.fit`); a worker still fitting
        finishes unheard."""
        for open_round in self.open_rounds.values():
            open_round.pending.cancel()
        self.open_rounds = {}
