"""JSON schemas of kernel expression trees, for constrained decoding of LLM proposals.

The expression grammar of :mod:`ax_kernel_discovery.expression` is recursive (a sum's
arguments are trees), but constrained decoders are not all happy with recursion:
llama.cpp's JSON-schema-to-grammar converter and several hosted providers reject or
mishandle a recursive ``$ref``. :func:`kernel_tree_schema` therefore **unrolls** the
grammar to a fixed depth, with no ``$ref`` at all: level 1 is a leaf, level ``n`` is a
leaf or an operator whose ``args`` are level ``n - 1`` trees. Alternatives use
``anyOf`` (not ``oneOf``, which llama.cpp and OpenAI's strict mode do not support).
The size of the schema grows linearly with the depth (each level holds one copy of
the level below).

A schema only shapes the syntax. Replies are still checked by the grammar's
validator (:func:`ax_kernel_discovery.expression.validate_spec`) before anything is
built, because a backend may ignore the schema (``decoding="none"``) and because the
schema cannot express every rule (e.g. which leaves may be isotropic).

How the schema is sent (:func:`response_format`, :func:`decoding_for`):

* the local llama.cpp server (``llm_model="local"``) and other OpenAI-compatible
  servers (``openai/<alias>`` with an ``api_base``: llama.cpp, vLLM, LM Studio) and
  Ollama: ``response_format={"type": "json_schema", ...}``, which litellm passes through
  (to Ollama as ``format``) and the server turns into a decoding grammar;
* hosted providers whose models litellm knows to support JSON schemas (OpenAI,
  Anthropic, ...): the same ``response_format``, translated by litellm;
* anything else: no constraint; the reply is parsed and validated.

Example:
    >>> schema = kernel_tree_schema(depth=2, leaves=("rbf", "rq"), warps=("identity",))
    >>> sorted(schema["anyOf"][1]["properties"])
    ['args', 'op']
    >>> "$ref" in str(schema)
    False
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Literal

from ax_kernel_discovery.expression import ISOTROPIC_LEAVES, WARPS
from ax_kernel_discovery.kernels import LEAVES
from ax_kernel_discovery.llm.client import import_litellm

__all__ = [
    "Decoding",
    "decoding_for",
    "kernel_tree_schema",
    "proposal_schema",
    "response_format",
]

Schema = dict[str, Any]
Dialect = Literal["llama.cpp", "openai"]
Decoding = Literal["schema", "none"]

#: Longest rationale the schema allows (llama.cpp dialect).
RATIONALE_MAX_CHARS = 200


def leaf_schema(leaves: Sequence[str] | None = None, warps: Sequence[str] | None = None) -> Schema:
    """A leaf ``{"kernel": ..., "warp": ..., "ard": ...}`` (all fields required, in order).

    Only the classic distance kernels may be isotropic (``ard: false``), so when both kinds
    are allowed the leaf is ``anyOf`` such a leaf (``ard`` true or false) and another
    leaf (``ard`` true only): the schema then excludes what the validator would refuse.
    """
    names = list(leaves or LEAVES)
    warp = {"type": "string", "enum": list(warps or WARPS)}
    distance = [k for k in names if k in ISOTROPIC_LEAVES]
    other = [k for k in names if k not in ISOTROPIC_LEAVES]

    def one(kernels: list[str], ard: Schema) -> Schema:
        return {
            "type": "object",
            "properties": {
                "kernel": {"type": "string", "enum": kernels},
                "warp": dict(warp),
                "ard": ard,
            },
            "required": ["kernel", "warp", "ard"],
            "additionalProperties": False,
        }

    if not other:
        return one(distance, {"type": "boolean"})
    if not distance:
        return one(other, {"type": "boolean", "enum": [True]})
    return {
        "anyOf": [
            one(distance, {"type": "boolean"}),
            one(other, {"type": "boolean", "enum": [True]}),
        ]
    }


def kernel_tree_schema(
    depth: int = 3,
    *,
    leaves: Sequence[str] | None = None,
    warps: Sequence[str] | None = None,
    max_args: int = 3,
) -> Schema:
    """Schema of expression trees of at most ``depth`` levels, unrolled (no ``$ref``).

    Args:
        depth: Maximum tree depth (a leaf has depth 1).
        leaves: Allowed leaf kernels (default: every leaf of the grammar).
        warps: Allowed warps / feature maps (default: all).
        max_args: Maximum number of arguments of a sum or product.

    Returns:
        A JSON schema (a leaf schema for ``depth=1``, else ``anyOf`` leaf / operator).
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    if max_args < 2:
        raise ValueError(f"max_args must be >= 2, got {max_args}")
    leaf = leaf_schema(leaves, warps)
    tree: Schema = leaf
    for _ in range(depth - 1):
        operator = {
            "type": "object",
            "properties": {
                "op": {"type": "string", "enum": ["sum", "product"]},
                "args": {
                    "type": "array",
                    "items": tree,
                    "minItems": 2,
                    "maxItems": max_args,
                },
            },
            "required": ["op", "args"],
            "additionalProperties": False,
        }
        alternatives = leaf["anyOf"] if "anyOf" in leaf else [leaf]
        tree = {"anyOf": [*copy.deepcopy(alternatives), operator]}
    return tree


