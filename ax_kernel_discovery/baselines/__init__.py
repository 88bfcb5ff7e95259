"""Every method the benchmarks compare, as an Ax ``GenerationStrategy``.

* :mod:`~ax_kernel_discovery.baselines.methods`: the method registry
  (:func:`get_method`): kernel discovery, fixed kernels, greedy selection, Ax's default,
  Sobol, SAASBO, and the two below;
* :mod:`~ax_kernel_discovery.baselines.cake`: CAKE (an LLM proposes the kernels,
  BIC-style selection);
* :mod:`~ax_kernel_discovery.baselines.compositional`: the compositional kernel search
  of Duvenaud et al. (greedy sums and products of base kernels).
"""

from __future__ import annotations

from ax_kernel_discovery.baselines.compositional import (
    COMPOSITIONAL_DEFAULTS,
    CompositionalSearchSurrogate,
    reuse_hyperparameters,
)
from ax_kernel_discovery.baselines.methods import (
    FIXED_KERNELS,
    METHODS,
    SAASBO_MAX_BUDGET,
    MethodInfo,
    UnknownMethodError,
    fixed_kernel_surrogate,
    get_method,
    greedy_surrogate,
    method_info,
    saasbo_surrogate,
)

__all__ = [
    "COMPOSITIONAL_DEFAULTS",
    "FIXED_KERNELS",
    "METHODS",
    "SAASBO_MAX_BUDGET",
    "CompositionalSearchSurrogate",
    "MethodInfo",
    "UnknownMethodError",
    "fixed_kernel_surrogate",
    "get_method",
    "greedy_surrogate",
    "method_info",
    "reuse_hyperparameters",
    "saasbo_surrogate",
]
