"""The GP model class of kernel-discovery members and its fitting routine.

``KernelDiscoveryGP`` is BoTorch's ``SingleTaskGP`` unchanged; it exists so that Ax's
``fit_botorch_model`` dispatcher can fit population members with their own options: an
iteration budget, fewer fallback attempts, an L-BFGS-B memory and an opt-in wall-clock
limit (Ax itself calls ``fit_gpytorch_mll`` without options). A
fixed kernel's config carries none of them, so it is fitted with BoTorch's defaults, as
Ax fits its own model.
The options travel in ``ModelConfig.mll_options["fit_options"]``, so they are stored
with the model config by Ax.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ax.generators.torch.botorch_modular.utils import fit_botorch_model
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.mlls import MarginalLogLikelihood


class KernelDiscoveryGP(SingleTaskGP):
    """BoTorch ``SingleTaskGP``, fitted with kernel discovery's time limit.

    ``load_state_dict`` also takes a partial state dict: the entries it lacks keep this
    model's values. Kernel discovery warm-starts a fit from last round's fitted
    *parameters* only; buffers (prior and constraint constants, the input transform's
    bounds) come from the model as Ax just built it.
    """

    def load_state_dict(  # type: ignore[override]  # BoTorch's signature (keep_transforms)
        self,
        state_dict: Mapping[str, Any],
        strict: bool = True,
        keep_transforms: bool = True,
        assign: bool = False,
    ) -> None:
        full = {**self.state_dict(), **state_dict}
        super().load_state_dict(full, strict=strict, keep_transforms=keep_transforms, assign=assign)


@fit_botorch_model.register(KernelDiscoveryGP)
def _fit_kernel_discovery_gp(
    model: KernelDiscoveryGP,
    mll_class: type[MarginalLogLikelihood],
    mll_options: dict[str, Any] | None = None,
) -> None:
    mll_options = dict(mll_options or {})
    fit_options = dict(mll_options.pop("fit_options", {}) or {})
    mll = mll_class(likelihood=model.likelihood, model=model, **mll_options)
    optimizer_kwargs: dict[str, Any] = {}
    if fit_options.get("timeout_sec") is not None:
        optimizer_kwargs["timeout_sec"] = float(fit_options["timeout_sec"])
    options: dict[str, Any] = {}
    if fit_options.get("maxiter") is not None:
        options["maxiter"] = int(fit_options["maxiter"])
    if fit_options.get("lbfgs_memory") is not None:
        options["maxcor"] = int(fit_options["lbfgs_memory"])  # scipy's L-BFGS-B memory
    if options:
        optimizer_kwargs["options"] = options
    fit_kwargs: dict[str, Any] = {}
    if fit_options.get("max_attempts") is not None:  # else BoTorch's, as Ax's own fit
        fit_kwargs["max_attempts"] = int(fit_options["max_attempts"])
    fit_gpytorch_mll(mll, optimizer_kwargs=optimizer_kwargs or None, **fit_kwargs)
