"""Plumbing of LLMClient: litellm calls, retries, ledger, cache and replay (no real LLM)."""

from __future__ import annotations

import json
import time

import litellm
import pytest

from ax_kernel_discovery.llm.client import (
    ENV_MODEL,
    LLMClient,
    LLMError,
    LLMRequest,
)
from ax_kernel_discovery.llm.factory import make_client

# litellm 1.106.2 builds a pydantic schema with a ReadOnly TypedDict on first use.
pytestmark = pytest.mark.filterwarnings("ignore:Item .summary. on TypedDict:UserWarning")


MSG = [{"role": "user", "content": "Propose a kernel."}]


def test_plumbing_mock_response_text_and_ledger() -> None:
    client = LLMClient("gpt-4o", num_retries=0)
    text = client.complete(MSG, stage="discovery", mock_response="k(x, x') = 1")
    assert text == "k(x, x') = 1"
    (record,) = client.ledger
    assert record.ok and record.stage == "discovery" and record.model == "gpt-4o"
    assert (record.prompt_tokens, record.completion_tokens) == (10, 20)  # litellm's mock usage
    assert record.cost_usd >= 0.0 and record.attempts == 1
    summary = client.summary()
    assert summary["calls"] == 1 and summary["total_tokens"] == 30
    assert summary["by_stage"]["discovery"]["ok"] == 1


def test_plumbing_model_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MODEL, "ollama/qwen2.5-coder")
    assert LLMClient().model == "ollama/qwen2.5-coder"
    monkeypatch.delenv(ENV_MODEL)
    with pytest.raises(ValueError, match=ENV_MODEL):
        LLMClient()
    with pytest.raises(ValueError, match="cache_dir"):
        LLMClient("gpt-4o", mode="replay")


