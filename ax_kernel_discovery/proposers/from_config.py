"""The LLM proposer a :class:`~ax_kernel_discovery.config.KernelDiscoveryConfig` asks for.

:func:`proposer_from_config` picks the proposer (``proposer`` and ``proposal_format``)
and :func:`llm_client_kwargs` turns the config's ``llm_*`` fields into
:class:`~ax_kernel_discovery.llm.client.LLMClient` arguments (shared with CAKE).
Proposers are imported lazily: this module sits below them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ax_kernel_discovery.proposers.base import Proposer

if TYPE_CHECKING:
    from ax_kernel_discovery.config import KernelDiscoveryConfig

__all__ = [
    "LOCAL_STRUCTURED_TEMPERATURE",
    "LOCAL_TIMEOUT_S",
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

    ``llm_model="local"`` also gets ``download`` and, unless ``llm_timeout`` was set,
    :data:`LOCAL_TIMEOUT_S` (a CPU model answers in minutes, not seconds). Fields
    missing from older configs take the client's defaults.
    """

    def get(name: str, default: Any) -> Any:
        return getattr(config, name, default)

    kwargs: dict[str, Any] = {
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
            kwargs[opt] = value
    if config_model(config) == "local":
        kwargs["download"] = get("llm_local_download", True)
        if "llm_timeout" not in getattr(config, "model_fields_set", set()):
            # a retry after a timeout only queues the same work again
            kwargs["timeout"] = LOCAL_TIMEOUT_S
    return kwargs


def config_model(config: KernelDiscoveryConfig) -> str | None:
    """The model a config names: ``llm_model``, else ``$AXKD_LLM_MODEL``."""
    return getattr(config, "llm_model", None) or os.environ.get("AXKD_LLM_MODEL")


def proposer_from_config(config: KernelDiscoveryConfig) -> Proposer:
    """The LLM proposer described by a :class:`~ax_kernel_discovery.config.KernelDiscoveryConfig`.

    ``proposal_format`` (resolved: ``auto`` is ``expression`` for ``llm_model="local"``,
    ``code`` otherwise) ``"expression"`` gives the structured
    :class:`~ax_kernel_discovery.proposers.expression_llm.ExpressionLLMProposer`;
    with ``"code"``, ``config.proposer == "direct"`` gives a
    :class:`~ax_kernel_discovery.proposers.direct.DirectCodeProposer` and anything else
    the two-stage :class:`~ax_kernel_discovery.proposers.llm.LLMProposer`. Fields
    missing from older configs take the defaults of the proposers.
    """

    def get(name: str, default: Any) -> Any:
        return getattr(config, name, default)

    model = config_model(config)
    common: dict[str, Any] = {
        "hdbo_guidance": get("hdbo_guidance", True),
        "psd_guidance": get("psd_guidance", True),
        "simplicity_guidance": get("simplicity_guidance", True),
        "discovery_example": get("discovery_example", False),
        "repair": get("repair", False),
        "validation_options": {"fit_timeout": get("fit_timeout", 60.0)},
        "seed": get("seed", 0),
        "max_workers": get("llm_max_workers", 4),
        "client_kwargs": llm_client_kwargs(config),
        "feedback_rounds": get("feedback_rounds", 3),
    }
    proposal_format = get("proposal_format", "auto")
    if proposal_format == "auto":
        proposal_format = "expression" if model == "local" else "code"
    if proposal_format == "expression":
        from ax_kernel_discovery.proposers.expression_llm import ExpressionLLMProposer

        common.pop("repair")  # trees are valid by construction: nothing to repair
        explicit: set[str] = getattr(config, "model_fields_set", set())
        if model == "local" and "llm_temperature" not in explicit:
            common["client_kwargs"]["temperature"] = LOCAL_STRUCTURED_TEMPERATURE
        return ExpressionLLMProposer(
            get("llm_model", None), followups=get("proposal_followups", 0), **common
        )
    style = get("conversion_style", "auto")
    if style == "auto":  # small local models write far more valid pair functions
        style = "pair" if model == "local" else "class"
    if get("proposer", "llm") == "direct":
        from ax_kernel_discovery.proposers.direct import DirectCodeProposer

        return DirectCodeProposer(
            get("llm_model", None), code_style="pair" if style == "pair" else "class", **common
        )
    from ax_kernel_discovery.proposers.llm import LLMProposer

    return LLMProposer(
        get("llm_model", None),
        num_formulas=get("num_formulas", 3),
        num_compositions=get("num_compositions", 1),
        conversion_style=style,
        structural_composition=get("structural_composition", True),
        **common,
    )
