"""The response cache: what a key depends on, and how entries are stored and read."""

from __future__ import annotations

import json
from pathlib import Path

from ax_kernel_discovery.llm.cache import ResponseCache, cache_key

MSG = [{"role": "user", "content": "Propose a kernel."}]


def test_cache_key_depends_on_what_changes_an_answer() -> None:
    base = cache_key("m", MSG, {"temperature": 0.7, "max_tokens": 10}, seed=1)
    assert base == cache_key("m", MSG, {"max_tokens": 10, "temperature": 0.7, "timeout": 3}, 1)
    assert base != cache_key("m2", MSG, {"temperature": 0.7, "max_tokens": 10}, 1)
    assert base != cache_key("m", MSG, {"temperature": 0.2, "max_tokens": 10}, 1)
    assert base != cache_key("m", MSG, {"temperature": 0.7, "max_tokens": 10}, 2)
    assert base != cache_key("m", MSG, {"temperature": 0.7, "max_tokens": 10}, 1, occurrence=1)
    schema = {"type": "json_schema", "json_schema": {"name": "k", "schema": {"type": "object"}}}
    assert base != cache_key(
        "m", MSG, {"temperature": 0.7, "max_tokens": 10, "response_format": schema}, 1
    )
    assert len(base) == 64


def test_entries_round_trip_keep_only_keyed_params_and_leave_no_temp_files(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "new" / "dir")  # created on demand
    params = {"temperature": 0.5, "timeout": 30, "response_format": {"type": "json_object"}}
    cache.write(
        "abc",
        model="m",
        stage="discovery",
        messages=MSG,
        params=params,
        seed=3,
        text="k(x, x') = 1",
        usage={"prompt_tokens": 7, "completion_tokens": 2},
    )
    entry = cache.read("abc")
    assert entry is not None
    assert entry["response"] == "k(x, x') = 1" and entry["seed"] == 3
    assert entry["params"] == {"temperature": 0.5, "response_format": {"type": "json_object"}}
    assert entry["usage"]["prompt_tokens"] == 7
    assert [p.name for p in cache.directory.iterdir()] == ["abc.json"]


def test_missing_corrupt_or_foreign_files_are_misses(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    assert cache.read("absent") is None
    cache.path("corrupt").write_text("{not json")
    assert cache.read("corrupt") is None
    cache.path("foreign").write_text(json.dumps({"no": "response"}))
    assert cache.read("foreign") is None
