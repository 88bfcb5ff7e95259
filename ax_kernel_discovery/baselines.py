"""The methods compared in the benchmarks, each an Ax ``GenerationStrategy``.

Every method shares the same Sobol initialization (``num_sobol``, default 20, seeded),
the same acquisition function (``qLogNoisyExpectedImprovement`` unless told otherwise)
and the same acquisition-optimizer settings (:func:`ax_kernel_discovery.strategy.botorch_step`),
so that they differ only in the surrogate:

===================  ==========================================================================
name                 surrogate
===================  ==========================================================================
``kd``               kernel discovery (:class:`~ax_kernel_discovery.KernelDiscoverySurrogate`;
                     offline evolution operator, or the LLM proposer a config asks for)
``rbf`` ...          one fixed kernel, Ax's plain ``Surrogate`` with one ``ModelConfig``:
                     ``rbf``, ``matern52``, ``linear``, ``periodic``, ``rq``, ``bock``, ``sl``
``greedy``           Greedy Search: Ax's own model selection over the start set
                     (RBF, Matern-5/2, RQ, BOCK, SL) by BIC, every round
``compositional``    Compositional Search (Duvenaud et al., 2013): BIC, the best kernel
                     expanded by ``+ B`` / ``x B`` per base kernel, depth <= 3
                     (:class:`CompositionalSearchSurrogate`)
``fixed``            one kernel of a kernel library (``kernel=...``, e.g. ``"kernels.json:NAME"``;
                     see :mod:`ax_kernel_discovery.library`)
``cake``             CAKE (Suwandi et al., 2025): an LLM evolves compositions of SE, PER,
                     LIN, RQ, M32, M52 (depth 3) from a truncated view of the data; BIC
                     (:class:`~ax_kernel_discovery.cake.CakeSurrogate`; needs an LLM)
``ax_default``       Ax's default ``BOTORCH_MODULAR`` surrogate (no surrogate override)
``sobol``            Sobol points only
``saasbo``           SAAS fully Bayesian GP (NUTS); expensive, small budgets only
===================  ==========================================================================

Example:
    >>> gs = get_method("rbf", num_sobol=10, num_restarts=2, raw_samples=32)
    >>> gs.name
    'Sobol+rbf'
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ax.adapter.registry import Generators
from ax.core.search_space import SearchSpaceDigest
from ax.generation_strategy.generation_node import GenerationStep
from ax.generation_strategy.generation_strategy import GenerationStrategy
from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from botorch.utils.evaluation import BIC
from torch import Tensor

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.kernels.discovered import DiscoveredKernel
from ax_kernel_discovery.library import fixed_kernel_generation_strategy
from ax_kernel_discovery.population import START_SET, base_candidate
from ax_kernel_discovery.proposers.base import Proposer
from ax_kernel_discovery.proposers.compositional import CompositionalProposer
from ax_kernel_discovery.storage import register_surrogate_class
from ax_kernel_discovery.strategy import botorch_step, sobol_step
from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate, RoundRecord, model_config_for

#: Fixed-kernel baselines (leaf names of :mod:`ax_kernel_discovery.expression`).
FIXED_KERNELS: tuple[str, ...] = ("rbf", "matern52", "linear", "periodic", "rq", "bock", "sl")

#: Defaults of compositional search's :class:`KernelDiscoveryConfig` (top 5 by BIC, all 10 expansions).
COMPOSITIONAL_DEFAULTS: dict[str, Any] = {
    "population_size": 5,
    "proposals_per_round": 2 * len(START_SET),
}

#: Largest budget allowed for ``saasbo`` (NUTS per round costs minutes at D >= 100).
SAASBO_MAX_BUDGET = 200


# --------------------------------------------------------------------------- compositional search


class CompositionalSearchSurrogate(KernelDiscoverySurrogate):
    """Compositional Search (Duvenaud et al., 2013) inside the kernel-discovery loop.

    A :class:`~ax_kernel_discovery.KernelDiscoverySurrogate` with

    * the :class:`~ax_kernel_discovery.proposers.compositional.CompositionalProposer`
      (best member ``S`` -> ``S + B`` and ``S x B`` for each base kernel ``B``, at most
      ``max_depth`` base kernels per expression);
    * selection by BIC (``config.criterion`` is forced to ``"bic"``);
    * no strike rule (a member stays as long as its BIC keeps it in the top N);
    * **hyperparameter reuse**: a new expansion ``S op B`` starts its MLL fit from the
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
        elif not isinstance(config, KernelDiscoveryConfig):
            config = KernelDiscoveryConfig.model_validate(dict(config))
        config = config.model_copy(update={"criterion": "bic", "proposer": "offline"})
        super().__init__(config=config, state=state, **kwargs)
        self.max_depth = int(max_depth)
        self.base_kernels = tuple(base_kernels)
        self._proposer = CompositionalProposer(
            base_kernels=self.base_kernels, max_depth=self.max_depth
        )

    @property
    def proposer(self) -> Proposer:
        if self._proposer is None:
            self._proposer = CompositionalProposer(
                base_kernels=self.base_kernels, max_depth=self.max_depth
            )
        return self._proposer

    def _serialize_attributes_as_kwargs(self) -> dict[str, Any]:
        kwargs = super()._serialize_attributes_as_kwargs()
        kwargs["max_depth"] = self.max_depth
        kwargs["base_kernels"] = list(self.base_kernels)
        return kwargs

    def _strike(self, outcome: str, pop: Any, X: Tensor, Y: Tensor, rec: RoundRecord) -> None:
        """Compositional Search keeps members by BIC only (no strike rule)."""

    def _fit_and_score(
        self,
        cand: KernelCandidate,
        dataset: SupervisedDataset,
        search_space_digest: SearchSpaceDigest,
        outcome: str,
        rec: RoundRecord,
        refit: bool = True,
        maxiter: int | None = None,
        members: Sequence[KernelCandidate] = (),
    ) -> tuple[Model, ModelConfig, float] | None:
        if (
            self.config.warm_start
            and (outcome, cand.name) not in self._warm
            and len(cand.parents) == 2
        ):
            try:
                state = reuse_hyperparameters(cand, self._warm, outcome, dataset.X.shape[-1])
            except Exception:  # noqa: BLE001 - reuse is an initialization, never required
                state = None
            if state is not None:
                self._warm[(outcome, cand.name)] = state
        return super()._fit_and_score(
            cand,
            dataset,
            search_space_digest,
            outcome,
            rec,
            refit=refit,
            maxiter=maxiter,
            members=members,
        )


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
    warm: Mapping[tuple[str, str], Mapping[str, Tensor]],
    outcome: str,
    dim: int,
) -> dict[str, Tensor] | None:
    """A full model state dict for an expansion ``S op B``, reusing ``S``'s and ``B``'s fits.

    Args:
        cand: The expansion (``parents == (S, B)``, ``spec`` made by
            :func:`~ax_kernel_discovery.proposers.compositional.expand`).
        warm: Fitted state dicts by ``(outcome, member name)``.
        outcome: The outcome being modelled.
        dim: Input dimension.

    Returns:
        The state dict to start the fit from, or ``None`` when ``S`` has no fitted state.
    """
    parent_name, base_name = cand.parents
    parent_state = warm.get((outcome, parent_name))
    if parent_state is None or cand.spec is None:
        return None
    base_state = warm.get((outcome, base_name))
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


