"""The kernel-discovery surrogate: Ax's ``Surrogate`` with an evolving population.

Modules, from the top (Ax storage of the surrogate is :mod:`ax_kernel_discovery.storage`, above
:mod:`ax_kernel_discovery.strategy`, whose hand-over criterion it also registers):

* :mod:`~ax_kernel_discovery.surrogate.acquisition`: the Ax ``Acquisition`` that runs
  qLogNEI through the chosen kernel (or the mixture of the top members);
* :mod:`~ax_kernel_discovery.surrogate.core`: :class:`KernelDiscoverySurrogate`, whose
  ``fit`` is one round of the method (strike, propose, admit, fit, score, choose);
* :mod:`~ax_kernel_discovery.surrogate.admission` (which candidates enter a round) and
  :mod:`~ax_kernel_discovery.surrogate.fitting` (fit, score and choose);
* :mod:`~ax_kernel_discovery.surrogate.state` (what a reload needs) and
  :mod:`~ax_kernel_discovery.surrogate.round_record` (what a round records).
"""

from __future__ import annotations

from ax_kernel_discovery._deprecated import moved_names
from ax_kernel_discovery.surrogate.core import (
    KernelDiscoverySurrogate,
    RoundRecord,
    candidate_model_config,
)

__all__ = ["KernelDiscoverySurrogate", "RoundRecord", "candidate_model_config"]

# renamed: the public ax_kernel_discovery.model_config_for is the library's (a library entry)
__getattr__ = moved_names(
    __name__, {"model_config_for": "ax_kernel_discovery.surrogate.fitting:candidate_model_config"}
)
