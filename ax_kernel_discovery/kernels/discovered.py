"""The kernel class Ax sees: any population member, rebuilt from its JSON description."""

from __future__ import annotations

from typing import Any

import torch
from gpytorch.kernels import Kernel

from ax_kernel_discovery.candidate import KernelCandidate


class DiscoveredKernel(Kernel):
    r"""Wraps a population member so that Ax can build, store and reload it.

    Ax's :class:`~ax.generators.torch.botorch_modular.utils.ModelConfig` takes a kernel
    *class* and keyword options; this class takes the member as JSON
    (``candidate``) and builds its kernel, so that the ``ModelConfig`` of the chosen
    kernel round-trips through Ax's JSON storage.

    .. math::

        k(x, x') = k_{\text{member}}(x, x')

    Args:
        candidate: ``KernelCandidate.model_dump_json()`` of the member.
        ard_num_dims: Input dimension D (filled by Ax from the dataset).
        **kwargs: Passed to :class:`gpytorch.kernels.Kernel`.
    """

    def __init__(self, candidate: str, ard_num_dims: int, **kwargs: Any) -> None:
        kwargs.pop("batch_shape", None)
        super().__init__(**kwargs)
        self.candidate = KernelCandidate.model_validate_json(candidate)
        self.inner = self.candidate.build(int(ard_num_dims))

    @property
    def formula(self) -> str:
        return self.candidate.formula

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params: Any
    ) -> torch.Tensor:
        return self.inner.forward(x1, x2, diag=diag, **params)


def _register_argparse() -> None:
    """Tell Ax to fill ``ard_num_dims`` from the dataset when it builds this kernel."""
    from ax.generators.torch.botorch_modular.input_constructors.covar_modules import (
        covar_module_argparse,
    )

    @covar_module_argparse.register(DiscoveredKernel)
    def _argparse_discovered(
        covar_module_class: type[DiscoveredKernel],
        botorch_model_class: Any = None,
        dataset: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        kwargs.pop("remove_task_features", None)
        if "ard_num_dims" not in kwargs and dataset is not None:
            kwargs["ard_num_dims"] = dataset.X.shape[-1]
        return kwargs


_register_argparse()
