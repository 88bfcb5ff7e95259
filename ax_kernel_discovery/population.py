"""The kernel population: top-N by criterion, strikes, reset, and de-duplication."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import formula, leaf
from ax_kernel_discovery.kernels import LEAVES

#: The paper's start set.
START_SET: tuple[str, ...] = ("rbf", "matern52", "rq", "bock", "sl")


def base_candidate(kernel: str, origin: str = "base") -> KernelCandidate:
    """A start-set or baseline kernel as a candidate (with its textbook formula)."""
    spec = leaf(kernel)
    name = LEAVES[kernel].title or kernel
    return KernelCandidate(name=name, formula=formula(spec), origin=origin, spec=spec)  # type: ignore[arg-type]


def start_candidates() -> list[KernelCandidate]:
    """RBF, Matern-5/2 and RQ (dimension-scaled priors), BOCK and SL."""
    return [base_candidate(k) for k in START_SET]


@dataclass(frozen=True)
class MemberSummary:
    """What a proposer may know about one population member.

    Attributes:
        name: The member's name.
        formula: Its mathematical formula.
        origin: Where it came from (``start``, a proposer's name, ...).
        score: Its selection score (lower is better), ``None`` before its first fit.
        candidate: The member itself.
        criterion: The selection criterion ``score`` is under (named in LLM prompts).
    """

    name: str
    formula: str
    origin: str
    score: float | None
    candidate: KernelCandidate
    criterion: str = "loo_crps"


class HeldOut(BaseModel):
    """A member's forecast of one BO batch, made before the batch was observed.

    Attributes:
        round: The round whose fit made the forecast (the batch is that round's).
        logpdf: Per-point log predictive densities (observation noise included).
        crps: Per-point CRPS.
    """

    round: int
    logpdf: list[float]
    crps: list[float]

    def loss(self, kind: str) -> list[float]:
        """Per-point losses, lower is better: ``log`` (negative log density) or ``crps``."""
        return [-v for v in self.logpdf] if kind == "log" else list(self.crps)


class Member(BaseModel):
    """One population member and its record."""

    candidate: KernelCandidate
    score: float | None = None
    scores: list[float] = Field(default_factory=list)
    strikes: int = 0
    born: int = 0
    times_chosen: int = 0
    heldout: list[HeldOut] = Field(default_factory=list)

    def heldout_loss(self, kind: str = "log", batches: int | None = None) -> float | None:
        """Mean over the last ``batches`` held-out batches of the batch's mean loss.

        ``None`` for a member that has not forecast a batch yet.
        """
        window = self.heldout[-batches:] if batches else self.heldout
        means = [sum(h.loss(kind)) / len(h.logpdf) for h in window if h.logpdf]
        return sum(means) / len(means) if means else None

    @property
    def name(self) -> str:
        return self.candidate.name

    @property
    def formula(self) -> str:
        return self.candidate.formula

    @property
    def origin(self) -> str:
        return self.candidate.origin

    @property
    def parents(self) -> tuple[str, ...]:
        return self.candidate.parents


class Population:
    """Top-N kernels ranked by a selection criterion (lower score is better).

    Args:
        start: The start set (also what an empty population resets to).
        size: Maximum number of members kept after each round (the paper's N = 10).
        patience: Strikes before a start kernel is dropped; other kernels are dropped
            at their first strike.
        score_history: How many past scores each member keeps.
        keep: Names of members that are never dropped by a strike or by truncation
            (e.g. the plain ``RBF`` and ``Matern52``).

    Example:
        >>> pop = Population(start_candidates(), size=10)
        >>> [m.name for m in pop]
        ['RBF', 'Matern52', 'RQ', 'BOCK', 'SL']
    """

    def __init__(
        self,
        start: Sequence[KernelCandidate],
        size: int = 10,
        patience: int = 3,
        score_history: int = 20,
        keep: Sequence[str] = (),
    ) -> None:
        if not start:
            raise ValueError("a population needs a non-empty start set")
        self.start = list(start)
        self._start_keys = {c.key for c in self.start}
        self.size = size
        self.patience = patience
        self.score_history = score_history
        self.keep = tuple(keep)
        self.members: list[Member] = [Member(candidate=c) for c in self.start]
        self.resets = 0

    def __iter__(self) -> Iterator[Member]:
        return iter(self.members)

    def __len__(self) -> int:
        return len(self.members)

    def __contains__(self, name: object) -> bool:
        return any(m.name == name for m in self.members)

    def get(self, name: str) -> Member:
        for m in self.members:
            if m.name == name:
                return m
        raise KeyError(f"no member named {name!r}; members: {self.names}")

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.members]

    def has_key(self, key: str) -> bool:
        """Whether a member is built from exactly the same spec or code."""
        return any(m.candidate.key == key for m in self.members)

    def add(self, candidate: KernelCandidate, round_index: int) -> Member:
        """Add a candidate (names must be unique)."""
        if candidate.name in self:
            raise ValueError(f"population already has a member named {candidate.name!r}")
        member = Member(candidate=candidate, born=round_index)
        self.members.append(member)
        return member

    def set_score(self, name: str, value: float | None) -> None:
        """Set a member's current score (``None``: not scored yet, ranked last)."""
        member = self.get(name)
        member.score = value
        if value is not None:
            member.scores = (member.scores + [value])[-self.score_history :]

    def rank(self) -> None:
        """Sort best first (unscored last)."""
        self.members.sort(key=lambda m: (m.score is None, m.score if m.score is not None else 0.0))

    def truncate(self, protect: Sequence[str] = ()) -> list[str]:
        """Keep the best ``size`` members; returns the names dropped.

        Kept kernels (``keep``) and the names in ``protect`` (e.g. new kernels that have
        no held-out score yet) stay; the best-ranked others fill the remaining places.
        """
        self.rank()
        safe = set(self.keep) | set(protect)
        fixed = [m for m in self.members if m.name in safe]
        others = [m for m in self.members if m.name not in safe]
        room = max(self.size - len(fixed), 0)
        dropped = [m.name for m in others[room:]]
        self.members = [m for m in self.members if m.name not in dropped]
        return dropped

    def remove(self, name: str) -> None:
        self.members = [m for m in self.members if m.name != name]

    def strike(self, name: str) -> bool:
        """Record that ``name``'s batch did not improve the best value.

        Start kernels (the start set, library kernels included) are dropped after
        ``patience`` strikes, others at once; kept kernels (``keep``) never.

        Returns:
            Whether the member was dropped.
        """
        if name not in self:
            return False
        member = self.get(name)
        member.strikes += 1
        if name in self.keep:
            return False
        is_start = member.origin == "base" or member.candidate.key in self._start_keys
        if not is_start or member.strikes >= self.patience:
            self.remove(name)
            return True
        return False

    def reset_if_empty(self) -> bool:
        """Reset to the start set when every member was dropped."""
        if self.members:
            return False
        self.members = [Member(candidate=c) for c in self.start]
        self.resets += 1
        return True

    def best(self) -> Member:
        self.rank()
        return self.members[0]

    def summaries(self, criterion: str = "loo_crps") -> list[MemberSummary]:
        """What proposers may see: formulas and scores, best first, never data.

        Args:
            criterion: The selection criterion the scores are under.
        """
        self.rank()
        return [
            MemberSummary(
                name=m.name,
                formula=m.formula,
                origin=m.origin,
                score=m.score,
                candidate=m.candidate,
                criterion=criterion,
            )
            for m in self.members
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "patience": self.patience,
            "score_history": self.score_history,
            "resets": self.resets,
            "keep": list(self.keep),
            "start": [c.model_dump(mode="json") for c in self.start],
            "members": [m.model_dump(mode="json") for m in self.members],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Population:
        pop = cls(
            [KernelCandidate.model_validate(c) for c in data["start"]],
            size=data["size"],
            patience=data["patience"],
            score_history=data.get("score_history", 20),
            keep=data.get("keep", ()),
        )
        pop.members = [Member.model_validate(m) for m in data["members"]]
        pop.resets = data.get("resets", 0)
        return pop