# --------------------------------------------------------------------------- strategies


@dataclass(frozen=True)
class MethodInfo:
    """A benchmark method: its name, what it is and how to build its strategy."""

    name: str
    description: str
    builder: Callable[..., GenerationStrategy]
    max_budget: int | None = None


def _check_common(num_sobol: int) -> None:
    if num_sobol < 1:
        raise ValueError(f"num_sobol must be >= 1 (a GP needs data to start from), got {num_sobol}")


def _bo_strategy(
    name: str,
    surrogate: Any,
    num_sobol: int,
    seed: int,
    botorch_acqf_class: type[AcquisitionFunction],
    num_restarts: int,
    raw_samples: int,
    sample_around_best: bool,
    maxiter: int,
    device: str | None,
    generator_name: str,
) -> GenerationStrategy:
    _check_common(num_sobol)
    step = botorch_step(
        surrogate,
        botorch_acqf_class=botorch_acqf_class,
        num_restarts=num_restarts,
        raw_samples=raw_samples,
        sample_around_best=sample_around_best,
        maxiter=maxiter,
        device=device or "cpu",
        generator_name=generator_name,
    )
    return GenerationStrategy(name=f"Sobol+{name}", nodes=[sobol_step(num_sobol, seed), step])


def fixed_kernel_surrogate(kernel: str) -> Surrogate:
    """Ax's plain ``Surrogate`` with one kernel of the package (stored by Ax's JSON)."""
    if kernel not in FIXED_KERNELS:
        raise ValueError(f"unknown fixed kernel {kernel!r}; choose from {FIXED_KERNELS}")
    config = model_config_for(base_candidate(kernel, origin="baseline"))
    return Surrogate(surrogate_spec=SurrogateSpec(model_configs=[config]))


def greedy_surrogate(kernels: tuple[str, ...] = START_SET) -> Surrogate:
    """Greedy Search: Ax fits every kernel and keeps the lowest BIC, each round."""
    configs = [model_config_for(base_candidate(k, origin="baseline")) for k in kernels]
    return Surrogate(surrogate_spec=SurrogateSpec(model_configs=configs, eval_criterion=BIC))


