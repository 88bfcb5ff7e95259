"""ax-kernel-discovery: evolve GP kernels for high-dimensional Bayesian optimization in Ax.

Public API::

    from ax_kernel_discovery import (
        KernelDiscoveryConfig, KernelDiscoverySurrogate,
        kernel_discovery_generation_strategy, loo_crps,
    )
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from ax_kernel_discovery.candidate import KernelCandidate, Rejection  # noqa: E402
from ax_kernel_discovery.config import KernelDiscoveryConfig  # noqa: E402
from ax_kernel_discovery.population import Population, start_candidates  # noqa: E402
from ax_kernel_discovery.selection import loo_crps  # noqa: E402
from ax_kernel_discovery.storage import register_storage  # noqa: E402
from ax_kernel_discovery.strategy import kernel_discovery_generation_strategy  # noqa: E402
from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate, RoundRecord  # noqa: E402

register_storage()

__version__ = "0.1.0"

__all__ = [
    "KernelCandidate",
    "KernelDiscoveryConfig",
    "KernelDiscoverySurrogate",
    "Population",
    "Rejection",
    "RoundRecord",
    "kernel_discovery_generation_strategy",
    "loo_crps",
    "register_storage",
    "start_candidates",
]
