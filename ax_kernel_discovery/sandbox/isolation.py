"""Validation of kernel source in a resource-limited child process (:func:`run_isolated`).

The child runs ``python -I`` with a clean environment, a fresh temporary directory,
resource limits and a wall-clock limit; whatever happens there comes back as a
:class:`~ax_kernel_discovery.validation.ValidationResult`.
"""

from __future__ import annotations

import functools
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ax_kernel_discovery.errors import STRICT_ENV, UNEXPECTED, is_kernel_failure, unexpected
from ax_kernel_discovery.sandbox.checker import check_source
from ax_kernel_discovery.sandbox.errors import UnsafeCodeError
from ax_kernel_discovery.sandbox.loader import load_kernel_class
from ax_kernel_discovery.validation import (
    CheckTimeout,
    ValidationOptions,
    ValidationResult,
    check_kernel,
)

__all__ = ["address_space_limit_mb", "run_isolated", "startup_address_space_mb"]


_RESULT_MARKER = "AXKD-RESULT "
_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)  # ax_kernel_discovery/
_MAX_OUTPUT = 1 << 20  # RLIMIT_FSIZE of the child: 1 MB per file

# Applied before anything else runs in the child: the limits, then the package path
# without executing the package's ``__init__`` (it may import Ax; the child needs only
# ``sandbox`` and ``validation``).
_PRELUDE = """\
import json, resource, sys
for _name, _soft, _hard in json.loads(sys.argv[1]):
    _res = getattr(resource, _name)
    _max = resource.getrlimit(_res)[1]
    if _max != resource.RLIM_INFINITY:
        _soft, _hard = min(_soft, _max), min(_hard, _max)
    resource.setrlimit(_res, (_soft, _hard))
import types
_pkg = types.ModuleType("ax_kernel_discovery")
_pkg.__path__ = [sys.argv[2]]
sys.modules["ax_kernel_discovery"] = _pkg
del _name, _soft, _hard, _res, _max, _pkg, types
"""

_WORKER = """\
from ax_kernel_discovery.sandbox.isolation import _worker_main
_worker_main()
"""


def _child_env(home: str) -> dict[str, str]:
    """The complete environment of the child: nothing inherited but ``PATH``/``LANG`` (and
    strict mode, ``$AXKD_STRICT_ERRORS``, :mod:`ax_kernel_discovery.errors`).

    Args:
        home: The child's ``HOME`` (a fresh temporary directory).
    """
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "TMPDIR": home,
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if STRICT_ENV in os.environ:
        env[STRICT_ENV] = os.environ[STRICT_ENV]
    return env


#: What a child maps before any kernel code runs: the imports of the checks and, on
#: CUDA, the CUDA context (measured by :func:`startup_address_space_mb`).
_STARTUP_PROBE = """\
import torch, gpytorch
from ax_kernel_discovery import validation
device = sys.argv[3]
if device != "cpu":
    torch.zeros(1, device=device)
status = open("/proc/self/status").read().splitlines()
print(next(line.split()[1] for line in status if line.startswith("VmPeak:")))
"""

#: The address-space limit where the start-up size cannot be measured (no /proc).
_FALLBACK_MEMORY_MB = 4096


@functools.cache
def startup_address_space_mb(device: str = "cpu") -> int | None:
    """Peak address space (MB) of a sandbox child after its imports, on ``device``.

    Measured once per process and device, in a child started exactly like the validation
    child but without an address-space limit. On CUDA the child also creates its CUDA
    context, so the driver's reservation of virtual address space is included. ``None``
    where it cannot be measured (no ``/proc``, e.g. macOS, where ``RLIMIT_AS`` is not
    enforced either).
    """
    options = ValidationOptions(device=device, fit_timeout=60.0)
    run = _launch(
        _STARTUP_PROBE, "", options, timeout=180.0, extra_args=[device], address_space=False
    )
    try:
        return int(run.stdout.strip().splitlines()[-1]) // 1024 + 1
    except (ValueError, IndexError):
        return None


def address_space_limit_mb(options: ValidationOptions) -> int:
    """The child's ``RLIMIT_AS`` in MB: ``memory_mb``, or measured start-up + headroom."""
    if options.memory_mb is not None:
        return int(options.memory_mb)
    startup = startup_address_space_mb(options.device)
    if startup is None:
        return _FALLBACK_MEMORY_MB
    return startup + int(options.memory_headroom_mb)