def proposal_schema(
    num_kernels: int,
    depth: int = 3,
    *,
    leaves: Sequence[str] | None = None,
    warps: Sequence[str] | None = None,
    max_args: int = 3,
    dialect: Dialect = "llama.cpp",
) -> Schema:
    """Schema of one reply: ``{"kernels": [{"rationale": str, "kernel": tree}, ...]}``.

    The rationale comes first so that the model states its idea before it writes the
    tree. ``dialect="openai"`` leaves out ``maxLength`` (not accepted by OpenAI's strict
    mode); ``"llama.cpp"`` bounds the rationale to one short line.
    """
    if num_kernels < 1:
        raise ValueError(f"num_kernels must be >= 1, got {num_kernels}")
    rationale: Schema = {"type": "string"}
    if dialect == "llama.cpp":
        rationale["maxLength"] = RATIONALE_MAX_CHARS
    item = {
        "type": "object",
        "properties": {
            "rationale": rationale,
            "kernel": kernel_tree_schema(depth, leaves=leaves, warps=warps, max_args=max_args),
        },
        "required": ["rationale", "kernel"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "kernels": {
                "type": "array",
                "items": item,
                "minItems": 1,
                "maxItems": num_kernels,
            }
        },
        "required": ["kernels"],
        "additionalProperties": False,
    }


def response_format(schema: Schema, name: str = "kernel_proposals") -> dict[str, Any]:
    """The OpenAI-style ``response_format`` litellm passes on (``strict`` decoding)."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": schema, "strict": True},
    }


def decoding_for(model: str | None, api_base: str | None = None) -> Decoding:
    """Whether a backend takes a JSON schema (``"schema"``) or needs parse-and-validate.

    Args:
        model: The configured model string (``"local"``, a litellm model string, or
            the client's resolved ``openai/<alias>``).
        api_base: The client's base URL, if any.
    """
    if not model:
        return "none"
    if model == "local" or model.startswith(("ollama/", "ollama_chat/")):
        return "schema"
    if model.startswith(("openai/", "hosted_vllm/", "lm_studio/")) and api_base:
        return "schema"  # llama.cpp, vLLM, LM Studio: json_schema response_format
    try:
        litellm = import_litellm()
        return "schema" if litellm.supports_response_schema(model=model) else "none"
    except Exception:  # noqa: BLE001 - unknown model: be conservative
        return "none"


def schema_dialect(model: str | None) -> Dialect:
    """``"llama.cpp"`` for the local and OpenAI-compatible servers, else ``"openai"``."""
    if model == "local" or (model or "").startswith(("openai/", "ollama", "hosted_vllm/")):
        return "llama.cpp"
    return "openai"
