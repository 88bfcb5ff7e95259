"""Shared test setup.

* ``torch.set_num_threads(1)``: on 2 shared cores GP fits run 25-50x slower with two
  threads when another process holds a core, so the whole suite runs single-threaded.
* Offline by construction: any socket connection to a non-loopback address fails.
* Benchmark data: the files bundled with the package. ``AXKD_DATA_DIR`` is unset for the
  session, so a user's own data folder (e.g. the full CT-slice file) cannot change
  results; tests of the override set it themselves.
* Strict errors (:mod:`ax_kernel_discovery.errors`): ``AXKD_STRICT_ERRORS=1`` for the
  session, set before any worker process or sandbox child starts (they inherit it), so
  that an error that is no kernel failure (a bug) raises instead of becoming a recorded
  rejection. Tests of a user's run (a warning, and the run goes on) turn it off with
  ``ax_kernel_discovery.errors.strict_errors(False)`` or ``monkeypatch.setenv``.
* One warm background worker per test process: the suite holds the process's shared
  one-worker pool (:func:`ax_kernel_discovery.surrogate.worker.shared_pool`) between
  tests, as one long user session would, so that each test's surrogate does not start a
  fresh interpreter and import the package again (seconds per test). Tests of the pool's
  own life shut the shared pools down first (``shutdown_shared_pools``); the next test
  starts a new one.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch

from ax_kernel_discovery.errors import STRICT_ENV
from ax_kernel_discovery.proposers.base import Proposer

torch.set_num_threads(1)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

os.environ.pop("AXKD_DATA_DIR", None)
os.environ[STRICT_ENV] = "1"

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


class _SuiteSession:
    """The suite's hold on the shared one-worker pool (a user, held weakly by the pool)."""


_SUITE_SESSION = _SuiteSession()


@pytest.fixture(autouse=True)
def _warm_background_worker() -> None:
    """Keep (or start) this process's shared one-worker pool with the suite as a user: a
    surrogate's ``close()`` then releases only its own hold, and the next test's
    background fits go to the same warm worker (its calls carry all they need: the
    background-vs-in-process equality tests hold with it)."""
    from ax_kernel_discovery.surrogate.worker import shared_pool

    shared_pool(1, user=_SUITE_SESSION)


@pytest.fixture
def data_dir() -> Path:
    """The folder of the benchmark data bundled with the package (to read files directly)."""
    from ax_kernel_discovery.benchmarks.datasets import bundled_file

    return bundled_file("rover_obstacle_centers.txt").parent


@pytest.fixture
def benchmark_script() -> Callable[[str], ModuleType]:
    """Loads ``benchmarks/<name>.py`` (the scripts are not a package) as module ``name``."""

    def load(name: str) -> ModuleType:
        path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture
def kd_caplog(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """``caplog`` that sees the package's records: like Ax's, they go to Ax's stream
    handler and not on to the root logger, where ``caplog`` listens."""
    logger = logging.getLogger("ax_kernel_discovery")
    logger.addHandler(caplog.handler)
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)


class RecordingProposer(Proposer):
    """The offline operator, recording which round each call was for and from which
    thread (``overlap_proposals`` asks from a worker thread during the acquisition)."""

    name = "recording"

    def __init__(self) -> None:
        from ax_kernel_discovery.proposers.offline import OfflineEvolutionProposer

        self.inner = OfflineEvolutionProposer(seed=1)
        self.calls: list[tuple[int, str]] = []
        self.criteria: set[str] = set()

    def propose(self, members, dim, num_proposals, round_index):  # type: ignore[no-untyped-def]
        import threading

        self.calls.append((round_index, threading.current_thread().name))
        self.criteria |= {m.criterion for m in members}
        return self.inner.propose(members, dim, num_proposals, round_index)


@pytest.fixture
def recording_proposer() -> RecordingProposer:
    """A :class:`RecordingProposer` to put in a surrogate (``surrogate.proposing.proposer``)."""
    return RecordingProposer()
