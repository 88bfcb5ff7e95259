"""The LLM proposer a :class:`~ax_kernel_discovery.config.KernelDiscoveryConfig` asks for.

:func:`proposer_from_config` picks the proposer (``proposer`` and ``proposal_format``)
and :func:`llm_client_kwargs` turns the config's ``llm_*`` fields into
:class:`~ax_kernel_discovery.llm.client.LLMClient` arguments (shared with CAKE).
This module sits above the proposers it builds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ax_kernel_discovery.llm.setup_check import check_llm_setup
from ax_kernel_discovery.proposers.base import Proposer
from ax_kernel_discovery.proposers.direct import DirectCodeProposer
from ax_kernel_discovery.proposers.expression_llm import ExpressionLLMProposer
from ax_kernel_discovery.proposers.llm import LLMProposer

if TYPE_CHECKING:
    from ax_kernel_discovery.config import KernelDiscoveryConfig

__all__ = [
    "LOCAL_STRUCTURED_TEMPERATURE",
    "LOCAL_TIMEOUT_S",
    "check_llm_config",
    "llm_client_kwargs",
    "proposer_from_config",
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


def proposer_from_config(config: KernelDiscoveryConfig) -> Proposer:
    """The LLM proposer described by a :class:`~ax_kernel_discovery.config.KernelDiscoveryConfig`.

    ``proposal_format`` (resolved: ``auto`` is ``expression`` for ``llm_model="local"``,
    ``code`` otherwise) ``"expression"`` gives the structured
    :class:`~ax_kernel_discovery.proposers.expression_llm.ExpressionLLMProposer`;
    with ``"code"``, ``config.proposer == "direct"`` gives a
    :class:`~ax_kernel_discovery.proposers.direct.DirectCodeProposer` and anything else
    the two-stage :class:`~ax_kernel_discovery.proposers.llm.LLMProposer`.
    """
    model = config.llm_model
    common: dict[str, Any] = {
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
    if config.resolved_proposal_format() == "expression":
        common.pop("repair")  # trees are valid by construction: nothing to repair
        if model == "local" and "llm_temperature" not in config.model_fields_set:
            common["client_kwargs"]["temperature"] = LOCAL_STRUCTURED_TEMPERATURE
        return ExpressionLLMProposer(model, followups=config.proposal_followups, **common)
    style = config.conversion_style
    if style == "auto":  # small local models write far more valid pair functions
        style = "pair" if model == "local" else "class"
    if config.proposer == "direct":
        return DirectCodeProposer(
            model, code_style="pair" if style == "pair" else "class", **common
        )
    return LLMProposer(
        model,
        num_formulas=config.num_formulas,
        num_compositions=config.num_compositions,
        conversion_style=style,
        structural_composition=config.structural_composition,
        **common,
    )
