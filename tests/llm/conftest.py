"""Offline LLM doubles for the plumbing tests.

* :class:`FakeOpenAIServer`: a stdlib HTTP server on ``127.0.0.1`` that answers
  ``POST /v1/chat/completions`` with scripted replies (or scripted HTTP errors), so
  litellm's real HTTP path is exercised with ``model="openai/fake"``.
* :class:`ScriptedLLM`: a ``litellm.CustomLLM`` registered in
  ``litellm.custom_provider_map`` under the provider ``scripted``.

These prove plumbing (requests, retries, caching, ledger), not LLM quality.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Reply = str | Callable[[dict[str, Any]], str]


class FakeOpenAIServer:
    """OpenAI-compatible chat endpoint with scripted replies.

    Attributes:
        replies: Reply texts (or callables of the request body) served in order; the
            last one repeats.
        statuses: HTTP statuses served first (e.g. ``[429]`` for one rate limit).
        delay: Seconds to sleep before answering.
        requests: JSON bodies received.
        usage: Token counts reported in every answer.
    """

    def __init__(self) -> None:
        self.replies: list[Reply] = ["ok"]
        self.statuses: list[int] = []
        self.delay = 0.0
        self.requests: list[dict[str, Any]] = []
        self.usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
        self._lock = threading.Lock()
        self._served = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                status, payload = server._answer(self.path, body)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.delay:
            time.sleep(self.delay)
        with self._lock:
            self.requests.append(body)
            if self.statuses:
                status = self.statuses.pop(0)
                return status, {"error": {"message": f"scripted {status}", "type": "test"}}
            reply = self.replies[min(self._served, len(self.replies) - 1)]
            self._served += 1
        if not path.rstrip("/").endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {path}"}}
        text = reply(body) if callable(reply) else reply
        return 200, {
            "id": f"chatcmpl-{self._served}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": dict(self.usage),
        }

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def closed_port() -> int:
    """A loopback port with nothing listening (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def scripted_llm(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A ``litellm.CustomLLM`` under provider ``scripted``; set ``.script`` to a callable."""
    import litellm

    class ScriptedLLM(litellm.CustomLLM):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[list[dict[str, Any]]] = []
            self.script: Callable[[list[dict[str, Any]]], str] = lambda messages: "scripted"
            self._lock = threading.Lock()

        def completion(self, *args: Any, **kwargs: Any) -> Any:
            messages = kwargs["messages"]
            with self._lock:
                self.calls.append(messages)
            return litellm.completion(
                model="gpt-4o", messages=messages, mock_response=self.script(messages) or " "
            )

    handler = ScriptedLLM()
    monkeypatch.setattr(
        litellm, "custom_provider_map", [{"provider": "scripted", "custom_handler": handler}]
    )
    return handler
