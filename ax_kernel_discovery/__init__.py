"""ax-kernel-discovery: evolve GP kernels for high-dimensional Bayesian optimization in Ax.

Public API::

    from ax_kernel_discovery import (
        KernelDiscoveryConfig, KernelDiscoverySurrogate,
        kernel_discovery_generation_strategy, loo_crps,
        export_kernels, save_kernels, load_kernels,          # kernel libraries
        fixed_kernel_generation_strategy, model_config_for,
    )
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from ax_kernel_discovery.candidate import KernelCandidate, Rejection  # noqa: E402
from ax_kernel_discovery.config import KernelDiscoveryConfig  # noqa: E402
from ax_kernel_discovery.library import (  # noqa: E402
    KernelLibraryError,
    LibraryKernel,
    export_kernels,
    fixed_kernel_generation_strategy,
    load_kernels,
    model_config_for,
    save_kernels,
)
from ax_kernel_discovery.population import Population, start_candidates  # noqa: E402
from ax_kernel_discovery.selection import lbo_crps, loo_crps  # noqa: E402
from ax_kernel_discovery.storage import register_storage  # noqa: E402
from ax_kernel_discovery.strategy import kernel_discovery_generation_strategy  # noqa: E402
from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate, RoundRecord  # noqa: E402

register_storage()

__version__ = "0.1.0"

__all__ = [
    "KernelCandidate",
    "KernelDiscoveryConfig",
    "KernelDiscoverySurrogate",
    "KernelLibraryError",
    "LibraryKernel",
    "Population",
    "Rejection",
    "RoundRecord",
    "export_kernels",
    "fixed_kernel_generation_strategy",
    "kernel_discovery_generation_strategy",
    "load_kernels",
    "lbo_crps",
    "loo_crps",
    "model_config_for",
    "register_storage",
    "save_kernels",
    "start_candidates",
]
