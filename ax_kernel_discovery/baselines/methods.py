"""The methods compared in the benchmarks, each an Ax ``GenerationStrategy``.

Every method starts with Ax's own initial design (the box centre, then seeded Sobol
points: ``num_sobol`` trials in all, :func:`~ax_kernel_discovery.strategy.initialization_nodes`)
and uses the same acquisition-optimizer settings; they differ in the model and in who
builds the BO step. :data:`METHODS` lists them by name, each with what it is (the docs'
table of methods is made from it). Ax's own strategy, untouched (:func:`ax_strategy`:
what ``Client.configure_generation_strategy`` builds, Ax's ``Acquisition`` and optimizer,
qLogNEI or qLogNEHVI for several objectives), runs Ax's default model, each fixed kernel
(Ax's ``"custom"`` method, one ``ModelConfig``) and BoTorch's MAP-SAAS ensemble GP.
Kernel discovery (:class:`~ax_kernel_discovery.surrogate.core.KernelDiscoverySurrogate`)
and the searches built on it (:class:`CompositionalSearchSurrogate`,
:class:`~ax_kernel_discovery.baselines.cake.CakeSurrogate`) run in the package's BO step
(:func:`~ax_kernel_discovery.strategy.botorch_step`: Ax's acquisition by experiment kind,
computed by :class:`~ax_kernel_discovery.surrogate.acquisition.KernelDiscoveryAcquisition`).

Example:
    >>> gs = get_method("rbf", num_sobol=10, num_restarts=2, raw_samples=32)
    >>> list(gs.nodes_by_name)
    ['CenterOfSearchSpace', 'Sobol', 'MBM']
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ax.adapter.registry import Generators
from ax.generation_strategy.generation_node import GenerationStep
from ax.generation_strategy.generation_strategy import GenerationStrategy
from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.acquisition import AcquisitionFunction
from botorch.models.map_saas import EnsembleMapSaasSingleTaskGP
from botorch.utils.evaluation import BIC

from ax_kernel_discovery._upstream.ax import strategy_nodes
from ax_kernel_discovery.baselines.cake import CAKE_DEFAULTS, CakeSurrogate, check_cake_config
from ax_kernel_discovery.baselines.compositional import (
    COMPOSITIONAL_DEFAULTS,
    CompositionalSearchSurrogate,
)
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.devices import resolve_device
from ax_kernel_discovery.library import fixed_kernel_generation_strategy
from ax_kernel_discovery.population import START_SET, base_candidate
from ax_kernel_discovery.strategy import (
    ACQUISITION_ARGUMENTS,
    PAPER_ACQUISITION,
    AcquisitionOptions,
    check_num_sobol,
    sobol_then_botorch,
)
from ax_kernel_discovery.surrogate.core import KernelDiscoverySurrogate
from ax_kernel_discovery.surrogate.fitting import candidate_model_config

#: Fixed-kernel baselines (leaf names of :mod:`ax_kernel_discovery.expression`).
FIXED_KERNELS: tuple[str, ...] = ("rbf", "matern52", "linear", "periodic", "rq", "bock", "sl")

#: Largest budget allowed for ``saasbo`` (NUTS per round costs minutes at D >= 100).
SAASBO_MAX_BUDGET = 200


# --------------------------------------------------------------------------- strategies


@dataclass(frozen=True)
class MethodInfo:
    """A benchmark method: its name, what it is and how to build its strategy."""

    name: str
    description: str
    builder: Callable[..., GenerationStrategy]
    max_budget: int | None = None


def _bo_strategy(name: str, surrogate: Any, **options: Any) -> GenerationStrategy:
    return sobol_then_botorch(surrogate, f"Sobol+{name}", **options)


def fixed_kernel_surrogate(kernel: str) -> Surrogate:
    """Ax's plain ``Surrogate`` with one kernel of the package (stored by Ax's JSON)."""
    return Surrogate(surrogate_spec=SurrogateSpec(model_configs=[fixed_kernel_config(kernel)]))


def greedy_surrogate(kernels: tuple[str, ...] = START_SET) -> Surrogate:
    """Greedy Search: Ax fits every kernel and keeps the lowest BIC, each round."""
    configs = [candidate_model_config(base_candidate(k, origin="baseline")) for k in kernels]
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
    """Take the options every method shares out of ``options``.

    The acquisition is the paper's settings
    (:data:`~ax_kernel_discovery.strategy.PAPER_ACQUISITION`) with the acquisition
    arguments given (:data:`~ax_kernel_discovery.strategy.ACQUISITION_ARGUMENTS`, e.g.
    ``num_restarts=...``; ``None``: the paper's) on top.
    """
    given = {k: options.pop(k) for k in ACQUISITION_ARGUMENTS if k in options}
    return {
        "num_sobol": int(options.pop("num_sobol", 20)),
        "seed": int(options.pop("seed", 0)),
        **PAPER_ACQUISITION,
        **{k: v for k, v in given.items() if v is not None},
        "device": options.pop("device", None),
    }


def _no_more(name: str, options: dict[str, Any]) -> None:
    if options:
        raise TypeError(f"method {name!r} got unexpected options: {sorted(options)}")


def _kd_config(options: dict[str, Any], seed: int) -> KernelDiscoveryConfig:
    config = options.pop("config", None)
    if config is None:
        return KernelDiscoveryConfig(seed=seed)
    return KernelDiscoveryConfig.coerce(config)


def _build_kd(**options: Any) -> GenerationStrategy:
    common = _common(options)
    config = _kd_config(options, common["seed"])
    _no_more("kd", options)
    common["device"] = common["device"] or config.device
    return _bo_strategy(
        "kd", KernelDiscoverySurrogate(config), generator_name="KernelDiscovery", **common
    )


def fixed_kernel_config(kernel: str) -> ModelConfig:
    """The ``ModelConfig`` of one fixed kernel of the package (stored by Ax's JSON)."""
    if kernel not in FIXED_KERNELS:
        raise ValueError(f"unknown fixed kernel {kernel!r}; choose from {FIXED_KERNELS}")
    return candidate_model_config(base_candidate(kernel, origin="baseline"))


def _build_fixed(kernel: str) -> Callable[..., GenerationStrategy]:
    def build(**options: Any) -> GenerationStrategy:
        common = _common(options)
        _no_more(kernel, options)
        return ax_strategy(**common, model_config=fixed_kernel_config(kernel))

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
    common["device"] = common["device"] or surrogate.config.device
    return _bo_strategy("compositional", surrogate, generator_name="CompositionalSearch", **common)


def _build_cake(**options: Any) -> GenerationStrategy:
    common = _common(options)
    config = options.pop("config", None)
    _no_more("cake", options)
    if config is None:
        config = KernelDiscoveryConfig(**CAKE_DEFAULTS, seed=common["seed"])
    config = KernelDiscoveryConfig.coerce(config)
    check_cake_config(config)
    surrogate = CakeSurrogate(config)
    common["device"] = common["device"] or surrogate.config.device
    return _bo_strategy("cake", surrogate, generator_name="CAKE", **common)


def ax_strategy(
    num_sobol: int = 20,
    seed: int | None = 0,
    *,
    botorch_acqf_class: type[AcquisitionFunction] | None = None,
    acqf_options: dict[str, Any] | None = None,
    num_restarts: int | None = None,
    raw_samples: int | None = None,
    sample_around_best: bool | None = None,
    maxiter: int | None = None,
    device: str | None = None,
    model_config: ModelConfig | None = None,
) -> GenerationStrategy:
    """Ax's own strategy, as ``Client.configure_generation_strategy`` builds it.

    ``choose_generation_strategy`` with ``initialization_budget=num_sobol`` and
    ``initialization_random_seed=seed``: the box centre, Sobol points, then Ax's BO node
    (its ``Surrogate``, transforms, ``Acquisition`` class and optimizer), untouched by
    this package. Only what Ax's public options set may differ: the acquisition
    optimizer's settings (the node's ``model_gen_options``), the acquisition function
    class, the device, and with ``model_config`` one model of Ax's ``"custom"`` method.

    Args:
        num_sobol: Initialization trials, the centre included.
        seed: Seed of the Sobol node.
        botorch_acqf_class: Acquisition function (``None``: Ax's choice for the experiment).
        acqf_options: Options of the acquisition function.
        num_restarts: Acquisition optimizer restarts (``None``: Ax's, 20).
        raw_samples: Raw samples of the restarts' initialization (``None``: Ax's, 1024).
        sample_around_best: RAASP, sampling around the best points (``None``: Ax's, off).
        maxiter: L-BFGS-B iterations of the acquisition optimizer (``None``: BoTorch's).
        device: torch device of the BO node (``None``: Ax's, the CPU).
        model_config: The BO node's one ``ModelConfig`` (``None``: Ax's default model).
    """
    from ax.api.utils.generation_strategy_dispatch import choose_generation_strategy
    from ax.api.utils.structs import GenerationStrategyDispatchStruct

    acq = AcquisitionOptions(
        botorch_acqf_class=botorch_acqf_class,
        acqf_options=acqf_options,
        num_restarts=num_restarts,
        raw_samples=raw_samples,
        sample_around_best=sample_around_best,
        maxiter=maxiter,
    )
    struct = GenerationStrategyDispatchStruct(
        method="custom" if model_config is not None else "fast",
        initialization_budget=check_num_sobol(num_sobol),
        initialization_random_seed=seed,
        torch_device=None if device is None else resolve_device(device),
    )
    gs = choose_generation_strategy(
        struct, model_config=model_config, botorch_acqf_class=acq.botorch_acqf_class
    )
    spec = strategy_nodes(gs)[-1].generator_specs[0]
    if acq.acqf_options:
        spec.generator_kwargs["botorch_acqf_options"] = dict(acq.acqf_options)
    optimizer_kwargs = acq.optimizer_kwargs()
    if optimizer_kwargs:
        spec.generator_gen_kwargs = {"model_gen_options": {"optimizer_kwargs": optimizer_kwargs}}
    return gs


def _build_ax_default(**options: Any) -> GenerationStrategy:
    common = _common(options)
    _no_more("ax_default", options)
    return ax_strategy(**common)


#: The BO model of ``map_saas``: BoTorch's ensemble of MAP-SAAS GPs, one per value of the
#: global shrinkage, as one ``ModelConfig`` of Ax's own strategy (stored by Ax's JSON).
MAP_SAAS_CONFIG = ModelConfig(botorch_model_class=EnsembleMapSaasSingleTaskGP, name="MAP-SAAS")


def _build_map_saas(**options: Any) -> GenerationStrategy:
    common = _common(options)
    _no_more("map_saas", options)
    return ax_strategy(**common, model_config=MAP_SAAS_CONFIG)


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
    "map_saas": MethodInfo(
        "map_saas", "MAP-SAAS ensemble GP (SAAS priors by MAP; Ax's strategy)", _build_map_saas
    ),
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


#: The surrogate class of each method that a :class:`KernelDiscoveryConfig` configures.
KD_SURROGATES: dict[str, type[KernelDiscoverySurrogate]] = {
    "kd": KernelDiscoverySurrogate,
    "compositional": CompositionalSearchSurrogate,
    "cake": CakeSurrogate,
}

#: What each of those methods starts from when it is given no config.
_KD_DEFAULTS: dict[str, dict[str, Any]] = {
    "kd": {},
    "compositional": COMPOSITIONAL_DEFAULTS,
    "cake": CAKE_DEFAULTS,
}


def method_kd_config(
    name: str, config: Mapping[str, Any] | None = None, seed: int = 0
) -> KernelDiscoveryConfig | None:
    """The settings the surrogate of method ``name`` runs with (``None``: a method
    without a :class:`KernelDiscoveryConfig`).

    ``config``'s fields over the method's defaults, seeded with ``seed`` (as the runner
    passes them to :func:`get_method`), then the settings the method fixes itself (CAKE
    and compositional search fix the criterion, the proposer and the strike rule).

    Raises:
        pydantic.ValidationError: A bad field of ``config``.
    """
    key = str(name).strip().lower()
    if key not in KD_SURROGATES:
        return None
    fields = {**_KD_DEFAULTS[key], "seed": seed, **(config or {})}
    return KD_SURROGATES[key](KernelDiscoveryConfig.model_validate(fields)).config


def get_method(name: str, **options: Any) -> GenerationStrategy:
    """The ``GenerationStrategy`` of a benchmark method.

    Args:
        name: A key of :data:`METHODS`.
        **options: ``num_sobol`` (20), ``seed`` (0, the Sobol seed), the acquisition
            (default: the paper's,
            :data:`~ax_kernel_discovery.strategy.PAPER_ACQUISITION`):
            ``botorch_acqf_class`` (``qLogNoisyExpectedImprovement``), ``acqf_options``,
            ``num_restarts`` (4), ``raw_samples`` (512), ``sample_around_best`` (True),
            ``maxiter`` (300); ``device`` (default: Ax's
            choice, the CPU; ``"auto"``: CUDA when available, for every method; kd,
            compositional and CAKE take their config's);
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


__all__ = [
    "FIXED_KERNELS",
    "KD_SURROGATES",
    "MAP_SAAS_CONFIG",
    "METHODS",
    "SAASBO_MAX_BUDGET",
    "MethodInfo",
    "UnknownMethodError",
    "ax_strategy",
    "fixed_kernel_config",
    "fixed_kernel_surrogate",
    "method_kd_config",
    "get_method",
    "greedy_surrogate",
    "method_info",
    "saasbo_surrogate",
]
