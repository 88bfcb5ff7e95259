"""Worker processes for fits: calls, errors, and a user's script that is not run again."""

from __future__ import annotations

import operator
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ax_kernel_discovery.surrogate.worker import WorkerError, WorkerPool

ROOT = Path(__file__).resolve().parents[2]


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