def _rlimits(options: ValidationOptions, address_space: bool = True) -> list[tuple[str, int, int]]:
    """``(RLIMIT_NAME, soft, hard)`` triples applied in the child."""
    cpu = int(options.cpu_seconds or math.ceil(options.wall_limit) + 5)
    limits = []
    if address_space:
        mem = address_space_limit_mb(options) * 1024 * 1024
        limits.append(("RLIMIT_AS", mem, mem))
    return [
        *limits,
        ("RLIMIT_CPU", cpu, cpu + 5),
        ("RLIMIT_FSIZE", _MAX_OUTPUT, _MAX_OUTPUT),
        ("RLIMIT_NOFILE", 64, 64),
        ("RLIMIT_CORE", 0, 0),
    ]


@dataclass
class _ChildRun:
    """What came back from one child process."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    wall: float


def _read_limited(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_OUTPUT + 1)
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")


def _launch(
    script: str,
    stdin: str,
    options: ValidationOptions,
    timeout: float,
    extra_args: list[str] | None = None,
    address_space: bool = True,
) -> _ChildRun:
    """Run ``script`` in a fresh, limited interpreter; never raises for child failures.

    The child gets :data:`_PRELUDE` (rlimits, package path) before ``script``, the
    environment of :func:`_child_env`, a temporary cwd/HOME, ``stdin`` from a file and
    stdout/stderr to files. Its process group is killed after ``timeout`` seconds.
    ``extra_args`` follow the prelude's two arguments in ``sys.argv``;
    ``address_space=False`` leaves out the address-space limit (the start-up probe).
    """
    limits = json.dumps(_rlimits(options, address_space))  # may measure the start-up size
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="axkd-sandbox-") as tmp:
        tmp_path = Path(tmp)
        home = tmp_path / "home"
        home.mkdir()
        (tmp_path / "stdin.json").write_text(stdin, encoding="utf-8")
        cmd = [
            sys.executable,
            "-I",
            "-X",
            "utf8",
            "-c",
            _PRELUDE + script,
            limits,
            _PACKAGE_DIR,
            *(extra_args or []),
        ]
        timed_out = False
        with (
            open(tmp_path / "stdin.json", "rb") as fin,
            open(tmp_path / "stdout", "wb") as fout,
            open(tmp_path / "stderr", "wb") as ferr,
        ):
            try:
                proc = subprocess.Popen(
                    cmd,
                    stdin=fin,
                    stdout=fout,
                    stderr=ferr,
                    cwd=str(home),
                    env=_child_env(str(home)),
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as err:
                return _ChildRun(None, "", f"could not start the child: {err}", False, 0.0)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
            finally:
                if proc.poll() is None:
                    _kill_group(proc)
        return _ChildRun(
            proc.returncode,
            _read_limited(tmp_path / "stdout"),
            _read_limited(tmp_path / "stderr"),
            timed_out,
            time.monotonic() - start,
        )


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not fail
        pass


def _tail(text: str, limit: int = 400) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    tail = " | ".join(lines[-3:])
    return tail[-limit:]


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _interpret(run: _ChildRun, options: ValidationOptions) -> ValidationResult:
    """Turn what the child left behind into a :class:`ValidationResult`."""
    timings = {"sandbox": run.wall}
    if run.timed_out:
        return ValidationResult(
            False,
            f"timeout: the sandboxed validation exceeded its wall-clock limit "
            f"({options.wall_limit:g} s) and was killed",
            "timeout",
            timings,
        )
    result: ValidationResult | None = None
    for line in reversed(run.stdout.splitlines()):
        if line.startswith(_RESULT_MARKER):
            try:
                result = ValidationResult.from_dict(json.loads(line[len(_RESULT_MARKER) :]))
            except (ValueError, TypeError) as err:
                return ValidationResult(
                    False, f"sandbox: unreadable result from the child ({err})", "sandbox", timings
                )
            break
    rc = run.returncode
    if result is not None:
        # Only the worker writes to stdout (kernel prints go to stderr), so a result line
        # is trustworthy even if the interpreter died on the way out.
        result.timings.update(timings)
        return result
    if rc is not None and rc < 0:
        sig = -rc
        name = _signal_name(sig)
        if sig == getattr(signal, "SIGXCPU", None):
            return ValidationResult(
                False,
                f"timeout: the child exceeded its CPU-time limit ({options.cpu_seconds} s)",
                "timeout",
                timings,
            )
        what = {
            "SIGXFSZ": "exceeded the file-size limit (too much output?)",
            "SIGKILL": "was killed (out of memory?)",
            "SIGSEGV": "crashed (segmentation fault)",
            "SIGABRT": "aborted",
        }.get(name, "was terminated")
        detail = _tail(run.stderr)
        return ValidationResult(
            False,
            f"sandbox: the child {what} by {name}" + (f": {detail}" if detail else ""),
            "sandbox",
            timings,
        )
    detail = _tail(run.stderr) or _tail(run.stdout) or "no output"
    if "File too large" in run.stderr:
        return ValidationResult(
            False,
            f"sandbox: the child exceeded the file-size limit ({_MAX_OUTPUT} bytes; too much "
            f"output?): {detail}",
            "sandbox",
            timings,
        )
    if "MemoryError" in run.stderr or "can't allocate memory" in run.stderr:
        return ValidationResult(
            False,
            f"sandbox: the child ran out of memory (address-space limit "
            f"{address_space_limit_mb(options)} MB): {detail}",
            "sandbox",
            timings,
        )
    return ValidationResult(
        False,
        f"sandbox: the child exited with code {rc} without a valid result: {detail}",
        "sandbox",
        timings,
    )


def run_isolated(
    code: str, dim: int, class_name: str | None = None, options: ValidationOptions | None = None
) -> ValidationResult:
    """Validate untrusted kernel source in a resource-limited child process.

    :func:`check_source` runs first in this process (a rejection needs no child). Then a
    child loads the class with :func:`load_kernel_class` and runs
    :func:`~ax_kernel_discovery.validation.check_kernel` with
    ``factory = lambda d: cls(ard_num_dims=d)``.

    Args:
        code: Kernel source.
        dim: Input dimension D.
        class_name: Class to take (first Kernel subclass in ``code`` if None).
        options: Check and sandbox settings.

    Returns:
        The child's :class:`ValidationResult` (with ``timings["sandbox"]``, the wall time
        of the child), or a failure of stage ``syntax``/``sandbox``/``timeout``; stage
        ``unexpected`` for an error in the child that is no kernel failure (a bug:
        :func:`~ax_kernel_discovery.errors.unexpected` raises it here in strict mode).
    """
    opts = options or ValidationOptions()
    try:
        check_source(code)
    except UnsafeCodeError as err:
        return ValidationResult(False, err.reason, err.stage)
    payload = json.dumps(
        {
            "code": code,
            "dim": int(dim),
            "class_name": class_name,
            "options": opts.model_dump(),
            "deadline": time.time() + opts.wall_limit,
        }
    )
    # The child stops itself (stage "timeout" with the phase) wall_limit seconds after
    # this launch; the parent kills it shortly after in case it is stuck in native code.
    try:
        run = _launch(_WORKER, payload, opts, timeout=opts.wall_limit + 5.0)
        result = _interpret(run, opts)
    except (OSError, subprocess.SubprocessError) as err:  # no child: the sandbox failed
        return ValidationResult(False, f"sandbox: {type(err).__name__}: {err}", "sandbox")
    if result.stage == UNEXPECTED:  # a bug in the child: raised here in strict mode
        unexpected(RuntimeError(f"the sandbox's child: {result.reason}"), "the sandbox")
    return result


def _worker_main() -> None:
    """Entry point of the child process (see :data:`_WORKER`)."""
    started = time.monotonic()
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # kernel prints must not corrupt the result line
    limit = "?"
    result: ValidationResult
    try:
        import torch

        torch.set_num_threads(1)
        payload = json.loads(sys.stdin.read())
        options = ValidationOptions(**payload["options"])
        limit = f"{options.wall_limit:g}"
        remaining = float(payload["deadline"]) - time.time()

        def _on_alarm(signum: int, frame: Any) -> None:
            raise CheckTimeout()

        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, max(remaining, 0.05))
        try:
            try:
                cls = load_kernel_class(payload["code"], payload.get("class_name"))
            except UnsafeCodeError as err:
                result = ValidationResult(False, err.reason, err.stage)
            except ValueError as err:
                result = ValidationResult(False, str(err), "load")
            else:
                result = check_kernel(lambda d: cls(ard_num_dims=d), payload["dim"], options)
        except CheckTimeout:
            result = ValidationResult(
                False, "timeout: time limit reached while loading the kernel code", "timeout"
            )
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except MemoryError as err:
        result = ValidationResult(False, f"error: memory: {err}", "error")
    except BaseException as err:  # noqa: BLE001 - report, never crash silently
        # the kernel's own code (a SystemExit in its forward) or a bug of the child's
        stage = "error" if is_kernel_failure(err) else UNEXPECTED
        result = ValidationResult(False, f"error: {type(err).__name__}: {err}"[:500], stage)
    if result.stage == "timeout" and result.reason and result.reason.startswith("timeout: time"):
        result.reason += f" (sandbox wall-clock limit {limit} s)"
    result.timings["child"] = time.monotonic() - started
    real_stdout.write(_RESULT_MARKER + json.dumps(result.to_dict()) + "\n")
    real_stdout.flush()
