"""One-stage LLM proposer: new kernel code directly from the population's formulas.

The paper's ablation of the two-stage design: a single call shows the ranked
population (formulas and LOO-CRPS, never data), the guidance sections and the code
rules, and asks for ``k`` GPyTorch kernel classes at once. The formula of each
candidate is the first line of its class docstring (the prompt asks for
``k(x, x') = ...`` there).

Example:
    >>> proposer = DirectCodeProposer("gpt-4o")  # doctest: +SKIP
    >>> proposer.propose(members, dim=50, num_proposals=3, round_index=0)  # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.llm.client import LLMClient, LLMError
from ax_kernel_discovery.llm.parsing import ParseError, extract_code_blocks, forward_fingerprint
from ax_kernel_discovery.llm.templates import copies_example, direct_messages
from ax_kernel_discovery.proposers.base import MemberSummary, Proposal
from ax_kernel_discovery.proposers.llm import LLMProposerBase

__all__ = ["DirectCodeProposer"]


class DirectCodeProposer(LLMProposerBase):
    """One LLM call per round that writes the code of new kernels directly.

    Args:
        client: An :class:`~ax_kernel_discovery.llm.client.LLMClient`, a litellm model
            string (or ``"local"``), or None for ``$AXKD_LLM_MODEL``.
        num_kernels: Kernels asked for per call (None: ``num_proposals``).
        **kwargs: See :class:`~ax_kernel_discovery.proposers.llm.LLMProposerBase`
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
        **kwargs: Any,
    ) -> None:
        super().__init__(client, **kwargs)
        self.num_kernels = num_kernels

    def propose(
        self,
        members: Sequence[MemberSummary],
        dim: int,
        num_proposals: int,
        round_index: int,
    ) -> Proposal:
        started = time.perf_counter()
        proposal = Proposal()
        if num_proposals <= 0:
            return proposal
        client = self._client_or_rejection(round_index)
        if isinstance(client, Rejection):
            proposal.rejections.append(client)
            return proposal
        ledger_start = len(client.ledger)
        prefix = f"{self.name_prefix}_r{round_index}"
        taken = {m.name for m in members}
        k = num_proposals if self.num_kernels is None else min(self.num_kernels, num_proposals)

        messages = direct_messages(members, dim, k, self.options)
        reply: str | LLMError
        try:
            reply = client.complete(messages, "direct", seed=self._seed(round_index, 0))
        except LLMError as exc:
            reply = exc
        t_call = time.perf_counter()

        if isinstance(reply, LLMError):
            proposal.rejections.append(Rejection(name=prefix, stage="proposal", reason=str(reply)))
        else:
            try:
                blocks = extract_code_blocks(reply)
            except ParseError as exc:
                blocks = []
                proposal.rejections.append(Rejection(name=prefix, stage="parse", reason=str(exc)))
            if len(blocks) < k and blocks:
                proposal.rejections.append(
                    Rejection(
                        name=prefix,
                        stage="parse",
                        reason=f"direct reply had {len(blocks)} of {k} kernel classes",
                    )
                )
            seen: set[str] = set()
            for i, block in enumerate(blocks[:k]):
                name = self._unique(f"{prefix}_{i}", taken)
                formula = _formula_of(block.docstring, block.class_name)
                if copies_example(block.code) and self.options.conversion_example:
                    proposal.rejections.append(
                        Rejection(
                            name=name,
                            stage="parse",
                            reason="the code copies the worked example",
                            formula=formula,
                        )
                    )
                    continue
                fingerprint = forward_fingerprint(block.code) or block.code
                if fingerprint in seen:
                    proposal.rejections.append(
                        Rejection(
                            name=name,
                            stage="duplicate",
                            reason="same forward() as another kernel of the reply",
                            formula=formula,
                        )
                    )
                    continue
                seen.add(fingerprint)
                proposal.candidates.append(
                    KernelCandidate(
                        name=name,
                        formula=formula,
                        origin="direct",
                        code=block.code,
                        class_name=block.class_name,
                    )
                )

        repair_stats: dict[str, float] = {}
        if self.repair and proposal.candidates:
            proposal.candidates, repair_stats = self._repair_all(
                proposal.candidates, dim, round_index
            )
        done = time.perf_counter()
        proposal.timings = {
            "llm_stage1_s": t_call - started,
            "llm_repair_s": done - t_call,
            "total_s": done - started,
        }
        proposal.usage = {**self._usage(ledger_start), **repair_stats}
        return proposal


def _formula_of(docstring: str, class_name: str) -> str:
    """The covariance function from a class docstring (its first non-empty line)."""
    for line in docstring.splitlines():
        if line.strip():
            return " ".join(line.split())
    return f"{class_name} (no formula given)"
