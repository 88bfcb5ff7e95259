"""The proposer interface: population formulas in, candidate kernels out.

A proposer never sees raw observations and never fits a GP: it gets the population's
formulas with their scores (:class:`~ax_kernel_discovery.population.MemberSummary`) and returns new
:class:`~ax_kernel_discovery.candidate.KernelCandidate` objects plus the rejections it
already knows about (e.g. unparsable LLM replies). Proposers do not import Ax.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ax_kernel_discovery.candidate import KernelCandidate, Rejection, decode_keys, encode_keys
from ax_kernel_discovery.population import MemberSummary

__all__ = ["Proposal", "Proposer", "SeenKeysMixin"]


@dataclass
class Proposal:
    """The result of one proposer call."""

    candidates: list[KernelCandidate] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    usage: dict[str, float] = field(default_factory=dict)


class SeenKeysMixin:
    """For proposers that never propose a kernel twice: the content keys they have seen.

    ``_seen`` holds :attr:`KernelCandidate.key` of every member and proposal seen; it is
    saved with the surrogate (8 bytes per key), so that a reloaded run proposes what an
    uninterrupted one would.
    """

    _seen: set[str]

    def state_dict(self) -> dict[str, Any]:
        return {"seen": encode_keys(self._seen)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self._seen = decode_keys(state.get("seen", ""))


class Proposer(abc.ABC):
    """Base class of kernel proposers.

    Subclasses implement :meth:`propose`. They must not raise for bad proposals:
    a failure is reported as a :class:`Rejection` in the returned :class:`Proposal`.
    """

    name: str = "proposer"

    def record_feedback(
        self,
        round_index: int,
        rejections: Sequence[Rejection],
        struck: str | None = None,
        members: Sequence[MemberSummary] = (),
    ) -> None:
        """Hear what happened to a round's proposals (rejections, the struck member).

        Called by the surrogate at the end of every round. The default ignores it;
        the LLM proposers put the last rounds' refusals into their next prompts.
        """
        return None

    def state_dict(self) -> dict[str, Any]:
        """What the proposer remembers across rounds, as JSON data (saved by the surrogate).

        The default remembers nothing.
        """
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (after a reload)."""
        return None

    def waiting(self) -> str | None:
        """What the proposer waits for right now (an LLM call), or ``None``.

        Read from another thread by progress bars while a round runs; the default
        never waits.
        """
        return None

    def close(self) -> None:
        """Release what the proposer holds (a local LLM server); the surrogate's ``close()``
        calls it. The default holds nothing."""
        return None

    @abc.abstractmethod
    def propose(
        self,
        members: Sequence[MemberSummary],
        dim: int,
        num_proposals: int,
        round_index: int,
    ) -> Proposal:
        """Propose new kernels.

        Args:
            members: Current population, best first (lower score is better).
            dim: Input dimension D of the problem.
            num_proposals: How many new candidates to return at most.
            round_index: 0-based BO round, for deterministic seeding.

        Returns:
            A :class:`Proposal` with candidates and rejections.
        """
