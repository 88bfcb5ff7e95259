"""Worker processes that run pickled calls: the fits of ``fit_workers`` and ``background_fits``.

A worker is a fresh interpreter running :func:`main` of this module (this file alone: the
package is imported by the first call that needs it) with the parent's ``sys.path`` and
one torch thread, that reads calls from its standard input and writes
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

A worker dies with its parent, however the parent ends (an exception, SIGTERM,
SIGKILL), even in the middle of a call whose result nobody can read any more: a thread
of the worker reads its input, and the input's end while a call runs or waits ends the
process at once (the parent's end of the pipe closes when the parent dies); another
thread ends it when its parent process changes (the parent died while something it
started still holds the pipe open). Both are portable: no ``prctl``, whose death signal
follows the parent *thread* that started the worker, not the process.

A shared pool (:func:`shared_pool`) is kept for later rounds; the objects that use it
(a surrogate, its fitter) are its users, and :func:`release_shared_pools` stops a pool
whose last user lets it go (``KernelDiscoverySurrogate.close()``); a pool whose users
were all garbage-collected stops by itself when idle.

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
import time
import weakref
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from typing import IO, Any

__all__ = [
    "CALL_FAILURES",
    "SUBMIT_FAILURES",
    "WorkerError",
    "WorkerPool",
    "release_shared_pools",
    "shared_pool",
    "shutdown_shared_pools",
]

_HEADER = struct.Struct("<Q")

#: Seconds between two checks of a worker that its parent still runs, and of an idle
#: pool's thread that its pool still has a user.
POLL_SECONDS = 0.5


class WorkerError(RuntimeError):
    """A worker process failed: it died, or the call raised there (its ``repr`` is the message)."""


#: What a call's future may fail with: its worker failed (:class:`WorkerError`), or the
#: call was cancelled before it ran (a pool shut down). The caller then runs the call in
#: its own process, where an error the call raised is raised (and classified) again.
CALL_FAILURES: tuple[type[BaseException], ...] = (WorkerError, CancelledError)

#: What :meth:`WorkerPool.submit` may fail with: a pool shut down (:class:`WorkerError`),
#: or arguments pickle cannot take (``PicklingError``, or the ``TypeError`` and
#: ``AttributeError`` of an unpicklable or local object).
SUBMIT_FAILURES: tuple[type[BaseException], ...] = (
    WorkerError,
    pickle.PicklingError,
    TypeError,
    AttributeError,
)


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


def _command() -> list[str]:
    """The worker's command line: this file run on its own (it needs only the standard
    library), so that a worker starts in a fraction of a second and imports the package
    at its first call that needs it (the calls' functions are pickled by reference)."""
    path = os.path.abspath(__file__)
    if not os.path.isfile(path):  # not a file (a zip import): through the package
        return [sys.executable, "-c", f"from {__name__} import main; main()"]
    boot = (
        "import importlib.util as u; "
        f"s = u.spec_from_file_location('axkd_worker', {path!r}); "
        "m = u.module_from_spec(s); s.loader.exec_module(m); m.main()"
    )
    return [sys.executable, "-c", boot]


class _Worker:
    """One worker process and the thread that feeds it calls from its pool's queue."""

    def __init__(self, pool: WorkerPool) -> None:
        env = dict(os.environ)
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")  # one torch thread a worker
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if isinstance(p, str) and p)
        self.process = subprocess.Popen(
            _command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.pool = pool
        self.calls = pool.calls
        self.dead = False
        self.thread = threading.Thread(target=self._serve, name="axkd-worker", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        while True:
            try:
                item = self.calls.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if self.pool._retire_if_unused():
                    break
                continue
            if item is None:
                break
            future, payload = item
            if not future.set_running_or_notify_cancel():
                continue
            error: OSError | ValueError | None = None
            try:
                _write(stdin, payload)
                reply = _read(stdout)
            except (OSError, ValueError) as e:  # ValueError: a pipe closed by shutdown
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
        # pool whose workers died); its thread ends with the pool (shut down, or unused)
        while self.dead:
            try:
                item = self.calls.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if self.pool._retire_if_unused():
                    break
                continue
            if item is None:
                break
            if item[0].set_running_or_notify_cancel():
                item[0].set_exception(WorkerError("the worker process ended"))
        self.close()

    def kill(self) -> None:
        """End the process now, in the middle of a call if it runs one (its future fails)."""
        try:
            self.process.kill()
        except OSError:
            pass

    def close(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            try:
                self.process.stdin.close()
            except (OSError, ValueError):
                pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


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
        self._lock = threading.Lock()
        self._closed = False
        #: The objects using the pool (weakly held, by id; see :func:`shared_pool`).
        self._users: dict[int, Callable[[], object | None]] = {}
        self._had_users = False
        self.workers = [_Worker(self) for _ in range(workers)]

    @property
    def alive(self) -> bool:
        """Whether the pool takes calls and every worker process still runs."""
        return not self._closed and all(
            not w.dead and w.process.poll() is None for w in self.workers
        )

    def submit(self, function: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run ``function(*args)`` in a worker; pickling errors raise here, and so does
        a pool that was shut down (:class:`WorkerError`)."""
        payload = pickle.dumps((function, args), protocol=pickle.HIGHEST_PROTOCOL)
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise WorkerError("the worker pool was shut down")
            self.calls.put((future, payload))
        return future

    def shutdown(self, wait: bool = True, cancel: bool = False) -> None:
        """Stop the workers once the calls already submitted are done.

        Args:
            wait: Wait until the processes and their threads have ended.
            cancel: Do not wait for the calls: those not started are cancelled, the
                processes of those running are killed (their futures fail with
                :class:`WorkerError`).
        """
        with self._lock:
            self._closed = True
        if cancel:
            while True:
                try:
                    item = self.calls.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
            for worker in self.workers:
                worker.kill()
        for _ in self.workers:
            self.calls.put(None)
        if wait:
            for worker in self.workers:
                worker.thread.join(timeout=30)
                worker.close()

    def _add_user(self, user: object) -> None:
        with self._lock:
            self._had_users = True
            held = self._users.get(id(user))
            if held is None or held() is not user:
                try:
                    self._users[id(user)] = weakref.ref(user)
                except TypeError:  # not weakly referable: held until it is released
                    self._users[id(user)] = lambda: user

    def _drop_user(self, user: object) -> None:
        with self._lock:
            held = self._users.get(id(user))
            if held is not None and held() is user:
                del self._users[id(user)]

    def _unused(self) -> bool:
        """Whether the pool had users and none is left (call with the lock held)."""
        return self._had_users and all(held() is None for held in list(self._users.values()))

    def _retire_if_unused(self) -> bool:
        """An idle worker thread's check: whether the pool is closed, or now closes
        because its users are gone (garbage-collected without releasing it)."""
        with self._lock:
            if not self._closed and self._unused() and self.calls.empty():
                self._closed = True
            return self._closed


_SHARED: dict[int, WorkerPool] = {}
_LOCK = threading.Lock()


def shared_pool(workers: int, user: object | None = None) -> WorkerPool:
    """The process's pool of ``workers`` workers, started on first use (a dead one anew).

    Args:
        workers: How many processes.
        user: The object the pool now serves (held weakly, by identity): the pool stops
            when every user has released it (:func:`release_shared_pools`) or has been
            garbage-collected. A pool that never had a user lasts as long as the process.
    """
    with _LOCK:
        pool = _SHARED.get(workers)
        if pool is not None and not pool.alive:
            pool.shutdown()  # a worker died, or its users left: a new pool starts
            pool = None
        if pool is None:
            pool = _SHARED[workers] = WorkerPool(workers)
        if user is not None:
            pool._add_user(user)
        return pool


def release_shared_pools(*users: object) -> None:
    """``users`` no longer use the shared pools; a pool left without a user stops
    (waiting for its calls, its processes and their threads)."""
    with _LOCK:
        unused = []
        for workers, pool in list(_SHARED.items()):
            for user in users:
                pool._drop_user(user)
            with pool._lock:
                if pool._unused():
                    unused.append(_SHARED.pop(workers))
    for pool in unused:
        pool.shutdown()


def shutdown_shared_pools() -> None:
    """Stop every shared pool (the next :func:`shared_pool` starts a new one)."""
    with _LOCK:
        pools = list(_SHARED.values())
        _SHARED.clear()
    for pool in pools:
        pool.shutdown()


atexit.register(shutdown_shared_pools)


def _watch_parent(parent: int) -> None:
    """End this process once its parent changes (the parent died)."""
    while True:
        time.sleep(POLL_SECONDS)
        if os.getppid() != parent:
            os._exit(1)


def main() -> None:
    """The worker's loop: read a call, run it, write its result, until the input ends.

    A thread reads the input: when it ends while a call runs or waits, nobody can read
    their results (the parent died or gave up on them) and the process ends at once;
    when it ends between calls, the loop ends. Another thread ends the process when its
    parent changes.

    Ctrl-C in a terminal reaches the whole process group: the worker ignores it and ends
    when the parent closes its input (the parent decides what an interrupt stops).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what a call prints goes to standard error, not into the replies
    sys.stdout = sys.stderr
    calls: queue.Queue[bytes | None] = queue.Queue()
    lock = threading.Lock()
    unanswered = [0]  # calls read and not yet answered

    def read() -> None:
        requests = sys.stdin.buffer
        while (payload := _read(requests)) is not None:
            with lock:
                unanswered[0] += 1
            calls.put(payload)
        with lock:
            if unanswered[0]:
                os._exit(1)
        calls.put(None)

    threading.Thread(target=read, name="axkd-worker-input", daemon=True).start()
    threading.Thread(
        target=_watch_parent, args=(parent,), name="axkd-worker-parent", daemon=True
    ).start()
    while (payload := calls.get()) is not None:
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
        with lock:
            unanswered[0] -= 1
