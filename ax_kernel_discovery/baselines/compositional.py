"""Compositional Search (Duvenaud et al., 2013), the structure-search baseline.

A kernel-discovery loop whose proposer expands the best kernel by every base kernel
(``S + B`` and ``S x B``), selected by BIC, with the expansions' fits started from
their parents' (:func:`reuse_hyperparameters`). Method ``compositional`` of
:mod:`ax_kernel_discovery.baselines`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from torch import Tensor

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.errors import is_kernel_failure, unexpected
from ax_kernel_discovery.population import START_SET
from ax_kernel_discovery.proposers.compositional import CompositionalProposer
from ax_kernel_discovery.storage import register_surrogate_class
from ax_kernel_discovery.surrogate.core import KernelDiscoverySurrogate
from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel
from ax_kernel_discovery.surrogate.fitting import FitStart

__all__ = [
    "COMPOSITIONAL_DEFAULTS",
    "CompositionalSearchSurrogate",
    "reuse_hyperparameters",
    "reuse_parent_fit",
]

#: Defaults of compositional search's :class:`KernelDiscoveryConfig` (top 5 by BIC, all 10 expansions).
COMPOSITIONAL_DEFAULTS: dict[str, Any] = {
    "population_size": 5,
    "proposals_per_round": 2 * len(START_SET),
}


class CompositionalSearchSurrogate(KernelDiscoverySurrogate):
    """Compositional Search (Duvenaud et al., 2013) inside the kernel-discovery loop.

    A :class:`~ax_kernel_discovery.KernelDiscoverySurrogate` with

    * the :class:`~ax_kernel_discovery.proposers.compositional.CompositionalProposer`
      (best member ``S`` -> ``S + B`` and ``S x B`` for each base kernel ``B``, at most
      ``max_depth`` base kernels per expression);
    * selection by BIC (``config.criterion`` is forced to ``"bic"``; no guard round, no kept
      kernels);
    * no strike rule (``strike_rule="none"``: a member stays as long as its BIC keeps it
      in the top N);
    * **hyperparameter reuse** (the start rule :func:`reuse_parent_fit`): a new expansion ``S op B`` starts its MLL fit from the
      hyperparameters fitted this round for ``S`` (all its kernel parameters, its
      noise and its constant mean) and for ``B`` when ``B`` is still a member (its
      lengthscales and other kernel parameters; for a sum also its output scale). In a
      product the single output scale is ``S``'s. Parameters with no fitted
      counterpart keep their prior-based initial values. This is Duvenaud et al.'s
      "initialize the new kernel's parameters from the parent's optimum", extended to
      the added base kernel; the fit then optimizes all parameters jointly.

    Args:
        config: Settings; ``criterion`` is set to ``"bic"``.
        state: Saved state (from Ax's JSON storage).
        max_depth: Maximum number of base kernels in an expression.
        base_kernels: Base kernels ``B`` of the expansions (default: the start set).
        **kwargs: Passed to :class:`~ax_kernel_discovery.KernelDiscoverySurrogate`.

    Example:
        >>> s = CompositionalSearchSurrogate(KernelDiscoveryConfig(proposals_per_round=10))
        >>> s.config.criterion
        'bic'
    """

    #: BoTorch's qLogNEI, as in the study's runs of this baseline.
    fixed_acqf_class = qLogNoisyExpectedImprovement

    def __init__(
        self,
        config: KernelDiscoveryConfig | Mapping[str, Any] | None = None,
        state: Mapping[str, Any] | None = None,
        max_depth: int = 3,
        base_kernels: tuple[str, ...] | list[str] = START_SET,
        **kwargs: Any,
    ) -> None:
        if config is None:
            config = KernelDiscoveryConfig(
                proposals_per_round=2 * len(base_kernels), population_size=5
            )
        config = KernelDiscoveryConfig.coerce(config).model_copy(
            update={
                "criterion": "bic",
                "proposer": "offline",
                "guard_rounds": 0,
                "keep_kernels": (),
                "strike_rule": "none",
            }
        )
        self.max_depth = int(max_depth)
        self.base_kernels = tuple(base_kernels)
        super().__init__(
            config=config,
            state=state,
            proposer_factory=self.expansion_proposer,
            start_rule=reuse_parent_fit,
            **kwargs,
        )

    def expansion_proposer(self, config: KernelDiscoveryConfig) -> CompositionalProposer:
        """The proposer factory: every expansion of the best member, by the base kernels."""
        return CompositionalProposer(base_kernels=self.base_kernels, max_depth=self.max_depth)

    def serialize_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        kwargs = super().serialize_kwargs(kwargs)
        kwargs["max_depth"] = self.max_depth
        kwargs["base_kernels"] = list(self.base_kernels)
        return kwargs


def reuse_parent_fit(
    cand: KernelCandidate,
    members: Sequence[KernelCandidate],
    warm: Mapping[str, Mapping[str, Tensor]],
    dim: int,
) -> FitStart | None:
    """The start rule of compositional search: an expansion ``S op B`` starts from the
    fits of ``S`` and ``B`` (:func:`reuse_hyperparameters`), with a warm start's steps."""
    if len(cand.parents) != 2:
        return None
    try:
        state = reuse_hyperparameters(cand, warm, dim)
    except Exception as e:  # noqa: BLE001 - reuse is an initialization, never required
        if not is_kernel_failure(e):
            unexpected(e, f"reusing the parents' fits for {cand.name}")
        return None
    return FitStart(state, warm_steps=True) if state is not None else None


_COVAR = "covar_module.inner."


def _part_prefixes(spec: Mapping[str, Any]) -> tuple[str | None, str]:
    """``(scale prefix, core prefix)`` of a fitted single kernel's ``inner`` module.

    A non-sum kernel is ``ScaleKernel(core)``: its output scale is ``raw_outputscale``
    and its core ``base_kernel.``; a sum is an ``AdditiveKernel`` with no outer scale.
    """
    if spec.get("op") == "sum":
        return None, ""
    return "raw_outputscale", "base_kernel."


def reuse_hyperparameters(
    cand: KernelCandidate,
    warm: Mapping[str, Mapping[str, Tensor]],
    dim: int,
) -> dict[str, Tensor] | None:
    """A full model state dict for an expansion ``S op B``, reusing ``S``'s and ``B``'s fits.

    Args:
        cand: The expansion (``parents == (S, B)``, ``spec`` made by
            :func:`~ax_kernel_discovery.proposers.compositional.expand`).
        warm: The outcome's fitted state dicts by member name.
        dim: Input dimension.

    Returns:
        The state dict to start the fit from, or ``None`` when ``S`` has no fitted state.
    """
    parent_name, base_name = cand.parents
    parent_state = warm.get(parent_name)
    if parent_state is None or cand.spec is None:
        return None
    base_state = warm.get(base_name)
    spec = cand.spec
    args = spec["args"]
    fresh = {
        f"covar_module.{k}": v
        for k, v in DiscoveredKernel(cand.model_dump_json(), dim).state_dict().items()
    }
    state = {k: v.clone() for k, v in parent_state.items() if not k.startswith("covar_module.")}
    state.update(fresh)

    # (source state, source prefix, destination prefix) under covar_module.inner.
    moves: list[tuple[Mapping[str, Tensor], str, str]] = []
    if spec["op"] == "sum":
        n_parent = len(args) - 1
        if n_parent > 1:  # flattened: S was a sum of n_parent summands
            moves += [(parent_state, f"kernels.{i}.", f"kernels.{i}.") for i in range(n_parent)]
        else:
            moves.append((parent_state, "", "kernels.0."))
        if base_state is not None:
            moves.append((base_state, "", f"kernels.{n_parent}."))
    else:  # product: ScaleKernel(ProductKernel(S_core, B_core))
        scale, core = _part_prefixes(args[0])
        moves.append((parent_state, core, "base_kernel.kernels.0."))
        if scale is not None:
            moves.append((parent_state, scale, "raw_outputscale"))
        if base_state is not None:
            moves.append((base_state, "base_kernel.", "base_kernel.kernels.1."))
    for source, src, dst in moves:
        for key, value in source.items():
            if not key.startswith(_COVAR + src):
                continue
            target = _COVAR + dst + key[len(_COVAR + src) :]
            if target in state and state[target].shape == value.shape:
                state[target] = value.clone()
    return state


register_surrogate_class(CompositionalSearchSurrogate)
