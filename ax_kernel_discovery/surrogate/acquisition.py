"""An Ax ``Acquisition`` that tells the kernel-discovery surrogate the objective direction.

The surrogate's strike rule ("drop the kernel whose batch did not improve the best
value") needs to know whether each outcome is maximized or minimized. Ax only reveals
that at generation time, in ``TorchOptConfig.objective_weights``; this subclass passes
it on and otherwise behaves exactly like Ax's :class:`Acquisition`.
"""

from __future__ import annotations

from typing import Any

from ax.generators.torch.botorch_modular.acquisition import Acquisition


class KernelDiscoveryAcquisition(Acquisition):
    """Ax's ``Acquisition`` plus a report of objective weights to the surrogate."""

    def __init__(
        self,
        surrogate: Any,
        search_space_digest: Any,
        torch_opt_config: Any,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        record = getattr(surrogate, "record_objective_weights", None)
        if record is not None:
            record(torch_opt_config.objective_weights)
        super().__init__(surrogate, search_space_digest, torch_opt_config, *args, **kwargs)
