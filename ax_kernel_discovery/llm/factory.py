"""The LLM client a model string asks for: litellm's, or the local GGUF server's.

:func:`make_client` sits above :mod:`~ax_kernel_discovery.llm.client` (the litellm
client) and :mod:`~ax_kernel_discovery.llm.local_model` (the local server, which hands
out clients of its own), so neither of them imports the other's caller.

Example:
    >>> client = make_client("gpt-4o", temperature=0.2)  # doctest: +SKIP
    >>> local = make_client("local", n_threads=2)  # doctest: +SKIP
"""

from __future__ import annotations

import os
from typing import Any

from ax_kernel_discovery.llm.client import ENV_MODEL, LLMClient
from ax_kernel_discovery.llm.local_model import LocalLLMServer

__all__ = ["make_client"]


def make_client(model: str | None = None, **kwargs: Any) -> LLMClient:
    """An :class:`~ax_kernel_discovery.llm.client.LLMClient`; ``model="local"`` first
    starts the local GGUF server.

    Args:
        model: litellm model string, ``"local"``, or None for ``$AXKD_LLM_MODEL``.
        **kwargs: :class:`~ax_kernel_discovery.llm.client.LLMClient` arguments; for
            ``"local"`` also ``model_path``, ``n_threads``, ``n_ctx``, ``download`` (see
            :class:`~ax_kernel_discovery.llm.local_model.LocalLLMServer`).
    """
    model = model or os.environ.get(ENV_MODEL)
    local = {
        k: kwargs.pop(k)
        for k in ("model_path", "n_threads", "n_ctx", "n_parallel", "download")
        if k in kwargs
    }
    if model == "local":
        kwargs.pop("api_base", None)  # the local server has its own address
        server = LocalLLMServer(local.pop("model_path", None), **local)
        return server.client(**kwargs)
    return LLMClient(model, **kwargs)
