"""An Ax ``Acquisition`` for every method of this package: the objective direction for the
kernel-discovery surrogate, and BoTorch's optimizer without its empty fixed-feature pass.

* The surrogate's strike rule ("drop the kernel whose batch did not improve the best
  value") needs to know whether each outcome is maximized or minimized. Ax only reveals
  that at generation time, in ``TorchOptConfig.objective_weights``; the acquisition
  passes it on.
* BoTorch 0.18's ``optimize_acqf`` hands its candidate generator ``fixed_features={}``
  when no feature is fixed, and ``gen_candidates_scipy``'s batched L-BFGS-B path then
  runs ``fix_features`` on every evaluation: it builds the input anew from its D columns,
  one indexed copy (and one autograd node) per column. At D = 388 that was more than half
  of each evaluation's time, for any kernel. :func:`gen_candidates_scipy_unfixed` passes
  ``None`` instead; a copy changes no value, so the acquisition values, gradients and
  candidates are the same, bit for bit.

* While it optimizes, the model's hyperparameters are constants: they stop requiring
  gradients (and require them again afterwards). The acquisition's gradient is taken
  with respect to the candidates only, so its values do not change; but a kernel whose
  inputs pass through a warp or feature map (:class:`~ax_kernel_discovery.kernels.input_map.InputMapKernel`)
  can then reuse the map of the training inputs from one
  evaluation to the next instead of recomputing it (its cache serves only where no
  gradient can flow through the map).

Otherwise it behaves exactly like Ax's :class:`Acquisition`. Every method's BoTorch step
(:func:`ax_kernel_discovery.strategy.botorch_step`) uses it, Ax's default model included,
so methods differ only in their models.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.acquisition import Acquisition, determine_optimizer
from ax.generators.utils import mk_discrete_choices
from botorch.acquisition import AcquisitionFunction
from botorch.generation.gen import gen_candidates_scipy
from botorch.generation.sampling import SamplingStrategy
from botorch.models.model import Model
from torch import Tensor

from ax_kernel_discovery._upstream.ax import (
    acquisition_model,
    condition_on_candidates,
    construct_botorch_acquisition,
)


def gen_candidates_scipy_unfixed(
    initial_conditions: Tensor,
    acquisition_function: AcquisitionFunction,
    fixed_features: dict[int, Any] | None = None,
    **kwargs: Any,
) -> tuple[Tensor, Tensor]:
    """BoTorch's ``gen_candidates_scipy``, with no fixed features given as ``None``.

    Args:
        initial_conditions: Starting points of the optimization (``b x q x d``).
        acquisition_function: The acquisition function to maximize.
        fixed_features: ``{feature index: value}``; an empty mapping becomes ``None``,
            which skips ``fix_features`` (a per-column copy of the input at every
            evaluation; see the module docstring).
        **kwargs: Passed to ``gen_candidates_scipy``.

    Returns:
        The candidates and their acquisition values, as ``gen_candidates_scipy`` returns.
    """
    return gen_candidates_scipy(
        initial_conditions, acquisition_function, fixed_features=fixed_features or None, **kwargs
    )


@runtime_checkable
class AcquisitionPartner(Protocol):
    """What :class:`KernelDiscoveryAcquisition` asks of a surrogate that takes part in it
    (:class:`~ax_kernel_discovery.KernelDiscoverySurrogate`); other surrogates are used as
    Ax uses them."""

    def record_objective_weights(self, weights: Tensor) -> None:
        """Learn the objectives: Ax's objective weights (one row per objective)."""
        ...

    def acqf_class_for(self, chosen: type[AcquisitionFunction]) -> type[AcquisitionFunction]:
        """The class that computes the acquisition function Ax chose for the experiment."""
        ...


@runtime_checkable
class PortfolioPartner(AcquisitionPartner, Protocol):
    """A partner whose round may split a batch among members (a batch portfolio)."""

    def portfolio_plan(self, n: int) -> list[tuple[str, Model, int]] | None:
        """``(member, its model, points)`` for the next ``n`` points, or ``None``."""
        ...

    def record_portfolio_points(self, name: str, X: Tensor) -> None:
        """``name`` generated the points ``X`` (credited when their values arrive)."""
        ...


