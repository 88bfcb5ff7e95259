"""ax-kernel-discovery: evolve GP kernels for high-dimensional Bayesian optimization in Ax.

Public API::

    from ax_kernel_discovery import (
        KernelDiscoveryConfig, KernelDiscoverySurrogate,
        kernel_discovery_generation_strategy, loo_crps,
        surrogate_of, sobol_step, botorch_step,             # your own strategy
        export_kernels, save_kernels, load_kernels,          # kernel libraries
        kernel_discovery_analyses, KernelDiscoveryAnalysis,  # Ax analysis cards
        fixed_kernel_generation_strategy, model_config_for,
    )
"""

from __future__ import annotations

import logging
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# Importing Ax logs "[INFO] Ax SQL storage initialized" once SQLAlchemy is installed
# (the [sql] extra); this package's import keeps that line (and only INFO lines logged
# while Ax is first imported) quiet. Ax's later INFO logging is untouched.
_disabled = logging.root.manager.disable
if "ax" not in sys.modules:
    logging.disable(max(_disabled, logging.INFO))

from ax_kernel_discovery._version import __version__ as __version__  # noqa: E402
from ax_kernel_discovery.candidate import KernelCandidate, Rejection  # noqa: E402
from ax_kernel_discovery.cards import KernelDiscoveryAnalysis, kernel_discovery_analyses  # noqa: E402
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
from ax_kernel_discovery.log import use_ax_handler  # noqa: E402
from ax_kernel_discovery.population import Population, start_candidates  # noqa: E402
from ax_kernel_discovery.selection import lbo_crps, loo_crps  # noqa: E402
from ax_kernel_discovery.storage import register_storage  # noqa: E402
from ax_kernel_discovery.strategy import (  # noqa: E402
    botorch_step,
    kernel_discovery_generation_strategy,
    sobol_step,
    surrogate_of,
)
from ax_kernel_discovery.surrogate.core import KernelDiscoverySurrogate  # noqa: E402
from ax_kernel_discovery.surrogate.round_record import RoundRecord  # noqa: E402

register_storage()
use_ax_handler()  # kd's log lines beside Ax's, quieted by set_ax_logger_levels
logging.disable(_disabled)
del _disabled


__all__ = [
    "KernelCandidate",
    "KernelDiscoveryAnalysis",
    "KernelDiscoveryConfig",
    "KernelDiscoverySurrogate",
    "KernelLibraryError",
    "LibraryKernel",
    "Population",
    "Rejection",
    "RoundRecord",
    "botorch_step",
    "export_kernels",
    "fixed_kernel_generation_strategy",
    "kernel_discovery_analyses",
    "kernel_discovery_generation_strategy",
    "load_kernels",
    "lbo_crps",
    "loo_crps",
    "model_config_for",
    "register_storage",
    "save_kernels",
    "sobol_step",
    "start_candidates",
    "surrogate_of",
]
