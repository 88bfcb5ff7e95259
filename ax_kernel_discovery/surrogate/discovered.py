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
        """The member's covariance; a cross-covariance against rows that are the same in
        every batch is computed once and broadcast (see :func:`shared_rows`).

        A member built from the package's kernels (an expression tree) broadcasts over
        batch dimensions, so the result is the batched computation's to rounding (a
        matrix product against one copy may be blocked differently). In an acquisition
        step GPyTorch's exact prediction evaluates the candidates against the training
        inputs broadcast to the candidates' batch (``b x n x D``), and the member's input
        maps (warps, lengthscales) and their gradients were computed for each of the
        ``b`` copies. A member of LLM-written code is evaluated as it is (its code need
        not broadcast).
        """
        if not diag and not params.get("last_dim_is_batch") and self.candidate.spec is not None:
            shared = shared_rows(x1, x2)
            if shared is not None:
                out = self.inner.forward(x1, shared, diag=False, **params)
                batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
                return out.expand(*batch, x1.shape[-2], x2.shape[-2])
        return self.inner.forward(x1, x2, diag=diag, **params)


def shared_rows(x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor | None:
    """One batch entry of ``x2`` (its batch dimensions of size 1) when all of them hold the
    same rows and the block is a cross-covariance; otherwise ``None``.

    This is the test-train block of GPyTorch's exact prediction, ``K(X_test, X_train)``:
    ``ExactGP`` concatenates the training inputs, broadcast to the test inputs' batch,
    with the test inputs, and slices the blocks out of the joint kernel matrix. Equal
    batch entries are taken to be one tensor broadcast (gradients flow into the first
    entry, which for a broadcast tensor is the same total). A symmetric block (``x1``
    equal to ``x2``, the test-test block) is never reduced: there equal batch entries may
    be separate candidates that happen to coincide (two restarts at one point), each
    needing its own gradient.
    """
    if x2.dim() < 3 or x2.shape[:-2].numel() < 2:
        return None
    if x1.shape == x2.shape and (x1 is x2 or torch.equal(x1, x2)):
        return None
    flat = x2.reshape(-1, *x2.shape[-2:])
    first = flat[:1]
    if not torch.equal(first.expand_as(flat), flat):
        return None
    return first.reshape(*([1] * (x2.dim() - 2)), *x2.shape[-2:])


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
