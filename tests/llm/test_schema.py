"""JSON schemas of expression trees: unrolled, no $ref, anyOf, and what they accept."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from ax_kernel_discovery.expression import PAPER_KERNELS, canonical
from ax_kernel_discovery.llm.client import LLMClient
from ax_kernel_discovery.llm.json_reply import parse_kernel_trees
from ax_kernel_discovery.llm.parsing import ParseError
from ax_kernel_discovery.llm.schema import (
    decoding_for,
    kernel_tree_schema,
    proposal_schema,
    response_format,
)

LEAF = {"kernel": "rbf", "warp": "identity", "ard": True}


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


def _tree(depth: int) -> dict[str, Any]:
    return LEAF if depth == 1 else {"op": "sum", "args": [_tree(depth - 1), LEAF]}


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_unrolled_schema_has_no_ref_and_no_oneof(depth: int) -> None:
    keys = _keys(kernel_tree_schema(depth))
    assert "$ref" not in keys and "oneOf" not in keys and "$defs" not in keys
    assert "anyOf" in keys  # leaf kinds (isotropic or not) and, above depth 1, operators


def test_schema_allows_isotropic_distance_kernels_only() -> None:
    schema = kernel_tree_schema(2)
    jsonschema.validate({"kernel": "rq", "warp": "tanh", "ard": False}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"kernel": "bock", "warp": "identity", "ard": False}, schema)


def test_schema_accepts_trees_up_to_its_depth_only() -> None:
    schema = kernel_tree_schema(3)
    for depth in (1, 2, 3):
        jsonschema.validate(_tree(depth), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(_tree(4), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"kernel": "nope", "warp": "identity", "ard": True}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"op": "sum", "args": [LEAF]}, schema)  # one argument


@pytest.mark.parametrize("name", sorted(PAPER_KERNELS))
def test_paper_kernels_fit_the_proposal_schema(name: str) -> None:
    reply = {"kernels": [{"rationale": "from the paper", "kernel": canonical(PAPER_KERNELS[name])}]}
    jsonschema.validate(reply, proposal_schema(3, depth=3))


def test_proposal_schema_dialects_and_limits() -> None:
    local = proposal_schema(2, dialect="llama.cpp")
    hosted = proposal_schema(2, dialect="openai")
    assert local["properties"]["kernels"]["maxItems"] == 2
    rationale = local["properties"]["kernels"]["items"]["properties"]["rationale"]
    assert rationale["maxLength"] > 0
    assert "maxLength" not in json.dumps(hosted)
    too_many = {"kernels": [{"rationale": "", "kernel": LEAF}] * 3}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(too_many, local)


def test_decoding_choice() -> None:
    assert decoding_for("local") == "schema"
    assert decoding_for("openai/qwen", "http://127.0.0.1:8080/v1") == "schema"
    assert decoding_for("ollama/qwen2.5-coder:7b") == "schema"
    assert decoding_for("gpt-4o") == "schema"  # litellm knows it supports json_schema
    assert decoding_for("openai/qwen") == "none"  # no server named: nothing known
    assert decoding_for("some-provider/unknown-model") == "none"


def test_schema_travels_to_the_server_and_is_part_of_the_cache_key(
    fake_openai: Any, tmp_path: Any
) -> None:
    fake_openai.replies = ['{"kernels": []}']
    client = LLMClient("openai/local-alias", api_base=fake_openai.url, cache_dir=tmp_path)
    messages = [{"role": "user", "content": "kernels please"}]
    fmt2 = response_format(proposal_schema(2))
    fmt3 = response_format(proposal_schema(3))
    client.complete(messages, "expression", response_format=fmt2)
    sent = fake_openai.requests[-1]["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["schema"] == proposal_schema(2)
    client.complete(messages, "expression", response_format=fmt3)  # another schema: a miss
    client.complete(messages, "expression", response_format=fmt2)  # same call again: 2nd answer
    assert len(fake_openai.requests) == 3
    replay = LLMClient("openai/local-alias", cache_dir=tmp_path, mode="replay")
    assert replay.complete(messages, "expression", response_format=fmt3) == '{"kernels": []}'
    assert len({r.key for r in client.ledger}) == 3


@pytest.mark.parametrize(
    "reply",
    [
        '{"kernels": [{"rationale": "r", "kernel": {"kernel": "rbf"}}]}',
        'Sure! ```json\n{"kernels": [{"rationale": "r", "kernel": {"kernel": "rbf"}}]}\n```',
        '<think>hmm {"no": 1</think>[{"kernel": "rbf"}]',
        '{"kernel": "rbf", "warp": "identity", "ard": true}',
    ],
)
def test_lenient_json_reading(reply: str) -> None:
    items = parse_kernel_trees(reply)
    assert items[0].tree["kernel"] == "rbf"


def test_json_reading_failures_are_parse_errors() -> None:
    with pytest.raises(ParseError, match="no JSON"):
        parse_kernel_trees("I would use an RBF kernel.")
    with pytest.raises(ParseError):
        parse_kernel_trees('{"kernels": "rbf"}')
