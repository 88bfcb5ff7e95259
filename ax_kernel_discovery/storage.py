"""Registrations that let Ax's JSON (and SQL) storage save and reload kernel discovery.

Called once on import of :mod:`ax_kernel_discovery`. After that,
``Client.save_to_json_file`` / ``load_from_json_file`` keep the population, the history
and the chosen kernel of a :class:`KernelDiscoverySurrogate`.
"""

from __future__ import annotations

from ax.storage.botorch_modular_registry import (
    register_acquisition,
    register_kernel,
    register_model,
)
from ax.storage.json_store.encoders import surrogate_to_dict
from ax.storage.json_store.registry import CORE_DECODER_REGISTRY, CORE_ENCODER_REGISTRY

_DONE = False


def register_storage() -> None:
    """Register the surrogate, its kernel class and acquisition with Ax (idempotent)."""
    global _DONE
    if _DONE:
        return
    from ax_kernel_discovery.acquisition import KernelDiscoveryAcquisition
    from ax_kernel_discovery.gp import KernelDiscoveryGP
    from ax_kernel_discovery.kernels.discovered import DiscoveredKernel
    from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate

    register_kernel(DiscoveredKernel)
    register_model(KernelDiscoveryGP)
    register_acquisition(KernelDiscoveryAcquisition)
    CORE_ENCODER_REGISTRY[KernelDiscoverySurrogate] = surrogate_to_dict
    CORE_DECODER_REGISTRY["KernelDiscoverySurrogate"] = KernelDiscoverySurrogate
    _DONE = True
