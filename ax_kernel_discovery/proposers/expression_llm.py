"""Structured LLM proposals: kernels as JSON expression trees, no code and no conversion.

``KernelDiscoveryConfig(proposal_format="expression")`` (the default for
``llm_model="local"``). Each round one call shows the model

* the grammar of :mod:`ax_kernel_discovery.expression` (leaf kernels and warps with
  their formulas, sums and products, the size limits),
* the population as trees with their selection scores (never the data),
* the last rounds' refusals (duplicates, invalid trees, struck kernels),

and asks for ``k`` new kernels as ``{"kernels": [{"rationale": ..., "kernel": tree}]}``.
With ``followups > 0``, a reply that leaves slots empty (trees that repeat a member,
trees outside the grammar, fewer trees than asked) gets a follow-up turn in the same
conversation: the refused trees with their reasons and a request for the missing ones
(a server with a prompt cache evaluates only the new turn).
Where the backend takes a JSON schema (the local llama.cpp server, OpenAI-compatible
servers, Ollama, hosted models litellm knows to support it), decoding is constrained
by :func:`~ax_kernel_discovery.llm.schema.proposal_schema` (unrolled to ``max_depth``,
no recursive ``$ref``, ``anyOf``), sent as ``response_format`` and therefore part of the
cache key; elsewhere the reply is parsed leniently. If a server refuses the schema
(a non-retryable error), the proposer asks again without it and stays unconstrained.

Every tree then passes the grammar's validator
(:func:`~ax_kernel_discovery.expression.validate_spec`) and the size limits before
anything is built; a tree that fails is a ``Rejection`` with stage ``grammar`` and the
validator's reason, a tree equal to a member or to an earlier tree of the round one
with stage ``duplicate``. Accepted trees are built from the package's trusted kernels,
so they are PSD by construction and need no sandbox (the surrogate still checks them
and drops functional duplicates).

Example:
    >>> proposer = ExpressionLLMProposer("gpt-4o", max_depth=3)
    >>> proposer.max_leaves
    4
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.expression import (
    ISOTROPIC_LEAVES,
    WARPS,
    Spec,
    canonical,
    depth,
    formula,
    leaves,
    short_name,
    validate_spec,
)
from ax_kernel_discovery.kernels import LEAVES
from ax_kernel_discovery.llm.client import LLMClient, LLMError, LLMRequest
from ax_kernel_discovery.llm.json_reply import parse_kernel_trees
from ax_kernel_discovery.llm.parsing import ParseError
from ax_kernel_discovery.llm.schema import (
    Decoding,
    decoding_for,
    proposal_schema,
    response_format,
    schema_dialect,
)
from ax_kernel_discovery.llm.templates import expression_followup_messages, expression_messages
from ax_kernel_discovery.population import MemberSummary
from ax_kernel_discovery.proposers.llm_base import LLMProposerBase, ProposalRound

__all__ = ["ExpressionLLMProposer", "check_tree"]

#: Completion budget of one structured call (a tree is ~40 tokens per leaf).
MAX_TOKENS = 1024


def check_tree(tree: Any, max_depth: int, max_leaves: int) -> Spec:
    """The canonical spec of a proposed tree; ``ValueError`` with the reason otherwise.

    The grammar's validator first, then the size limits of the search.
    """
    validate_spec(tree)
    spec = canonical(tree)
    if depth(spec) > max_depth:
        raise ValueError(f"tree depth {depth(spec)} exceeds the limit of {max_depth}")
    n = len(list(leaves(spec)))
    if n > max_leaves:
        raise ValueError(f"{n} leaves exceed the limit of {max_leaves}")
    return spec


class ExpressionLLMProposer(LLMProposerBase):
    """One structured LLM call per round that returns expression trees.

    Args:
        client: An :class:`~ax_kernel_discovery.llm.client.LLMClient`, a litellm model
            string (or ``"local"``), or None for ``$AXKD_LLM_MODEL``.
        max_depth: Deepest tree accepted (and the depth the schema is unrolled to).
        max_leaves: Most leaves in a tree.
        max_args: Most arguments of one sum or product.
        leaves: Leaf kernels offered (default: the whole grammar).
        warps: Warps and feature maps offered (default: all).
        decoding: ``"auto"`` (:func:`~ax_kernel_discovery.llm.schema.decoding_for` the
            model), ``"schema"`` (always send the JSON schema) or ``"none"``
            (parse-and-validate only).
        followups: Follow-up calls per round for the slots a reply left empty
            (duplicates, invalid trees, too few trees); 0: none.
        **kwargs: See :class:`~ax_kernel_discovery.proposers.llm_base.LLMProposerBase`.
    """

    name = "expression"
    origin = "discovery"

    def __init__(
        self,
        client: LLMClient | str | None = None,
        *,
        max_depth: int = 3,
        max_leaves: int = 4,
        max_args: int = 3,
        leaves: Sequence[str] | None = None,
        warps: Sequence[str] | None = None,
        decoding: Literal["auto", "schema", "none"] = "auto",
        followups: int = 0,
        **kwargs: Any,
    ) -> None:
        kwargs.pop("repair", None)  # trees are valid by construction: nothing to repair
        super().__init__(client, **kwargs)
        if decoding not in ("auto", "schema", "none"):
            raise ValueError(f"decoding must be 'auto', 'schema' or 'none', got {decoding!r}")
        self.max_depth = int(max_depth)
        self.max_leaves = int(max_leaves)
        self.max_args = int(max_args)
        self.leaves = tuple(leaves or LEAVES)
        self.warps = tuple(warps or WARPS)
        unknown = sorted(set(self.leaves) - set(LEAVES)) + sorted(set(self.warps) - set(WARPS))
        if unknown:
            raise ValueError(f"not in the grammar: {unknown}")
        self.decoding = decoding
        if int(followups) < 0:
            raise ValueError(f"followups must be >= 0, got {followups}")
        self.followups = int(followups)
        self._resolved: Decoding | None = None if decoding == "auto" else decoding
        self._model_name = client if isinstance(client, str) else None

    # ---------------------------------------------------------------- decoding
    def _decoding(self, client: LLMClient) -> Decoding:
        if self._resolved is None:
            # "local" is known from the configured name; the client then talks to an
            # openai/<alias> on loopback, which takes a schema too
            self._resolved = decoding_for(self._model_name or client.model, client.api_base)
        return self._resolved

    def schema(self, num_kernels: int, client: LLMClient | None = None) -> dict[str, Any]:
        """The JSON schema of one reply asking for ``num_kernels`` trees."""
        client = client or self._client
        model = self._model_name or (client.model if client is not None else None)
        return proposal_schema(
            num_kernels,
            self.max_depth,
            leaves=self.leaves,
            warps=self.warps,
            max_args=self.max_args,
            dialect=schema_dialect(model),
        )

    def _describe_member(self, member: MemberSummary) -> str:
        # names only: a JSON tree in the feedback is what a small model copies next
        return member.name

    # ----------------------------------------------------------------- propose
    def _propose_round(self, round_: ProposalRound) -> dict[str, float]:
        client, num_proposals = round_.client, round_.num_proposals
        messages = expression_messages(
            round_.members,
            round_.dim,
            num_proposals,
            leaves=self.leaves,
            warps=self.warps,
            isotropic=[k for k in ISOTROPIC_LEAVES if k in self.leaves],
            max_depth=self.max_depth,
            max_leaves=self.max_leaves,
            max_args=self.max_args,
            options=self.options,
            feedback=self.feedback_text(),
        )
        params = self._params(client, num_proposals, self._seed(round_.round_index, 0))
        reply = client.complete_many([LLMRequest(messages, "expression", params)])[0]
        if isinstance(reply, LLMError) and "response_format" in params and _refused_schema(reply):
            # the server does not take JSON schemas: parse-and-validate from now on
            self._resolved = "none"
            params.pop("response_format")
            reply = client.complete_many([LLMRequest(messages, "expression", params)])[0]
        round_.lap("llm_expression_s")
        refused = self._read_reply(reply, round_, num_proposals, start=0)
        stats = {"schema_constrained": float(self._resolved == "schema"), "llm_followups": 0.0}
        asked = num_proposals  # trees asked for so far this round (names continue from it)
        for call in range(1, self.followups + 1):
            missing = num_proposals - len(round_.proposal.candidates)
            if missing <= 0 or not isinstance(reply, str) or refused is None:
                break
            messages = expression_followup_messages(
                messages, reply, refused, len(round_.proposal.candidates), missing
            )
            params = self._params(client, missing, self._seed(round_.round_index, call))
            reply = client.complete_many([LLMRequest(messages, "expression_followup", params)])[0]
            round_.lap(f"llm_followup_{call}_s")
            stats["llm_followups"] += 1.0
            refused = self._read_reply(reply, round_, missing, start=asked)
            asked += missing
        return stats

    def _params(self, client: LLMClient, num_kernels: int, seed: int) -> dict[str, Any]:
        """The parameters of one structured call.

        The seed, the completion budget and, where the backend takes one, the JSON
        schema of a reply with ``num_kernels`` trees.
        """
        params: dict[str, Any] = {"seed": seed, "max_tokens": MAX_TOKENS}
        if self._decoding(client) == "schema":
            params["response_format"] = response_format(self.schema(num_kernels, client))
        return params

    def _read_reply(
        self, reply: str | LLMError, round_: ProposalRound, num_proposals: int, start: int
    ) -> list[str] | None:
        """Turn the reply's trees into candidates of ``round_.proposal``.

        Args:
            reply: The model's answer (or the call's error).
            round_: The round; its proposal gets the candidates and rejections.
            num_proposals: How many trees this call asked for.
            start: Index of the call's first tree in the round (for the names).

        Returns:
            One line per refused tree (compact notation and reason) and per missing
            tree, for a follow-up; None when the reply gave nothing to follow up on
            (an error or no JSON).
        """
        prefix, proposal = round_.prefix, round_.proposal
        if isinstance(reply, LLMError):
            proposal.rejections.append(Rejection(name=prefix, stage="proposal", reason=str(reply)))
            return None
        try:
            items = parse_kernel_trees(reply)
        except ParseError as exc:
            proposal.rejections.append(Rejection(name=prefix, stage="parse", reason=str(exc)))
            return None
        known = {m.candidate.key: m.name for m in round_.members if m.candidate.spec is not None}
        known.update((c.key, c.name) for c in proposal.candidates)
        refused: list[str] = []
        if len(items) > num_proposals:
            items = items[:num_proposals]
        elif len(items) < num_proposals:
            proposal.rejections.append(
                Rejection(
                    name=prefix,
                    stage="parse",
                    reason=f"the reply had {len(items)} of {num_proposals} kernels",
                )
            )
            refused.append(f"you gave {len(items)} of the {num_proposals} kernels asked for")
        for i, item in enumerate(items, start=start):
            base = self._unique(f"{prefix}_{i}", round_.taken)
            raw = json.dumps(item.tree, separators=(",", ":"), default=str)[:400]
            try:
                spec = check_tree(item.tree, self.max_depth, self.max_leaves)
            except ValueError as exc:
                self._described[base] = raw
                proposal.rejections.append(
                    Rejection(name=base, stage="grammar", reason=str(exc), formula=raw)
                )
                refused.append(f"{raw[:160]}: {exc}")
                continue
            text = formula(spec)
            if item.rationale:
                text = f"{text}   [idea: {item.rationale[:200]}]"
            cand = KernelCandidate(
                name=f"{base}:{short_name(spec)}",
                formula=text,
                origin="discovery",
                spec=spec,
            )
            # compact notation, not JSON: small models copy JSON trees they see last
            self._described[cand.name] = short_name(spec)
            if cand.key in known:
                self._described[base] = self._described[cand.name]
                proposal.rejections.append(
                    Rejection(
                        name=base,
                        stage="duplicate",
                        reason=f"the tree repeats {known[cand.key]}",
                        formula=self._described[cand.name],
                    )
                )
                refused.append(f"{short_name(spec)}: it repeats {known[cand.key]}")
                continue
            known[cand.key] = cand.name
            proposal.candidates.append(cand)
        return refused


def _refused_schema(error: LLMError) -> bool:
    """Whether a failed call looks like a server refusing ``response_format``."""
    if error.attempts == 0 or error.cause is None:
        return False
    text = f"{type(error.cause).__name__} {error.cause}".lower()
    return any(w in text for w in ("badrequest", "response_format", "json_schema", "unsupported"))
