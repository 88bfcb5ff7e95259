"""What each step of a round returns: typed, frozen results.

A round (:class:`~ax_kernel_discovery.surrogate.runner.RoundRunner`) runs its steps in
order and collects what each returns; at the round's end one builder,
:meth:`~.round_record.RoundRecord.from_steps`, makes the round's record from them (no
step writes the record):

========================  =============================================================
step                      result
========================  =============================================================
open                      :class:`Opened` (with the held-out scores, :class:`HeldoutScores`)
propose                   :class:`Proposed`
admit                     :class:`Admitted`
fit (every fit call)      :class:`FitReport` (in :class:`~.fitting.Fits`, with the kernels)
choose and hand on        :class:`Chosen`
end                       :class:`Ended`
========================  =============================================================

The seconds go through the round's one timer (:class:`~.round_record.RoundTimer`) into
the timings the record is built from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.population import HeldOut

__all__ = [
    "Admitted",
    "Chosen",
    "Ended",
    "FitReport",
    "HeldoutScores",
    "Opened",
    "Proposed",
    "rejections",
]


@dataclass(frozen=True)
class HeldoutScores:
    """What the held-out scorer found (``prequential``).

    Attributes:
        scores: The new forecast scores, by member.
        units: The units the batch's forecasts were scored in (``"fit"`` or
            ``"restandardized"``; ``None``: no batch was scored).
        failed: The members whose forecast could not be scored, in the population's order.
    """

    scores: Mapping[str, HeldOut] = field(default_factory=dict)
    units: str | None = None
    failed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Opened:
    """What the round's opening found (:meth:`~.round.RoundSteps.open`).

    Attributes:
        struck: Last round's choice, when its batch did not improve (``None``: not struck).
        previous_improved: Whether last round's batch improved (``None``: not judged).
        dropped: The struck member when the strike rule dropped it.
        reset: Whether an empty population was reset to the start set.
        portfolio_rewards: Last round's portfolio members' rewards for their points.
        heldout: The members' held-out forecast scores of the new batch.
    """

    struck: str | None = None
    previous_improved: bool | None = None
    dropped: tuple[str, ...] = ()
    reset: bool = False
    portfolio_rewards: Mapping[str, float] = field(default_factory=dict)
    heldout: HeldoutScores = field(default_factory=HeldoutScores)


@dataclass(frozen=True)
class Proposed:
    """What the proposer gave (:meth:`~.proposing.ProposerHost.propose`).

    Attributes:
        candidates: The proposed kernels, in the proposer's order.
        rejected: The proposal's rejections (a proposer's error, refused replies).
        usage: What the proposer spent (tokens, calls).
        llm_used: LLM proposers: whether the LLM's proposals reached validation
            (``None``: no LLM proposer).
        llm_failure: Why an LLM round gave nothing (``None``: it gave kernels).
        prefetched: Whether the proposals were asked for during the last acquisition.
    """

    candidates: tuple[KernelCandidate, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    usage: Mapping[str, float] = field(default_factory=dict)
    llm_used: bool | None = None
    llm_failure: str | None = None
    prefetched: bool = False

    @property
    def names(self) -> list[str]:
        """The proposed kernels' names."""
        return [c.name for c in self.candidates]


@dataclass(frozen=True)
class Admitted:
    """What the admission let in (:meth:`~.admission.CandidateAdmission.admit`).

    Attributes:
        accepted: The candidates that passed the checks, in the proposer's order.
        rejected: The others, each with its stage and reason.
    """

    accepted: tuple[KernelCandidate, ...] = ()
    rejected: tuple[Rejection, ...] = ()


