r"""Input-map kernels: a base kernel evaluated on a map of the inputs.

For a PSD base kernel :math:`k_0` and any deterministic map :math:`\phi`,

.. math::

    k(x, x') = k_0\big(\phi(x), \phi(x')\big)

is PSD. :class:`InputMapKernel` holds :math:`k_0` and evaluates it on :math:`\phi`; its
subclasses define the map and its parameters: the monotone warps of
:class:`~ax_kernel_discovery.kernels.warped.WarpedKernel` and the dimension-changing
feature maps of :class:`~ax_kernel_discovery.kernels.feature_maps.FeatureMapKernel`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from itertools import chain
from typing import Any, ClassVar

import torch
from gpytorch.kernels import Kernel

from ax_kernel_discovery._upstream.gpytorch import own_batch_shape, set_own_batch_shape

#: How many mapped inputs an input-map kernel keeps in eval mode (see InputMapKernel).
MAP_CACHE_SIZE = 4


def same_input(x1: torch.Tensor, x2: torch.Tensor) -> bool:
    """Whether ``x1`` and ``x2`` are the same input: one tensor, or one view taken twice.

    Two differentiable views of one base with the same offset, shape, strides and dtype
    have the same values and the same gradients, so a map of one serves for the other.
    GPyTorch's exact prediction evaluates ``K(X*, X*)`` on two such slices of its joint
    inputs. Equal values alone do not count: ``x`` and ``x.detach()`` differ in gradient.
    """
    if x1 is x2:
        return True
    base = x1._base
    return (
        base is not None
        and base is x2._base
        and x1.storage_offset() == x2.storage_offset()
        and x1.shape == x2.shape
        and x1.stride() == x2.stride()
        and x1.dtype == x2.dtype
        and x1.requires_grad == x2.requires_grad
        and (x1.grad_fn is None) == (x2.grad_fn is None)
    )


class _MapCache:
    """The last few ``(input, phi(input))`` pairs of one kernel, for gradient-free use.

    An entry holds a copy of its input (not a reference: an input changed in place, even
    through ``.data``, must not match) and is looked up by equal shape, strides, dtype,
    device and values (the same memory layout: a map computed on another layout may
    round differently). All entries belong to one state of the map (its parameters and buffers, by
    value); a lookup under another state empties the cache first. Copies and pickles of
    the cache are empty.
    """

    def __init__(self, size: int = MAP_CACHE_SIZE) -> None:
        self.size = size
        self.state: list[tuple[str, torch.Tensor]] = []
        self.entries: list[tuple[torch.Tensor, tuple[int, ...], torch.Tensor]] = []

    def __reduce__(self) -> tuple[type[_MapCache], tuple[int]]:
        return type(self), (self.size,)

    def clear(self) -> None:
        self.state, self.entries = [], []

    def _sync(self, state: list[tuple[str, torch.Tensor]]) -> None:
        """Empty the cache unless ``state`` is the state its entries were mapped with."""
        same = len(state) == len(self.state) and all(
            name == old_name
            and value.shape == old.shape
            and value.dtype == old.dtype
            and value.device == old.device
            and torch.equal(value, old)
            for (name, value), (old_name, old) in zip(state, self.state, strict=True)
        )
        if not same:
            self.entries = []
            self.state = [(name, value.detach().clone()) for name, value in state]

    def lookup(self, x: torch.Tensor, state: list[tuple[str, torch.Tensor]]) -> torch.Tensor | None:
        self._sync(state)
        for i, (key, stride, value) in enumerate(self.entries):
            if (
                key.shape == x.shape
                and stride == x.stride()
                and key.dtype == x.dtype
                and key.device == x.device
                and torch.equal(key, x)
            ):
                self.entries.insert(0, self.entries.pop(i))  # most recently used first
                return value
        return None

    def store(self, x: torch.Tensor, mapped: torch.Tensor) -> None:
        self.entries.insert(0, (x.detach().clone(), x.stride(), mapped))
        del self.entries[self.size :]


class InputMapKernel(Kernel):
    r"""A base kernel evaluated on a map of the inputs, :math:`k_0(\phi(x), \phi(x'))`.

    .. math::

        k(x, x') = k_0\big(\phi(x), \phi(x')\big), \qquad
        \phi: [0, 1]^D \to \mathbb{R}^{D'}

    PSD for any deterministic :math:`\phi` when :math:`k_0` is PSD. A subclass registers
    the map's parameters (with ``batch_shape``) and implements :meth:`phi`; the base
    kernel is built for :math:`D'` inputs with the same batch shape.

    Where no gradient can flow through the map (under ``torch.no_grad()``, or where
    neither the input nor the map's parameters require one), it is evaluated once per
    distinct input: once where :math:`x` and :math:`x'` are the same input (one tensor,
    or one view of a tensor taken twice, see :func:`same_input`), and, in eval mode,
    once per input *value*: copies of the last :data:`MAP_CACHE_SIZE` inputs are kept
    with their maps, and an input of the same shape, layout and values is not mapped
    again while the map's own parameters and buffers keep their values (compared by
    value: setters, ``initialize``, ``load_state_dict`` and ``.data`` all count).
    BoTorch's acquisition optimizer evaluates its raw samples so, with the training
    inputs on one side of every cross-covariance. ``train()`` empties the cache;
    ``eval()``, which BoTorch calls at every posterior, keeps it. The values are those
    of a fresh evaluation, bit for bit.

    Where a gradient can flow, both sides are mapped, every time: one map for both
    sides gives the same gradient up to the order of a sum (last-bit differences, which
    L-BFGS-B turns into other fits and other candidates), and the training rows of a
    cross-covariance arrive as new slices of GPyTorch's joint inputs, which require a
    gradient through :math:`X^*` that a kept map would drop.

    Args:
        base_kernel: The kernel :math:`k_0` applied to the mapped inputs.
        dim: Input dimension D.
        **kwargs: Passed to :class:`gpytorch.kernels.Kernel` (``batch_shape``: the map's
            parameters get this batch shape; build ``base_kernel`` with the same one).

    Example:
        >>> from gpytorch.kernels import RBFKernel
        >>> class CentredKernel(InputMapKernel):
        ...     def phi(self, x: torch.Tensor) -> torch.Tensor:
        ...         return x - 0.5
        >>> CentredKernel(RBFKernel(), dim=3)(torch.rand(4, 3)).shape
        torch.Size([4, 4])
    """

    formula: ClassVar[str] = "k(x, x') = k0(phi(x), phi(x'))"

    def __init__(self, base_kernel: Kernel, dim: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base_kernel = base_kernel
        self.dim = int(dim)
        self._map_cache = _MapCache()

    @property
    def batch_shape(self) -> torch.Size:
        """Batch shape; a map without parameters has none of its own: the base kernel's."""
        if not self._parameters:
            return self.base_kernel.batch_shape
        return torch.broadcast_shapes(own_batch_shape(self), self.base_kernel.batch_shape)

    @batch_shape.setter
    def batch_shape(self, value: torch.Size) -> None:
        set_own_batch_shape(self, value)

    @abstractmethod
    def phi(self, x: torch.Tensor) -> torch.Tensor:
        """The map, ``(..., N, D) -> (..., N, D')`` (batched map parameters broadcast)."""
        raise NotImplementedError

    def train(self, mode: bool = True) -> InputMapKernel:
        """Set training mode; entering it empties the map cache (``eval()`` keeps it)."""
        if mode:
            self._map_cache.clear()
        return super().train(mode)

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params: Any
    ) -> torch.Tensor:
        z1 = self._mapped(x1)
        shared = same_input(x1, x2) and self._gradient_free(x1)
        z2 = z1 if shared else self._mapped(x2)
        return self.base_kernel.forward(z1, z2, diag=diag, **params)

    def _map_state(self) -> Iterator[tuple[str, torch.Tensor]]:
        """The map's own parameters and buffers (constraint bounds included)."""
        for name, value in chain(self.named_parameters(), self.named_buffers()):
            if not name.startswith("base_kernel."):
                yield name, value

    def _gradient_free(self, x: torch.Tensor) -> bool:
        """Whether no gradient can flow through ``phi(x)`` (to ``x`` or to the map)."""
        if not torch.is_grad_enabled():
            return True
        params = self._parameters.values()
        return not x.requires_grad and not any(p is not None and p.requires_grad for p in params)

    def _mapped(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`phi` of ``x``, from the cache in eval mode where no gradient can flow."""
        if self.training or not self._gradient_free(x):
            return self.phi(x)
        state = list(self._map_state())
        mapped = self._map_cache.lookup(x, state)
        if mapped is None:
            mapped = self.phi(x)
            self._map_cache.store(x, mapped)
        return mapped
