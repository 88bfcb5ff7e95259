"""``RoundRecord``: what one round of kernel discovery did for one outcome.

:class:`~ax_kernel_discovery.surrogate.KernelDiscoverySurrogate` appends one record per
round and outcome to its ``history`` (saved with its state); the reports, the analysis
helpers and the baselines read it.

A record is built once, at the round's end, from what the round's steps returned
(:mod:`.steps`): :meth:`RoundRecord.from_steps` is the one place that makes a round's
record; no step writes it. The one write after that is the acquisition's: the points
each batch-portfolio member generated (:meth:`RoundRecord.count_points`), which arrive
after an in-process round has ended.

The round's seconds go through one timer, the round context's
:meth:`~.state.RoundContext.timer` (a :class:`RoundTimer`, writing the timings the
record is built from), and every :class:`Stopwatch` reads one clock, :func:`clock` (``time.perf_counter``): no other module of the surrogate reads the
clock. Timings are reports, not inputs: no decision reads them under the defaults (the
opt-in ``fit_timeout`` cap is BoTorch's fit option; the slow-fit rule reads a fit's
stopwatch seconds, ``FittedKernel.refit_seconds``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pydantic import BaseModel, Field

from ax_kernel_discovery.candidate import Rejection
from ax_kernel_discovery.surrogate.steps import (
    Admitted,
    Chosen,
    Ended,
    FitReport,
    Opened,
    Proposed,
    rejections,
)


class RoundRecord(BaseModel):
    """What happened in one round for one outcome."""

    round: int
    outcome: str
    n: int
    dim: int
    chosen: str | None = None
    chosen_formula: str | None = None
    chosen_score: float | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    population: list[str] = Field(default_factory=list)
    proposed: list[str] = Field(default_factory=list)
    accepted: list[str] = Field(default_factory=list)
    rejected: list[Rejection] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)
    struck: str | None = None
    previous_improved: bool | None = None
    reset: bool = False
    population_diversity: float | None = None
    accepted_diversity: float | None = None
    #: Seconds spent in the round's steps (``propose``, ``validate``, ``heldout``,
    #: ``fit_and_score``, ``total``, ``background_*``), in each kernel's fit (``fit:NAME``;
    #: ``refit:NAME``, the L-BFGS fit alone) and in the proposer (``proposer:...``). Only
    #: seconds: counts and flags are fields of their own.
    timings: dict[str, float] = Field(default_factory=dict)
    proposer_usage: dict[str, float] = Field(default_factory=dict)
    selection: str | None = None
    #: The in-sample (fit) scores when the choice used held-out scores (``prequential``).
    fit_scores: dict[str, float] = Field(default_factory=dict)
    #: The acquisition's mixture, member name -> weight (``mixture_top_k > 1``).
    mixture: dict[str, float] = Field(default_factory=dict)
    #: Whether the round used Ax's default model (``guard_rounds``).
    guarded: bool = False
    #: LLM proposers: whether the LLM's proposals reached validation this round
    #: (``None``: no LLM proposer); when not, ``llm_failure`` says why.
    llm_used: bool | None = None
    llm_failure: str | None = None
    #: ``prequential``: the units the batch's forecasts were scored in: ``"fit"`` (the
    #: rows keyed by trial, in the units of the fit that forecast them) or
    #: ``"restandardized"`` (the older rows standardized again; no keyed rows);
    #: ``None``: no batch scored this round.
    heldout_units: str | None = None
    #: Batch portfolio (``portfolio_size > 1``): the members sharing this round's batch
    #: and their Hedge weights, how many points each generated, and the rewards of last
    #: round's members for the progress their points made.
    portfolio: dict[str, float] = Field(default_factory=dict)
    portfolio_points: dict[str, int] = Field(default_factory=dict)
    portfolio_rewards: dict[str, float] = Field(default_factory=dict)
    #: Members whose held-out forecast could not be scored this round.
    heldout_failed: list[str] = Field(default_factory=list)
    #: With a wall-clock cap (``fit_timeout``, opt-in): the kernels whose fit reached it
    #: this round (it kept their best hyperparameters so far); empty without a cap.
    fit_capped: list[str] = Field(default_factory=list)
    #: ``selection="halving"``: how many screened members were refitted as finalists.
    finalists: int | None = None
    #: Whether the proposals were asked for during the last acquisition
    #: (``overlap_proposals``).
    prefetched: bool = False
    #: Kernels whose fit started where the start rule put it, by the rule's label
    #: (``inherited``: from the members they contain).
    fit_starts: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def from_steps(
        cls,
        *,
        round: int,
        outcome: str,
        n: int,
        dim: int,
        opened: Opened,
        proposed: Proposed,
        admitted: Admitted,
        fits: FitReport,
        chosen: Chosen | None,
        ended: Ended,
        timings: Mapping[str, float],
        portfolio_points: Mapping[str, int] | None = None,
    ) -> RoundRecord:
        """The record of a round, built once from what its steps returned.

        Args:
            round: The round's index.
            outcome: The modelled outcome.
            n: The round's number of rows.
            dim: The input dimension.
            opened: What the opening found.
            proposed: What the proposer gave.
            admitted: What the admission let in.
            fits: The round's fits' reports, in the order they ran (before the end's own,
                ``ended.fits``, which follow them).
            chosen: The choice (handed on before the fits, or made at the end;
                ``None``: no kernel fitted).
            ended: What the end settled.
            timings: The round's seconds (its timer's).
            portfolio_points: The points each portfolio member generated so far.

        Returns:
            The round's record. Rejections are in the order they were made: the
            proposal's, the admission's, the fits', then the end's.
        """
        report = fits.then(ended.fits)
        choice = chosen or Chosen()
        return cls(
            round=round,
            outcome=outcome,
            n=n,
            dim=dim,
            chosen=choice.chosen,
            chosen_formula=choice.chosen_formula,
            chosen_score=choice.chosen_score,
            scores=dict(ended.scores),
            population=list(ended.population),
            proposed=proposed.names,
            accepted=list(ended.accepted),
            rejected=rejections(proposed, admitted, report, ended),
            dropped=[*opened.dropped, *ended.dropped],
            struck=opened.struck,
            previous_improved=opened.previous_improved,
            reset=opened.reset,
            population_diversity=ended.population_diversity,
            accepted_diversity=ended.accepted_diversity,
            timings=dict(timings),
            proposer_usage=dict(proposed.usage),
            selection=report.selection,
            fit_scores=dict(ended.fit_scores),
            mixture=dict(choice.mixture),
            guarded=choice.guarded,
            llm_used=proposed.llm_used,
            llm_failure=proposed.llm_failure,
            heldout_units=opened.heldout.units,
            portfolio=dict(choice.portfolio),
            portfolio_points=dict(portfolio_points or {}),
            portfolio_rewards=dict(opened.portfolio_rewards),
            heldout_failed=list(opened.heldout.failed),
            fit_capped=list(report.fit_capped),
            finalists=report.finalists,
            prefetched=proposed.prefetched,
            fit_starts=dict(report.fit_starts),
        )

    def count_points(self, name: str, count: int) -> None:
        """The acquisition's write: ``name``, a member of the round's batch portfolio,
        generated ``count`` more points (they arrive after an in-process round ended)."""
        self.portfolio_points[name] = self.portfolio_points.get(name, 0) + count


def clock() -> float:
    """The surrogate's one clock: ``time.perf_counter``, in seconds."""
    return time.perf_counter()


