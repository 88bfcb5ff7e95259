"""Machinery shared by the LLM proposers: client, naming, seeds, usage, repair, feedback.

:class:`LLMProposerBase` holds what every LLM proposer of the package needs
(the two-stage :class:`~ax_kernel_discovery.proposers.llm.LLMProposer`, the one-stage
:class:`~ax_kernel_discovery.proposers.direct.DirectCodeProposer`, the structured
:class:`~ax_kernel_discovery.proposers.expression_llm.ExpressionLLMProposer` and CAKE's
:class:`~ax_kernel_discovery.proposers.cake.CakeProposer`):

* the :class:`~ax_kernel_discovery.llm.client.LLMClient`, made on first use from a
  model string (``"local"`` starts the bundled llama.cpp server);
* per-call seeds derived from the proposer's seed, the round and the call, names
  unique within a round, and the round's usage totals from the client's ledger;
* turning a code or function reply into a checked :class:`CodeBlock` and the
  optional repair loop;
* **feedback**: the surrogate reports each round's rejections and struck kernel
  (:meth:`LLMProposerBase.record_feedback`), and :meth:`LLMProposerBase.feedback_text`
  renders the last rounds' refusals for the next discovery prompt, so that the model
  stops proposing what was just refused.
"""

from __future__ import annotations

import abc
import re
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ax_kernel_discovery.candidate import KernelCandidate, Origin, Rejection
from ax_kernel_discovery.errors import UNEXPECTED
from ax_kernel_discovery.llm.client import LLMClient, LLMError, LLMRequest
from ax_kernel_discovery.llm.factory import make_client
from ax_kernel_discovery.llm.function_kernel import build_kernel_source, kernel_class_name
from ax_kernel_discovery.llm.parsing import (
    CodeBlock,
    FormulaBlock,
    FunctionBlock,
    ParseError,
    extract_code_block,
    extract_function_block,
)
from ax_kernel_discovery.llm.templates import (
    FUNCTION_STYLES,
    PromptOptions,
    copies_example,
    copies_function_example,
    function_repair_messages,
    repair_messages,
)
from ax_kernel_discovery.population import MemberSummary
from ax_kernel_discovery.proposers.base import Proposal, Proposer
from ax_kernel_discovery.sandbox.validate import validate_kernel_code

__all__ = ["FeedbackItem", "LLMProposerBase", "PendingFormula", "ProposalRound"]

#: Rejection stages that say nothing about the kernel itself (not shown as feedback).
_NOT_ABOUT_THE_KERNEL = frozenset({"proposal", "timeout", UNEXPECTED})


@dataclass(frozen=True)
class FeedbackItem:
    """One refusal the next prompts should mention."""

    round: int
    what: str
    stage: str
    reason: str


@dataclass
class PendingFormula:
    """A formula waiting for its code."""

    name: str
    origin: Origin
    block: FormulaBlock
    parents: tuple[str, ...] = ()


@dataclass
class ProposalRound:
    """One round's proposal call, as :meth:`LLMProposerBase.propose` hands it to the hook.

    Attributes:
        members: Current population, best first.
        dim: Input dimension D of the problem.
        num_proposals: How many new candidates to return at most.
        round_index: 0-based BO round.
        client: The LLM client of the round.
        prefix: Name prefix of the round's candidates (``{name_prefix}_r{round}``).
        taken: Names already used this round (members' and proposals').
        proposal: The proposal being filled in.
        started: ``time.perf_counter()`` when the round began.
        timings: Stage durations recorded by :meth:`lap`, in order.
    """

    members: Sequence[MemberSummary]
    dim: int
    num_proposals: int
    round_index: int
    client: LLMClient
    prefix: str
    taken: set[str]
    proposal: Proposal
    started: float
    timings: dict[str, float] = field(default_factory=dict)
    _last: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._last = self.started

    def lap(self, stage: str) -> None:
        """Record the time since the previous lap (or the start) as ``timings[stage]``."""
        now = time.perf_counter()
        self.timings[stage] = now - self._last
        self._last = now


