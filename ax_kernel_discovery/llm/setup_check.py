"""Checks that an LLM proposer can work, made before any evaluation is spent.

:func:`check_llm_setup` looks at what can be known without asking the model anything:
the model string (a provider litellm knows), the API key in the environment for a
hosted provider, a server that accepts connections at ``api_base`` (or Ollama's
default address), and for ``llm_model="local"`` that ``xllamacpp`` is installed and a
model file exists (or may be downloaded) - in that order, so that nothing is
downloaded for a setup that cannot run. Each failure is an :class:`LLMSetupError`
whose message names what is missing and the way out.

Example:
    >>> check_llm_setup("gpt-4o")  # doctest: +SKIP
    LLMSetupError: llm_model='gpt-4o' needs OPENAI_API_KEY in the environment ...
"""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from ax_kernel_discovery.llm.client import ENV_API_BASE, import_litellm
from ax_kernel_discovery.llm.local_model import (
    ENV_LOCAL_MODEL,
    LocalModelError,
    resolve_model_path,
)

__all__ = ["LLMSetupError", "check_llm_setup"]

#: Seconds allowed for opening a connection to an LLM server.
CONNECT_TIMEOUT_S = 5.0

#: Where litellm sends ``ollama/...`` models without an ``api_base``.
OLLAMA_DEFAULT_BASE = "http://localhost:11434"

_NO_LLM = "or use proposer='offline' (no LLM)"


class LLMSetupError(ValueError):
    """The LLM proposer asked for cannot work here; the message says why and what to do."""


def check_llm_setup(
    model: str | None,
    api_base: str | None = None,
    *,
    mode: str = "live",
    cache_dir: str | Path | None = None,
    model_path: str | Path | None = None,
    download: bool = True,
    connect_timeout: float = CONNECT_TIMEOUT_S,
) -> None:
    """Raise :class:`LLMSetupError` when an LLM proposer with these settings cannot work.

    Args:
        model: litellm model string or ``"local"`` (``None``: ``$AXKD_LLM_MODEL``).
        api_base: Base URL of an OpenAI-compatible server (``None``: ``$AXKD_LLM_API_BASE``).
        mode: ``live``, ``record`` or ``replay`` (replay needs only the cache folder).
        cache_dir: The response cache folder.
        model_path: GGUF file of ``model="local"``.
        download: ``model="local"`` may download its model when none is found.
        connect_timeout: Seconds allowed for opening a connection to ``api_base``.

    Raises:
        LLMSetupError: What is missing, and how to provide it.
    """
    model = model or os.environ.get("AXKD_LLM_MODEL")
    if not model:
        raise LLMSetupError(
            "no LLM model: set llm_model (e.g. 'gpt-4o', 'openai/<alias>' with llm_api_base, "
            f"or 'local') or $AXKD_LLM_MODEL, {_NO_LLM}"
        )
    if mode == "replay":
        if cache_dir is None or not Path(cache_dir).is_dir():
            raise LLMSetupError(
                f"llm_mode='replay' answers only from llm_cache_dir, and {str(cache_dir)!r} is "
                "not a folder: record the run first (llm_mode='record') or fix the path"
            )
        return
    if model == "local":
        _check_local(model_path, download)
        return
    api_base = api_base or os.environ.get(ENV_API_BASE) or None
    litellm = import_litellm()
    provider = model.split("/", 1)[0]
    custom = {p.get("provider") for p in getattr(litellm, "custom_provider_map", None) or []}
    if provider in custom:
        return  # a litellm.CustomLLM registered by the user: nothing to check from here
    try:
        _, provider, _, _ = litellm.get_llm_provider(model, api_base=api_base)
    except Exception:  # noqa: BLE001 - litellm's BadRequestError for an unknown provider
        raise LLMSetupError(
            f"llm_model={model!r} is not a model string litellm knows: use e.g. 'gpt-4o', "
            "'anthropic/claude-sonnet-4-5', 'ollama/qwen2.5-coder', 'openai/<alias>' with "
            f"llm_api_base (any OpenAI-compatible server) or 'local', {_NO_LLM}"
        ) from None
    if provider in ("ollama", "ollama_chat"):
        base = api_base or os.environ.get("OLLAMA_API_BASE") or OLLAMA_DEFAULT_BASE
        _check_reachable(base, model, connect_timeout)
        return
    if api_base:
        _check_reachable(api_base, model, connect_timeout)
        return
    missing = litellm.validate_environment(model=model).get("missing_keys") or []
    if missing:
        names = " or ".join(missing)
        raise LLMSetupError(
            f"llm_model={model!r} needs {names} in the environment (litellm reads the API key "
            f"from there): export {missing[0]}=..., or point llm_api_base at an "
            f"OpenAI-compatible server, or use llm_model='local', {_NO_LLM}"
        )


def _check_local(model_path: str | Path | None, download: bool) -> None:
    """``xllamacpp`` first (before any download), then a model file."""
    if importlib.util.find_spec("xllamacpp") is None:
        raise LLMSetupError(
            "llm_model='local' needs xllamacpp (llama.cpp's server), which is not installed: "
            "pip install 'xllamacpp==2026.10.11549' (or, in a clone of ax-kernel-discovery, "
            "pip install '.[local]'); "
            f"nothing was downloaded. Or use an LLM server (llm_model='openai/<alias>' with "
            f"llm_api_base), {_NO_LLM}"
        )
    explicit = model_path or os.environ.get(ENV_LOCAL_MODEL)
    try:
        resolve_model_path(model_path, download=False)
    except LocalModelError as e:
        if explicit or not download:
            raise LLMSetupError(
                f"llm_model='local': {e}"
                + ("" if explicit else "; or allow the download (llm_local_download=True)")
            ) from None


def _check_reachable(base: str, model: str, timeout: float) -> None:
    """A TCP connection to the server of ``base`` opens within ``timeout`` seconds."""
    url = urlparse(base if "://" in base else f"http://{base}")
    host = url.hostname or "localhost"
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as e:
        raise LLMSetupError(
            f"llm_model={model!r}: no server answers at {base} ({host}:{port}: "
            f"{e.strerror or e}): start the server, or fix llm_api_base, {_NO_LLM}"
        ) from None