class Stopwatch:
    """Seconds since it started, on :func:`clock`.

    Args:
        already: Seconds counted before it started (e.g. a fit measured in a worker
            process, continued here).

    Example:
        >>> watch = Stopwatch()
        >>> watch.elapsed() >= 0.0
        True
    """

    def __init__(self, already: float = 0.0) -> None:
        self.started = clock() - already
        #: The seconds at :meth:`stop` (``None``: still running).
        self.seconds: float | None = None

    def elapsed(self) -> float:
        """The seconds since the start (once stopped: the stopped seconds)."""
        if self.seconds is not None:
            return self.seconds
        return clock() - self.started

    def stop(self) -> float:
        """Stop; returns the seconds since the start."""
        self.seconds = self.elapsed()
        return self.seconds


class RoundTimer:
    """Writes a round's seconds into its timings, what its record is built from
    (:meth:`~.state.RoundContext.timer`).

    Args:
        timings: The round's timings (updated in place).

    Example:
        >>> timings: dict[str, float] = {}
        >>> with RoundTimer(timings).phase("propose") as watch:
        ...     pass
        >>> timings["propose"] == watch.seconds
        True
    """

    def __init__(self, timings: dict[str, float]) -> None:
        self.timings = timings

    @contextmanager
    def phase(self, key: str, add: bool = False) -> Iterator[Stopwatch]:
        """Time the block as ``timings[key]`` (``add``: add to what ``key`` holds).

        Yields a :class:`Stopwatch`, stopped when the block ends (its ``seconds``); a
        block that raises records nothing.
        """
        watch = Stopwatch()
        yield watch
        self.record(key, watch.stop(), add=add)

    def record(self, key: str, seconds: float | Stopwatch, add: bool = False) -> float:
        """Write ``seconds`` (a stopwatch: its seconds so far) as ``timings[key]``
        (``add``: add them to what ``key`` holds); returns the seconds written."""
        value = seconds.elapsed() if isinstance(seconds, Stopwatch) else seconds
        timings = self.timings
        timings[key] = timings.get(key, 0.0) + value if add else value
        return value

    def update(self, timings: Mapping[str, float]) -> None:
        """Write seconds measured elsewhere (a worker's, a proposer's), key by key."""
        self.timings.update(timings)


__all__ = ["RoundRecord", "RoundTimer", "Stopwatch", "clock"]
