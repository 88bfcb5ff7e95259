"""Worker processes that run pickled calls: the fits of ``fit_workers`` and ``background_fits``.

A worker is a fresh interpreter running :func:`main` of this module
with the parent's ``sys.path`` and one torch thread, that reads calls from its standard input and writes
their results to a private copy of its standard output (its file descriptor 1 goes to
standard error, so that what the call prints cannot corrupt the replies). Each message
is an 8-byte length and a pickle: ``(function, args)`` one way, ``(ok, value)`` the
other, where a call that raised gives back ``repr`` of its exception.

Unlike ``multiprocessing``'s spawn and forkserver starts, a worker never imports the
parent's ``__main__``: a user's script without an ``if __name__ == "__main__":`` guard
(the README's first example) is not run again in it, and nothing is forked from a
process that holds threads. The parent pickles a call when it submits it (a call that
cannot be pickled raises there, and the caller can run it in its own process);
a thread per worker sends it and waits for the reply.

Example:
    >>> pool = WorkerPool(1)
    >>> pool.submit(divmod, 7, 2).result()
    (3, 1)
    >>> pool.shutdown()
"""

from __future__ import annotations

import atexit
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import IO, Any

__all__ = ["WorkerError", "WorkerPool", "shared_pool", "shutdown_shared_pools"]

_HEADER = struct.Struct("<Q")


class WorkerError(RuntimeError):
    """A worker process failed: it died, or the call raised there (its ``repr`` is the message)."""


def _write(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_HEADER.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def _read(stream: IO[bytes]) -> bytes | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    payload = stream.read(size)
    return payload if len(payload) == size else None


class _Worker:
    """One worker process and the thread that feeds it calls from the pool's queue."""

    def __init__(self, calls: queue.Queue[tuple[Future[Any], bytes] | None]) -> None:
        env = dict(os.environ)
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")  # one torch thread a worker
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if isinstance(p, str) and p)
        self.process = subprocess.Popen(
            [sys.executable, "-c", f"from {__name__} import main; main()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.calls = calls
        self.dead = False
        self.thread = threading.Thread(target=self._serve, name="axkd-worker", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        while True:
            item = self.calls.get()
            if item is None:
                break
            future, payload = item
            if not future.set_running_or_notify_cancel():
                continue
            error: OSError | None = None
            try:
                _write(stdin, payload)
                reply = _read(stdout)
            except OSError as e:
                reply, error = None, e
            if reply is None:
                self.dead = True
                self.close()
                future.set_exception(WorkerError(f"the worker process ended ({error or 'EOF'})"))
                break
            try:
                ok, value = pickle.loads(reply)
            except Exception as e:  # noqa: BLE001 - the worker goes on; this call failed
                ok, value = False, f"its result could not be unpickled here: {e!r}"
            if ok:
                future.set_result(value)
            else:
                future.set_exception(WorkerError(value))
        # a dead worker fails the calls it takes from now on (no call waits forever on a
        # pool whose workers died); its thread ends with the pool's shutdown
        while self.dead and (item := self.calls.get()) is not None:
            if item[0].set_running_or_notify_cancel():
                item[0].set_exception(WorkerError("the worker process ended"))
        self.close()

    def close(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            try:
                self.process.stdin.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()


class WorkerPool:
    """``workers`` worker processes that run submitted calls, first come first served.

    The processes start with the pool (importing what the calls need happens at the
    first call in each). A call's function and arguments must pickle; its function is
    pickled by reference, so it must be importable (not defined in ``__main__``).

    Args:
        workers: How many processes.
    """

    def __init__(self, workers: int = 1) -> None:
        self.calls: queue.Queue[tuple[Future[Any], bytes] | None] = queue.Queue()
        self.workers = [_Worker(self.calls) for _ in range(workers)]

    @property
    def alive(self) -> bool:
        """Whether every worker process still runs."""
        return all(not w.dead and w.process.poll() is None for w in self.workers)

    def submit(self, function: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run ``function(*args)`` in a worker; pickling errors raise here."""
        payload = pickle.dumps((function, args), protocol=pickle.HIGHEST_PROTOCOL)
        future: Future[Any] = Future()
        self.calls.put((future, payload))
        return future

    def shutdown(self) -> None:
        """Stop the workers once the calls already submitted are done."""
        for _ in self.workers:
            self.calls.put(None)
        for worker in self.workers:
            worker.thread.join(timeout=30)
            worker.close()


_SHARED: dict[int, WorkerPool] = {}
_LOCK = threading.Lock()


def shared_pool(workers: int) -> WorkerPool:
    """The process's pool of ``workers`` workers, started on first use (a dead one anew)."""
    with _LOCK:
        pool = _SHARED.get(workers)
        if pool is not None and not pool.alive:
            pool.shutdown()  # a worker died: the others stop, a new pool starts
            pool = None
        if pool is None:
            pool = _SHARED[workers] = WorkerPool(workers)
        return pool


def shutdown_shared_pools() -> None:
    """Stop every shared pool (the next :func:`shared_pool` starts a new one)."""
    with _LOCK:
        pools = list(_SHARED.values())
        _SHARED.clear()
    for pool in pools:
        pool.shutdown()


atexit.register(shutdown_shared_pools)


def main() -> None:
    """The worker's loop: read a call, run it, write its result, until the input ends.

    Ctrl-C in a terminal reaches the whole process group: the worker ignores it and ends
    when the parent closes its input (the parent decides what an interrupt stops).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what a call prints goes to standard error, not into the replies
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    while (payload := _read(requests)) is not None:
        try:
            function, args = pickle.loads(payload)
            reply = (True, function(*args))
        except Exception as e:  # noqa: BLE001 - reported to the parent
            reply = (False, f"{type(e).__name__}: {e}")
        try:
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # noqa: BLE001 - an unpicklable result
            data = pickle.dumps((False, f"the result could not be pickled: {e!r}"))
        _write(replies, data)
