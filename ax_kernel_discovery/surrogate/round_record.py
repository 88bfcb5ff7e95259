"""``RoundRecord``: what one round of kernel discovery did for one outcome.

:class:`~ax_kernel_discovery.surrogate.KernelDiscoverySurrogate` appends one record per
round and outcome to its ``history`` (saved with its state); the reports, the analysis
helpers and the baselines read it.

The round's seconds (``RoundRecord.timings``) go through one timer,
:meth:`RoundRecord.timer` (a :class:`RoundTimer`), and every :class:`Stopwatch` reads one
clock, :func:`clock` (``time.perf_counter``): no other module of the surrogate reads the
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

    def timer(self) -> RoundTimer:
        """The timer that writes this record's ``timings``."""
        return RoundTimer(self)


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
    """Writes a round's seconds into its record's ``timings`` (:meth:`RoundRecord.timer`).

    Args:
        record: The round's record.

    Example:
        >>> rec = RoundRecord(round=0, outcome="f", n=8, dim=2)
        >>> with rec.timer().phase("propose") as watch:
        ...     pass
        >>> rec.timings["propose"] == watch.seconds
        True
    """

    def __init__(self, record: RoundRecord) -> None:
        self.rec = record

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
        timings = self.rec.timings
        timings[key] = timings.get(key, 0.0) + value if add else value
        return value

    def update(self, timings: Mapping[str, float]) -> None:
        """Write seconds measured elsewhere (a worker's, a proposer's), key by key."""
        self.rec.timings.update(timings)


__all__ = ["RoundRecord", "RoundTimer", "Stopwatch", "clock"]
