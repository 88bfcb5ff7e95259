"""The LLM setup is checked before any evaluation: each failure names the way out."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ax_kernel_discovery.llm import local_model
from ax_kernel_discovery.llm.setup_check import LLMSetupError, check_llm_setup


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AXKD_LLM_MODEL", "AXKD_LLM_API_BASE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv("AXKD_LOCAL_MODEL", raising=False)
    monkeypatch.delenv("OLLAMA_API_BASE", raising=False)


def _xllamacpp(monkeypatch: pytest.MonkeyPatch, installed: bool) -> list[str]:
    """Pretend xllamacpp is (not) installed; record any attempt to download the model."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: (
            (object() if installed else None) if name == "xllamacpp" else real(name, *a)
        ),
    )
    downloads: list[str] = []
    monkeypatch.setattr(local_model, "assemble_qwen_gguf", lambda *a, **k: downloads.append("x"))
    monkeypatch.setattr(local_model, "DEFAULT_CACHE_DIR", Path("/nonexistent-axkd-cache"))
    return downloads


def test_hosted_models_need_their_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(LLMSetupError, match=r"'gpt-4o' needs OPENAI_API_KEY in the environment"):
        check_llm_setup("gpt-4o")
    with pytest.raises(LLMSetupError, match="ANTHROPIC_API_KEY"):
        check_llm_setup("anthropic/claude-sonnet-4-5")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    check_llm_setup("gpt-4o")  # a key is there: nothing is sent


def test_unknown_model_string() -> None:
    with pytest.raises(LLMSetupError, match="'gpt4o' is not a model string litellm knows"):
        check_llm_setup("gpt4o")
    with pytest.raises(LLMSetupError, match="no LLM model"):
        check_llm_setup(None)


def test_a_server_must_accept_connections(closed_port: int, fake_openai) -> None:  # type: ignore[no-untyped-def]
    base = f"http://127.0.0.1:{closed_port}/v1"
    with pytest.raises(LLMSetupError, match=f"no server answers at {base}"):
        check_llm_setup("openai/mymodel", base)
    check_llm_setup("openai/mymodel", fake_openai.url)  # listening: fine, no key needed
    assert fake_openai.requests == []  # a connection, no completion
    with pytest.raises(LLMSetupError, match="no server answers at http://127.0.0.1:1"):
        check_llm_setup("ollama/qwen2.5-coder", "http://127.0.0.1:1")


def test_local_needs_xllamacpp_before_any_download(monkeypatch: pytest.MonkeyPatch) -> None:
    downloads = _xllamacpp(monkeypatch, installed=False)
    with pytest.raises(
        LLMSetupError,
        match=r"needs xllamacpp.*pip install 'xllamacpp==2026.10.11549' \(or, in a clone of "
        r"ax-kernel-discovery, pip install '\.\[local\]'\)",
    ):
        check_llm_setup("local")
    assert downloads == []


def test_local_needs_a_model_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    downloads = _xllamacpp(monkeypatch, installed=True)
    with pytest.raises(LLMSetupError, match="local model file .*missing.gguf not found"):
        check_llm_setup("local", model_path=tmp_path / "missing.gguf")
    with pytest.raises(LLMSetupError, match=r"allow the download \(llm_local_download=True\)"):
        check_llm_setup("local", download=False)
    check_llm_setup("local", download=True)  # no file yet: the run will download it
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    check_llm_setup("local", model_path=gguf, download=False)
    assert downloads == []


def test_replay_needs_only_its_cache(tmp_path: Path) -> None:
    check_llm_setup("gpt-4o", mode="replay", cache_dir=tmp_path)  # no key needed
    with pytest.raises(LLMSetupError, match="llm_mode='replay' answers only from llm_cache_dir"):
        check_llm_setup("gpt-4o", mode="replay", cache_dir=tmp_path / "nope")