@dataclass(frozen=True)
class FitReport:
    """What fits reported besides the fitted kernels (:class:`~.fitting.Fits`).

    Reports add up in the order the fits ran (:meth:`then`).

    Attributes:
        rejected: The kernels whose fit failed, or was too slow, in order.
        fit_starts: Kernels whose fit started where the start rule put it, by its label.
        fit_capped: The kernels whose fit reached the wall-clock cap (``fit_timeout``).
        selection: How the fits selected (``"full"`` or ``"halving"``; ``None``: not said).
        finalists: ``selection="halving"``: how many screened members were refitted.
    """

    rejected: tuple[Rejection, ...] = ()
    fit_starts: Mapping[str, int] = field(default_factory=dict)
    fit_capped: tuple[str, ...] = ()
    selection: str | None = None
    finalists: int | None = None

    def then(self, later: FitReport) -> FitReport:
        """This report followed by ``later``'s: rejections in order, start counts added,
        capped fits once each; ``later``'s selection and finalists where it says them."""
        starts = dict(self.fit_starts)
        for label, count in later.fit_starts.items():
            starts[label] = starts.get(label, 0) + count
        capped = self.fit_capped + tuple(k for k in later.fit_capped if k not in self.fit_capped)
        return FitReport(
            rejected=self.rejected + later.rejected,
            fit_starts=starts,
            fit_capped=capped,
            selection=self.selection if later.selection is None else later.selection,
            finalists=self.finalists if later.finalists is None else later.finalists,
        )

    @staticmethod
    def of(*reports: FitReport) -> FitReport:
        """The reports, one after another (:meth:`then`)."""
        out = FitReport()
        for report in reports:
            out = out.then(report)
        return out


@dataclass(frozen=True)
class Chosen:
    """The round's choice, as handed on (:meth:`~.round.RoundSteps.hand_on`).

    Attributes:
        chosen: The chosen member (``"ax_default"`` in a guard round).
        chosen_formula: Its formula (``None`` in a guard round).
        chosen_score: Its score in the choice (``None``: none).
        guarded: Whether the round handed on Ax's default model (``guard_rounds``).
        mixture: The acquisition's mixture, member name -> weight (``mixture_top_k > 1``).
        portfolio: The batch portfolio's members and Hedge weights (``portfolio_size > 1``).
    """

    chosen: str | None = None
    chosen_formula: str | None = None
    chosen_score: float | None = None
    guarded: bool = False
    mixture: Mapping[str, float] = field(default_factory=dict)
    portfolio: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Ended:
    """What the round's end settled (:meth:`~.round.RoundSteps.end`).

    Attributes:
        accepted: The new kernels that joined (their fit succeeded).
        dropped: The members that left: failed fits, then the truncation's.
        scores: The choice's scores.
        fit_scores: The in-sample (fit) scores when the choice used held-out scores.
        population: The population's names after the round.
        population_diversity: Its diversity.
        accepted_diversity: The joined kernels' diversity (``None``: fewer than two).
        rejected: Rejections made at the end (``"*"``: no kernel fitted).
        fits: What the end's own fits reported (``converge_chosen``).
        chosen: The choice when the round chose here, from its fits (``None``: it was
            handed on before the fits).
    """

    accepted: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    scores: Mapping[str, float] = field(default_factory=dict)
    fit_scores: Mapping[str, float] = field(default_factory=dict)
    population: tuple[str, ...] = ()
    population_diversity: float | None = None
    accepted_diversity: float | None = None
    rejected: tuple[Rejection, ...] = ()
    fits: FitReport = field(default_factory=FitReport)
    chosen: Chosen | None = None


def rejections(*results: Proposed | Admitted | FitReport | Ended) -> list[Rejection]:
    """The rejections of a round's step results, in the order given.

    The one place a round's rejections are put together: the end's warning when every
    kernel was rejected reads the proposal's, the admission's and the fits' so far, and
    the record (:meth:`~.round_record.RoundRecord.from_steps`) the same, then the end's.

    Args:
        results: Step results, in the order their steps ran.

    Returns:
        Their rejections, each result's in its own order.
    """
    return [rejection for result in results for rejection in result.rejected]
