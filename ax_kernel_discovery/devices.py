"""The torch device a run uses: names checked, ``auto`` resolved, availability checked.

One resolution for every method (kernel discovery, the fixed-kernel baselines, greedy
and compositional search, CAKE, Ax's default), so that their timings on one machine
compare the same device. :class:`~ax_kernel_discovery.config.KernelDiscoveryConfig`
checks its ``device`` with :func:`check_device_name`; validation runs on the device
:func:`resolve_device` gives.
"""

from __future__ import annotations

import os

import torch

__all__ = [
    "DeviceUnavailableError",
    "check_device",
    "check_device_name",
    "device_label",
    "resolve_device",
    "usable_cores",
]


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def device_label(device: str) -> str:
    """``device`` and, for a CUDA device, the GPU's name (``torch.cuda.get_device_name``),
    as benchmarks print it."""
    if device.startswith("cuda"):
        return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
    return device


def check_device_name(device: str) -> str:
    """``device`` if it names a device this package runs on, else a ``ValueError`` saying so."""
    if device in ("auto", "cpu", "cuda") or (device.startswith("cuda:") and device[5:].isdigit()):
        return device
    raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")


def resolve_device(device: str | None = None) -> str:
    """The torch device every method runs on: ``None`` is Ax's choice (the CPU: Ax runs on
    a GPU only when asked to), ``auto`` is CUDA when available.

    One resolution for all methods (kernel discovery, the fixed-kernel baselines, greedy
    and compositional search, CAKE, Ax's default), so that their timings on one machine
    compare the same device.

    Raises:
        ValueError: A malformed device string.
        DeviceUnavailableError: CUDA asked for but not available (a ``RuntimeError``).

    Example:
        >>> resolve_device("cpu")
        'cpu'
    """
    if device is None:
        return "cpu"
    device = check_device_name(device)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return check_device(device)


class DeviceUnavailableError(RuntimeError):
    """A torch device was asked for that this machine or this torch build cannot use."""


def check_device(device: str) -> str:
    """``device`` if torch can use it here; a clear error before any evaluation otherwise.

    Args:
        device: A torch device string (``cpu``, ``cuda``, ``cuda:N``).

    Returns:
        ``device`` unchanged.

    Raises:
        DeviceUnavailableError: CUDA was asked for but is not available (a CPU-only torch
            build, or no GPU), or ``cuda:N`` names a GPU that does not exist.
    """
    if not str(device).startswith("cuda"):
        return device
    if not torch.cuda.is_available():
        build = "a CPU-only torch build" if torch.version.cuda is None else "no usable GPU"
        raise DeviceUnavailableError(
            f"device {device!r} was asked for but CUDA is not available ({build}, torch "
            f"{torch.__version__}): use device 'cpu' (or 'auto', which picks CUDA when present)"
        )
    index = str(device).partition(":")[2]
    if index and int(index) >= torch.cuda.device_count():
        raise DeviceUnavailableError(
            f"device {device!r} was asked for but this machine has "
            f"{torch.cuda.device_count()} CUDA device(s): use cuda:0 .. "
            f"cuda:{torch.cuda.device_count() - 1}, or 'auto'"
        )
    return device
