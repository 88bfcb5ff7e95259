"""Where a run ran: package versions, device and the time stamps of its result."""

from __future__ import annotations

import datetime as _dt
import os
import platform
from importlib import metadata
from pathlib import Path
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


def source_commit(root: Path | None = None) -> dict[str, Any] | None:
    """The git commit of the package's source, and whether it had uncommitted changes.

    Only for this project's own checkout: ``root`` (the folder that holds the package;
    by default this module's) must be the top level of its git repository, with this
    project's ``pyproject.toml`` (``name = "ax-kernel-discovery"``) and the package
    tracked there. ``None`` otherwise: an installed wheel, even one inside another
    project's repository (a virtual environment in it), whose commit would name other
    code; the package version in :func:`package_versions` then names the code.

    Args:
        root: The folder holding the ``ax_kernel_discovery`` package (``None``: where this
            module is).
    """
    import subprocess

    root = (Path(__file__).resolve().parents[2] if root is None else root).resolve()

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

    top = git("rev-parse", "--show-toplevel")
    if not top or Path(top).resolve() != root or not _is_this_project(root / "pyproject.toml"):
        return None
    if not git("ls-files", "--", "ax_kernel_discovery/__init__.py"):
        return None
    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    status = git("status", "--porcelain", "--untracked-files=no", "--", "ax_kernel_discovery")
    return {"commit": commit, "dirty": bool(status)}


def _is_this_project(pyproject: Path) -> bool:
    """Whether ``pyproject`` is this project's (``[project] name = "ax-kernel-discovery"``;
    read as text: ``tomllib`` is Python 3.11+)."""
    import re

    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    section = re.search(r"^\[project\][ \t]*\n(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if section is None:
        return False
    name = re.search(r"^name\s*=\s*[\"']([^\"']+)[\"']", section.group(1), re.M)
    return name is not None and name.group(1) == "ax-kernel-discovery"


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
