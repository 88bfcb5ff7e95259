"""Shared test setup.

* ``torch.set_num_threads(1)``: on 2 shared cores GP fits run 25-50x slower with two
  threads when another process holds a core, so the whole suite runs single-threaded.
* Offline by construction: any socket connection to a non-loopback address fails.
* ``AXKD_DATA_DIR`` defaults to ``../shared/data`` (never copied into the repo).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

_REPO = Path(__file__).resolve().parents[1]
_SHARED_DATA = _REPO.parent / "shared" / "data"
if "AXKD_DATA_DIR" not in os.environ and _SHARED_DATA.is_dir():
    os.environ["AXKD_DATA_DIR"] = str(_SHARED_DATA)

_real_connect = socket.socket.connect


def _loopback_only_connect(self: socket.socket, address):  # type: ignore[no-untyped-def]
    if self.family in (socket.AF_INET, socket.AF_INET6):
        host = address[0]
        if host not in ("127.0.0.1", "::1", "localhost") and not str(host).startswith("127."):
            raise OSError(f"tests are offline: connection to {host!r} blocked")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only_connect)


@pytest.fixture
def data_dir() -> Path:
    """The shared benchmark data directory; skips the test when it is missing."""
    path = Path(os.environ.get("AXKD_DATA_DIR", _SHARED_DATA))
    if not path.is_dir():
        pytest.skip(f"benchmark data directory {path} not found (set AXKD_DATA_DIR)")
    return path
