"""CAKE (Context-Aware Kernel Evolution) as a proposer: an LLM composes base kernels.

The baseline "CAKE" of the paper's Table 1 (Suwandi et al., 2025, *Adaptive Kernel
Design for Bayesian Optimization Is a Piece of CAKE with LLMs*): a genetic search over
compositional kernels in which the LLM performs crossover and mutation. Each round one
call shows the model

* a **truncated view of the observations** (the most recent ``max_rows`` points, their
  first ``max_dims`` coordinates, standardized ``y``), as the paper's CAKE runs did,
* the population as expressions over the base kernels ``SE``, ``PER``, ``LIN``,
  ``RQ``, ``M32``, ``M52`` with their fitness (BIC),
* the last rounds' refusals,

and asks for ``k`` new kernels as expressions with ``+``, ``*`` and parentheses, using
at most ``max_base_kernels`` base kernels (depth 3 in Duvenaud et al.'s sense, as the
compositional baseline). Replies are JSON (constrained by a schema where the backend
takes one); each expression is parsed by :func:`parse_cake_expression` and checked by
the grammar's validator. Unlike the kernel-discovery proposers, CAKE sees data: that is
its design.

Reference:
    R. Suwandi, F. Pahlevan, D. Kusumastuti, R. Kurniawan, L. Nugroho, et al.
    Adaptive Kernel Design for Bayesian Optimization Is a Piece of CAKE with LLMs.
    NeurIPS 2025.
"""

from __future__ import annotations

import re
from typing import Any

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.expression import Spec, canonical, leaves, short_name, validate_spec
from ax_kernel_discovery.expression import formula as spec_formula
from ax_kernel_discovery.llm.client import LLMClient, LLMError, LLMRequest
from ax_kernel_discovery.llm.json_reply import json_values
from ax_kernel_discovery.llm.schema import decoding_for, response_format
from ax_kernel_discovery.llm.templates import chat_messages, ranked_members, render_prompt
from ax_kernel_discovery.population import MemberSummary
from ax_kernel_discovery.proposers.llm_base import LLMProposerBase, ProposalRound

__all__ = [
    "CAKE_BASE_KERNELS",
    "CakeProposer",
    "cake_expression",
    "cake_start_candidates",
    "parse_cake_expression",
]

#: CAKE's base kernels and the grammar leaves that implement them.
CAKE_BASE_KERNELS: dict[str, str] = {
    "SE": "rbf",
    "PER": "periodic",
    "LIN": "linear",
    "RQ": "rq",
    "M32": "matern32",
    "M52": "matern52",
}
_LEAF_TO_CAKE = {v: k for k, v in CAKE_BASE_KERNELS.items()}
_ALIASES = {"RBF": "SE", "MATERN32": "M32", "MATERN52": "M52", "PERIODIC": "PER", "LINEAR": "LIN"}
_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z][A-Za-z0-9_]*)|(?P<sym>[()+*x×]))")


def parse_cake_expression(text: str) -> Spec:
    """An expression like ``(SE + PER) * RQ`` as a canonical expression tree.

    ``*`` binds tighter than ``+``; ``x`` and ``×`` also mean a product; ``RBF``,
    ``Matern52`` and the like are read as their CAKE names. Sums and products are
    flattened (``A + B + C`` is one sum of three).

    Raises:
        ValueError: Unknown base kernel, unbalanced parentheses, or trailing text.
    """
    tokens: list[str] = []
    pos, text = 0, text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            if text[pos:].strip() == "":
                break
            raise ValueError(f"cannot read {text[pos : pos + 20]!r} in kernel expression {text!r}")
        pos = match.end()
        name, sym = match.group("name"), match.group("sym")
        if name is not None and name.lower() == "x":
            tokens.append("*")
        elif name is not None:
            key = name.upper()
            key = _ALIASES.get(key, key)
            if key not in CAKE_BASE_KERNELS:
                raise ValueError(
                    f"unknown base kernel {name!r}; use {', '.join(CAKE_BASE_KERNELS)}"
                )
            tokens.append(key)
        else:
            tokens.append("*" if sym in ("x", "×") else str(sym))
    if not tokens:
        raise ValueError("empty kernel expression")
    tree, i = _parse_sum(tokens, 0)
    if i != len(tokens):
        raise ValueError(f"unexpected {tokens[i]!r} in kernel expression {text!r}")
    validate_spec(tree)
    return canonical(tree)


def _flat(op: str, parts: list[Spec]) -> Spec:
    if len(parts) == 1:
        return parts[0]
    args: list[Spec] = []
    for p in parts:
        args.extend(p["args"] if p.get("op") == op else [p])
    return {"op": op, "args": args}


