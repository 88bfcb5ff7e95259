"""Where a run ran: package versions, device and the time stamps of its result."""

from __future__ import annotations

import datetime as _dt
import os
import platform
from importlib import metadata
from typing import Any

__all__ = ["device_info", "package_versions", "source_commit", "utc_now"]


def package_versions() -> dict[str, str | None]:
    """Versions of the packages that decide the numbers."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in (
        "ax-platform",
        "botorch",
        "gpytorch",
        "torch",
        "ax-kernel-discovery",
        "numpy",
        "scipy",
        "scikit-learn",
    ):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def source_commit() -> dict[str, Any] | None:
    """The git commit of the package's source, and whether it had uncommitted changes.

    ``None`` when the package is not run from a git checkout (an installed wheel); the
    package version in :func:`package_versions` then names the code.
    """
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", "-C", str(root), *args],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    status = git("status", "--porcelain", "--untracked-files=no", "--", "ax_kernel_discovery")
    return {"commit": commit, "dirty": bool(status)}


def _cpu_model() -> str | None:
    """The CPU's model name (Linux's ``/proc/cpuinfo``), ``None`` where it cannot be read."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def device_info(device: str = "cpu") -> dict[str, Any]:
    """Where the run happened: torch device, CPU, cores, threads.

    ``cpu_capability`` is the instruction set torch's CPU kernels use (``AVX512``,
    ``AVX2``, ...): a run repeated on one machine gives the same values, while on a CPU of
    another model or capability it can part from them (float sums are ordered
    differently), so these say which runs may be compared bit for bit."""
    import torch

    info: dict[str, Any] = {
        "torch_device": device,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_count": os.cpu_count(),
        "cuda_available": torch.cuda.is_available(),
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        info["cuda_device"] = torch.cuda.get_device_name(torch.device(device))
    return info


def utc_now() -> str:
    """The current UTC time in ISO 8601, to the second."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
