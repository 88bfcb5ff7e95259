"""Fast synthetic problems: classic low-dimensional test functions hidden in D dims.

Each problem takes ``x`` in ``[0, 1]^D`` but depends only on ``d`` "active"
coordinates ``active_dims = numpy.random.default_rng(seed).choice(D, d,
replace=False)`` (in that order: function coordinate ``k`` is ``x[active_dims[k]]``,
mapped linearly from ``[0, 1]`` to the function's usual domain). The other ``D - d``
coordinates are ignored, the usual "low effective dimension" test for
high-dimensional BO. All are minimised and have known optima:

============  ====  ==========================  ===================================
function      d     domain                      minimum
============  ====  ==========================  ===================================
Branin        2     [-5, 10] x [0, 15]          0.397887357729738 (3 minimisers)
Hartmann-6    6     [0, 1]^6                    -3.32236801141551
Ackley        any   [-32.768, 32.768]^d         0 at 0
Levy          any   [-10, 10]^d                 0 at (1, ..., 1)
============  ====  ==========================  ===================================

The functions are BoTorch's (``botorch.test_functions.synthetic``: ``Branin``,
``Hartmann(dim=6)``, ``Ackley``, ``Levy``), evaluated in float64; their domains are
BoTorch's ``bounds``. Definitions as in Surjanovic & Bingham's Virtual Library of
Simulation Experiments (sfu.ca/~ssurjano).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from botorch.test_functions.synthetic import Ackley as BoTorchAckley
from botorch.test_functions.synthetic import Branin as BoTorchBranin
from botorch.test_functions.synthetic import Hartmann as BoTorchHartmann
from botorch.test_functions.synthetic import Levy as BoTorchLevy
from botorch.test_functions.synthetic import SyntheticTestFunction

from ax_kernel_discovery.benchmarks.base import BlackBoxProblem

__all__ = ["Ackley", "Branin", "EmbeddedSynthetic", "Hartmann6", "Levy"]


def _float64(cls: type[SyntheticTestFunction], **kwargs: Any) -> SyntheticTestFunction:
    """BoTorch's ``cls(**kwargs)`` with float64 constants: BoTorch builds some of them
    (Hartmann's ``A``, ``P``, ``ALPHA``) with ``torch.tensor(list)``, in the default dtype,
    and float32 would round them (Hartmann's values by up to 4e-8)."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return cls(**kwargs)
    finally:
        torch.set_default_dtype(default)


class EmbeddedSynthetic(BlackBoxProblem):
    """A ``d``-dimensional test function embedded in ``[0, 1]^D`` (minimise).

    Subclasses pass BoTorch's ``test_function`` (whose ``bounds`` are the function
    domain :attr:`fn_lower`, :attr:`fn_upper`) and set :attr:`fn_minimizer` (one
    minimiser in the function domain).

    Args:
        test_function: BoTorch's test function (``d`` inputs, not negated, no noise).
        dim: Ambient dimension ``D`` (at least ``d``).
        effective_dim: ``d``.
        seed: Seed choosing the active coordinates.
        name: Label.
        optimum: The function's global minimum.
        description: What the problem is.
        n_workers: Default worker processes (rarely worth it here).
    """

    fn_lower: np.ndarray
    fn_upper: np.ndarray
    fn_minimizer: np.ndarray

    def __init__(
        self,
        *,
        test_function: SyntheticTestFunction,
        dim: int,
        effective_dim: int,
        seed: int,
        name: str,
        optimum: float,
        description: str,
        n_workers: int = 1,
    ) -> None:
        if not 1 <= effective_dim <= dim:
            raise ValueError(f"{name}: need 1 <= effective_dim ({effective_dim}) <= dim ({dim})")
        if test_function.dim != effective_dim or test_function.negate:
            raise ValueError(f"{name}: need BoTorch's {effective_dim}-D function, not negated")
        self.test_function = test_function
        box: torch.Tensor = test_function.bounds  # type: ignore[assignment]  # a buffer
        bounds = box.to(torch.float64).numpy()
        self.fn_lower, self.fn_upper = bounds[0].copy(), bounds[1].copy()
        self.effective_dim = int(effective_dim)
        self.seed = int(seed)
        self.active_dims = np.random.default_rng(seed).choice(dim, effective_dim, replace=False)
        super().__init__(
            name=name,
            dim=dim,
            lower=0.0,
            upper=1.0,
            minimize=True,
            optimum=optimum,
            description=(
                f"{description}, embedded in [0, 1]^{dim}: depends only on coordinates "
                f"{self.active_dims.tolist()} (seed {seed}); minimise, optimum {optimum:.12g}."
            ),
            n_workers=n_workers,
        )

    def function(self, Z: np.ndarray) -> np.ndarray:
        """The test function on ``(n, d)`` points of its own domain (BoTorch's, float64)."""
        with torch.no_grad():
            Z_t = torch.as_tensor(np.asarray(Z, dtype=np.float64))
            return self.test_function.evaluate_true(Z_t).numpy()

    def to_function_domain(self, X: np.ndarray) -> np.ndarray:
        """Map ``(n, D)`` unit-cube points to ``(n, d)`` function-domain points."""
        U = np.asarray(X, dtype=float)[:, self.active_dims]
        return self.fn_lower + (self.fn_upper - self.fn_lower) * U

    def optimal_point(self) -> np.ndarray:
        """A point of ``[0, 1]^D`` where the optimum is reached (inactive coords 0.5)."""
        x = np.full(self.dim, 0.5)
        x[self.active_dims] = (self.fn_minimizer - self.fn_lower) / (self.fn_upper - self.fn_lower)
        return x

    def _evaluate_batch(self, X: np.ndarray) -> np.ndarray:
        return self.function(self.to_function_domain(X))

    def _evaluate_point(self, x: np.ndarray) -> float:
        return float(self._evaluate_batch(x[None, :])[0])


class Branin(EmbeddedSynthetic):
    """Branin (d=2) embedded in ``D`` dims (BoTorch's ``Branin``).

    .. math::
        f(z) = (z_2 - \\tfrac{5.1}{4\\pi^2} z_1^2 + \\tfrac{5}{\\pi} z_1 - 6)^2
        + 10 (1 - \\tfrac{1}{8\\pi}) \\cos z_1 + 10

    Args:
        dim: Ambient dimension.
        seed: Seed choosing the active coordinates.
        n_workers: Default worker processes.
    """

    fn_minimizer = np.array([math.pi, 2.275])
    OPTIMUM = 0.397887357729738

    def __init__(self, dim: int = 100, seed: int = 0, n_workers: int = 1) -> None:
        super().__init__(
            test_function=_float64(BoTorchBranin),
            dim=dim,
            effective_dim=2,
            seed=seed,
            name=f"branin{dim}",
            optimum=self.OPTIMUM,
            description="Branin (2-D, [-5, 10] x [0, 15])",
            n_workers=n_workers,
        )


class Hartmann6(EmbeddedSynthetic):
    """Hartmann-6 embedded in ``D`` dims (BoTorch's ``Hartmann(dim=6)``).

    .. math::
        f(z) = -\\sum_{i=1}^4 \\alpha_i \\exp\\Big(-\\sum_{j=1}^6 A_{ij} (z_j - P_{ij})^2\\Big)

    The minimiser and minimum are given to more digits than BoTorch's
    ``_optimizers`` / ``optimal_value`` (0.20169, ...; -3.32237).

    Args:
        dim: Ambient dimension.
        seed: Seed choosing the active coordinates.
        n_workers: Default worker processes.
    """

    fn_minimizer = np.array(
        [0.20168951, 0.15001069, 0.47687397, 0.27533243, 0.31165162, 0.65730053]
    )
    OPTIMUM = -3.32236801141551

    def __init__(self, dim: int = 100, seed: int = 0, n_workers: int = 1) -> None:
        super().__init__(
            test_function=_float64(BoTorchHartmann, dim=6),
            dim=dim,
            effective_dim=6,
            seed=seed,
            name=f"hartmann6_{dim}",
            optimum=self.OPTIMUM,
            description="Hartmann-6 ([0, 1]^6)",
            n_workers=n_workers,
        )


class Ackley(EmbeddedSynthetic):
    """Ackley-``d`` embedded in ``D`` dims (BoTorch's ``Ackley(dim=d)``).

    .. math::
        f(z) = -20 \\exp\\Big(-0.2 \\sqrt{\\tfrac{1}{d} \\textstyle\\sum z_i^2}\\Big)
        - \\exp\\Big(\\tfrac{1}{d} \\textstyle\\sum \\cos 2\\pi z_i\\Big) + 20 + e

    Args:
        dim: Ambient dimension.
        effective_dim: ``d`` (default 10).
        seed: Seed choosing the active coordinates.
        n_workers: Default worker processes.
    """

    def __init__(
        self, dim: int = 100, effective_dim: int = 10, seed: int = 0, n_workers: int = 1
    ) -> None:
        self.fn_minimizer = np.zeros(effective_dim)
        name = f"ackley{dim}" if effective_dim == 10 else f"ackley{effective_dim}_{dim}"
        super().__init__(
            test_function=_float64(BoTorchAckley, dim=effective_dim),
            dim=dim,
            effective_dim=effective_dim,
            seed=seed,
            name=name,
            optimum=0.0,
            description=f"Ackley-{effective_dim} ([-32.768, 32.768]^{effective_dim})",
            n_workers=n_workers,
        )


class Levy(EmbeddedSynthetic):
    """Levy-``d`` embedded in ``D`` dims (BoTorch's ``Levy(dim=d)``), with
    ``w_i = 1 + (z_i - 1) / 4``.

    .. math::
        f(z) = \\sin^2(\\pi w_1) + \\sum_{i=1}^{d-1} (w_i - 1)^2 [1 + 10 \\sin^2(\\pi w_i + 1)]
        + (w_d - 1)^2 [1 + \\sin^2(2 \\pi w_d)]

    Args:
        dim: Ambient dimension.
        effective_dim: ``d`` (default 10).
        seed: Seed choosing the active coordinates.
        n_workers: Default worker processes.
    """

    def __init__(
        self, dim: int = 100, effective_dim: int = 10, seed: int = 0, n_workers: int = 1
    ) -> None:
        self.fn_minimizer = np.ones(effective_dim)
        name = f"levy{dim}" if effective_dim == 10 else f"levy{effective_dim}_{dim}"
        super().__init__(
            test_function=_float64(BoTorchLevy, dim=effective_dim),
            dim=dim,
            effective_dim=effective_dim,
            seed=seed,
            name=name,
            optimum=0.0,
            description=f"Levy-{effective_dim} ([-10, 10]^{effective_dim})",
            n_workers=n_workers,
        )
