"""The kernel class Ax sees: any population member, rebuilt from its JSON description."""

from __future__ import annotations

from typing import Any

import torch
from gpytorch.kernels import Kernel

from ax_kernel_discovery._upstream.gpytorch import own_batch_shape, set_own_batch_shape
from ax_kernel_discovery.candidate import KernelCandidate


class DiscoveredKernel(Kernel):
    r"""Wraps a population member so that Ax can build, store and reload it.

    Ax's :class:`~ax.generators.torch.botorch_modular.utils.ModelConfig` takes a kernel
    *class* and keyword options; this class takes the member as JSON
    (``candidate``) and builds its kernel, so that the ``ModelConfig`` of the chosen
    kernel round-trips through Ax's JSON storage.

    .. math::

        k(x, x') = k_{\text{member}}(x, x')

    The kernel is unbatched by design: it ignores ``batch_shape`` (a batched model, several
    outcomes in one ``SingleTaskGP``, shares one set of kernel hyperparameters, because
    LLM-written code need not support batched parameters), broadcasts over any batch of
    inputs, and ``expand_batch`` and indexing return the kernel itself.

    A kernel built from LLM-written code is an instance of a class that exists only in
    the sandbox loader's namespace, which ``pickle`` cannot name; such a wrapper pickles
    the candidate (its source) and the inner kernel's state dict, and rebuilds the
    inner kernel when unpickled (also by ``copy.deepcopy``).

    It is not a kernel to name in a ``ModelConfig`` by itself (Ax's custom-kernel
    recipe, ``ModelConfig(covar_module_class=DiscoveredKernel)``): without its
    ``candidate`` it says what to use instead, :func:`~ax_kernel_discovery.model_config_for`.

    Args:
        candidate: ``KernelCandidate.model_dump_json()`` of the member.
        ard_num_dims: Input dimension D (filled by Ax from the dataset).
        **kwargs: Passed to :class:`gpytorch.kernels.Kernel` (``batch_shape`` is dropped).

    Raises:
        TypeError: No ``candidate`` (or no ``ard_num_dims``), with the way that works.
    """

    def __init__(
        self, candidate: str | None = None, ard_num_dims: int | None = None, **kwargs: Any
    ) -> None:
        if candidate is None or ard_num_dims is None:
            missing = "candidate" if candidate is None else "ard_num_dims"
            raise TypeError(
                f"DiscoveredKernel needs {missing!r}: it wraps one kernel of a population "
                "(candidate=KernelCandidate.model_dump_json()) so that Ax can store it, and "
                "is not a kernel to name in a ModelConfig by itself. For one kernel in your "
                "own SurrogateSpec use ax_kernel_discovery.model_config_for(kernel) (a "
                "library kernel 'kernels.json:NAME', a KernelCandidate or a base kernel "
                "name), e.g. SurrogateSpec(model_configs=[model_config_for(kernel)]); for "
                "kernel discovery itself, kernel_discovery_generation_strategy()"
            )
        kwargs.pop("batch_shape", None)
        super().__init__(**kwargs)
        self.candidate = KernelCandidate.model_validate_json(candidate)
        self.dim = int(ard_num_dims)
        self.inner = self.candidate.build(self.dim)

    @property
    def formula(self) -> str:
        return self.candidate.formula

    @property
    def batch_shape(self) -> torch.Size:
        """``torch.Size([])``: the kernel is unbatched (its inner kernel is built unbatched).

        GPyTorch's ``Kernel.batch_shape`` walks every sub-kernel's modules on each access
        (and each sub-kernel walks its own again); GPyTorch reads it for every lazily
        evaluated kernel matrix, so for a composite kernel the walk took about a quarter of
        each acquisition step.
        """
        return own_batch_shape(self)

    @batch_shape.setter
    def batch_shape(self, value: torch.Size) -> None:
        set_own_batch_shape(self, value)

    def expand_batch(self, *sizes: torch.Size | tuple[int, ...]) -> DiscoveredKernel:
        """The kernel itself: it is unbatched and broadcasts over any batch of inputs."""
        return self

    def __getitem__(self, index: Any) -> DiscoveredKernel:
        """The kernel itself (unbatched: every batch shares its hyperparameters)."""
        return self

    def __getstate__(self) -> dict[str, Any]:
        state = dict(super().__getstate__())
        if self.candidate.code is None:
            return state  # built from the package's own classes: pickles as it is
        modules = dict(state["_modules"])
        inner = modules.pop("inner")
        state["_modules"] = modules
        state["_inner_state"] = (inner.state_dict(), inner.training)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        inner_state = state.pop("_inner_state", None)
        super().__setstate__(state)
        if inner_state is not None:
            state_dict, training = inner_state
            inner = self.candidate.build(self.dim)
            inner.load_state_dict(state_dict, assign=True)
            self.inner = inner.train(training)

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
