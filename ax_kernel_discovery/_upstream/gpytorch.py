"""GPyTorch internals that kernel discovery relies on (checked on gpytorch 1.15.2).

See ``ax_kernel_discovery._upstream`` for why they are gathered here.
"""

from __future__ import annotations

import torch
from gpytorch.kernels import Kernel
from gpytorch.models import ExactGP
from torch import Tensor


def own_batch_shape(kernel: Kernel) -> torch.Size:
    """The batch shape ``kernel`` was built with, before its sub-kernels are broadcast in.

    GPyTorch keeps it in ``Kernel._batch_shape`` (set from ``batch_shape=`` in
    ``Kernel.__init__``); the public ``Kernel.batch_shape`` property broadcasts it with
    every sub-kernel's and its setter writes ``_batch_shape``.
    """
    return kernel._batch_shape


def set_own_batch_shape(kernel: Kernel, value: torch.Size) -> None:
    """Set the batch shape ``kernel`` holds itself (what ``Kernel.batch_shape``'s setter
    writes, ``Kernel._batch_shape``), for a subclass that overrides the property."""
    kernel._batch_shape = value


def prediction_caches(model: ExactGP) -> tuple[Tensor, Tensor]:
    """The exact GP's prediction caches ``(mean_cache, covar_cache)``.

    After an eval-mode call of ``model``, GPyTorch keeps its prediction strategy in
    ``model.prediction_strategy``; ``mean_cache`` is ``(K_TT + Sigma)^-1 (y - mu)`` (shape
    ``n``) and ``covar_cache`` a root ``S`` with ``S S^T = (K_TT + Sigma)^-1`` (``n x r``),
    both computed on first access and then kept.
    """
    strategy = model.prediction_strategy
    return strategy.mean_cache, strategy.covar_cache


__all__ = ["own_batch_shape", "prediction_caches", "set_own_batch_shape"]
