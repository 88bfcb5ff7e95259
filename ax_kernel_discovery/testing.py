"""Test helpers: GPyTorch's kernel contract for the package's kernels (and yours).

:class:`KernelContractMixin` is GPyTorch's own kernel test mixin,
:class:`gpytorch.test.base_kernel_test_case.BaseKernelTestCase` (batch shapes, batch
indexing, ``active_dims``, ``diag``, pickling, dtype and device), with three changes
that the kernels of this package need:

* data are drawn uniformly from the unit box, the kernels' domain (Ax's ``Normalize``
  maps inputs to :math:`[0, 1]^D` and the kernels clamp to it; GPyTorch's
  standard-normal data would mostly be clamped onto the box's faces);
* a kernel *bound to its input dimension* (built for D inputs: ARD lengthscales,
  a dimension-scaled prior, a per-dimension warp) sets :attr:`~KernelContractMixin.data_dim`
  and implements :meth:`~KernelContractMixin.create_kernel_for_dim`. Every data set
  then has ``data_dim`` columns, and GPyTorch's two ``active_dims`` tests, which feed
  one kernel 4 or 6 of 10 columns, are replaced by
  ``test_active_dims_of_bound_kernel``: a kernel built for the selected columns, with
  ``active_dims``, on all 10 columns equals the same kernel on the selected columns;
* a test that does not apply is skipped with its reason, listed in
  :attr:`~KernelContractMixin.skipped_tests`.

Example:
    >>> import unittest
    >>> from ax_kernel_discovery.kernels import DimScaledRBFKernel
    >>> class TestRBF(KernelContractMixin, unittest.TestCase):
    ...     data_dim = 2
    ...
    ...     def create_kernel_for_dim(self, dim, **kwargs):
    ...         return DimScaledRBFKernel(ard_num_dims=dim, **kwargs)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import torch
from gpytorch.kernels import Kernel
from gpytorch.test.base_kernel_test_case import BaseKernelTestCase

from ax_kernel_discovery._upstream.ax import botorch_acquisitions_built

__all__ = [
    "ACTIVE_DIMS_TESTS",
    "ARD_TESTS",
    "CONTRACT_TESTS",
    "TINY_ACQUISITION",
    "KernelContractMixin",
    "acquisitions_built",
    "unit_box_client",
]


@contextmanager
def acquisitions_built() -> Iterator[list[Any]]:
    """Every acquisition function Ax's ``Acquisition`` builds while the block runs.

    What a BO step really used: ``type(f)`` is the class (qLogNEI, qLogNEHVI, ...), and
    ``f.model`` the model it was built on.

    Example:
        >>> with acquisitions_built() as built:  # doctest: +SKIP
        ...     client.get_next_trials(max_trials=2)
        >>> {type(f).__name__ for f in built}  # doctest: +SKIP
        {'NewRowsqLogNEI'}
    """
    with botorch_acquisitions_built() as built:
        yield built


#: Acquisition-optimizer settings that keep a test's BO rounds to a fraction of a second.
TINY_ACQUISITION: dict[str, int] = {"num_restarts": 1, "raw_samples": 16, "maxiter": 5}


def unit_box_client(dim: int, strategy: Any = None, objective: str = "-f", seed: int = 0) -> Any:
    """An Ax ``Client`` over ``[0, 1]^dim`` (parameters ``x0``, ``x1``, ...) with
    ``objective`` (Ax's syntax: ``"-f"``, ``"-a, -b"``) and ``strategy`` set (``None``:
    Ax chooses its own, as ``Client()`` does): the experiment the package's tests run a
    strategy on.

    Example:
        >>> from ax_kernel_discovery import kernel_discovery_generation_strategy
        >>> client = unit_box_client(3, kernel_discovery_generation_strategy(num_sobol=4))
        >>> from ax_kernel_discovery._upstream.ax import client_experiment
        >>> sorted(client_experiment(client).parameters)
        ['x0', 'x1', 'x2']
    """
    from ax.api import Client
    from ax.api.configs import RangeParameterConfig

    client = Client(random_seed=seed)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(dim)
        ]
    )
    client.configure_optimization(objective)
    if strategy is not None:
        client.set_generation_strategy(strategy)
    return client


#: The tests of GPyTorch's ``BaseKernelTestCase`` (GPyTorch 1.15: 13 tests).
CONTRACT_TESTS: tuple[str, ...] = tuple(
    sorted(name for name in dir(BaseKernelTestCase) if name.startswith("test_"))
)

#: GPyTorch's tests that feed one kernel a subset of the columns.
ACTIVE_DIMS_TESTS: tuple[str, ...] = ("test_active_dims_list", "test_active_dims_range")

#: GPyTorch's tests of ARD lengthscales (they pass silently for kernels without ARD).
ARD_TESTS: tuple[str, ...] = (
    "test_no_batch_kernel_double_batch_x_ard",
    "test_smoke_double_batch_kernel_double_batch_x_ard",
)

_BOUND_REASON = (
    "bound to its input dimension (built for D inputs); "
    "test_active_dims_of_bound_kernel checks active_dims instead"
)


class KernelContractMixin(BaseKernelTestCase):
    """GPyTorch's kernel contract on unit-box data, with explained skips.

    Mix into a :class:`unittest.TestCase`. A kernel that takes inputs of any dimension
    implements ``create_kernel_no_ard`` (and ``create_kernel_ard`` if it has ARD
    lengthscales), as for GPyTorch's mixin; a kernel bound to its input dimension sets
    ``data_dim`` and implements :meth:`create_kernel_for_dim` instead.

    Attributes:
        skipped_tests: ``test name -> reason`` for tests that do not apply, besides
            the ``active_dims`` tests of a bound kernel (see :meth:`skips`).
        data_dim: Input dimension of every data set, for a kernel bound to its input
            dimension; ``None`` keeps GPyTorch's shapes (10 columns without batch, 2
            with batches).
    """

    seed: ClassVar[int] = 0
    skipped_tests: ClassVar[dict[str, str]] = {}
    data_dim: ClassVar[int | None] = None

    @classmethod
    def skips(cls) -> dict[str, str]:
        """Every skipped test of this class and its reason."""
        auto = dict.fromkeys(ACTIVE_DIMS_TESTS, _BOUND_REASON) if cls.data_dim else {}
        if not cls.data_dim:
            auto["test_active_dims_of_bound_kernel"] = (
                "not bound to its input dimension: GPyTorch's active_dims tests run"
            )
        return {**auto, **cls.skipped_tests}

    def setUp(self) -> None:
        reason = self.skips().get(self._testMethodName)  # type: ignore[attr-defined]
        if reason is not None:
            self.skipTest(reason)  # type: ignore[attr-defined]
        super().setUp()

    # --- kernels ---------------------------------------------------------------------

    def create_kernel_for_dim(self, dim: int, **kwargs: Any) -> Kernel:
        """The kernel built for ``dim`` inputs (kernels bound to their input dimension)."""
        raise NotImplementedError

    def create_kernel_no_ard(self, **kwargs: Any) -> Kernel:
        if self.data_dim is None:
            raise NotImplementedError("implement create_kernel_no_ard or set data_dim")
        return self.create_kernel_for_dim(self.data_dim, **kwargs)

    def create_kernel_ard(self, num_dims: int, **kwargs: Any) -> Kernel:
        if self.data_dim is None:
            raise NotImplementedError
        return self.create_kernel_for_dim(num_dims, **kwargs)

    # --- data ------------------------------------------------------------------------

    def _data(self, *batch_and_n: int, dim: int) -> torch.Tensor:
        return torch.rand(*batch_and_n, self.data_dim or dim)

    def create_data_no_batch(self) -> torch.Tensor:
        return self._data(50, dim=10)

    def create_data_single_batch(self) -> torch.Tensor:
        return self._data(2, 3, dim=2)

    def create_data_double_batch(self) -> torch.Tensor:
        return self._data(3, 2, 50, dim=2)

    # --- the active_dims test of a bound kernel ---------------------------------------

    def test_active_dims_of_bound_kernel(self) -> None:
        x = torch.rand(50, 10)
        for active in ([0, 2, 4, 6], list(range(3, 9))):
            kernel = self.create_kernel_for_dim(len(active), active_dims=active)
            basic = self.create_kernel_for_dim(len(active))
            covar = kernel(x).evaluate_kernel().to_dense()
            actual = basic(x[:, active]).evaluate_kernel().to_dense()
            self.assertAllClose(covar, actual, rtol=1e-3, atol=1e-5)
            diag = kernel(x, diag=True)
            self.assertAllClose(diag, actual.diagonal(dim1=-1, dim2=-2), rtol=1e-3, atol=1e-5)