def test_plumbing_rate_limit_retried_then_success(monkeypatch: pytest.MonkeyPatch) -> None:
    real = litellm.completion
    calls = {"n": 0}

    def flaky(**kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 1:
            raise litellm.RateLimitError(message="slow down", llm_provider="openai", model="gpt-4o")
        return real(**kwargs, mock_response="after backoff")

    monkeypatch.setattr(litellm, "completion", flaky)
    client = LLMClient("gpt-4o", num_retries=2, backoff_s=0.01)
    assert client.complete(MSG, stage="discovery") == "after backoff"
    assert calls["n"] == 2
    assert client.ledger[-1].ok and client.ledger[-1].attempts == 2


def test_plumbing_gives_up_after_n_tries() -> None:
    client = LLMClient("gpt-4o", num_retries=2, backoff_s=0.01)
    with pytest.raises(LLMError, match="gave up after 3 attempt") as info:
        client.complete(MSG, stage="conversion", mock_response="litellm.RateLimitError")
    assert info.value.attempts == 3 and info.value.stage == "conversion"
    assert isinstance(info.value.cause, litellm.RateLimitError)
    record = client.ledger[-1]
    assert not record.ok and record.attempts == 3 and "RateLimitError" in (record.error or "")


def test_plumbing_http_fake_server_roundtrip(fake_openai) -> None:  # type: ignore[no-untyped-def]
    fake_openai.replies = ["```formula\nKERNEL: A\nCOVARIANCE FUNCTION: k = 1\n```"]
    client = LLMClient("openai/fake", api_base=fake_openai.url, num_retries=0, timeout=10, seed=3)
    text = client.complete(MSG, stage="discovery", temperature=0.2, max_tokens=99)
    assert text.startswith("```formula")
    body = fake_openai.requests[0]
    assert body["model"] == "fake" and body["messages"] == MSG
    assert body["temperature"] == 0.2 and body["max_tokens"] == 99 and body["seed"] == 3
    record = client.ledger[0]
    assert (record.prompt_tokens, record.completion_tokens) == (11, 7)
    assert client.summary()["total_tokens"] == 18


def test_plumbing_http_429_then_ok(fake_openai) -> None:  # type: ignore[no-untyped-def]
    fake_openai.statuses = [429]
    fake_openai.replies = ["fine"]
    client = LLMClient("openai/fake", api_base=fake_openai.url, num_retries=1, backoff_s=0.01)
    assert client.complete(MSG, stage="s") == "fine"
    assert len(fake_openai.requests) == 2 and client.ledger[0].attempts == 2


def test_plumbing_http_auth_error_not_retried(fake_openai) -> None:  # type: ignore[no-untyped-def]
    fake_openai.statuses = [401, 401, 401]
    client = LLMClient("openai/fake", api_base=fake_openai.url, num_retries=3, backoff_s=0.01)
    with pytest.raises(LLMError, match="non-retryable"):
        client.complete(MSG, stage="s")
    assert len(fake_openai.requests) == 1


def test_plumbing_unreachable_is_fast(closed_port: int) -> None:
    client = LLMClient(
        "openai/fake",
        api_base=f"http://127.0.0.1:{closed_port}/v1",
        timeout=2,
        num_retries=1,
        backoff_s=0.01,
    )
    start = time.perf_counter()
    with pytest.raises(LLMError) as info:
        client.complete(MSG, stage="discovery")
    assert time.perf_counter() - start < 10
    assert info.value.attempts == 2 and not client.ledger[0].ok


def test_plumbing_timeout(fake_openai) -> None:  # type: ignore[no-untyped-def]
    fake_openai.delay = 3.0
    client = LLMClient("openai/fake", api_base=fake_openai.url, timeout=0.5, num_retries=0)
    start = time.perf_counter()
    with pytest.raises(LLMError, match="Timeout"):
        client.complete(MSG, stage="s")
    assert time.perf_counter() - start < 2.9


def test_plumbing_scripted_custom_llm(scripted_llm) -> None:  # type: ignore[no-untyped-def]
    scripted_llm.script = lambda messages: f"echo: {messages[-1]['content']}"
    client = LLMClient("scripted/any", num_retries=0)
    assert client.complete(MSG, stage="s") == "echo: Propose a kernel."
    assert scripted_llm.calls == [MSG]


def test_plumbing_cache_record_then_replay(tmp_path, scripted_llm) -> None:  # type: ignore[no-untyped-def]
    counter = iter(range(100))
    scripted_llm.script = lambda messages: f"answer {next(counter)}"
    recorder = LLMClient("scripted/m", cache_dir=tmp_path, mode="record", seed=7)
    first = [recorder.complete(MSG, stage="s"), recorder.complete(MSG, stage="s")]
    other = recorder.complete([{"role": "user", "content": "other"}], stage="s")
    assert first == ["answer 0", "answer 1"] and other == "answer 2"
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 3
    entry = json.loads(files[0].read_text())
    assert {"key", "model", "messages", "params", "seed", "response", "usage"} <= set(entry)

    # Replay: same answers in the same order, no LLM needed.
    scripted_llm.script = lambda messages: pytest.fail("replay must not call the LLM")
    replay = LLMClient("scripted/m", cache_dir=tmp_path, mode="replay", seed=7)
    assert [replay.complete(MSG, stage="s"), replay.complete(MSG, stage="s")] == first
    assert replay.complete([{"role": "user", "content": "other"}], stage="s") == other
    assert all(r.cached for r in replay.ledger)
    assert replay.summary()["cached"] == 3
    with pytest.raises(LLMError, match="not in cache"):
        replay.complete([{"role": "user", "content": "never asked"}], stage="s")
    # A different seed is a different key.
    with pytest.raises(LLMError, match="not in cache"):
        LLMClient("scripted/m", cache_dir=tmp_path, mode="replay", seed=8).complete(MSG, stage="s")


def test_plumbing_live_mode_reads_through_cache(tmp_path, scripted_llm) -> None:  # type: ignore[no-untyped-def]
    scripted_llm.script = lambda messages: "first"
    LLMClient("scripted/m", cache_dir=tmp_path).complete(MSG, stage="s")
    scripted_llm.script = lambda messages: "second"
    again = LLMClient("scripted/m", cache_dir=tmp_path)
    assert again.complete(MSG, stage="s") == "first"
    assert len(scripted_llm.calls) == 1 and again.ledger[0].cached


def test_plumbing_complete_many_concurrent(fake_openai, closed_port) -> None:  # type: ignore[no-untyped-def]
    fake_openai.delay = 0.4
    fake_openai.replies = [lambda body: body["messages"][-1]["content"].upper()]
    client = LLMClient("openai/fake", api_base=fake_openai.url, num_retries=0, max_workers=4)
    requests = [LLMRequest([{"role": "user", "content": f"q{i}"}], "s") for i in range(4)]
    start = time.perf_counter()
    out = client.complete_many(requests)
    assert out == ["Q0", "Q1", "Q2", "Q3"]
    assert time.perf_counter() - start < 1.3  # 4 x 0.4 s sequentially

    dead = LLMClient("openai/fake", api_base=f"http://127.0.0.1:{closed_port}/v1", num_retries=0)
    mixed = dead.complete_many(requests[:2])
    assert all(isinstance(r, LLMError) for r in mixed)


def test_plumbing_make_client() -> None:
    client = make_client("gpt-4o", temperature=0.1, model_path="ignored")
    assert isinstance(client, LLMClient) and client.temperature == 0.1


def test_missing_key_is_an_auth_error_and_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """litellm raises a missing OpenAI key as InternalServerError('Missing credentials')."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = LLMClient("gpt-4o", num_retries=2, backoff_s=0.5)
    start = time.perf_counter()
    with pytest.raises(LLMError, match="non-retryable error after 1 attempt") as info:
        client.complete(MSG, stage="discovery")
    assert time.perf_counter() - start < 0.5 * 2  # no backoff: one attempt
    assert info.value.kind == "auth" and "OPENAI_API_KEY" in str(info.value)
    assert client.ledger[-1].attempts == 1


def test_a_hung_server_costs_one_timeout_not_three(fake_openai) -> None:  # type: ignore[no-untyped-def]
    fake_openai.delay = 5.0
    client = LLMClient(
        "openai/fake", api_base=fake_openai.url, timeout=0.6, num_retries=2, backoff_s=0.01
    )
    start = time.perf_counter()
    with pytest.raises(LLMError, match=r"no answer within llm_timeout=0.6 s") as info:
        client.complete(MSG, stage="discovery")
    assert time.perf_counter() - start < 1.5  # 3 x 0.6 s before
    assert info.value.kind == "timeout" and info.value.attempts == 1
    assert len(fake_openai.requests) <= 1


def test_waiting_says_what_the_client_waits_for(fake_openai) -> None:  # type: ignore[no-untyped-def]
    import threading

    fake_openai.delay = 1.5
    client = LLMClient("openai/fake", api_base=fake_openai.url, timeout=10, num_retries=0)
    assert client.waiting() is None
    thread = threading.Thread(target=client.complete, args=(MSG, "discovery"))
    thread.start()
    deadline = time.perf_counter() + 1.0
    seen = None
    while seen is None and time.perf_counter() < deadline:
        seen = client.waiting()
        time.sleep(0.02)
    thread.join()
    assert seen is not None and seen.startswith("openai/fake, discovery, ")
    assert client.waiting() is None


def test_a_round_against_a_hung_server_costs_one_timeout(fake_openai) -> None:  # type: ignore[no-untyped-def]
    """Discovery and composition calls time out together, once; nothing is retried."""
    from ax_kernel_discovery import start_candidates
    from ax_kernel_discovery.population import Population
    from ax_kernel_discovery.proposers.llm import LLMProposer

    fake_openai.delay = 5.0
    client = LLMClient("openai/fake", api_base=fake_openai.url, timeout=0.8, num_retries=2)
    members = Population(start_candidates(), size=10).summaries()
    start = time.perf_counter()
    proposal = LLMProposer(client).propose(members, dim=10, num_proposals=4, round_index=0)
    assert time.perf_counter() - start < 2 * 0.8  # before: 3 attempts of 0.8 s + backoff
    assert proposal.candidates == []
    assert all("no answer within llm_timeout=0.8 s" in r.reason for r in proposal.rejections)
