"""Worker processes for fits: calls, errors, a user's script that is not run again, and
workers that end with their parent and with their pool's last user."""

from __future__ import annotations

import gc
import operator
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ax_kernel_discovery.surrogate.worker import (
    WorkerError,
    WorkerPool,
    release_shared_pools,
    shared_pool,
    shutdown_shared_pools,
)

ROOT = Path(__file__).resolve().parents[2]
WORKER_PY = ROOT / "ax_kernel_discovery" / "surrogate" / "worker.py"


@pytest.fixture(scope="module")
def pool() -> WorkerPool:
    pool = WorkerPool(1)
    yield pool
    pool.shutdown()


def test_a_call_runs_in_another_process(pool: WorkerPool) -> None:
    assert pool.submit(os.getpid).result(timeout=60) != os.getpid()
    assert pool.submit(operator.add, 2, 3).result(timeout=60) == 5


def test_an_error_in_the_call_is_the_future_s_and_the_worker_goes_on(pool: WorkerPool) -> None:
    with pytest.raises(WorkerError, match="ZeroDivisionError"):
        pool.submit(operator.truediv, 1, 0).result(timeout=60)
    assert pool.submit(operator.mul, 3, 4).result(timeout=60) == 12
    assert pool.alive


def test_what_cannot_be_pickled_fails_at_submit(pool: WorkerPool) -> None:
    with pytest.raises(Exception, match="pickle|lambda"):
        pool.submit(lambda: 1)


def test_a_worker_that_dies_fails_its_call() -> None:
    pool = WorkerPool(1)
    try:
        with pytest.raises(WorkerError, match="ended"):
            pool.submit(os._exit, 3).result(timeout=60)
        assert not pool.alive
    finally:
        pool.shutdown()


def test_the_user_s_script_is_not_run_again_in_the_worker(tmp_path: Path) -> None:
    # multiprocessing's spawn start imports __main__ in each child: a script without a
    # main guard (the README's first example) would run again there, BO loop and all
    log = tmp_path / "runs.txt"
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import operator
            from ax_kernel_discovery.surrogate.worker import WorkerPool

            with open({str(log)!r}, "a") as f:
                f.write("ran\\n")
            pool = WorkerPool(2)
            print(sum(pool.submit(operator.add, i, 1).result(timeout=60) for i in range(4)))
            pool.shutdown()
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "10"
    assert log.read_text() == "ran\n"


def test_ctrl_c_is_the_parent_s_to_handle(pool: WorkerPool) -> None:
    # an interrupt in a terminal reaches the worker too: it goes on with its calls
    pool.submit(operator.add, 0, 0).result(timeout=60)  # started
    os.kill(pool.workers[0].process.pid, signal.SIGINT)
    assert pool.submit(operator.add, 1, 1).result(timeout=60) == 2
    assert pool.alive


class _Unloadable:
    """Pickles in the worker; unpickling it raises (in the parent)."""

    def __reduce__(self) -> tuple[object, tuple[int, int]]:
        return operator.truediv, (1, 0)


def unloadable() -> _Unloadable:
    return _Unloadable()


def test_a_result_that_cannot_be_unpickled_fails_its_call_only(pool: WorkerPool) -> None:
    with pytest.raises(WorkerError, match="unpickled.*ZeroDivisionError"):
        pool.submit(unloadable).result(timeout=60)
    assert pool.submit(operator.add, 2, 2).result(timeout=60) == 4