def _parse_sum(tokens: list[str], i: int) -> tuple[Spec, int]:
    parts = []
    part, i = _parse_product(tokens, i)
    parts.append(part)
    while i < len(tokens) and tokens[i] == "+":
        part, i = _parse_product(tokens, i + 1)
        parts.append(part)
    return _flat("sum", parts), i


def _parse_product(tokens: list[str], i: int) -> tuple[Spec, int]:
    parts = []
    part, i = _parse_atom(tokens, i)
    parts.append(part)
    while i < len(tokens) and tokens[i] == "*":
        part, i = _parse_atom(tokens, i + 1)
        parts.append(part)
    return _flat("product", parts), i


def _parse_atom(tokens: list[str], i: int) -> tuple[Spec, int]:
    if i >= len(tokens):
        raise ValueError("kernel expression ends early")
    token = tokens[i]
    if token == "(":
        tree, i = _parse_sum(tokens, i + 1)
        if i >= len(tokens) or tokens[i] != ")":
            raise ValueError("unbalanced parentheses in kernel expression")
        return tree, i + 1
    if token in CAKE_BASE_KERNELS:
        return {"kernel": CAKE_BASE_KERNELS[token], "warp": "identity", "ard": True}, i + 1
    raise ValueError(f"unexpected {token!r} in kernel expression")


def cake_expression(spec: Spec) -> str:
    """CAKE's notation of a tree over its base kernels, e.g. ``(SE + PER) * RQ``."""
    if "op" not in spec:
        return _LEAF_TO_CAKE.get(spec["kernel"], spec["kernel"].upper())
    if spec["op"] == "sum":
        return " + ".join(cake_expression(a) for a in spec["args"])
    return " * ".join(
        f"({cake_expression(a)})" if a.get("op") == "sum" else cake_expression(a)
        for a in spec["args"]
    )


def cake_start_candidates() -> list[KernelCandidate]:
    """CAKE's initial population: the six base kernels."""
    out = []
    for name, kernel in CAKE_BASE_KERNELS.items():
        spec = {"kernel": kernel, "warp": "identity", "ard": True}
        out.append(KernelCandidate(name=name, formula=spec_formula(spec), origin="base", spec=spec))
    return out


def _cake_schema(num_kernels: int) -> dict[str, Any]:
    item = {
        "type": "object",
        "properties": {"rationale": {"type": "string"}, "expression": {"type": "string"}},
        "required": ["rationale", "expression"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "kernels": {"type": "array", "items": item, "minItems": 1, "maxItems": num_kernels}
        },
        "required": ["kernels"],
        "additionalProperties": False,
    }


