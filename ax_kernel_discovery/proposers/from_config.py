"""The proposers a :class:`~ax_kernel_discovery.config.KernelDiscoveryConfig` can name.

:data:`PROPOSERS` registers each value of ``config.proposer`` by name: how it is built
from a config and what the surrogate does with it (:class:`ProposerEntry`: whether it
asks an LLM, whether it proposes at all). :func:`make_proposer` builds the one a config
names; the surrogate asks :func:`proposer_entry` instead of comparing names. An LLM
proposer writes code or, with ``proposal_format="expression"``, expression trees
(:class:`~ax_kernel_discovery.proposers.expression_llm.ExpressionLLMProposer`).
:func:`llm_client_kwargs` turns the config's ``llm_*`` fields into
:class:`~ax_kernel_discovery.llm.client.LLMClient` arguments (shared with CAKE).
This module sits above the proposers it builds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ax_kernel_discovery.llm.setup_check import check_llm_setup
from ax_kernel_discovery.proposers.base import Proposer
from ax_kernel_discovery.proposers.direct import DirectCodeProposer
from ax_kernel_discovery.proposers.expression_llm import ExpressionLLMProposer
from ax_kernel_discovery.proposers.llm import LLMProposer
from ax_kernel_discovery.proposers.offline import OfflineEvolutionProposer

if TYPE_CHECKING:
    from ax_kernel_discovery.config import KernelDiscoveryConfig

__all__ = [
    "LOCAL_STRUCTURED_TEMPERATURE",
    "LOCAL_TIMEOUT_S",
    "PROPOSERS",
    "ProposerEntry",
    "check_llm_config",
    "direct_proposer",
    "llm_client_kwargs",
    "make_proposer",
    "offline_proposer",
    "proposer_entry",
    "two_stage_proposer",
]

#: Seconds per call for ``llm_model="local"`` unless ``llm_timeout`` is set.
LOCAL_TIMEOUT_S = 900.0

#: Sampling temperature of structured proposals from ``llm_model="local"`` unless
#: ``llm_temperature`` is set. The schema keeps every sample well-formed, so a higher
#: temperature costs no validity; at 0.7 the 1.5B model repeated population members in
#: a third of its trees (docs/llm.md).
LOCAL_STRUCTURED_TEMPERATURE = 1.0


def llm_client_kwargs(config: KernelDiscoveryConfig) -> dict[str, Any]:
    """:class:`~ax_kernel_discovery.llm.client.LLMClient` arguments from a config's ``llm_*`` fields.

    ``llm_model="local"`` also gets the local server's settings (``model_path``,
    ``n_threads``, ``download``) and, unless ``llm_timeout`` was set,
    :data:`LOCAL_TIMEOUT_S` (a CPU model answers in minutes, not seconds).
    """
    kwargs: dict[str, Any] = {
        "api_base": config.llm_api_base,
        "temperature": config.llm_temperature,
        "max_tokens": config.llm_max_tokens,
        "timeout": config.llm_timeout,
        "num_retries": config.llm_retries,
        "cache_dir": config.llm_cache_dir,
        "mode": config.llm_mode,
    }
    if config.llm_model == "local":
        kwargs.update(
            model_path=config.llm_model_path,
            n_threads=config.llm_n_threads,
            download=config.llm_local_download,
        )
        if "llm_timeout" not in config.model_fields_set:
            # a retry after a timeout only queues the same work again
            kwargs["timeout"] = LOCAL_TIMEOUT_S
    return kwargs


def check_llm_config(config: KernelDiscoveryConfig) -> None:
    """Check, before any evaluation, that the config's LLM can work (see
    :func:`~ax_kernel_discovery.llm.setup_check.check_llm_setup`).

    Raises:
        LLMSetupError: The model string, key, server, ``xllamacpp`` or model file is
            missing; the message says how to provide it.
    """
    check_llm_setup(
        config.llm_model,
        config.llm_api_base,
        mode=config.llm_mode,
        cache_dir=config.llm_cache_dir,
        model_path=config.llm_model_path,
        download=config.llm_local_download,
    )


def offline_proposer(config: KernelDiscoveryConfig) -> Proposer:
    """``proposer="offline"``: the offline evolution operator (``seed``, ``offline_grammar``)."""
    return OfflineEvolutionProposer(seed=config.seed, grammar=config.offline_grammar)


def two_stage_proposer(config: KernelDiscoveryConfig) -> Proposer:
    """``proposer="llm"``: the paper's two-stage
    :class:`~ax_kernel_discovery.proposers.llm.LLMProposer` (formulas, then code), or
    expression trees under ``proposal_format="expression"`` (see :func:`_llm_common`)."""
    common = _llm_common(config)
    if config.resolved_proposal_format() == "expression":
        return _expression_proposer(config, common)
    return LLMProposer(
        config.llm_model,
        num_formulas=config.num_formulas,
        num_compositions=config.num_compositions,
        conversion_style=_conversion_style(config),
        structural_composition=config.structural_composition,
        **common,
    )


def direct_proposer(config: KernelDiscoveryConfig) -> Proposer:
    """``proposer="direct"``: a :class:`~ax_kernel_discovery.proposers.direct.DirectCodeProposer`
    (code in one call), or expression trees under ``proposal_format="expression"``."""
    common = _llm_common(config)
    if config.resolved_proposal_format() == "expression":
        return _expression_proposer(config, common)
    pair = _conversion_style(config) == "pair"
    return DirectCodeProposer(config.llm_model, code_style="pair" if pair else "class", **common)


@dataclass(frozen=True)
class ProposerEntry:
    """A value of ``config.proposer``: how it is built and what the surrogate does with it.

    Attributes:
        build: The proposer of a config.
        calls_llm: It asks an LLM: it needs ``llm_model``, its proposals may be asked for
            during the acquisition (``overlap_proposals``), and a round where it gives
            nothing falls back to the offline operator (``fallback_to_offline``).
        proposes: ``False``: the rounds propose nothing (``"none"``; its proposer still
            serves as the offline operator).
    """

    build: Callable[[KernelDiscoveryConfig], Proposer]
    calls_llm: bool = False
    proposes: bool = True


#: The proposers ``config.proposer`` names (adding one: its module, an entry here, its test).
PROPOSERS: dict[str, ProposerEntry] = {
    "offline": ProposerEntry(offline_proposer),
    "llm": ProposerEntry(two_stage_proposer, calls_llm=True),
    "direct": ProposerEntry(direct_proposer, calls_llm=True),
    "none": ProposerEntry(offline_proposer, proposes=False),
}


def proposer_entry(name: str) -> ProposerEntry:
    """The registered proposer ``name`` (:data:`PROPOSERS`).

    Raises:
        ValueError: No proposer of that name is registered.
    """
    try:
        return PROPOSERS[name]
    except KeyError:
        raise ValueError(f"unknown proposer {name!r}; choose from {sorted(PROPOSERS)}") from None


def make_proposer(config: KernelDiscoveryConfig) -> Proposer:
    """The proposer ``config.proposer`` names (:data:`PROPOSERS`).

    Example:
        >>> from ax_kernel_discovery.config import KernelDiscoveryConfig
        >>> type(make_proposer(KernelDiscoveryConfig())).__name__
        'OfflineEvolutionProposer'
    """
    return proposer_entry(config.proposer).build(config)


def _llm_common(config: KernelDiscoveryConfig) -> dict[str, Any]:
    """The arguments every LLM proposer takes from a config."""
    return {
        "hdbo_guidance": config.hdbo_guidance,
        "psd_guidance": config.psd_guidance,
        "simplicity_guidance": config.simplicity_guidance,
        "discovery_example": config.discovery_example,
        "repair": config.repair,
        "validation_options": {"fit_timeout": config.fit_timeout},
        "seed": config.seed,
        "max_workers": config.llm_max_workers,
        "client_kwargs": llm_client_kwargs(config),
        "feedback_rounds": config.feedback_rounds,
    }


def _expression_proposer(config: KernelDiscoveryConfig, common: dict[str, Any]) -> Proposer:
    """``proposal_format`` (resolved: ``auto`` is ``expression`` for ``llm_model="local"``,
    ``code`` otherwise) ``"expression"``: the structured
    :class:`~ax_kernel_discovery.proposers.expression_llm.ExpressionLLMProposer`."""
    common.pop("repair")  # trees are valid by construction: nothing to repair
    if config.llm_model == "local" and "llm_temperature" not in config.model_fields_set:
        common["client_kwargs"]["temperature"] = LOCAL_STRUCTURED_TEMPERATURE
    return ExpressionLLMProposer(config.llm_model, followups=config.proposal_followups, **common)


def _conversion_style(config: KernelDiscoveryConfig) -> Literal["class", "function", "pair"]:
    """``conversion_style`` resolved: ``auto`` is ``pair`` for ``llm_model="local"`` (small
    local models write far more valid pair functions), ``class`` otherwise."""
    if config.conversion_style == "auto":
        return "pair" if config.llm_model == "local" else "class"
    return config.conversion_style
