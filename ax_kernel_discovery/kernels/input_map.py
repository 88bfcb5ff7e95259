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
from typing import Any, ClassVar

import torch
from gpytorch.kernels import Kernel


class InputMapKernel(Kernel):
    r"""A base kernel evaluated on a map of the inputs, :math:`k_0(\phi(x), \phi(x'))`.

    .. math::

        k(x, x') = k_0\big(\phi(x), \phi(x')\big), \qquad
        \phi: [0, 1]^D \to \mathbb{R}^{D'}

    PSD for any deterministic :math:`\phi` when :math:`k_0` is PSD. A subclass registers
    the map's parameters (with ``batch_shape``) and implements :meth:`phi`; the base
    kernel is built for :math:`D'` inputs with the same batch shape.

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

    @property
    def batch_shape(self) -> torch.Size:
        """Batch shape; a map without parameters has none of its own: the base kernel's."""
        if not self._parameters:
            return self.base_kernel.batch_shape
        return torch.broadcast_shapes(self._batch_shape, self.base_kernel.batch_shape)

    @batch_shape.setter
    def batch_shape(self, value: torch.Size) -> None:
        self._batch_shape = value

    @abstractmethod
    def phi(self, x: torch.Tensor) -> torch.Tensor:
        """The map, ``(..., N, D) -> (..., N, D')`` (batched map parameters broadcast)."""
        raise NotImplementedError

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params: Any
    ) -> torch.Tensor:
        return self.base_kernel.forward(self.phi(x1), self.phi(x2), diag=diag, **params)