def saasbo_surrogate(
    warmup_steps: int = 256, num_samples: int = 128, thinning: int = 16
) -> Surrogate:
    """SAAS fully Bayesian GP (Eriksson & Jankowiak, 2021) fitted by NUTS."""
    from botorch.models.fully_bayesian import SaasFullyBayesianSingleTaskGP

    config = ModelConfig(
        botorch_model_class=SaasFullyBayesianSingleTaskGP,
        mll_options={
            "warmup_steps": warmup_steps,
            "num_samples": num_samples,
            "thinning": thinning,
        },
        name="SAASBO",
    )
    return Surrogate(surrogate_spec=SurrogateSpec(model_configs=[config]))


def _common(options: dict[str, Any]) -> dict[str, Any]:
    return {
        "num_sobol": int(options.pop("num_sobol", 20)),
        "seed": int(options.pop("seed", 0)),
        "botorch_acqf_class": options.pop("botorch_acqf_class", qLogNoisyExpectedImprovement),
        "num_restarts": int(options.pop("num_restarts", 4)),
        "raw_samples": int(options.pop("raw_samples", 512)),
        "sample_around_best": bool(options.pop("sample_around_best", True)),
        "maxiter": int(options.pop("maxiter", 300)),
        "device": options.pop("device", None),
    }


def _no_more(name: str, options: dict[str, Any]) -> None:
    if options:
        raise TypeError(f"method {name!r} got unexpected options: {sorted(options)}")


def _kd_config(options: dict[str, Any], seed: int) -> KernelDiscoveryConfig:
    config = options.pop("config", None)
    if config is None:
        return KernelDiscoveryConfig(seed=seed)
    if not isinstance(config, KernelDiscoveryConfig):
        config = KernelDiscoveryConfig.model_validate(dict(config))
    return config


def _build_kd(**options: Any) -> GenerationStrategy:
    common = _common(options)
    config = _kd_config(options, common["seed"])
    _no_more("kd", options)
    common["device"] = common["device"] or config.resolved_device()
    return _bo_strategy(
        "kd", KernelDiscoverySurrogate(config), generator_name="KernelDiscovery", **common
    )


def _build_fixed(kernel: str) -> Callable[..., GenerationStrategy]:
    def build(**options: Any) -> GenerationStrategy:
        common = _common(options)
        _no_more(kernel, options)
        return _bo_strategy(
            kernel, fixed_kernel_surrogate(kernel), generator_name=f"Fixed-{kernel}", **common
        )

    return build


def _build_library_fixed(**options: Any) -> GenerationStrategy:
    common = _common(options)
    kernel = options.pop("kernel", None)
    _no_more("fixed", options)
    if kernel is None:
        raise TypeError(
            "method 'fixed' needs kernel=... (a library kernel, its entry, or 'kernels.json:NAME')"
        )
    return fixed_kernel_generation_strategy(kernel, **common)


def _build_greedy(**options: Any) -> GenerationStrategy:
    common = _common(options)
    kernels = tuple(options.pop("kernels", START_SET))
    _no_more("greedy", options)
    return _bo_strategy(
        "greedy", greedy_surrogate(kernels), generator_name="GreedySearch", **common
    )


def _build_compositional(**options: Any) -> GenerationStrategy:
    common = _common(options)
    config = options.pop("config", None)
    max_depth = int(options.pop("max_depth", 3))
    _no_more("compositional", options)
    if config is None:
        config = KernelDiscoveryConfig(**COMPOSITIONAL_DEFAULTS, seed=common["seed"])
    surrogate = CompositionalSearchSurrogate(config, max_depth=max_depth)
    common["device"] = common["device"] or surrogate.config.resolved_device()
    return _bo_strategy("compositional", surrogate, generator_name="CompositionalSearch", **common)


def _build_cake(**options: Any) -> GenerationStrategy:
    from ax_kernel_discovery.cake import CAKE_DEFAULTS, CakeSurrogate, check_cake_config

    common = _common(options)
    config = options.pop("config", None)
    _no_more("cake", options)
    if config is None:
        config = KernelDiscoveryConfig(**CAKE_DEFAULTS, seed=common["seed"])
    elif not isinstance(config, KernelDiscoveryConfig):
        config = KernelDiscoveryConfig.model_validate(dict(config))
    check_cake_config(config)
    surrogate = CakeSurrogate(config)
    common["device"] = common["device"] or surrogate.config.resolved_device()
    return _bo_strategy("cake", surrogate, generator_name="CAKE", **common)


def _build_ax_default(**options: Any) -> GenerationStrategy:
    common = _common(options)
    _no_more("ax_default", options)
    return _bo_strategy("ax_default", Surrogate(), generator_name="AxDefault", **common)


def _build_sobol(**options: Any) -> GenerationStrategy:
    common = _common(options)
    _no_more("sobol", options)
    step = GenerationStep(
        generator=Generators.SOBOL, num_trials=-1, generator_kwargs={"seed": common["seed"]}
    )
    return GenerationStrategy(name="Sobol", nodes=[step])


