"""Prompt construction from the text templates in ``llm/prompts/``.

Each stage of the method has one template (``discovery``, ``conversion``,
``composition``, ``direct``, ``repair``); shared sections (HDBO guidance, PSD guidance,
simplicity guidance, the formula format, the code rules and the worked example) are
their own files and are switched on or off with :class:`PromptOptions` for the
paper's ablations. Templates use :class:`string.Template` placeholders (``$name``),
so braces in code examples need no escaping.

Only formulas and scores reach a prompt (:class:`~ax_kernel_discovery.population.MemberSummary`), never observations.

Example:
    >>> msgs = conversion_messages("k(x, x') = exp(-||x - x'||^2)", dim=10)
    >>> msgs[0]["role"], msgs[1]["role"]
    ('system', 'user')
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from string import Template

from ax_kernel_discovery.expression import WARPS
from ax_kernel_discovery.kernels import LEAVES
from ax_kernel_discovery.llm.parsing import (
    FormulaBlock,
    extract_function_block,
    forward_fingerprint,
)
from ax_kernel_discovery.population import MemberSummary

__all__ = [
    "FUNCTION_STYLES",
    "PromptOptions",
    "chat_messages",
    "composition_messages",
    "conversion_messages",
    "copies_example",
    "copies_function_example",
    "direct_messages",
    "discovery_example_formula",
    "discovery_messages",
    "expression_messages",
    "format_population",
    "function_conversion_messages",
    "function_repair_messages",
    "load_prompt",
    "ranked_members",
    "render_prompt",
    "repair_messages",
    "seed_formulas",
]

Messages = list[dict[str, str]]

#: Conversion styles in which the LLM writes a covariance function, not a class.
FUNCTION_STYLES: tuple[str, ...] = ("function", "pair")


@dataclass(frozen=True)
class PromptOptions:
    """Which optional prompt sections are included (the paper's prompt ablations).

    Args:
        hdbo_guidance: High-dimensional BO advice (sqrt(D) lengthscales, few
            parameters, additive structure, input warps) in discovery/direct prompts.
        psd_guidance: Rules for building positive semi-definite kernels.
        simplicity_guidance: Prefer short, distinct kernels.
        conversion_example: Show a worked formula -> code example (helps small models).
        discovery_example: Show one filled-in formula block in the discovery prompt;
            copies of it are rejected as duplicates. Off by default: meant to stop
            small models writing the format placeholders back, but the 1.5B local
            model then copied the example itself.
        max_members: Show at most this many population members (best first).
    """

    hdbo_guidance: bool = True
    psd_guidance: bool = True
    simplicity_guidance: bool = True
    conversion_example: bool = True
    discovery_example: bool = False
    max_members: int | None = 12


@functools.cache
def load_prompt(name: str) -> str:
    """The raw text of ``llm/prompts/<name>.txt`` (packaged data)."""
    path = resources.files("ax_kernel_discovery.llm").joinpath("prompts", f"{name}.txt")
    return path.read_text(encoding="utf-8")


def render_prompt(name: str, **values: object) -> str:
    """The prompt file ``name`` with its ``$placeholders`` filled from ``values``."""
    return Template(load_prompt(name)).substitute({k: str(v) for k, v in values.items()})


def _section(enabled: bool, name: str, **values: object) -> str:
    return render_prompt(name, **values).strip() + "\n\n" if enabled else ""


def chat_messages(user: str) -> Messages:
    """The chat of one request: the package's system prompt, then ``user``."""
    return [
        {"role": "system", "content": load_prompt("system").strip()},
        {"role": "user", "content": user.strip() + "\n"},
    ]


#: How prompts name each selection criterion: (score label, what the ranking is by).
CRITERION_WORDING: dict[str, tuple[str, str]] = {
    "prequential": (
        "held-out loss",
        "how well their previous fit forecast the latest BO batches before they were observed",
    ),
    "lbo_crps": (
        "LBO-CRPS",
        "their CRPS on the latest BO batches, each batch predicted from the other data",
    ),
    "loo_crps": ("LOO-CRPS", "their leave-one-out CRPS on the data seen so far"),
    "loo_crps_bic": (
        "LOO-CRPS+BIC",
        "their leave-one-out CRPS on the data seen so far plus a parameter-count penalty",
    ),
    "mll": ("-MLL/n", "their negative log marginal likelihood per data point"),
    "bic": ("BIC", "their Bayesian information criterion"),
}


def _wording(criterion: str) -> tuple[str, str]:
    return CRITERION_WORDING.get(criterion, CRITERION_WORDING["loo_crps"])


def ranking_phrase(members: Sequence[MemberSummary]) -> str:
    """What the population is ranked by, in words (the members' selection criterion)."""
    return _wording(members[0].criterion if members else "loo_crps")[1]


def _fmt_score(m: MemberSummary) -> str:
    if m.score is None or not math.isfinite(m.score):
        return "not scored yet"
    return f"{_wording(m.criterion)[0]} {m.score:.4g}"


def ranked_members(
    members: Sequence[MemberSummary], max_members: int | None = None
) -> list[MemberSummary]:
    """Members best first (unscored and non-finite scores last), the first ``max_members``."""
    ranked = sorted(
        members,
        key=lambda m: (m.score is None or not math.isfinite(m.score), m.score or 0.0),
    )
    return ranked if max_members is None else ranked[:max_members]


def format_population(members: Sequence[MemberSummary], max_members: int | None = None) -> str:
    """Numbered list of members, best first: name, score, formula (no data)."""
    ranked = ranked_members(members, max_members)
    if not ranked:
        return "(empty population)"
    lines = []
    for i, m in enumerate(ranked, 1):
        formula = " ".join(m.formula.split())
        lines.append(f"{i}. {m.name} ({_fmt_score(m)}): {formula}")
    return "\n".join(lines)


def _guidance(options: PromptOptions, dim: int) -> dict[str, str]:
    return {
        "hdbo_guidance": _section(options.hdbo_guidance, "hdbo_guidance", dim=dim),
        "psd_guidance": _section(options.psd_guidance, "psd_guidance"),
        "simplicity_guidance": _section(options.simplicity_guidance, "simplicity_guidance"),
    }


def _code_sections(options: PromptOptions, stem: str = "conversion") -> dict[str, str]:
    """``rules`` and the optional worked ``example`` of a code format (``{stem}_*.txt``)."""
    return {
        "rules": load_prompt(f"{stem}_rules").strip() + "\n",
        "example": _section(options.conversion_example, f"{stem}_example"),
    }


def discovery_messages(
    members: Sequence[MemberSummary],
    dim: int,
    num_formulas: int,
    options: PromptOptions | None = None,
    feedback: str = "",
) -> Messages:
    """Stage 1: propose ``num_formulas`` new kernel formulas from the population.

    ``feedback`` (the last rounds' refusals, see
    :meth:`~ax_kernel_discovery.proposers.llm_base.LLMProposerBase.feedback_text`) goes
    between the population and the task; empty, the prompt is unchanged.
    """
    options = options or PromptOptions()
    user = render_prompt(
        "discovery",
        dim=dim,
        num_formulas=num_formulas,
        population=format_population(members, options.max_members),
        ranking=ranking_phrase(members),
        formula_format=load_prompt("formula_format"),
        formula_example=_section(options.discovery_example, "discovery_example"),
        feedback=feedback,
        **_guidance(options, dim),
    )
    return chat_messages(user)


def format_tree_population(members: Sequence[MemberSummary], max_members: int | None = None) -> str:
    """Numbered members, best first: name, score and the JSON tree (else the formula)."""
    ranked = ranked_members(members, max_members)
    if not ranked:
        return "(empty population)"
    lines = []
    for i, m in enumerate(ranked, 1):
        spec = m.candidate.spec
        body = (
            json.dumps(spec, separators=(", ", ": "))
            if spec is not None
            else " ".join(m.formula.split())
        )
        lines.append(f"{i}. {m.name} ({_fmt_score(m)}): {body}")
    return "\n".join(lines)


def expression_messages(
    members: Sequence[MemberSummary],
    dim: int,
    num_kernels: int,
    *,
    leaves: Sequence[str],
    warps: Sequence[str],
    isotropic: Sequence[str],
    max_depth: int,
    max_leaves: int,
    max_args: int,
    options: PromptOptions | None = None,
    feedback: str = "",
) -> Messages:
    """Structured discovery: ``num_kernels`` new kernels as JSON expression trees.

    The prompt states the grammar (leaf kernels and warps with their formulas, the
    operators and the size limits), the ranked population as trees and the last
    rounds' refusals, and asks for ``{"kernels": [{"rationale", "kernel"}]}``.
    """
    options = options or PromptOptions()
    user = render_prompt(
        "expression_discovery",
        dim=dim,
        num_kernels=num_kernels,
        leaves="\n".join(f"- {k}: {LEAVES[k].formula}" for k in leaves),
        warps="\n".join(f"- {w}: {'x itself' if w == 'identity' else WARPS[w]}" for w in warps),
        isotropic=", ".join(isotropic),
        max_depth=max_depth,
        max_leaves=max_leaves,
        max_args=max_args,
        population=format_tree_population(members, options.max_members),
        ranking=ranking_phrase(members),
        feedback=feedback,
        hdbo_guidance=_section(options.hdbo_guidance, "hdbo_guidance", dim=dim),
    )
    return chat_messages(user)


def expression_followup_messages(
    messages: Messages, reply: str, refused: Sequence[str], kept: int, num_kernels: int
) -> Messages:
    """Structured follow-up: the conversation so far, then a request for the missing trees.

    ``messages`` and the model's ``reply`` are sent back unchanged (a server with a prompt
    cache, such as llama.cpp's, then evaluates only the new turn), followed by the
    refused trees of the reply with their reasons and a request for ``num_kernels`` more.
    """
    user = render_prompt(
        "expression_followup",
        kept=f"{kept} {'is' if kept == 1 else 'are'} new and kept",
        refused="\n".join(f"- {line}" for line in refused) or "- (none)",
        num_kernels=num_kernels,
    )
    return [
        *messages,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": user.strip() + "\n"},
    ]


def discovery_example_formula() -> str:
    """The COVARIANCE FUNCTION of the discovery prompt's example block (copies are rejected)."""
    match = re.search(r"COVARIANCE FUNCTION:\s*(.+)", load_prompt("discovery_example"))
    return match.group(1).strip() if match else ""


def composition_messages(
    members: Sequence[MemberSummary],
    dim: int,
    options: PromptOptions | None = None,
) -> Messages:
    """Composition: pick two complementary members and combine them (sum or product)."""
    options = options or PromptOptions()
    user = render_prompt(
        "composition",
        dim=dim,
        population=format_population(members, options.max_members),
        ranking=ranking_phrase(members),
        psd_guidance=_section(options.psd_guidance, "psd_guidance"),
    )
    return chat_messages(user)


def conversion_messages(
    formula: FormulaBlock | str,
    dim: int,
    options: PromptOptions | None = None,
) -> Messages:
    """Stage 2: turn one formula into a ``gpytorch.kernels.Kernel`` subclass."""
    options = options or PromptOptions()
    if isinstance(formula, str):
        formula = FormulaBlock(name="NewKernel", formula=formula)
    user = render_prompt(
        "conversion",
        dim=dim,
        formula_block=formula.as_block(),
        kernel_name=formula.name,
        **_code_sections(options),
    )
    return chat_messages(user)


def _function_prompt(style: str) -> str:
    """Prompt-file stem of a function conversion style (``function`` or ``pair``)."""
    if style not in FUNCTION_STYLES:
        raise ValueError(
            f"function conversion style must be one of {FUNCTION_STYLES}, got {style!r}"
        )
    return "conversion_function" if style == "function" else "conversion_pair"


def function_conversion_messages(
    formula: FormulaBlock | str,
    dim: int,
    options: PromptOptions | None = None,
    style: str = "function",
) -> Messages:
    """Stage 2, function styles: ask only for ``PARAMETERS`` and ``covariance``.

    ``style="function"`` asks for ``covariance(x1, x2, p)`` on whole input batches;
    ``style="pair"`` for ``covariance(x, y, p)`` on one pair of points (vectorised with
    ``torch.vmap`` by the generated class). The class around the function is written
    by :func:`~ax_kernel_discovery.llm.function_kernel.build_kernel_source`.
    """
    options = options or PromptOptions()
    stem = _function_prompt(style)
    if isinstance(formula, str):
        formula = FormulaBlock(name="NewKernel", formula=formula)
    user = render_prompt(
        stem, dim=dim, formula_block=formula.as_block(), **_code_sections(options, stem)
    )
    return chat_messages(user)


def function_repair_messages(
    code: str,
    reason: str,
    *,
    formula: str,
    dim: int,
    stage: str = "validation",
    style: str = "function",
) -> Messages:
    """Repair, function styles: send ``PARAMETERS`` + ``covariance`` back with the reason."""
    stem = _function_prompt(style)
    user = render_prompt(
        f"{stem}_repair",
        code=code.strip(),
        reason=" ".join(reason.split())[:2000],
        formula=formula,
        dim=dim,
        stage=stage,
        rules=load_prompt(f"{stem}_rules"),
    )
    return chat_messages(user)


def direct_messages(
    members: Sequence[MemberSummary],
    dim: int,
    num_kernels: int,
    options: PromptOptions | None = None,
    style: str = "class",
) -> Messages:
    """One-stage baseline: write the code of new kernels directly from the population.

    ``style="class"`` asks for whole GPyTorch Kernel classes (the paper's ablation);
    ``style="pair"`` for ``PARAMETERS`` + ``covariance(x, y, p)`` per kernel, the same
    code target as the two-stage ``"pair"`` conversion.
    """
    options = options or PromptOptions()
    if style not in ("class", "pair"):
        raise ValueError(f"direct code style must be 'class' or 'pair', got {style!r}")
    user = render_prompt(
        "direct" if style == "class" else "direct_pair",
        dim=dim,
        num_kernels=num_kernels,
        population=format_population(members, options.max_members),
        ranking=ranking_phrase(members),
        **_guidance(options, dim),
        **_code_sections(options, "conversion" if style == "class" else "conversion_pair"),
    )
    return chat_messages(user)


def repair_messages(
    code: str,
    reason: str,
    *,
    formula: str,
    dim: int,
    stage: str = "validation",
    class_name: str = "the same",
) -> Messages:
    """Repair: send a rejected class back with the failure reason."""
    user = render_prompt(
        "repair",
        code=code.strip(),
        reason=" ".join(reason.split())[:2000],
        formula=formula,
        dim=dim,
        stage=stage,
        class_name=class_name,
        rules=load_prompt("conversion_rules"),
    )
    return chat_messages(user)


def seed_formulas() -> dict[str, str]:
    """The five reference formulas (RBF, Matern-5/2, RQ, BOCK, SL) from ``seed_formulas.txt``."""
    out: dict[str, str] = {}
    for line in load_prompt("seed_formulas").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, formula = line.partition("|")
            out[name.strip()] = formula.strip()
    return out


def copies_example(code: str) -> bool:
    """Whether ``code``'s ``forward`` is the worked example's (small models copy it)."""
    match = re.search(r"```python\n(.*?)```", load_prompt("conversion_example"), re.DOTALL)
    if match is None:  # pragma: no cover - the packaged example always has code
        return False
    mine = forward_fingerprint(code)
    return mine is not None and mine == forward_fingerprint(match.group(1))


def copies_function_example(fingerprint: str) -> bool:
    """Whether a function-style reply (by its fingerprint) is one of the worked examples."""
    return fingerprint in _function_example_fingerprints()


@functools.cache
def _function_example_fingerprints() -> frozenset[str]:
    out = set()
    for stem in ("conversion_function_example", "conversion_pair_example"):
        for match in re.finditer(r"```python\n(.*?)```", load_prompt(stem), re.DOTALL):
            out.add(extract_function_block(match.group(0)).fingerprint)
    return frozenset(out)
