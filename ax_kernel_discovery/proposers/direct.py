"""One-stage LLM proposer: new kernel code directly from the population's formulas.

The paper's ablation of the two-stage design: a single call shows the ranked
population (formulas and selection scores, never data), the guidance sections and the code
rules, and asks for ``k`` GPyTorch kernel classes at once. The formula of each
candidate is the first line of its class docstring (the prompt asks for
``k(x, x') = ...`` there). With ``code_style="pair"`` it asks instead for ``k`` blocks
of ``PARAMETERS`` + ``covariance(x, y, p)`` (the code target of the two-stage
``"pair"`` conversion, so that the two designs can be compared on small models); the
class is generated around each function.

Example:
    >>> proposer = DirectCodeProposer("gpt-4o")  # doctest: +SKIP
    >>> proposer.propose(members, dim=50, num_proposals=3, round_index=0)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.llm.client import LLMClient, LLMError
from ax_kernel_discovery.llm.parsing import (
    CodeBlock,
    NamedFunctionReply,
    ParseError,
    extract_code_blocks,
    forward_fingerprint,
    split_function_replies,
)
from ax_kernel_discovery.llm.templates import copies_example, direct_messages
from ax_kernel_discovery.proposers.base import Proposal
from ax_kernel_discovery.proposers.llm_base import LLMProposerBase, ProposalRound

__all__ = ["DirectCodeProposer"]

#: One kernel read from a reply: its code, formula and fingerprint (for duplicates).
_Read = tuple[CodeBlock, str, str | None]


class DirectCodeProposer(LLMProposerBase):
    """One LLM call per round that writes the code of new kernels directly.

    Args:
        client: An :class:`~ax_kernel_discovery.llm.client.LLMClient`, a litellm model
            string (or ``"local"``), or None for ``$AXKD_LLM_MODEL``.
        num_kernels: Kernels asked for per call (None: ``num_proposals``).
        code_style: ``"class"`` (whole Kernel classes, the paper's ablation) or
            ``"pair"`` (``PARAMETERS`` + ``covariance(x, y, p)`` per kernel).
        **kwargs: See :class:`~ax_kernel_discovery.proposers.llm_base.LLMProposerBase`
            (guidance toggles, repair, seed, name prefix, ...).

    Example:
        >>> DirectCodeProposer("gpt-4o", num_kernels=2).name_prefix
        'direct'
    """

    name = "direct"

    def __init__(
        self,
        client: LLMClient | str | None = None,
        *,
        num_kernels: int | None = None,
        code_style: Literal["class", "pair"] = "class",
        **kwargs: Any,
    ) -> None:
        super().__init__(client, **kwargs)
        if code_style not in ("class", "pair"):
            raise ValueError(f"direct code_style must be 'class' or 'pair', got {code_style!r}")
        self.num_kernels = num_kernels
        self.code_style = code_style
        self.conversion_style = code_style  # read by the shared build and repair helpers

    def _propose_round(self, round_: ProposalRound) -> dict[str, float]:
        prefix, taken, proposal = round_.prefix, round_.taken, round_.proposal
        num_proposals = round_.num_proposals
        k = num_proposals if self.num_kernels is None else min(self.num_kernels, num_proposals)

        messages = direct_messages(
            round_.members, round_.dim, k, self.options, style=self.code_style
        )
        self._functions = {}
        reply: str | LLMError
        try:
            seed = self._seed(round_.round_index, 0)
            reply = round_.client.complete(messages, "direct", seed=seed)
        except LLMError as exc:
            reply = exc
        round_.lap("llm_stage1_s")

        if isinstance(reply, LLMError):
            proposal.rejections.append(Rejection(name=prefix, stage="proposal", reason=str(reply)))
        else:
            self._add_reply(reply, prefix, k, taken, proposal)

        repair_stats = self._repair_round(round_)
        round_.lap("llm_repair_s")
        return repair_stats

    def _add_reply(
        self, reply: str, prefix: str, k: int, taken: set[str], proposal: Proposal
    ) -> None:
        """One candidate per kernel of the reply (at most ``k``).

        A class-style reply holds Kernel classes, a pair-style reply ``covariance``
        blocks (the class is generated around each).
        """
        pair = self.code_style == "pair"
        split: Callable[[str], Sequence[CodeBlock | NamedFunctionReply]] = (
            split_function_replies if pair else extract_code_blocks
        )
        try:
            parts = split(reply)
        except ParseError as exc:
            proposal.rejections.append(Rejection(name=prefix, stage="parse", reason=str(exc)))
            return
        what = "covariance functions" if pair else "kernel classes"
        self._note_short(len(parts), k, prefix, what, proposal)
        seen: set[str] = set()
        for i, part in enumerate(parts[:k]):
            name = self._unique(f"{prefix}_{i}", taken)
            built = (
                self._read_class(part, name)
                if isinstance(part, CodeBlock)
                else self._read_function(part, name)
            )
            if isinstance(built, Rejection):
                proposal.rejections.append(built)
                continue
            block, formula, fingerprint = built
            self._add(block, name, formula, fingerprint, seen, proposal)

    def _read_class(self, block: CodeBlock, name: str) -> _Read | Rejection:
        """A Kernel class of a class-style reply, unless it copies the worked example."""
        formula = _formula_of(block.docstring, block.class_name)
        if copies_example(block.code) and self.options.conversion_example:
            return Rejection(
                name=name,
                stage="parse",
                reason="the code copies the worked example",
                formula=formula,
            )
        return block, formula, forward_fingerprint(block.code)

    def _read_function(self, part: NamedFunctionReply, name: str) -> _Read | Rejection:
        """A ``covariance`` block of a pair-style reply, built into a Kernel class."""
        formula = part.formula or f"{part.name or name} (no formula given)"
        built = self._build_from_function(part.text, part.name or name, formula, name)
        if isinstance(built, Rejection):
            return built
        return built, formula, built.docstring

    @staticmethod
    def _note_short(got: int, k: int, prefix: str, what: str, proposal: Proposal) -> None:
        if 0 < got < k:
            proposal.rejections.append(
                Rejection(
                    name=prefix, stage="parse", reason=f"direct reply had {got} of {k} {what}"
                )
            )

    @staticmethod
    def _add(
        block: CodeBlock,
        name: str,
        formula: str,
        fingerprint: str | None,
        seen: set[str],
        proposal: Proposal,
    ) -> None:
        """Append a candidate unless its code repeats another kernel of the reply."""
        key = fingerprint or block.code
        if key in seen:
            proposal.rejections.append(
                Rejection(
                    name=name,
                    stage="duplicate",
                    reason="same code as another kernel of the reply",
                    formula=formula,
                )
            )
            return
        seen.add(key)
        proposal.candidates.append(
            KernelCandidate(
                name=name,
                formula=formula,
                origin="direct",
                code=block.code,
                class_name=block.class_name,
            )
        )


def _formula_of(docstring: str, class_name: str) -> str:
    """The covariance function from a class docstring (its first non-empty line)."""
    for line in docstring.splitlines():
        if line.strip():
            return " ".join(line.split())
    return f"{class_name} (no formula given)"
