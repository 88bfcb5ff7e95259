"""``RoundRecord``: what one round of kernel discovery did for one outcome.

:class:`~ax_kernel_discovery.surrogate.KernelDiscoverySurrogate` appends one record per
round and outcome to its ``history`` (saved with its state); the reports, the analysis
helpers and the baselines read it.
"""

from __future__ import annotations

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


__all__ = ["RoundRecord"]