def test_calls_queued_behind_a_dead_worker_fail_instead_of_waiting() -> None:
    pool = WorkerPool(1)
    try:
        first = pool.submit(os._exit, 3)
        queued = pool.submit(operator.add, 1, 1)
        for future in (first, queued):
            with pytest.raises(WorkerError, match="ended"):
                future.result(timeout=60)
    finally:
        pool.shutdown()


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _ends(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while _running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# The parent loads worker.py by its path, as the workers do: it needs only the standard
# library, and the package's import would take seconds.
_PARENT = """
import importlib.util, os, sys, time
spec = importlib.util.spec_from_file_location("axkd_worker", {worker!r})
worker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(worker)
from helper import touch_then_sleep

mode, marker = sys.argv[1], sys.argv[2]
pool = worker.WorkerPool(1)
pids = [pool.workers[0].process.pid]
if mode == "idle":
    pool.submit(os.getpid).result(timeout=60)
else:  # a call that runs until long after the test
    pool.submit(touch_then_sleep, marker, 600)
    while not os.path.exists(marker):
        time.sleep(0.01)
if mode == "busy_pipe_held":  # a child of the parent keeps the worker's input open
    holder = os.fork()
    if holder == 0:
        time.sleep(600)
        os._exit(0)
    pids.append(holder)
print(*pids, flush=True)
time.sleep(600)
"""

_HELPER = """
import pathlib, time

def touch_then_sleep(path, seconds):
    pathlib.Path(path).touch()
    time.sleep(seconds)
"""


@pytest.mark.parametrize(
    ("mode", "sig"),
    [
        ("busy", signal.SIGKILL),
        ("busy", signal.SIGTERM),
        ("idle", signal.SIGKILL),
        ("busy_pipe_held", signal.SIGKILL),
    ],
)
def test_the_worker_dies_with_its_parent(tmp_path: Path, mode: str, sig: int) -> None:
    """Issue 30 item 13: a worker in the middle of a call was orphaned until the call
    ended (minutes on a large problem). Now its input's end stops it at once, and the
    change of its parent when something else holds that input open."""
    if mode == "busy_pipe_held" and not hasattr(os, "fork"):
        pytest.skip("needs os.fork")
    script = tmp_path / "parent.py"
    script.write_text(_PARENT.format(worker=str(WORKER_PY)))
    (tmp_path / "helper.py").write_text(_HELPER)
    parent = subprocess.Popen(
        [sys.executable, str(script), mode, str(tmp_path / "running")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    pids: list[int] = []
    try:
        assert parent.stdout is not None
        pids = [int(p) for p in parent.stdout.readline().split()]
        worker_pid = pids[0]
        assert _running(worker_pid)
        os.kill(parent.pid, sig)
        parent.wait(timeout=30)
        assert _ends(worker_pid), f"the worker outlived its parent ({mode}, signal {sig})"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for pid in pids:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


class _User:
    """Stands for a surrogate or a fitter that uses a shared pool."""


def _ended(pool: WorkerPool, within: float = 10.0) -> bool:
    """Whether every process of ``pool`` and its thread end within ``within`` seconds."""
    deadline = time.monotonic() + within
    while any(w.process.poll() is None or w.thread.is_alive() for w in pool.workers):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def fresh_shared_pools() -> Iterator[None]:
    shutdown_shared_pools()
    yield
    shutdown_shared_pools()


def test_a_shared_pool_stops_when_its_last_user_releases_it(fresh_shared_pools: None) -> None:
    """Issue 30 item 13: ``close()`` releases what the surrogate started; a pool another
    user holds goes on."""
    first, second = _User(), _User()
    pool = shared_pool(2, user=first)
    assert shared_pool(2, user=second) is pool
    assert pool.submit(operator.add, 1, 2).result(timeout=60) == 3
    release_shared_pools(first)
    assert pool.alive and pool.submit(operator.add, 2, 2).result(timeout=60) == 4
    release_shared_pools(second)
    # released: the processes and their threads have ended when it returns
    assert all(w.process.poll() is not None and not w.thread.is_alive() for w in pool.workers)
    with pytest.raises(WorkerError, match="shut down"):
        pool.submit(operator.add, 1, 1)
    again = shared_pool(2, user=first)  # a later round starts a new one
    assert again is not pool and again.submit(operator.add, 3, 3).result(timeout=60) == 6


def test_a_shared_pool_whose_users_are_gone_stops_once_idle(fresh_shared_pools: None) -> None:
    user = _User()
    pool = shared_pool(1, user=user)
    call = pool.submit(time.sleep, 0.5)
    del user
    gc.collect()
    call.result(timeout=60)  # the call it was running completes
    assert _ended(pool)
    assert shared_pool(1) is not pool


def test_shutdown_with_cancel_does_not_wait_for_the_calls() -> None:
    """For callers that throw the results away: queued calls are cancelled, running
    ones end with their process."""
    pool = WorkerPool(1)
    try:
        running = pool.submit(time.sleep, 600)
        queued = pool.submit(operator.add, 1, 1)
        while not running.running():
            time.sleep(0.01)
        pool.shutdown(cancel=True)
        assert queued.cancelled()
        with pytest.raises(WorkerError, match="ended"):
            running.result(timeout=30)
        assert _ended(pool, within=0.0)
    finally:
        pool.shutdown(cancel=True)
