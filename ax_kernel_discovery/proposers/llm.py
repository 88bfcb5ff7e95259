"""The paper's two-stage LLM proposer: formulas first, then code.

Each round (Yun, Shin et al., *Automated Kernel Discovery Towards Understanding
High-dimensional Bayesian Optimization*):

1. **discovery**: one call shows the population's formulas ranked by LOO-CRPS (never
   the data) and asks for ``k`` new kernel formulas; at the same time, in another
   thread, a **composition** call asks the model to pick two complementary members
   and combine them by a sum or a product;
2. **conversion**: one call per formula turns it into a ``gpytorch.kernels.Kernel``
   subclass (all conversions of a round run concurrently);
3. optional **repair** (off by default, as in the paper): a candidate that fails
   :func:`~ax_kernel_discovery.validation.validate_kernel_code` is sent back once with
   the failure reason.

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
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ax_kernel_discovery.candidate import KernelCandidate, Origin, Rejection
from ax_kernel_discovery.expression import formula as expression_formula
from ax_kernel_discovery.expression import validate_spec
from ax_kernel_discovery.llm.client import LLMClient, LLMError, LLMRequest, make_client
from ax_kernel_discovery.llm.function_kernel import build_kernel_source, kernel_class_name
from ax_kernel_discovery.llm.parsing import (
    CodeBlock,
    FormulaBlock,
    FunctionBlock,
    ParseError,
    extract_code_block,
    extract_formula_blocks,
    extract_function_block,
    forward_fingerprint,
)
from ax_kernel_discovery.llm.templates import (
    FUNCTION_STYLES,
    PromptOptions,
    composition_messages,
    conversion_messages,
    copies_example,
    copies_function_example,
    discovery_example_formula,
    discovery_messages,
    function_conversion_messages,
    function_repair_messages,
    repair_messages,
)
from ax_kernel_discovery.proposers.base import MemberSummary, Proposal, Proposer

if TYPE_CHECKING:
    from ax_kernel_discovery.config import KernelDiscoveryConfig

__all__ = ["LLMProposer", "LLMProposerBase", "proposer_from_config"]


#: Seconds per call for ``llm_model="local"`` unless ``llm_timeout`` is set.
LOCAL_TIMEOUT_S = 900.0


def _norm_formula(text: str) -> str:
    text = text.lower().split("; input transform")[0]
    text = re.sub(r"^\s*k\s*\(\s*x\s*,\s*x'\s*\)\s*=", "", text)
    return re.sub(r"[\s*`]", "", text)


@dataclass
class _Pending:
    """A formula waiting for its code."""

    name: str
    origin: Origin
    block: FormulaBlock
    parents: tuple[str, ...] = ()


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

    @property
    def client(self) -> LLMClient:
        """The LLM client (created on first use when given as a model string)."""
        if self._client is None:
            self._client = make_client(self._model, **self._client_kwargs)
        return self._client

    def close(self) -> None:
        """Stop a local model server this proposer started.

        A client the proposer made itself is dropped too (the next call makes a new one);
        a client passed in stays, minus any server it owned.
        """
        if self._client is not None:
            self._client.close()
            if getattr(self, "_owns_client", True):
                self._client = None

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

    def _check_code(self, reply: str | LLMError, pending: _Pending) -> CodeBlock | Rejection:
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
        try:
            from ax_kernel_discovery.validation import validate_kernel_code
        except ImportError:  # pragma: no cover - validation is part of the package
            return candidates, {"repair_skipped": 1.0}
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

    def propose(
        self,
        members: Sequence[MemberSummary],
        dim: int,
        num_proposals: int,
        round_index: int,
    ) -> Proposal:
        started = time.perf_counter()
        proposal = Proposal()
        begun = self._begin(members, num_proposals, round_index, proposal)
        if begun is None:
            return proposal
        client, ledger_start, prefix, taken = begun

        # Stage 1: discovery and composition, concurrently.
        # At least one discovery formula; compositions need two members.
        n_comp = min(self.num_compositions, num_proposals - 1) if len(members) >= 2 else 0
        room = num_proposals - n_comp
        n_disc = room if self.num_formulas is None else min(self.num_formulas, room)
        requests: list[LLMRequest] = []
        if n_disc > 0:
            requests.append(
                LLMRequest(
                    discovery_messages(members, dim, n_disc, self.options),
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
        replies = client.complete_many(requests, max_workers=self.max_workers)
        t_stage1 = time.perf_counter()

        pending: list[_Pending] = []
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
                    pending.append(_Pending(name, "discovery", block))
            else:
                name = self._unique(f"{prefix}_c{n_seen_comp}", taken)
                n_seen_comp += 1
                blocks = self._parse_formulas(reply, name, proposal)
                if blocks:
                    parents = self._parents(blocks[0], members)
                    pending.append(_Pending(name, "composition", blocks[0], parents))

        # Formulas that repeat a member or an earlier proposal need no code.
        fresh: list[_Pending] = []
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
        conv_replies = client.complete_many(conv_requests, max_workers=self.max_workers)
        t_stage2 = time.perf_counter()
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

        repair_stats: dict[str, float] = {}
        if self.repair and proposal.candidates:
            proposal.candidates, repair_stats = self._repair_all(
                proposal.candidates, dim, round_index
            )
        done = time.perf_counter()
        proposal.timings = {
            "llm_stage1_s": t_stage1 - started,
            "llm_conversion_s": t_stage2 - t_stage1,
            "llm_repair_s": done - t_stage2,
            "total_s": done - started,
        }
        proposal.usage = {**self._usage(ledger_start), **repair_stats}
        return proposal

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
    def _structural(p: _Pending, members: Sequence[MemberSummary]) -> KernelCandidate | None:
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


def proposer_from_config(config: KernelDiscoveryConfig) -> Proposer:
    """The LLM proposer described by a :class:`~ax_kernel_discovery.config.KernelDiscoveryConfig`.

    ``config.proposer == "direct"`` gives a
    :class:`~ax_kernel_discovery.proposers.direct.DirectCodeProposer`, anything else
    the two-stage :class:`LLMProposer`. Fields missing from older configs take the
    defaults of the proposers.
    """

    def get(name: str, default: Any) -> Any:
        return getattr(config, name, default)

    client_kwargs: dict[str, Any] = {
        "api_base": get("llm_api_base", None),
        "temperature": get("llm_temperature", 0.7),
        "timeout": get("llm_timeout", 120.0),
        "num_retries": get("llm_retries", 2),
        "cache_dir": get("llm_cache_dir", None),
        "mode": get("llm_mode", "live"),
    }
    for opt in ("max_tokens", "model_path", "n_threads"):
        value = get(f"llm_{opt}", None)
        if value is not None:
            client_kwargs[opt] = value
    model = get("llm_model", None) or os.environ.get("AXKD_LLM_MODEL")
    if model == "local":
        client_kwargs["download"] = get("llm_local_download", True)
        if "llm_timeout" not in getattr(config, "model_fields_set", set()):
            # a CPU model answers in minutes, not seconds; a retry after a timeout
            # only queues the same work again
            client_kwargs["timeout"] = LOCAL_TIMEOUT_S
    common: dict[str, Any] = {
        "hdbo_guidance": get("hdbo_guidance", True),
        "psd_guidance": get("psd_guidance", True),
        "simplicity_guidance": get("simplicity_guidance", True),
        "discovery_example": get("discovery_example", False),
        "repair": get("repair", False),
        "validation_options": {"fit_timeout": get("fit_timeout", 60.0)},
        "seed": get("seed", 0),
        "max_workers": get("llm_max_workers", 4),
        "client_kwargs": client_kwargs,
    }
    style = get("conversion_style", "auto")
    if style == "auto":  # small local models write far more valid pair functions
        style = "pair" if model == "local" else "class"
    if get("proposer", "llm") == "direct":
        from ax_kernel_discovery.proposers.direct import DirectCodeProposer

        return DirectCodeProposer(
            get("llm_model", None), code_style="pair" if style == "pair" else "class", **common
        )
    return LLMProposer(
        get("llm_model", None),
        num_formulas=get("num_formulas", 3),
        num_compositions=get("num_compositions", 1),
        conversion_style=style,
        structural_composition=get("structural_composition", True),
        **common,
    )