class LLMProposerBase(Proposer):
    """Shared machinery of the LLM proposers: client, naming, seeds, usage and repair.

    Args:
        client: An :class:`~ax_kernel_discovery.llm.client.LLMClient`, a litellm model
            string (or ``"local"``), or None for ``$AXKD_LLM_MODEL``. A string is turned
            into a client on first use with ``client_kwargs``.
        hdbo_guidance: Include the high-dimensional BO guidance (paper ablation).
        psd_guidance: Include the PSD construction guidance (paper ablation).
        simplicity_guidance: Include the simplicity guidance.
        conversion_example: Show the worked formula -> code example.
        discovery_example: Show a filled-in formula block in the discovery prompt.
        repair: Validate each candidate and send a failure back to the LLM once.
        validation_options: Options of :func:`validate_kernel_code` for the repair loop.
        seed: Base seed; each call's seed derives from it, the round and the call.
        name_prefix: Candidate names are ``{prefix}_r{round}_{i}`` (``..._c{j}``
            for compositions).
        max_workers: Concurrent LLM calls.
        client_kwargs: :class:`LLMClient` arguments when ``client`` is a string.
        feedback_rounds: Rounds of rejections and strikes the discovery prompt
            mentions (0: none).
    """

    name = "llm"
    origin: Origin = "discovery"
    #: What conversion (or direct) calls write: ``"class"`` or one of FUNCTION_STYLES.
    conversion_style: str = "class"

    def __init__(
        self,
        client: LLMClient | str | None = None,
        *,
        hdbo_guidance: bool = True,
        psd_guidance: bool = True,
        simplicity_guidance: bool = True,
        conversion_example: bool = True,
        discovery_example: bool = False,
        repair: bool = False,
        validation_options: dict[str, Any] | None = None,
        seed: int = 0,
        name_prefix: str | None = None,
        max_workers: int = 4,
        client_kwargs: dict[str, Any] | None = None,
        feedback_rounds: int = 3,
    ) -> None:
        self._client = client if isinstance(client, LLMClient) else None
        self._model = None if isinstance(client, LLMClient) else client
        self._owns_client = not isinstance(client, LLMClient)
        self._client_kwargs = dict(client_kwargs or {})
        self.options = PromptOptions(
            hdbo_guidance=hdbo_guidance,
            psd_guidance=psd_guidance,
            simplicity_guidance=simplicity_guidance,
            conversion_example=conversion_example,
            discovery_example=discovery_example,
        )
        self.repair = repair
        self._functions: dict[str, FunctionBlock] = {}
        self.validation_options = dict(validation_options or {})
        self.seed = seed
        self.name_prefix = name_prefix or self.name
        self.max_workers = max_workers
        self.feedback_rounds = int(feedback_rounds)
        self._feedback: deque[list[FeedbackItem]] = deque(maxlen=max(1, self.feedback_rounds))
        #: How each of this proposer's candidates reads in feedback, by candidate name.
        self._described: dict[str, str] = {}

    @property
    def client(self) -> LLMClient:
        """The LLM client (created on first use when given as a model string)."""
        if self._client is None:
            self._client = make_client(self._model, **self._client_kwargs)
        return self._client

    def waiting(self) -> str | None:
        """The LLM call waited for now (model, stage, seconds), or ``None``."""
        client = self._client
        return client.waiting() if client is not None else None

    def close(self) -> None:
        """Stop a local model server this proposer started.

        A client the proposer made itself is dropped too (the next call makes a new one);
        a client passed in stays, minus any server it owned.
        """
        if self._client is not None:
            self._client.close()
            if getattr(self, "_owns_client", True):
                self._client = None

    # -------------------------------------------------------------- feedback
    def record_feedback(
        self,
        round_index: int,
        rejections: Sequence[Rejection],
        struck: str | None = None,
        members: Sequence[MemberSummary] = (),
    ) -> None:
        """Remember a round's refusals for the next prompts (called by the surrogate).

        Args:
            round_index: The round the rejections belong to.
            rejections: Every rejection of the round (the proposer's and the
                validator's); failures that say nothing about a kernel (an unreachable
                model, a fit timeout) are left out.
            struck: The member struck this round (its batch did not improve the best
                value), if any.
            members: The population, to describe the struck member.
        """
        if self.feedback_rounds <= 0:
            return
        formulas = {m.name: self._describe_member(m) for m in members}
        items: list[FeedbackItem] = []
        for r in rejections:
            if r.stage in _NOT_ABOUT_THE_KERNEL or r.name == "*":
                continue
            what = self._described.get(r.name) or r.formula or r.name
            items.append(FeedbackItem(round_index, _one_line(what, 240), r.stage, r.reason))
        if struck:
            items.append(
                FeedbackItem(
                    round_index,
                    _one_line(formulas.get(struck, struck), 240),
                    "struck",
                    "it was chosen, but its batch did not improve the best value",
                )
            )
        self._feedback.append(items)

    def _describe_member(self, member: MemberSummary) -> str:
        """How a member reads in feedback (subclasses show expression trees)."""
        return f"{member.name}: {member.formula}"

    def feedback_text(self, max_items: int = 12) -> str:
        """The last rounds' refusals as a prompt section (empty when there are none)."""
        if self.feedback_rounds <= 0:
            return ""
        items = [item for rnd in self._feedback for item in rnd][-max_items:]
        if not items:
            return ""
        lines = [
            f"- round {it.round}, {it.stage}: {it.what} -- {_one_line(it.reason, 160)}"
            for it in items
        ]
        return (
            "Recently refused kernels (do not propose them, or anything equivalent, again):\n"
            + "\n".join(lines)
            + "\n\n"
        )

    # --------------------------------------------------------------- helpers
    def _seed(self, round_index: int, call: int) -> int:
        return (self.seed * 1_000_003 + round_index * 10_007 + call) % (2**31 - 1)

    @staticmethod
    def _unique(name: str, taken: set[str]) -> str:
        out, k = name, 1
        while out in taken:
            k += 1
            out = f"{name}_{k}"
        taken.add(out)
        return out

    def _usage(self, start: int) -> dict[str, float]:
        records = self.client.ledger[start:]
        return {
            "llm_calls": float(len(records)),
            "llm_failed_calls": float(sum(not r.ok for r in records)),
            "llm_cached_calls": float(sum(r.cached for r in records)),
            "prompt_tokens": float(sum(r.prompt_tokens for r in records)),
            "completion_tokens": float(sum(r.completion_tokens for r in records)),
            "cost_usd": float(sum(r.cost_usd for r in records)),
            "llm_latency_s": float(sum(r.latency_s for r in records)),
        }

    def _client_or_rejection(self, round_index: int) -> LLMClient | Rejection:
        try:
            return self.client
        except Exception as exc:  # noqa: BLE001 - no model configured, local server failed
            return Rejection(
                name=f"{self.name_prefix}_r{round_index}",
                stage="proposal",
                reason=f"no LLM client: {type(exc).__name__}: {exc}",
            )

    def _begin(
        self,
        members: Sequence[MemberSummary],
        num_proposals: int,
        round_index: int,
        proposal: Proposal,
    ) -> tuple[LLMClient, int, str, set[str]] | None:
        """``(client, ledger start, name prefix, names taken)`` for a round's proposals.

        None when there is nothing to ask, or no client (then a ``proposal`` rejection is
        recorded in ``proposal``).
        """
        if num_proposals <= 0:
            return None
        client = self._client_or_rejection(round_index)
        if isinstance(client, Rejection):
            proposal.rejections.append(client)
            return None
        prefix = f"{self.name_prefix}_r{round_index}"
        return client, len(client.ledger), prefix, {m.name for m in members}

    def propose(
        self,
        members: Sequence[MemberSummary],
        dim: int,
        num_proposals: int,
        round_index: int,
    ) -> Proposal:
        """Propose new kernels (see :meth:`Proposer.propose`) around :meth:`_propose_round`.

        Returns an empty proposal when nothing is asked for, and one with a ``proposal``
        rejection when there is no client. Otherwise the subclass's hook fills the
        proposal; its stage timings are followed by ``total_s``, and the round's usage
        from the client's ledger by the hook's own counters.
        """
        started = time.perf_counter()
        proposal = Proposal()
        begun = self._begin(members, num_proposals, round_index, proposal)
        if begun is None:
            return proposal
        client, ledger_start, prefix, taken = begun
        round_ = ProposalRound(
            members, dim, num_proposals, round_index, client, prefix, taken, proposal, started
        )
        usage = self._propose_round(round_)
        proposal.timings = {**round_.timings, "total_s": time.perf_counter() - started}
        proposal.usage = {**self._usage(ledger_start), **usage}
        return proposal

    @abc.abstractmethod
    def _propose_round(self, round_: ProposalRound) -> dict[str, float]:
        """Ask the LLM and fill ``round_.proposal``; record stages with ``round_.lap``.

        Returns:
            Usage counters of the subclass, added to the ledger's (e.g. repair stats).
        """

    def _repair_round(self, round_: ProposalRound) -> dict[str, float]:
        """With ``repair`` on, validate the round's candidates and repair failures once.

        Returns:
            The repair counters (empty when nothing was repaired).
        """
        proposal = round_.proposal
        if not (self.repair and proposal.candidates):
            return {}
        proposal.candidates, stats = self._repair_all(
            proposal.candidates, round_.dim, round_.round_index
        )
        return stats

    def _check_code(self, reply: str | LLMError, pending: PendingFormula) -> CodeBlock | Rejection:
        formula = pending.block.describe()
        if isinstance(reply, LLMError):
            return Rejection(
                name=pending.name, stage="proposal", reason=f"{reply}", formula=formula
            )
        if self.conversion_style in FUNCTION_STYLES:
            return self._build_from_function(reply, pending.block.name, formula, pending.name)
        try:
            block = extract_code_block(reply)
        except ParseError as exc:
            return Rejection(name=pending.name, stage="parse", reason=str(exc), formula=formula)
        if self.options.conversion_example and copies_example(block.code):
            return Rejection(
                name=pending.name,
                stage="parse",
                reason="the code copies the worked example instead of implementing the formula",
                formula=formula,
            )
        return block

    def _build_from_function(
        self, reply: str, kernel_name: str, formula: str, name: str
    ) -> CodeBlock | Rejection:
        """Function-style reply -> generated Kernel class source (or a parse rejection).

        The returned :class:`CodeBlock`'s ``docstring`` holds the function fingerprint
        (used for the duplicate check instead of the generated ``forward``).
        """
        try:
            func = extract_function_block(reply)
        except ParseError as exc:
            return Rejection(name=name, stage="parse", reason=str(exc), formula=formula)
        if self.options.conversion_example and copies_function_example(func.fingerprint):
            return Rejection(
                name=name,
                stage="parse",
                reason="the code copies a worked example instead of implementing the formula",
                formula=formula,
            )
        class_name = kernel_class_name(kernel_name, _defined_names(func))
        try:
            code = build_kernel_source(
                func.parameters,
                func.source,
                class_name,
                formula,
                pairwise=self.conversion_style == "pair",
            )
        except ValueError as exc:
            return Rejection(name=name, stage="parse", reason=str(exc), formula=formula)
        self._functions[name] = func
        return CodeBlock(code=code, class_name=class_name, docstring=func.fingerprint)

    def _repair_all(
        self, candidates: list[KernelCandidate], dim: int, round_index: int
    ) -> tuple[list[KernelCandidate], dict[str, float]]:
        """Validate each candidate; send failures back once. Returns the new list."""
        options = {"fit_timeout": 30.0, **self.validation_options}
        results = [
            validate_kernel_code(c.code or "", dim, c.class_name, **options) for c in candidates
        ]
        failed = [(i, r) for i, r in enumerate(results) if not r.ok]
        stats = {"repair_attempted": float(len(failed)), "repair_succeeded": 0.0}
        if not failed:
            return candidates, stats
        requests = [
            LLMRequest(
                self._repair_request(candidates[i], r.reason or "unknown failure", r.stage, dim),
                "repair",
                {"seed": self._seed(round_index, 300 + i)},
            )
            for i, r in failed
        ]
        replies = self.client.complete_many(requests, max_workers=self.max_workers)
        out = list(candidates)
        for (i, _), reply in zip(failed, replies, strict=True):
            if isinstance(reply, LLMError):
                continue  # keep the original; the surrogate will reject it with the reason
            old = candidates[i]
            if old.name in self._functions:
                built = self._build_from_function(
                    reply, old.class_name or old.name, old.formula or "", old.name
                )
                if isinstance(built, Rejection):
                    continue
                block = built
            else:
                try:
                    block = extract_code_block(reply)
                except ParseError:
                    continue
            out[i] = KernelCandidate(
                name=old.name,
                formula=old.formula,
                origin="repair",
                parents=old.parents,
                code=block.code,
                class_name=block.class_name,
            )
            stats["repair_succeeded"] += 1.0
        return out, stats

    def _repair_request(
        self, candidate: KernelCandidate, reason: str, stage: str | None, dim: int
    ) -> list[dict[str, str]]:
        func = self._functions.get(candidate.name)
        if func is not None:
            params = ", ".join(f'"{k}": "{v}"' for k, v in func.parameters.items())
            code = f"PARAMETERS = {{{params}}}\n\n\n{func.source}"
            return function_repair_messages(
                code,
                reason,
                formula=candidate.formula or "",
                dim=dim,
                stage=stage or "validation",
                style=self.conversion_style,
            )
        return repair_messages(
            candidate.code or "",
            reason,
            formula=candidate.formula,
            dim=dim,
            stage=stage or "validation",
            class_name=candidate.class_name or "the same",
        )


def _defined_names(func: FunctionBlock) -> set[str]:
    """Top-level names the function source defines (the class name must avoid them)."""
    pattern = r"^(?:def|class)\s+(\w+)|^(\w+)\s*="
    return {m.group(1) or m.group(2) for m in re.finditer(pattern, func.source, re.MULTILINE)}


def _one_line(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
