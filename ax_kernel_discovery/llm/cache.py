"""The on-disk response cache of :class:`~ax_kernel_discovery.llm.client.LLMClient`.

One JSON file per call, named by :func:`cache_key`: the sha256 of what determines an
answer (model, messages, the parameters that change a reply, seed). A cached answer
always belongs to the same prompt, sampling settings and response schema
(``response_format`` is keyed), so a run replays without any LLM.

Example:
    >>> import tempfile
    >>> cache = ResponseCache(tempfile.mkdtemp())
    >>> key = cache_key("m", [{"role": "user", "content": "hi"}], {"temperature": 0.0}, None)
    >>> cache.write(key, model="m", stage="test", messages=[], params={}, seed=None,
    ...             text="hello", usage={"prompt_tokens": 1, "completion_tokens": 1})
    >>> cache.read(key)["response"]
    'hello'
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

Message = Mapping[str, str]

#: Parameters that change what the model answers (part of the cache key). Anything
#: else passed to a call (timeouts, mock responses, ...) is sent but not hashed.
KEYED_PARAMS = frozenset(
    {
        "temperature",
        "max_tokens",
        "top_p",
        "stop",
        "seed",
        "n",
        "presence_penalty",
        "frequency_penalty",
        "response_format",
    }
)


def cache_key(
    model: str,
    messages: Sequence[Message],
    params: Mapping[str, Any],
    seed: int | None,
    occurrence: int = 0,
) -> str:
    """sha256 over what determines an answer: model, messages, parameters, seed.

    ``occurrence`` counts earlier identical calls in the same run, so a run that asks
    the same question twice replays both answers in order.
    """
    payload: dict[str, Any] = {
        "model": model,
        "messages": [dict(m) for m in messages],
        "params": {k: params[k] for k in sorted(params) if k in KEYED_PARAMS and k != "seed"},
        "seed": seed,
    }
    if occurrence:
        payload["occurrence"] = occurrence
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """A directory of cached replies, one ``<key>.json`` per call.

    Args:
        directory: Where the files live (created if missing).
    """

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        """The file of one key."""
        return self.directory / f"{key}.json"

    def read(self, key: str) -> dict[str, Any] | None:
        """The stored entry of ``key``, or None if there is none (or it is unreadable)."""
        try:
            data = json.loads(self.path(key).read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and "response" in data else None

    def write(
        self,
        key: str,
        *,
        model: str,
        stage: str,
        messages: Sequence[Message],
        params: Mapping[str, Any],
        seed: int | None,
        text: str,
        usage: Mapping[str, int],
    ) -> None:
        """Store one reply atomically (a temporary file, then a rename)."""
        entry = {
            "key": key,
            "model": model,
            "stage": stage,
            "messages": [dict(m) for m in messages],
            "params": {k: v for k, v in params.items() if k in KEYED_PARAMS},
            "seed": seed,
            "response": text,
            "usage": dict(usage),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        path = self.path(key)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(entry, indent=1, ensure_ascii=False, default=str))
        os.replace(tmp, path)


__all__ = ["KEYED_PARAMS", "ResponseCache", "cache_key"]