class CakeProposer(LLMProposerBase):
    """CAKE's LLM crossover and mutation over compositions of base kernels.

    Args:
        client: An :class:`~ax_kernel_discovery.llm.client.LLMClient`, a litellm model
            string (or ``"local"``), or None for ``$AXKD_LLM_MODEL``.
        max_base_kernels: Most base kernels in one expression (depth 3).
        max_rows: Observations shown in the prompt (the most recent).
        max_dims: Coordinates shown per observation (the first ones).
        **kwargs: See :class:`~ax_kernel_discovery.proposers.llm_base.LLMProposerBase`.

    Example:
        >>> p = CakeProposer("gpt-4o")
        >>> p.observe([[0.1, 0.2]], [1.5])
        >>> p.data_view()[1]
        'showing 1 of 1 observations, all 2 coordinates, y standardized'
    """

    name = "cake"
    origin = "discovery"

    def __init__(
        self,
        client: LLMClient | str | None = None,
        *,
        max_base_kernels: int = 3,
        max_rows: int = 20,
        max_dims: int = 8,
        **kwargs: Any,
    ) -> None:
        kwargs.pop("repair", None)
        super().__init__(client, **kwargs)
        self.max_base_kernels = int(max_base_kernels)
        self.max_rows = int(max_rows)
        self.max_dims = int(max_dims)
        self._X: list[list[float]] = []
        self._Y: list[float] = []
        self._model_name = client if isinstance(client, str) else None

    def observe(self, X: Any, Y: Any) -> None:
        """The observations of this round (tensors or nested lists); kept truncated."""
        rows = X.tolist() if hasattr(X, "tolist") else [list(r) for r in X]
        ys = Y.reshape(-1).tolist() if hasattr(Y, "reshape") else [float(v) for v in Y]
        self._X = [list(map(float, r)) for r in rows[-self.max_rows :]]
        self._Y = [float(v) for v in ys[-self.max_rows :]]
        self._n_total, self._dim = len(rows), len(rows[0]) if rows else 0

    def data_view(self) -> tuple[str, str]:
        """``(table, note)``: the truncated observations as text, and what was cut."""
        if not self._X:
            return "(no observations yet)", "none"
        d = min(self._dim, self.max_dims)
        lines = [
            "x = ["
            + ", ".join(f"{v:.3g}" for v in row[:d])
            + ("" if d == self._dim else ", ...")
            + f"], y = {y:.3g}"
            for row, y in zip(self._X, self._Y, strict=True)
        ]
        dims = (
            f"all {self._dim} coordinates"
            if d == self._dim
            else f"first {d} of {self._dim} coordinates"
        )
        note = f"showing {len(self._X)} of {self._n_total} observations, {dims}, y standardized"
        return "\n".join(lines), note

    def _describe_member(self, member: MemberSummary) -> str:
        spec = member.candidate.spec
        return cake_expression(spec) if spec is not None else member.name

    def _propose_round(self, round_: ProposalRound) -> dict[str, float]:
        client, num_proposals = round_.client, round_.num_proposals
        table, note = self.data_view()
        lines = []
        for i, m in enumerate(ranked_members(round_.members, self.options.max_members), 1):
            fitness = "not scored yet" if m.score is None else f"BIC {m.score:.4g}"
            lines.append(f"{i}. {self._describe_member(m)} ({fitness})")
        messages = chat_messages(
            render_prompt(
                "cake",
                dim=round_.dim,
                data=table,
                data_note=note,
                max_base=self.max_base_kernels,
                population="\n".join(lines) or "(empty population)",
                num_kernels=num_proposals,
                feedback=self.feedback_text(),
            )
        )
        params: dict[str, Any] = {"seed": self._seed(round_.round_index, 0), "max_tokens": 768}
        if decoding_for(self._model_name or client.model, client.api_base) == "schema":
            params["response_format"] = response_format(_cake_schema(num_proposals), "cake")
        reply = client.complete_many([LLMRequest(messages, "cake", params)])[0]
        round_.lap("llm_cake_s")
        self._read(reply, round_)
        return {}

    def _read(self, reply: str | LLMError, round_: ProposalRound) -> None:
        """Turn the reply's expressions into candidates of ``round_.proposal``."""
        members, prefix, proposal = round_.members, round_.prefix, round_.proposal
        if isinstance(reply, LLMError):
            proposal.rejections.append(Rejection(name=prefix, stage="proposal", reason=str(reply)))
            return
        texts = _expressions(reply)
        if not texts:
            proposal.rejections.append(
                Rejection(name=prefix, stage="parse", reason="no kernel expression in the reply")
            )
            return
        known = {m.candidate.key: m.name for m in members}
        for i, (text, rationale) in enumerate(texts[: round_.num_proposals]):
            base = self._unique(f"{prefix}_{i}", round_.taken)
            self._described[base] = text
            try:
                spec = parse_cake_expression(text)
                n = len(list(leaves(spec)))
                if n > self.max_base_kernels:
                    raise ValueError(
                        f"{n} base kernels exceed the limit of {self.max_base_kernels}"
                    )
            except ValueError as exc:
                proposal.rejections.append(
                    Rejection(name=base, stage="grammar", reason=str(exc), formula=text)
                )
                continue
            cand = KernelCandidate(
                name=f"{base}:{short_name(spec)}",
                formula=f"{cake_expression(spec)}   [idea: {rationale[:200]}]"
                if rationale
                else cake_expression(spec),
                origin="discovery",
                spec=spec,
            )
            self._described[cand.name] = cake_expression(spec)
            if cand.key in known:
                proposal.rejections.append(
                    Rejection(
                        name=base,
                        stage="duplicate",
                        reason=f"repeats {known[cand.key]}",
                        formula=cake_expression(spec),
                    )
                )
                continue
            known[cand.key] = cand.name
            proposal.candidates.append(cand)


def _expressions(reply: str) -> list[tuple[str, str]]:
    """``(expression, rationale)`` pairs of a reply: JSON first, else expression-like lines."""
    for value in json_values(reply):
        items = value.get("kernels") if isinstance(value, dict) else value
        if isinstance(items, dict):
            items = [items]
        if isinstance(items, list):
            out = [
                (str(it.get("expression") or it.get("kernel") or ""), str(it.get("rationale", "")))
                for it in items
                if isinstance(it, dict)
                and isinstance(it.get("expression") or it.get("kernel"), str)
            ]
            if out:
                return out
    names = "|".join(CAKE_BASE_KERNELS)
    pattern = re.compile(rf"^[\s\-*\d.)`]*((?:\(|\b(?:{names})\b)[\sA-Z0-9()+*]*)`?\s*$", re.M)
    return [(m.group(1).strip(), "") for m in pattern.finditer(reply) if m.group(1).strip()]