class KernelDiscoveryAcquisition(Acquisition):
    """Ax's ``Acquisition``, reporting objective weights to the surrogate and optimizing
    without BoTorch's empty fixed-feature pass (see the module docstring).

    The acquisition function is the one Ax chooses for the experiment (qLogNEI for one
    objective, qLogNEHVI for several, ...) unless the strategy names one; a surrogate
    that is an :class:`AcquisitionPartner` may compute Ax's choice with another class of
    the same values (``acqf_class_for``: kernel discovery's ``NewRowsqLogNEI``).
    """

    def __init__(
        self,
        surrogate: Any,
        search_space_digest: Any,
        torch_opt_config: Any,
        botorch_acqf_class: type[AcquisitionFunction] | None = None,
        botorch_acqf_options: dict[str, Any] | None = None,
        botorch_acqf_classes_with_options: (
            list[tuple[type[AcquisitionFunction], dict[str, Any]]] | None
        ) = None,
        n: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        if isinstance(surrogate, AcquisitionPartner):
            surrogate.record_objective_weights(torch_opt_config.objective_weights)
            if botorch_acqf_class is not None:
                botorch_acqf_class = surrogate.acqf_class_for(botorch_acqf_class)
            if botorch_acqf_classes_with_options:
                botorch_acqf_classes_with_options = [
                    (surrogate.acqf_class_for(cls), opts)
                    for cls, opts in botorch_acqf_classes_with_options
                ]
        super().__init__(
            surrogate,
            search_space_digest,
            torch_opt_config,
            botorch_acqf_class=botorch_acqf_class,
            botorch_acqf_options=botorch_acqf_options,
            botorch_acqf_classes_with_options=botorch_acqf_classes_with_options,
            n=n,
            options=options,
        )

    def optimize(
        self,
        n: int,
        search_space_digest: SearchSpaceDigest,
        inequality_constraints: list[tuple[Tensor, Tensor, float]] | None = None,
        equality_constraints: list[tuple[Tensor, Tensor, float]] | None = None,
        fixed_features: dict[int, float] | None = None,
        rounding_func: Callable[[Tensor], Tensor] | None = None,
        optimizer_options: dict[str, Any] | None = None,
        candidate_set: Tensor | None = None,
        sampling_strategy: SamplingStrategy | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Ax's ``optimize``; a continuous search with no fixed feature generates its
        candidates with :func:`gen_candidates_scipy_unfixed` (unless
        ``optimizer_options`` names a ``gen_candidates`` of its own).

        When the surrogate's round has a batch portfolio (:mod:`.portfolio`), the ``n``
        points are split among its members: each member's share is optimized under its
        own model's acquisition function, with the points of the members before it
        pending, and the surrogate is told which member generated which points.
        """
        kwargs: dict[str, Any] = {
            "search_space_digest": search_space_digest,
            "inequality_constraints": inequality_constraints,
            "equality_constraints": equality_constraints,
            "fixed_features": fixed_features,
            "rounding_func": rounding_func,
            "optimizer_options": optimizer_options,
            "candidate_set": candidate_set,
            "sampling_strategy": sampling_strategy,
        }
        partner = self.surrogate
        plan = partner.portfolio_plan(n) if isinstance(partner, PortfolioPartner) else None
        # The round's other kernels (background_fits) go on fitting in their worker: Ax's
        # client asks for a batch one trial at a time, and the trials are run after it,
        # so the round ends at the surrogate's next fit or read, not here.
        return self._optimize_portfolio(plan, **kwargs) if plan else self._optimize(n, **kwargs)

    def _optimize_portfolio(
        self, plan: list[tuple[str, Model, int]], **kwargs: Any
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Each member's share of the points from its own acquisition function (Ax's
        construction, with the member's model), the earlier members' points pending."""
        partner = self.surrogate
        assert isinstance(partner, PortfolioPartner)
        botorch_acqf_class, options = self.botorch_acqf_classes_with_options[0]
        initial_pending, original = self.X_pending, self.acqf
        parts: list[tuple[Tensor, Tensor, Tensor]] = []
        try:
            for name, model, count in plan:
                if parts:
                    previous = torch.cat([c for c, _, _ in parts], dim=0)
                    condition_on_candidates(self, previous, initial_pending)
                if parts or model is not acquisition_model(self):  # else Ax's own acqf
                    self.acqf = construct_botorch_acquisition(
                        self,
                        botorch_acqf_class=botorch_acqf_class,
                        botorch_acqf_options=options,
                        model=model,
                    )
                candidates, values, weights = self._optimize(count, **kwargs)
                partner.record_portfolio_points(name, candidates)
                parts.append((candidates, values.reshape(-1), weights.reshape(-1)))
        finally:
            self.X_pending, self.acqf = initial_pending, original
        return (
            torch.cat([c for c, _, _ in parts], dim=0),
            torch.cat([v for _, v, _ in parts], dim=0),
            torch.cat([w for _, _, w in parts], dim=0),
        )

    def _optimize(self, n: int, **kwargs: Any) -> tuple[Tensor, Tensor, Tensor]:
        """Ax's ``optimize`` of ``self.acqf``, with the model's hyperparameters constant
        and without BoTorch's empty fixed-feature pass (see the module docstring)."""
        options = kwargs["optimizer_options"]
        options = dict(options) if options is not None else None
        if not kwargs["fixed_features"] and "gen_candidates" not in (options or {}):
            optimizer = determine_optimizer(
                search_space_digest=kwargs["search_space_digest"],
                acqf=self.acqf,
                discrete_choices=mk_discrete_choices(ssd=kwargs["search_space_digest"]),
            )
            if optimizer == "optimize_acqf":
                options = {**(options or {}), "gen_candidates": gen_candidates_scipy_unfixed}
        model = getattr(self.acqf, "model", None)
        frozen = [] if model is None else [p for p in model.parameters() if p.requires_grad]
        for p in frozen:  # the fitted hyperparameters are constants here
            p.requires_grad_(False)
        try:
            return super().optimize(n=n, **{**kwargs, "optimizer_options": options})
        finally:
            for p in frozen:
                p.requires_grad_(True)


__all__ = [
    "AcquisitionPartner",
    "KernelDiscoveryAcquisition",
    "PortfolioPartner",
    "gen_candidates_scipy_unfixed",
]
