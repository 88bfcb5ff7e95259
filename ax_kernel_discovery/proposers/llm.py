"""The paper's two-stage LLM proposer: formulas first, then code.

Each round (Yun, Shin et al., *Automated Kernel Discovery Towards Understanding
High-dimensional Bayesian Optimization*):

1. **discovery**: one call shows the population's formulas ranked by the selection score (never
   the data) and asks for ``k`` new kernel formulas; at the same time, in another
   thread, a **composition** call asks the model to pick two complementary members
   and combine them by a sum or a product;
2. **conversion**: one call per formula turns it into a ``gpytorch.kernels.Kernel``
   subclass (all conversions of a round run concurrently);
3. optional **repair** (off by default, as in the paper): a candidate that fails
   :func:`~ax_kernel_discovery.sandbox.validate.validate_kernel_code` is sent back once with
   the failure reason.

The shared machinery (client, seeds, repair, feedback) is in
:mod:`~ax_kernel_discovery.proposers.llm_base`, the registration of ``proposer="llm"``
(:func:`~ax_kernel_discovery.proposers.from_config.two_stage_proposer`) in
:mod:`~ax_kernel_discovery.proposers.from_config`, and the structured alternative (JSON
expression trees, no conversion) in :mod:`~ax_kernel_discovery.proposers.expression_llm`.

Nothing here raises for a bad proposal: unreachable models, timeouts, empty or
garbage replies and unparsable blocks come back as
:class:`~ax_kernel_discovery.candidate.Rejection` objects (stage ``proposal``,
``parse`` or ``duplicate``). The surrogate validates every candidate again anyway.

Example:
    >>> from ax_kernel_discovery.llm.client import LLMClient
    >>> proposer = LLMProposer(LLMClient("gpt-4o"), num_formulas=3)  # doctest: +SKIP
    >>> proposal = proposer.propose(members, dim=50, num_proposals=4, round_index=0)  # doctest: +SKIP
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any, Literal

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.expression import formula as expression_formula
from ax_kernel_discovery.expression import validate_spec
from ax_kernel_discovery.llm.client import LLMClient, LLMError, LLMRequest
from ax_kernel_discovery.llm.parsing import (
    FormulaBlock,
    ParseError,
    extract_formula_blocks,
    forward_fingerprint,
)
from ax_kernel_discovery.llm.templates import (
    FUNCTION_STYLES,
    composition_messages,
    conversion_messages,
    discovery_example_formula,
    discovery_messages,
    function_conversion_messages,
)
from ax_kernel_discovery.population import MemberSummary
from ax_kernel_discovery.proposers.base import Proposal
from ax_kernel_discovery.proposers.llm_base import LLMProposerBase, PendingFormula, ProposalRound

__all__ = ["LLMProposer"]


def _norm_formula(text: str) -> str:
    text = text.lower().split("; input transform")[0]
    text = re.sub(r"^\s*k\s*\(\s*x\s*,\s*x'\s*\)\s*=", "", text)
    return re.sub(r"[\s*`]", "", text)


class LLMProposer(LLMProposerBase):
    """Two-stage LLM proposer: discovery + composition formulas, then code per formula.

    Args:
        client: See :class:`LLMProposerBase`.
        num_formulas: Formulas asked of the discovery call per round (None: as many
            as ``num_proposals`` minus the compositions).
        num_compositions: Composition calls per round (each gives one formula).
        structural_composition: Build a composition whose reply names two members
            with trusted expression trees (the start set, offline and earlier
            structural compositions) and ``sum``/``product`` directly as that tree,
            with the members' own implementations, instead of asking a conversion
            call to re-implement both parents from their formulas. Compositions of
            LLM-written members always go through conversion.
        conversion_style: ``"class"`` (the paper: the conversion call writes the whole
            Kernel class), ``"function"`` (it writes only ``PARAMETERS`` and a batched
            ``covariance(x1, x2, p)``) or ``"pair"`` (``PARAMETERS`` and
            ``covariance(x, y, p)`` for one pair of points, vectorised with
            ``torch.vmap``). In the last two,
            :func:`~ax_kernel_discovery.llm.function_kernel.build_kernel_source` writes
            the class around the function; they are meant for small local models.
        **kwargs: See :class:`LLMProposerBase` (guidance toggles, repair, seed, ...).

    Example:
        >>> proposer = LLMProposer("gpt-4o", num_formulas=3, hdbo_guidance=False)
        >>> proposer.options.hdbo_guidance
        False
    """

    name = "llm"

    def __init__(
        self,
        client: LLMClient | str | None = None,
        *,
        num_formulas: int | None = 3,
        num_compositions: int = 1,
        conversion_style: Literal["class", "function", "pair"] = "class",
        structural_composition: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(client, **kwargs)
        if conversion_style not in ("class", *FUNCTION_STYLES):
            raise ValueError(
                f"conversion_style must be 'class', 'function' or 'pair', got {conversion_style!r}"
            )
        self.num_formulas = num_formulas
        self.num_compositions = num_compositions
        self.conversion_style = conversion_style
        self.structural_composition = structural_composition

    def _propose_round(self, round_: ProposalRound) -> dict[str, float]:
        members, dim, round_index = round_.members, round_.dim, round_.round_index
        prefix, taken, proposal = round_.prefix, round_.taken, round_.proposal
        num_proposals = round_.num_proposals

        # Stage 1: discovery and composition, concurrently.
        # At least one discovery formula; compositions need two members.
        n_comp = min(self.num_compositions, num_proposals - 1) if len(members) >= 2 else 0
        room = num_proposals - n_comp
        n_disc = room if self.num_formulas is None else min(self.num_formulas, room)
        requests: list[LLMRequest] = []
        if n_disc > 0:
            requests.append(
                LLMRequest(
                    discovery_messages(
                        members, dim, n_disc, self.options, feedback=self.feedback_text()
                    ),
                    "discovery",
                    {"seed": self._seed(round_index, 0)},
                )
            )
        for j in range(n_comp):
            requests.append(
                LLMRequest(
                    composition_messages(members, dim, self.options),
                    "composition",
                    {"seed": self._seed(round_index, 1 + j)},
                )
            )
        replies = round_.client.complete_many(requests, max_workers=self.max_workers)
        round_.lap("llm_stage1_s")

        pending: list[PendingFormula] = []
        known = {_norm_formula(m.formula): m.name for m in members}
        if self.options.discovery_example:
            known[_norm_formula(discovery_example_formula())] = "the prompt's format example"
        n_seen_comp = 0
        for request, reply in zip(requests, replies, strict=True):
            if request.stage == "discovery":
                blocks = self._parse_formulas(reply, f"{prefix}_discovery", proposal)
                if len(blocks) > n_disc:
                    blocks = blocks[:n_disc]
                elif blocks and len(blocks) < n_disc:
                    proposal.rejections.append(
                        Rejection(
                            name=f"{prefix}_discovery",
                            stage="parse",
                            reason=f"discovery reply had {len(blocks)} of {n_disc} formula blocks",
                        )
                    )
                for i, block in enumerate(blocks):
                    name = self._unique(f"{prefix}_{i}", taken)
                    pending.append(PendingFormula(name, "discovery", block))
            else:
                name = self._unique(f"{prefix}_c{n_seen_comp}", taken)
                n_seen_comp += 1
                blocks = self._parse_formulas(reply, name, proposal)
                if blocks:
                    parents = self._parents(blocks[0], members)
                    pending.append(PendingFormula(name, "composition", blocks[0], parents))

        # Formulas that repeat a member or an earlier proposal need no code.
        fresh: list[PendingFormula] = []
        for p in pending:
            structural = self._structural(p, members) if self.structural_composition else None
            key = _norm_formula(structural.formula if structural else p.block.formula)
            if key in known:
                proposal.rejections.append(
                    Rejection(
                        name=p.name,
                        stage="duplicate",
                        reason=f"{'composition' if structural else 'formula'} repeats {known[key]}",
                        formula=structural.formula if structural else p.block.describe(),
                    )
                )
                continue
            known[key] = p.name
            if structural is not None:
                proposal.candidates.append(structural)  # built from the members: no code call
            else:
                fresh.append(p)

        # Stage 2: one conversion call per formula, concurrently.
        self._functions = {}

        def convert(block: FormulaBlock) -> list[dict[str, str]]:
            if self.conversion_style in FUNCTION_STYLES:
                return function_conversion_messages(
                    block, dim, self.options, style=self.conversion_style
                )
            return conversion_messages(block, dim, self.options)

        conv_requests = [
            LLMRequest(
                convert(p.block),
                "conversion",
                {"seed": self._seed(round_index, 100 + i)},
            )
            for i, p in enumerate(fresh)
        ]
        conv_replies = round_.client.complete_many(conv_requests, max_workers=self.max_workers)
        round_.lap("llm_conversion_s")
        fingerprints: dict[str, str] = {}
        for p, reply in zip(fresh, conv_replies, strict=True):
            checked = self._check_code(reply, p)
            if isinstance(checked, Rejection):
                proposal.rejections.append(checked)
                continue
            function_style = self.conversion_style in FUNCTION_STYLES
            if function_style:
                fingerprint = checked.docstring  # the function's, not the generated forward's
            else:
                fingerprint = forward_fingerprint(checked.code) or checked.code
            if fingerprint in fingerprints:
                proposal.rejections.append(
                    Rejection(
                        name=p.name,
                        stage="duplicate",
                        reason=f"same {'covariance' if function_style else 'forward'}() "
                        f"as {fingerprints[fingerprint]}",
                        formula=p.block.describe(),
                    )
                )
                continue
            fingerprints[fingerprint] = p.name
            proposal.candidates.append(
                KernelCandidate(
                    name=p.name,
                    formula=p.block.describe(),
                    origin=p.origin,
                    parents=p.parents,
                    code=checked.code,
                    class_name=checked.class_name,
                )
            )

        repair_stats = self._repair_round(round_)
        round_.lap("llm_repair_s")
        return repair_stats

    @staticmethod
    def _parse_formulas(reply: str | LLMError, name: str, proposal: Proposal) -> list[FormulaBlock]:
        if isinstance(reply, LLMError):
            proposal.rejections.append(Rejection(name=name, stage="proposal", reason=str(reply)))
            return []
        try:
            return extract_formula_blocks(reply)
        except ParseError as exc:
            proposal.rejections.append(Rejection(name=name, stage="parse", reason=str(exc)))
            return []

    @staticmethod
    def _structural(p: PendingFormula, members: Sequence[MemberSummary]) -> KernelCandidate | None:
        """The composition as a sum/product tree of its parents' specs (None: not possible)."""
        if p.origin != "composition" or len(p.parents) != 2:
            return None
        by_name = {m.name: m.candidate for m in members}
        specs = [by_name[name].spec for name in p.parents if name in by_name]
        if len(specs) != 2 or any(spec is None for spec in specs):
            return None
        op = _combination(p.block)
        if op is None:
            return None
        spec = {"op": op, "args": [copy.deepcopy(specs[0]), copy.deepcopy(specs[1])]}
        try:
            validate_spec(spec)
        except ValueError:
            return None  # too deep: let the conversion call write it
        return KernelCandidate(
            name=p.name,
            formula=expression_formula(spec),
            origin="composition",
            parents=p.parents,
            spec=spec,
        )

    @staticmethod
    def _parents(block: FormulaBlock, members: Sequence[MemberSummary]) -> tuple[str, ...]:
        """Member names the composition used: its PARENTS line, else names in its text."""
        by_lower = {m.name.lower(): m.name for m in members}
        named = [by_lower[p.lower()] for p in block.parents if p.lower() in by_lower]
        if len(named) < 2:
            text = block.raw.lower()
            for lower, original in sorted(by_lower.items(), key=lambda kv: -len(kv[0])):
                if original not in named and re.search(
                    rf"(?<![\w]){re.escape(lower)}(?![\w])", text
                ):
                    named.append(original)
        return tuple(dict.fromkeys(named))[:2]


def _combination(block: FormulaBlock) -> str | None:
    """``"sum"`` or ``"product"`` from a composition's COMBINATION line (None: unclear)."""
    text = block.combination.lower()
    is_sum = any(w in text for w in ("sum", "add", "plus", "+"))
    is_product = any(w in text for w in ("prod", "mult", "times", "*"))
    if is_sum != is_product:
        return "sum" if is_sum else "product"
    return None