def _build_saasbo(**options: Any) -> GenerationStrategy:
    common = _common(options)
    nuts = {
        k: int(options.pop(k)) for k in ("warmup_steps", "num_samples", "thinning") if k in options
    }
    _no_more("saasbo", options)
    return _bo_strategy("saasbo", saasbo_surrogate(**nuts), generator_name="SAASBO", **common)


METHODS: dict[str, MethodInfo] = {
    "kd": MethodInfo(
        "kd", "kernel discovery (offline operator, or the LLM proposer of `config`)", _build_kd
    ),
    **{
        k: MethodInfo(
            k,
            f"fixed {base_candidate(k).name} kernel (Ax Surrogate, one ModelConfig)",
            _build_fixed(k),
        )
        for k in FIXED_KERNELS
    },
    "fixed": MethodInfo(
        "fixed",
        "one kernel of a kernel library (--kernel kernels.json:NAME; see `export`)",
        _build_library_fixed,
    ),
    "greedy": MethodInfo(
        "greedy", "Greedy Search: BIC over RBF, Matern52, RQ, BOCK, SL each round", _build_greedy
    ),
    "compositional": MethodInfo(
        "compositional",
        "Compositional Search (Duvenaud et al. 2013): BIC, +/x expansions, depth 3",
        _build_compositional,
    ),
    "cake": MethodInfo(
        "cake",
        "CAKE (Suwandi et al. 2025): LLM-composed SE/PER/LIN/RQ/M32/M52, BIC (needs --llm)",
        _build_cake,
    ),
    "ax_default": MethodInfo(
        "ax_default", "Ax's default BOTORCH_MODULAR surrogate", _build_ax_default
    ),
    "sobol": MethodInfo("sobol", "Sobol points only (no model)", _build_sobol),
    "saasbo": MethodInfo(
        "saasbo",
        f"SAAS fully Bayesian GP by NUTS (slow; budget <= {SAASBO_MAX_BUDGET})",
        _build_saasbo,
        SAASBO_MAX_BUDGET,
    ),
}
"""Methods by name."""


class UnknownMethodError(KeyError, ValueError):
    """``get_method`` got a name that is not in :data:`METHODS`."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def method_info(name: str) -> MethodInfo:
    """The :class:`MethodInfo` of ``name`` (case-insensitive); clear error when unknown."""
    key = str(name).strip().lower()
    if key not in METHODS:
        raise UnknownMethodError(f"unknown method {name!r}; valid names: {', '.join(METHODS)}")
    return METHODS[key]


def get_method(name: str, **options: Any) -> GenerationStrategy:
    """The ``GenerationStrategy`` of a benchmark method.

    Args:
        name: A key of :data:`METHODS`.
        **options: ``num_sobol`` (20), ``seed`` (0, the Sobol seed), ``botorch_acqf_class``
            (``qLogNoisyExpectedImprovement``), ``num_restarts`` (4), ``raw_samples``
            (512), ``sample_around_best`` (True), ``maxiter`` (300), ``device`` ("cpu");
            ``kd``, ``compositional`` and ``cake`` also take ``config`` (a
            :class:`~ax_kernel_discovery.KernelDiscoveryConfig`), ``fixed`` its ``kernel``
            (see :func:`~ax_kernel_discovery.library.get_kernel`), ``compositional``
            ``max_depth`` (3), ``greedy`` ``kernels``, ``saasbo`` ``warmup_steps``,
            ``num_samples``, ``thinning``.

    Raises:
        UnknownMethodError: Unknown name (the message lists the valid ones).
        TypeError: An option the method does not take.

    Example:
        >>> gs = get_method("kd", num_sobol=20, config=KernelDiscoveryConfig(population_size=8))
    """
    info = method_info(name)
    return info.builder(**copy.copy(options))


def surrogate_of(gs: GenerationStrategy) -> Any:
    """The ``Surrogate`` instance of a strategy's BO node (``None`` for Sobol-only)."""
    for node in gs._nodes:
        for spec in node.generator_specs:
            surrogate = (spec.generator_kwargs or {}).get("surrogate")
            if surrogate is not None:
                return surrogate
    return None


register_surrogate_class(CompositionalSearchSurrogate)

__all__ = [
    "COMPOSITIONAL_DEFAULTS",
    "FIXED_KERNELS",
    "METHODS",
    "SAASBO_MAX_BUDGET",
    "CompositionalSearchSurrogate",
    "MethodInfo",
    "UnknownMethodError",
    "fixed_kernel_surrogate",
    "get_method",
    "greedy_surrogate",
    "method_info",
    "reuse_hyperparameters",
    "saasbo_surrogate",
    "surrogate_of",
]
