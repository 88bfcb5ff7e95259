"""The proposer host: the round's proposer, its stand-in, its prefetch and its failures.

:class:`ProposerHost` is a collaborator of
:class:`~ax_kernel_discovery.surrogate.core.KernelDiscoverySurrogate` (step 2 of a round):
it builds the proposer on first use (the surrogate's ``proposer_factory``; by default the
one ``config.proposer`` names in :data:`~ax_kernel_discovery.proposers.from_config.PROPOSERS`),
asks it for a round's candidates and returns what it gave (:class:`~.steps.Proposed`). What the registry says of the
proposer decides the rest: an LLM proposer that gives nothing is logged with the reason
and the offline operator stands in (``fallback_to_offline``), and its next proposals may
be asked for while Ax optimizes the acquisition (``overlap_proposals``), hiding its
latency. A proposer that raises never breaks the BO loop: its error is a recorded
rejection. The proposers' states (their dedup keys) are saved with the surrogate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from typing import Any

from ax_kernel_discovery.candidate import Rejection
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.llm import LLMError
from ax_kernel_discovery.population import MemberSummary, Population
from ax_kernel_discovery.proposers.base import Proposal, Proposer
from ax_kernel_discovery.proposers.from_config import make_proposer, proposer_entry
from ax_kernel_discovery.surrogate.round_record import RoundRecord
from ax_kernel_discovery.surrogate.state import RoundContext
from ax_kernel_discovery.surrogate.steps import Proposed

__all__ = ["ProposerFactory", "ProposerHost"]

logger = logging.getLogger(__name__)

#: What a proposer fails with in a user's run without a warning (it is recorded and the
#: round goes on without its kernels): its LLM's errors (a provider, the network, a local
#: server) and timeouts; any other error of a proposer is recorded and logged as a warning.
PROPOSER_FAILURES: tuple[type[BaseException], ...] = (LLMError, OSError, TimeoutError)

#: Builds the proposer of a surrogate from its settings.
ProposerFactory = Callable[[KernelDiscoveryConfig], Proposer]


class ProposerHost:
    """The proposer of a surrogate and everything around it.

    Args:
        config: The surrogate's settings (``proposer``, ``proposals_per_round``,
            ``fallback_to_offline``, ``overlap_proposals``, ``llm_*``).
        factory: Builds the proposer (default:
            :func:`~ax_kernel_discovery.proposers.from_config.make_proposer`).
    """

    def __init__(self, config: KernelDiscoveryConfig, factory: ProposerFactory | None = None):
        self.config = config
        self.factory = factory or make_proposer
        self._proposer: Proposer | None = None
        #: The offline operator that stands in when an LLM round gives nothing
        #: (``fallback_to_offline``); built once, so it remembers what it proposed.
        self._fallback: Proposer | None = None
        #: Loaded proposer states (main, fallback), applied when a proposer is next used.
        self._states: dict[str, dict[str, Any] | None] = {"proposer": None, "fallback": None}
        self._prefetch: dict[tuple[str, int, int], Future[Proposal]] = {}
        self._executor: ThreadPoolExecutor | None = None

    @property
    def proposer(self) -> Proposer:
        """The proposer (built by the factory on first use)."""
        if self._proposer is None:
            self._proposer = self.factory(self.config)
        return self._proposer

    @proposer.setter
    def proposer(self, proposer: Proposer) -> None:
        self._proposer = proposer

    @property
    def fallback(self) -> Proposer:
        """The offline operator of LLM rounds that give nothing (``offline_grammar``)."""
        if self._fallback is None:
            self._fallback = make_proposer(self.config.model_copy(update={"proposer": "offline"}))
            state = self._states["fallback"]
            if state is not None:
                self._fallback.load_state_dict(state)
                self._states["fallback"] = None
        return self._fallback

    @property
    def calls_llm(self) -> bool:
        """Whether ``config.proposer`` asks an LLM (and proposes at all)."""
        return proposer_entry(self.config.proposer).calls_llm

    @property
    def needs_llm(self) -> bool:
        """Whether the rounds will call an LLM (checked before a run starts)."""
        return self.calls_llm and self.config.proposals_per_round > 0

    def propose(self, ctx: RoundContext) -> Proposed:
        """Step 2: the round's candidates, with what was rejected and spent (an LLM round
        that gives nothing says why, see the module docstring); the proposer's seconds go
        to the round's timer."""
        timer = ctx.timer()
        with timer.phase("propose"):
            proposed, timings = self._proposal(ctx.population, ctx.dim, ctx.outcome, ctx.round)
        timer.update({f"proposer:{k}": v for k, v in timings.items()})
        return proposed

    def proposal(self, pop: Population, dim: int, outcome: str, round_index: int) -> Proposed:
        """The proposal of round ``round_index`` for ``outcome``'s population (a prefetched
        one if there is one, else a fresh call), with whether an LLM's proposals were
        used, and why not."""
        return self._proposal(pop, dim, outcome, round_index)[0]

    def _proposal(
        self, pop: Population, dim: int, outcome: str, round_index: int
    ) -> tuple[Proposed, Mapping[str, float]]:
        """:meth:`proposal`, and the proposer's seconds."""
        n = self.config.proposals_per_round
        if n == 0 or not proposer_entry(self.config.proposer).proposes:
            return Proposed(), {}
        state = self._states["proposer"]
        if state is not None:  # reloaded: the proposer's dedup keys
            self.proposer.load_state_dict(state)
            self._states["proposer"] = None
        proposal = None
        was_prefetched = False
        prefetched = self._prefetch.pop((outcome, round_index, dim), None)
        if prefetched is not None:
            try:
                proposal = prefetched.result(timeout=self.config.llm_timeout * 3)
                was_prefetched = True
            except (TimeoutError, CancelledError) as e:  # fall through to a fresh call
                logger.info("prefetched proposal failed (%r); proposing again", e)
        if proposal is None:
            proposal = self._safe_propose(self._summaries(pop), dim, n, round_index)
        if not self.needs_llm:
            return self._proposed(proposal, prefetched=was_prefetched), proposal.timings
        llm_used = bool(proposal.candidates)
        fallback = self.config.fallback_to_offline and not proposal.candidates
        failure = None
        if not proposal.candidates:
            failure = llm_failure(proposal.rejections)
            logger.warning(
                "kernel discovery round %d: the LLM proposer (%s) gave no usable kernel: %s; %s",
                round_index,
                self.config.llm_model,
                failure,
                "the offline operator proposed this round's kernels instead"
                if fallback
                else "no new kernel this round (fallback_to_offline=False)",
            )
        if fallback:
            offline = self.fallback.propose(self._summaries(pop), dim, n, round_index)
            proposal.candidates.extend(offline.candidates)
            proposal.rejections.extend(offline.rejections)
        proposed = self._proposed(
            proposal, llm_used=llm_used, llm_failure=failure, prefetched=was_prefetched
        )
        return proposed, proposal.timings

    @staticmethod
    def _proposed(
        proposal: Proposal,
        llm_used: bool | None = None,
        llm_failure: str | None = None,
        prefetched: bool = False,
    ) -> Proposed:
        """The step's result of a proposer's :class:`~.proposers.base.Proposal`."""
        return Proposed(
            candidates=tuple(proposal.candidates),
            rejected=tuple(proposal.rejections),
            usage=dict(proposal.usage),
            llm_used=llm_used,
            llm_failure=llm_failure,
            prefetched=prefetched,
        )

    def _summaries(self, pop: Population) -> list[MemberSummary]:
        return pop.summaries(self.config.criterion)

    def _safe_propose(
        self, members: list[MemberSummary], dim: int, n: int, round_index: int
    ) -> Proposal:
        try:
            return self.proposer.propose(members, dim, n, round_index)
        except Exception as e:  # noqa: BLE001 - a proposer must not break the BO loop
            # a proposer is a plug-in (a user's, an LLM's client): its failure is recorded
            # (stage "proposal") and the round goes on with its members; loudly unless it
            # is an LLM's or a timeout
            if not isinstance(e, PROPOSER_FAILURES):
                logger.warning(
                    "kernel discovery round %d: the proposer %r failed (%r); no proposals",
                    round_index,
                    self.proposer.name,
                    e,
                )
            return Proposal(
                rejections=[Rejection(name=self.proposer.name, stage="proposal", reason=repr(e))]
            )

    def after_round(self, ctx: RoundContext, rec: RoundRecord) -> None:
        """What follows the population's update: the proposer's feedback from the round's
        record ``rec`` (what failed, for the next prompts) and, for an LLM, next round's
        proposals asked for now."""
        pop = ctx.population
        if self._proposer is not None:
            self._proposer.record_feedback(
                rec.round, rec.rejected, rec.struck, self._summaries(pop)
            )
        self._start_prefetch(pop, ctx.dim, ctx.outcome, rec.round + 1)

    def _start_prefetch(self, pop: Population, dim: int, outcome: str, next_round: int) -> None:
        """Ask the proposer for next round's kernels now, while Ax optimizes the acquisition.

        The proposals are made from the population as it stands after this round's
        update (next round's strike is not yet known), which hides LLM latency behind
        the acquisition optimization. The offline operator takes milliseconds: nothing
        to hide.
        """
        if not self.config.overlap_proposals or self.config.proposals_per_round == 0:
            return
        if not self.calls_llm:
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="axkd-propose")
        key = (outcome, next_round, dim)
        self._prefetch[key] = self._executor.submit(
            self._safe_propose,
            self._summaries(pop),
            dim,
            self.config.proposals_per_round,
            next_round,
        )

    def waiting(self) -> str | None:
        """What the proposer's LLM is being waited for now (``None``: nothing)."""
        return self._proposer.waiting() if self._proposer is not None else None

    def state_dict(self) -> dict[str, Any]:
        """The proposers' states as JSON data: ``proposer`` (and ``fallback_proposer``)."""
        proposer = self._states["proposer"]
        if self._proposer is not None:
            proposer = self._proposer.state_dict()
        fallback = self._states["fallback"]
        if self._fallback is not None:
            fallback = self._fallback.state_dict()
        out: dict[str, Any] = {"proposer": proposer or {}}
        if fallback:
            out["fallback_proposer"] = fallback
        return out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Keep the saved proposers' states, applied when each proposer is next used."""
        self._states = {
            "proposer": dict(state.get("proposer") or {}) or None,
            "fallback": dict(state.get("fallback_proposer") or {}) or None,
        }

    def snapshot(self) -> tuple[dict[str, Any], dict[tuple[str, int, int], Future[Proposal]]]:
        """What :meth:`restore` returns to: the proposers' states and the prefetched
        proposals (a round cut short leaves no trace)."""
        return self.state_dict(), dict(self._prefetch)

    def restore(
        self, snapshot: tuple[dict[str, Any], dict[tuple[str, int, int], Future[Proposal]]]
    ) -> None:
        """Return the proposers to a :meth:`snapshot` at once (what they have seen since
        is forgotten), with the prefetched proposals it held."""
        state, prefetch = snapshot
        self.load_state_dict(state)
        for name, proposer in (("proposer", self._proposer), ("fallback", self._fallback)):
            if proposer is not None:
                proposer.load_state_dict(self._states[name] or {})
                self._states[name] = None
        for key, future in self._prefetch.items():
            if prefetch.get(key) is not future:  # asked for by the rounds undone
                future.cancel()
        self._prefetch = dict(prefetch)

    def close(self) -> None:
        """Stop the prefetch thread and release what the proposer holds (a local LLM server)."""
        for future in self._prefetch.values():
            future.cancel()
        self._prefetch = {}
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        if self._proposer is not None:
            self._proposer.close()

    def __getstate__(self) -> dict[str, Any]:
        # Ax deep-copies surrogates: in-flight proposals and their thread stay behind
        state = self.__dict__.copy()
        state["_prefetch"] = {}
        state["_executor"] = None
        return state


def llm_failure(rejections: list[Rejection]) -> str:
    """Why an LLM round gave nothing, in one line: the call's error, else the rejections."""
    for rejection in rejections:
        if rejection.stage == "proposal":
            return rejection.reason[:300]
    if rejections:
        stages: dict[str, int] = {}
        for rejection in rejections:
            stages[rejection.stage] = stages.get(rejection.stage, 0) + 1
        counts = ", ".join(f"{k} {v}" for k, v in stages.items())
        return f"every proposal was rejected ({counts}; see the round's history)"
    return "the reply held no kernel"
