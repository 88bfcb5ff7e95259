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
import sys

# Importing this package changes nothing global (tests/test_import.py): no environment
# variable is set (litellm's is set beside its import, in ``llm.client``), logging's
# disabled state is restored even when an import fails, only kd's own classes are
# registered with Ax's storage, and kd's logger gets a ``NullHandler`` (it is routed to
# Ax's stream handler when a kd surrogate is built: ``log.use_ax_handler``).
#
# Importing Ax logs "[INFO] Ax SQL storage initialized" once SQLAlchemy is installed
# (the [sql] extra); this package's import keeps that line (and only INFO lines logged
# while Ax is first imported) quiet. Ax's later INFO logging is untouched.
_disabled = logging.root.manager.disable
if "ax" not in sys.modules:
    logging.disable(max(_disabled, logging.INFO))
try:
    from ax_kernel_discovery._version import __version__ as __version__
    from ax_kernel_discovery.candidate import KernelCandidate, Rejection
    from ax_kernel_discovery.cards import KernelDiscoveryAnalysis, kernel_discovery_analyses
    from ax_kernel_discovery.config import KernelDiscoveryConfig
    from ax_kernel_discovery.library import (
        KernelLibraryError,
        LibraryKernel,
        export_kernels,
        fixed_kernel_generation_strategy,
        load_kernels,
        model_config_for,
        save_kernels,
    )
    from ax_kernel_discovery.log import PACKAGE_LOGGER
    from ax_kernel_discovery.population import Population, start_candidates
    from ax_kernel_discovery.selection import lbo_crps, loo_crps
    from ax_kernel_discovery.storage import register_storage
    from ax_kernel_discovery.strategy import (
        botorch_step,
        kernel_discovery_generation_strategy,
        sobol_step,
        surrogate_of,
    )
    from ax_kernel_discovery.surrogate.core import KernelDiscoverySurrogate
    from ax_kernel_discovery.surrogate.round_record import RoundRecord
finally:
    logging.disable(_disabled)
del _disabled

register_storage()
logging.getLogger(PACKAGE_LOGGER).addHandler(logging.NullHandler())


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
