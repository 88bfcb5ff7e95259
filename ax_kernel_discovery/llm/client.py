"""The one door to language models: litellm with retries, a cost ledger and a cache.

Every LLM call of the package goes through :class:`LLMClient`. It adds to
``litellm.completion``:

* retries with exponential backoff on transient errors (rate limits, connection and
  server errors), then :class:`LLMError`; an authentication error (no or a wrong key)
  and a timeout are not retried: a retry would fail the same way, or cost the same
  timeout again;
* a per-run ledger (:attr:`LLMClient.ledger`) with tokens, latency and cost per call;
* an on-disk response cache (one JSON file per call, keyed by the sha256 of model,
  messages, parameters and seed) with three modes: ``live`` (read through the cache
  when one is set), ``record`` (always call, then store) and ``replay`` (answer only
  from the cache, so a run can be reproduced without any LLM).

API keys are never arguments: litellm reads them from the environment
(``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ...). The model defaults to
``$AXKD_LLM_MODEL`` and the base URL to ``$AXKD_LLM_API_BASE``.

Example:
    >>> client = LLMClient("gpt-4o", cache_dir=Path("runs/llm-cache"))  # doctest: +SKIP
    >>> client.complete([{"role": "user", "content": "Say hi"}], stage="test")  # doctest: +SKIP
    >>> client.summary()["total_tokens"]  # doctest: +SKIP
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ax_kernel_discovery.llm.cache import Message, ResponseCache, cache_key
from ax_kernel_discovery.llm.ledger import LedgerRecord, ledger_summary

#: Documented environment variables (read here and nowhere else).
ENV_MODEL = "AXKD_LLM_MODEL"
ENV_API_BASE = "AXKD_LLM_API_BASE"

Mode = Literal["live", "replay", "record"]

_RETRYABLE_NAMES = (
    "RateLimitError",
    "Timeout",
    "APIConnectionError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
)


#: Words of provider errors that mean "no or a wrong key" whatever class litellm maps them
#: to (litellm 1.106 raises a missing OpenAI key as an ``InternalServerError``).
_AUTH_WORDS = (
    "missing credentials",
    "api_key client option must be set",
    "invalid api key",
    "incorrect api key",
    "invalid x-api-key",
    "authentication",
    "unauthorized",
)

ErrorKind = Literal["auth", "timeout", "connection", "other"]


class LLMError(RuntimeError):
    """An LLM call failed for good (after retries), or replay found no cached answer.

    Attributes:
        stage: Stage label of the call.
        attempts: How many times the call was sent.
        cause: The last underlying exception, if any.
        kind: ``auth`` (no or a wrong key), ``timeout``, ``connection`` or ``other``.
    """

    def __init__(
        self,
        message: str,
        *,
        stage: str = "",
        attempts: int = 0,
        cause: BaseException | None = None,
        kind: ErrorKind = "other",
    ) -> None:
        super().__init__(message)
        self.stage = stage
        self.attempts = attempts
        self.cause = cause
        self.kind: ErrorKind = kind


@dataclass
class LLMRequest:
    """One call for :meth:`LLMClient.complete_many`."""

    messages: Sequence[Message]
    stage: str
    params: dict[str, Any] = field(default_factory=dict)


def import_litellm() -> Any:
    """litellm, imported without its price-map download and with its banners off."""
    # litellm downloads its price map at import unless told not to.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on stdout
    return litellm


class LLMClient:
    """Chat completions through litellm, with retries, a ledger and a response cache.

    Args:
        model: litellm model string (``gpt-4o``, ``anthropic/claude-sonnet-4-5``,
            ``ollama/qwen2.5-coder``, ``openai/<alias>`` with ``api_base``). Defaults
            to ``$AXKD_LLM_MODEL``. ``"local"`` is handled by
            :func:`~ax_kernel_discovery.llm.factory.make_client`.
        api_base: Base URL of an OpenAI-compatible server (vLLM, llama.cpp, LM Studio,
            the local GGUF). Defaults to ``$AXKD_LLM_API_BASE``.
        temperature: Default sampling temperature.
        max_tokens: Default completion budget per call.
        timeout: Seconds per attempt.
        num_retries: Retries after the first attempt on transient errors.
        backoff_s: First backoff; doubles each retry (with up to 25% jitter).
        max_backoff_s: Upper bound of one backoff.
        cache_dir: Directory of the JSON response cache (None: no cache).
        mode: ``live`` (read-through cache if ``cache_dir``), ``record`` (always call,
            store) or ``replay`` (cache only; misses raise :class:`LLMError`).
        seed: Default seed sent to the provider and used in the cache key.
        max_workers: Threads for :meth:`complete_many`.
        extra_params: Sent with every call (e.g. ``{"api_version": ...}``).
        owned_server: A server this client stops on :meth:`close` (a
            :class:`~ax_kernel_discovery.llm.local_model.LocalLLMServer` that made it).

    Example:
        >>> client = LLMClient("openai/fake", api_base="http://127.0.0.1:8000/v1")
        >>> client.model
        'openai/fake'
    """

    def __init__(
        self,
        model: str | None = None,
        api_base: str | None = None,
        *,
        temperature: float = 0.7,
        max_tokens: int = 2048,
        timeout: float = 120.0,
        num_retries: int = 3,
        backoff_s: float = 2.0,
        max_backoff_s: float = 60.0,
        cache_dir: Path | str | None = None,
        mode: Mode = "live",
        seed: int | None = None,
        max_workers: int = 4,
        extra_params: Mapping[str, Any] | None = None,
        owned_server: Any = None,
    ) -> None:
        model = model or os.environ.get(ENV_MODEL)
        if not model:
            raise ValueError(f"no LLM model given and ${ENV_MODEL} is not set")
        if mode not in ("live", "replay", "record"):
            raise ValueError(f"mode must be live, replay or record, not {mode!r}")
        if mode != "live" and cache_dir is None:
            raise ValueError(f"mode={mode!r} needs a cache_dir")
        self.model = model
        self.api_base = api_base or os.environ.get(ENV_API_BASE) or None
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.num_retries = num_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.cache = ResponseCache(self.cache_dir) if self.cache_dir is not None else None
        self.mode: Mode = mode
        self.seed = seed
        self.max_workers = max_workers
        self.extra_params = dict(extra_params or {})
        self.ledger: list[LedgerRecord] = []
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {}
        self._owned_server = owned_server  # stopped on close()
        #: Calls waiting for an answer: id -> (stage, start time); see :meth:`waiting`.
        self._in_flight: dict[int, tuple[str, float]] = {}

    # ------------------------------------------------------------------ calls
    def complete(self, messages: Sequence[Message], stage: str, **params: Any) -> str:
        """Send one chat and return the reply text.

        Args:
            messages: OpenAI-style ``[{"role": ..., "content": ...}]``.
            stage: Label for the ledger (``discovery``, ``conversion``, ...).
            **params: Per-call overrides (``temperature``, ``max_tokens``, ``seed``,
                ``stop``, ...) and litellm extras (e.g. ``mock_response``).

        Returns:
            The reply content (``""`` if the model returned none).

        Raises:
            LLMError: Every attempt failed, a non-retryable error occurred, or
                ``replay`` found no cached answer.
        """
        call = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        call.update(self.extra_params)
        call.update(params)
        seed = call.pop("seed", self.seed)
        seed = None if seed is None else int(seed)
        base_key = cache_key(self.model, messages, call, seed)
        with self._lock:
            occurrence = self._seen.get(base_key, 0)
            self._seen[base_key] = occurrence + 1
        key = (
            base_key if occurrence == 0 else cache_key(self.model, messages, call, seed, occurrence)
        )

        if self.cache is not None and self.mode in ("live", "replay"):
            hit = self.cache.read(key)
            if hit is not None:
                usage = hit.get("usage", {})
                self._record(
                    LedgerRecord(
                        stage=stage,
                        model=self.model,
                        prompt_tokens=int(usage.get("prompt_tokens", 0)),
                        completion_tokens=int(usage.get("completion_tokens", 0)),
                        cached=True,
                        key=key,
                    )
                )
                return str(hit["response"])
            if self.mode == "replay":
                self._record(
                    LedgerRecord(
                        stage=stage, model=self.model, ok=False, error="not in cache", key=key
                    )
                )
                raise LLMError(
                    f"not in cache (replay mode): stage={stage!r} key={key[:16]} in {self.cache_dir}",
                    stage=stage,
                )

        text, record, usage = self._call_with_retries(messages, stage, call, seed, key)
        if self.cache is not None:
            self.cache.write(
                key,
                model=self.model,
                stage=stage,
                messages=messages,
                params=call,
                seed=seed,
                text=text,
                usage=usage,
            )
        return text

    def complete_many(
        self,
        requests: Sequence[LLMRequest],
        *,
        max_workers: int | None = None,
    ) -> list[str | LLMError]:
        """Run several calls concurrently (thread pool); results keep the input order.

        Failures are returned as :class:`LLMError` values instead of being raised.
        """
        if not requests:
            return []

        def one(req: LLMRequest) -> str | LLMError:
            try:
                return self.complete(req.messages, req.stage, **req.params)
            except LLMError as exc:
                return exc
            except Exception as exc:  # noqa: BLE001 - never let a worker kill the batch
                return LLMError(f"{type(exc).__name__}: {exc}", stage=req.stage, cause=exc)

        workers = max(1, min(max_workers or self.max_workers, len(requests)))
        if workers == 1:
            return [one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="axkd-llm") as pool:
            return list(pool.map(one, requests))

    # --------------------------------------------------------------- internals
    def _call_with_retries(
        self,
        messages: Sequence[Message],
        stage: str,
        call: dict[str, Any],
        seed: int | None,
        key: str,
    ) -> tuple[str, LedgerRecord, dict[str, int]]:
        litellm = import_litellm()
        kwargs: dict[str, Any] = dict(call)
        kwargs.setdefault("timeout", self.timeout)
        if seed is not None:
            kwargs["seed"] = seed
        if self.api_base:
            kwargs.setdefault("api_base", self.api_base)
            if (
                self.model.startswith("openai/")
                and "api_key" not in kwargs
                and not os.environ.get("OPENAI_API_KEY")
            ):
                # Local OpenAI-compatible servers need no key, but the openai SDK wants one.
                kwargs["api_key"] = "sk-no-key-required"
        kwargs["num_retries"] = 0  # our loop retries; litellm/openai must not
        kwargs["max_retries"] = 0
        kwargs["drop_params"] = True  # e.g. `seed` for providers without it

        attempts = 0
        started = time.perf_counter()
        last_exc: BaseException | None = None
        while True:
            attempts += 1
            token = object()
            with self._lock:
                self._in_flight[id(token)] = (stage, time.perf_counter())
            try:
                response = litellm.completion(
                    model=self.model, messages=[dict(m) for m in messages], **kwargs
                )
            except Exception as exc:  # noqa: BLE001 - classified below
                last_exc = exc
                kind = error_kind(exc, litellm)
                retryable = kind not in ("auth", "timeout") and self._is_retryable(exc, litellm)
                if retryable and attempts <= self.num_retries:
                    time.sleep(self._backoff(attempts))
                    continue
                record = LedgerRecord(
                    stage=stage,
                    model=self.model,
                    latency_s=time.perf_counter() - started,
                    ok=False,
                    error=f"{type(exc).__name__}: {_short(exc)}",
                    attempts=attempts,
                    key=key,
                )
                self._record(record)
                why = "gave up after" if retryable else "non-retryable error after"
                hint = {
                    "auth": " (no or a wrong API key: litellm reads it from the environment, "
                    "e.g. OPENAI_API_KEY)",
                    "timeout": f" (no answer within llm_timeout={self.timeout:g} s)",
                }.get(kind, "")
                raise LLMError(
                    f"LLM call ({stage}, {self.model}) {why} {attempts} attempt(s): "
                    f"{type(exc).__name__}: {_short(exc)}{hint}",
                    stage=stage,
                    attempts=attempts,
                    cause=last_exc,
                    kind=kind,
                ) from exc
            finally:
                with self._lock:
                    self._in_flight.pop(id(token), None)
            break

        latency = time.perf_counter() - started
        text = _content(response)
        usage = _usage(response)
        record = LedgerRecord(
            stage=stage,
            model=self.model,
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
            latency_s=latency,
            cost_usd=_cost(litellm, response),
            attempts=attempts,
            key=key,
        )
        self._record(record)
        return text, record, usage

    @staticmethod
    def _is_retryable(exc: BaseException, litellm: Any) -> bool:
        for name in _RETRYABLE_NAMES:
            cls = getattr(litellm, name, None)
            if isinstance(cls, type) and isinstance(exc, cls):
                return True
        return isinstance(exc, (TimeoutError, ConnectionError))

    def waiting(self) -> str | None:
        """What the client waits for now, e.g. ``"gpt-4o, discovery, 12 s"`` (None: idle).

        Read by progress bars while a round blocks on the LLM.
        """
        with self._lock:
            calls = list(self._in_flight.values())
        if not calls:
            return None
        stage, since = min(calls, key=lambda c: c[1])
        more = f" (+{len(calls) - 1} more)" if len(calls) > 1 else ""
        return f"{self.model}, {stage}{more}, {time.perf_counter() - since:.0f} s"

    def _backoff(self, attempt: int) -> float:
        delay = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        return delay * (1.0 + 0.25 * random.random())

    def _record(self, record: LedgerRecord) -> None:
        with self._lock:
            self.ledger.append(record)

    # ----------------------------------------------------------------- ledger
    def summary(self, records: Sequence[LedgerRecord] | None = None) -> dict[str, Any]:
        """Totals over the ledger (or the given records), overall and per stage."""
        return ledger_summary(self.model, self.ledger if records is None else records)

    # -------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Stop a local model server started for this client, if any."""
        server, self._owned_server = self._owned_server, None
        if server is not None:
            server.stop()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # A client is a handle on a connection and a run's ledger: copies of an object
    # holding one (Ax deep-copies surrogates) share it; pickling drops the lock and
    # any local server, which the unpickled client does not own.
    def __deepcopy__(self, memo: dict[int, Any]) -> LLMClient:
        return self

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_lock"] = None
        state["_owned_server"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LLMClient(model={self.model!r}, api_base={self.api_base!r}, mode={self.mode!r})"


def error_kind(exc: BaseException, litellm: Any = None) -> ErrorKind:
    """How a provider error should be treated: ``auth``, ``timeout``, ``connection``, ``other``.

    Authentication is recognised by litellm's class, the HTTP status (401, 403) or the
    provider's words: litellm 1.106 maps a missing OpenAI key to an
    ``InternalServerError`` ("Missing credentials").
    """
    litellm = litellm or import_litellm()
    auth_classes = tuple(
        c
        for c in (
            getattr(litellm, n, None) for n in ("AuthenticationError", "PermissionDeniedError")
        )
        if isinstance(c, type)
    )
    text = str(exc).lower()
    if (
        isinstance(exc, auth_classes)
        or getattr(exc, "status_code", None) in (401, 403)
        or any(word in text for word in _AUTH_WORDS)
    ):
        return "auth"
    timeout = getattr(litellm, "Timeout", None)
    if isinstance(exc, TimeoutError) or (isinstance(timeout, type) and isinstance(exc, timeout)):
        return "timeout"
    connection = getattr(litellm, "APIConnectionError", None)
    if isinstance(exc, ConnectionError) or (
        isinstance(connection, type) and isinstance(exc, connection)
    ):
        return "connection"
    return "other"


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _content(response: Any) -> str:
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        return ""
    return content or ""


def _usage(response: Any) -> dict[str, int]:
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", 0) if usage is not None else 0
    completion = getattr(usage, "completion_tokens", 0) if usage is not None else 0
    return {"prompt_tokens": int(prompt or 0), "completion_tokens": int(completion or 0)}


def _cost(litellm: Any, response: Any) -> float:
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # noqa: BLE001 - unknown model or provider: cost unknown
        return 0.0
