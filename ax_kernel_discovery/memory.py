"""Memory probe: would a kernel's intermediates explode at the run's n and D?

A kernel written as a pairwise-difference tensor holds ``n x n x D`` numbers at once:
``1000 x 1000 x 6392 x 8`` bytes is 51 GB at Humanoid scale, while RBF through
``covar_dist`` needs ``n x n``. Reading code cannot tell these apart reliably (a
``torch.vmap`` over pairs, a broadcast hidden in a helper), so :func:`probe_kernel_memory`
*measures*: it evaluates the kernel (forward and backward) on two small sizes at the
run's real ``D`` while a ``TorchDispatchMode`` records the largest tensor any operation
produces, fits the growth ``largest(n) ~ c * n^p`` from the two sizes, and extrapolates
to the run's ``n``.

Example:
    >>> from gpytorch.kernels import RBFKernel
    >>> probe = probe_kernel_memory(RBFKernel(ard_num_dims=50), dim=50, n=1000)
    >>> probe.predicted_bytes < 50e6  # n x n doubles, not n x n x D
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain

import torch
from gpytorch.kernels import Kernel
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

PROBE_SIZES: tuple[int, int] = (16, 32)
"""The two numbers of points the probe evaluates."""


class _LargestTensor(TorchDispatchMode):
    """Records the largest tensor (in bytes) produced by any operation."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel() * t.element_size())
        return out


@dataclass(frozen=True)
class MemoryProbe:
    """What the probe measured and predicts.

    Attributes:
        largest: Largest intermediate (bytes) at each probe size.
        exponent: Fitted growth exponent ``p`` in ``largest ~ c * n^p``.
        predicted_bytes: The largest intermediate extrapolated to the run's ``n``.
    """

    largest: tuple[int, int]
    exponent: float
    predicted_bytes: float

    def describe(self, n: int, dim: int) -> str:
        return (
            f"largest intermediate grows as n^{self.exponent:.1f} at D={dim} "
            f"({self.largest[0] / 1e6:.2f} MB at n={PROBE_SIZES[0]}, "
            f"{self.largest[1] / 1e6:.2f} MB at n={PROBE_SIZES[1]}): "
            f"{self.predicted_bytes / 1e9:.2f} GB predicted at n={n}"
        )


def _device_of(kernel: Kernel) -> torch.device:
    """Where the kernel's parameters and buffers live (CPU for a kernel without any)."""
    for tensor in chain(kernel.parameters(), kernel.buffers()):
        return tensor.device
    return torch.device("cpu")


def _largest(kernel: Kernel, dim: int, n: int, dtype: torch.dtype) -> int:
    # the same inputs on every device: drawn on the CPU, then moved to the kernel's
    gen = torch.Generator().manual_seed(n)
    x = torch.rand(n, dim, generator=gen, dtype=dtype, device="cpu")
    x = x.to(_device_of(kernel)).requires_grad_()
    mode = _LargestTensor()
    with mode:
        K = kernel(x, x).to_dense()
        K.sum().backward()
    return mode.largest


def probe_kernel_memory(
    kernel: Kernel, dim: int, n: int, dtype: torch.dtype = torch.float64
) -> MemoryProbe:
    """Measure a kernel's largest intermediate at two sizes and extrapolate to ``n``.

    Args:
        kernel: The kernel (evaluated in float64 by default, as BO fits it), on the
            device it will be fitted on: the probe's inputs are drawn there.
        dim: The run's input dimension (the probe uses it as is).
        n: The run's number of points.
        dtype: Dtype of the probe inputs.

    Returns:
        A :class:`MemoryProbe`; the exponent is clipped to ``[0, 4]``.
    """
    kernel = kernel.to(dtype)
    small, large = (_largest(kernel, dim, m, dtype) for m in PROBE_SIZES)
    exponent = 0.0
    if small > 0 and large > small:
        exponent = math.log(large / small) / math.log(PROBE_SIZES[1] / PROBE_SIZES[0])
    exponent = min(max(exponent, 0.0), 4.0)
    predicted = large * (n / PROBE_SIZES[1]) ** exponent if n > PROBE_SIZES[1] else float(large)
    return MemoryProbe((small, large), exponent, predicted)


__all__ = ["PROBE_SIZES", "MemoryProbe", "probe_kernel_memory"]
