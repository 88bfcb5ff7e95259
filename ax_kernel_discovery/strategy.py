"""Ax ``GenerationStrategy`` builders: Sobol, then kernel discovery.

Every method of the package is :func:`sobol_then_botorch` around its own surrogate: the
seeded Sobol design (:func:`sobol_step`), then one ``BOTORCH_MODULAR`` step
(:func:`botorch_step`) whose acquisition, the function and its optimizer's settings,
is given as keyword arguments (``num_restarts=4``, ``**PAPER_ACQUISITION``...), which
build one :class:`AcquisitionOptions`.
"""

from __future__ import annotations

from typing import Any

from ax.adapter.registry import Generators, MBM_X_trans, Y_trans
from ax.core.experiment import Experiment
from ax.core.experiment_status import ExperimentStatus
from ax.core.trial_status import TrialStatus
from ax.generation_strategy.dispatch_utils import get_derelativize_config
from ax.generation_strategy.generation_node import GenerationNode
from ax.generation_strategy.generation_strategy import GenerationStrategy
from ax.generation_strategy.generator_spec import GeneratorSpec
from ax.generation_strategy.transition_criterion import (
    MaxTrialsAwaitingData,
    count_trials_toward_threshold,
)
from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from pydantic import BaseModel, ConfigDict, Field

from ax_kernel_discovery._upstream.ax import (
    client_generation_strategy,
    set_pausing_criteria,
    strategy_nodes,
)
from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.config import ConfigSource, KernelDiscoveryConfig
from ax_kernel_discovery.devices import resolve_device
from ax_kernel_discovery.library_format import LibraryKernel, get_kernel, validate_library_kernel
from ax_kernel_discovery.proposers.from_config import check_llm_config
from ax_kernel_discovery.surrogate.acquisition import (
    AcquisitionPartner,
    KernelDiscoveryAcquisition,
)
from ax_kernel_discovery.surrogate.core import KernelDiscoverySurrogate
from ax_kernel_discovery.surrogate.fitting import candidate_model_config
from ax_kernel_discovery.surrogate.trial_rows import ShareRows
from ax_kernel_discovery.transforms import KeepNonFiniteOut

#: The paper authors' acquisition-optimizer settings (their released code), as keyword
#: arguments: ``kernel_discovery_generation_strategy(**PAPER_ACQUISITION)``.
PAPER_ACQUISITION: dict[str, Any] = {
    "num_restarts": 4,
    "raw_samples": 512,
    "sample_around_best": True,
    "maxiter": 300,
}

#: The acquisition's keyword arguments, the same in every builder (:func:`botorch_step`,
#: :func:`kernel_discovery_generation_strategy`, :func:`fixed_kernel_generation_strategy`,
#: the baselines' ``get_method``); ``None`` or left out: Ax's own setting.
ACQUISITION_ARGUMENTS: tuple[str, ...] = (
    "botorch_acqf_class",
    "acqf_options",
    "num_restarts",
    "raw_samples",
    "sample_around_best",
    "maxiter",
)

#: The standard deviation (in the unit cube) of RAASP's samples around the best points.
SAMPLE_AROUND_BEST_SIGMA = 0.1


class AcquisitionOptions(BaseModel):
    """The acquisition of a BO step: the acquisition function and its optimizer's settings.

    The object the builders' keyword arguments (``num_restarts=4``...) build and check;
    the builders take the keywords, not this object.

    Every optimizer setting left ``None`` keeps Ax's own default (Ax 1.3: 20 restarts,
    1024 raw samples, BoTorch's L-BFGS-B iteration limit, no sampling around the best
    points), so ``AcquisitionOptions()`` is Ax's default acquisition exactly, and
    replacing Ax's default strategy by a method of this package changes the surrogate
    and, for kernel discovery, how qLogNEI is computed (not its values: see
    ``botorch_acqf_class``). :meth:`paper` gives the paper authors' settings (4 restarts, 512
    raw samples, ``maxiter`` 300, sampling around the best points), which cost less per
    round and search less.

    Args:
        botorch_acqf_class: Acquisition function (``None``: Ax's choice for the
            experiment: qLogNEI for one objective, qLogNEHVI for several, ...; a
            :class:`~ax_kernel_discovery.KernelDiscoverySurrogate` computes Ax's qLogNEI
            with :class:`~ax_kernel_discovery.surrogate.new_rows_qlognei.NewRowsqLogNEI`, the
            same values to 1e-9 at a lower cost per optimizer step). Analytic
            ``LogExpectedImprovement`` works only when one trial is asked per round (it
            rejects pending points).
        acqf_options: Options of the acquisition function (``botorch_acqf_options``).
        num_restarts: Restarts of the acquisition optimizer (``None``: Ax's, 20).
        raw_samples: Raw samples of the restarts' initialization (``None``: Ax's, 1024).
        sample_around_best: RAASP, sampling around the best points with standard deviation
            :data:`SAMPLE_AROUND_BEST_SIGMA` (``None``: Ax's, off).
        maxiter: L-BFGS-B iterations of the acquisition optimizer (``None``: BoTorch's).
        batch_limit: Restarts optimized jointly at a time (``None``: BoTorch's).

    Example:
        >>> AcquisitionOptions.paper().optimizer_kwargs()["num_restarts"]
        4
        >>> AcquisitionOptions().optimizer_kwargs()
        {}
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    botorch_acqf_class: type[AcquisitionFunction] | None = None
    acqf_options: dict[str, Any] | None = None
    num_restarts: int | None = Field(None, ge=1)
    raw_samples: int | None = Field(None, ge=1)
    sample_around_best: bool | None = None
    maxiter: int | None = Field(None, ge=1)
    batch_limit: int | None = Field(None, ge=1)

    @classmethod
    def paper(cls, **overrides: Any) -> AcquisitionOptions:
        """The paper authors' settings (:data:`PAPER_ACQUISITION`), with ``overrides``."""
        return cls(**{**PAPER_ACQUISITION, **overrides})

    def updated(self, **overrides: Any) -> AcquisitionOptions:
        """A validated copy with the ``overrides`` that are not ``None`` applied."""
        given = {k: v for k, v in overrides.items() if v is not None}
        if not given:
            return self
        return type(self)(**{**dict(self), **given})

    def optimizer_kwargs(self) -> dict[str, Any]:
        """The optimizer settings as Ax's ``model_gen_options["optimizer_kwargs"]``.

        Only the settings given; empty for Ax's defaults.
        """
        out: dict[str, Any] = {}
        if self.num_restarts is not None:
            out["num_restarts"] = self.num_restarts
        if self.raw_samples is not None:
            out["raw_samples"] = self.raw_samples
        inner: dict[str, Any] = {}
        if self.sample_around_best is not None:
            inner["sample_around_best"] = self.sample_around_best
            if self.sample_around_best:
                inner["sample_around_best_sigma"] = SAMPLE_AROUND_BEST_SIGMA
        if self.maxiter is not None:
            inner["maxiter"] = self.maxiter
        if self.batch_limit is not None:
            inner["batch_limit"] = self.batch_limit
        if inner:
            out["options"] = inner
        return out


def optimizer_options(
    num_restarts: int | None = None,
    raw_samples: int | None = None,
    sample_around_best: bool | None = None,
    maxiter: int | None = None,
    batch_limit: int | None = None,
) -> dict[str, Any]:
    """Acquisition-optimizer settings for Ax's ``optimizer_kwargs``.

    :meth:`AcquisitionOptions.optimizer_kwargs` of these settings: every argument left
    ``None`` keeps Ax's own default, so ``optimizer_options()`` is Ax's default
    acquisition exactly; ``**PAPER_ACQUISITION`` gives the paper authors' settings.
    """
    return AcquisitionOptions(
        num_restarts=num_restarts,
        raw_samples=raw_samples,
        sample_around_best=sample_around_best,
        maxiter=maxiter,
        batch_limit=batch_limit,
    ).optimizer_kwargs()


class SobolHandOver(MaxTrialsAwaitingData):
    """Ax's cap of the Sobol node (``threshold`` trials, then wait for their data), lifted
    once all of them have data.

    Ax sizes a request (``Client.get_next_trials(max_trials=k)``) by the node it is on
    *before* it moves to the next: under Ax's own cap the spent Sobol node allows no
    more trials, and the request at the Sobol-to-BO hand-over returns one trial and a
    warning. Once the Sobol trials all have data, the node is done and this cap says
    "no limit", so the request is sized by the BO node and returns ``k`` trials.
    While Sobol trials are still missing or pending it caps as Ax's does.
    """

    def num_till_threshold(self, experiment: Experiment, trials_from_node: set[int]) -> int:
        observed = count_trials_toward_threshold(
            experiment=experiment,
            trials_from_node=trials_from_node,
            only_in_statuses=[TrialStatus.COMPLETED, TrialStatus.EARLY_STOPPED],
            use_all_trials_in_exp=self.use_all_trials_in_exp,
            count_only_trials_with_data=True,
        )
        if observed >= self.threshold:
            return -1
        return super().num_till_threshold(experiment, trials_from_node)


#: The name of the BO node of every strategy of the package, as in Ax's own strategies
#: (the initialization node transitions to it by name).
BO_NODE_NAME = "MBM"


def _ax_initialization(
    num_sobol: int, seed: int | None, initialize_with_center: bool
) -> list[GenerationNode]:
    """The initialization nodes of Ax's own strategy for this budget (centre, then Sobol)."""
    from ax.api.utils.generation_strategy_dispatch import choose_generation_strategy
    from ax.api.utils.structs import GenerationStrategyDispatchStruct

    gs = choose_generation_strategy(
        GenerationStrategyDispatchStruct(
            initialization_budget=num_sobol,
            initialization_random_seed=seed,
            initialize_with_center=initialize_with_center,
        )
    )
    return list(strategy_nodes(gs)[:-1])  # Ax's BO node ("MBM") is replaced by the caller's


def sobol_step(num_sobol: int, seed: int | None) -> GenerationNode:
    """Ax's Sobol initialization node for ``num_sobol`` trials (no centre point).

    The node is the one Ax's own strategy (``Client.configure_generation_strategy``)
    builds, with Ax's transition rules: it hands over to the BO node (named
    :data:`BO_NODE_NAME`) once ``num_sobol`` trials exist and half of them have data,
    so a Sobol trial that never reports does not stall the run. Its cap is
    :class:`SobolHandOver`, so that ``Client.get_next_trials(max_trials=k)`` at the
    hand-over to BO returns ``k`` trials (Ax's own cap returns one there). For Ax's
    whole initialization, the box centre first, see :func:`initialization_nodes`.

    Args:
        num_sobol: Sobol trials (trials already in the experiment count towards them).
        seed: Seed of the Sobol sequence.

    Example:
        >>> gs = GenerationStrategy(nodes=[sobol_step(20, seed=0), botorch_step(surrogate)])  # doctest: +SKIP
    """
    return initialization_nodes(num_sobol, seed, initialize_with_center=False)[-1]


def initialization_nodes(
    num_sobol: int, seed: int | None, *, initialize_with_center: bool = True
) -> list[GenerationNode]:
    """Ax's own initialization: the centre of the box, then Sobol points.

    What ``Client()`` does before BO when it chooses the strategy itself
    (``choose_generation_strategy``): the centre is the first trial and counts towards
    ``num_sobol``; the Sobol node follows Ax's transition rules (see :func:`sobol_step`)
    with the :class:`SobolHandOver` cap. Every strategy of the package starts with these
    nodes, so kernel discovery, the baselines and Ax's default share one initial design.

    Args:
        num_sobol: Initialization trials, the centre included (trials already in the
            experiment count towards them, as in Ax).
        seed: Seed of the Sobol sequence.
        initialize_with_center: Start with the centre of the box (Ax's default).
    """
    nodes = _ax_initialization(check_num_sobol(num_sobol), seed, initialize_with_center)
    sobol = nodes[-1]
    set_pausing_criteria(
        sobol,
        [
            SobolHandOver(
                threshold=c.threshold,
                only_in_statuses=c.only_in_statuses,
                not_in_statuses=c.not_in_statuses,
                use_all_trials_in_exp=c.use_all_trials_in_exp,
            )
            if type(c) is MaxTrialsAwaitingData
            else c
            for c in sobol.pausing_criteria
        ],
    )
    return nodes


def default_acqf_class(surrogate: Any) -> type[AcquisitionFunction]:
    """The class that computes qLogNEI, Ax's choice for a single-objective experiment,
    in a BO step around ``surrogate`` when the strategy names no acquisition function.

    For a surrogate that takes part in the acquisition
    (:class:`~ax_kernel_discovery.surrogate.acquisition.AcquisitionPartner`, e.g. a
    :class:`~ax_kernel_discovery.KernelDiscoverySurrogate`) its ``acqf_class_for`` (kernel
    discovery: :class:`~ax_kernel_discovery.surrogate.new_rows_qlognei.NewRowsqLogNEI`, the same
    values), else ``qLogNoisyExpectedImprovement``. Other experiments get Ax's own choice
    (qLogNEHVI for several objectives, ...).

    Example:
        >>> default_acqf_class(KernelDiscoverySurrogate()).__name__
        'NewRowsqLogNEI'
    """
    if isinstance(surrogate, AcquisitionPartner):
        return surrogate.acqf_class_for(qLogNoisyExpectedImprovement)
    return qLogNoisyExpectedImprovement


def botorch_step(
    surrogate: Any,
    botorch_acqf_class: type[AcquisitionFunction] | None = None,
    acqf_options: dict[str, Any] | None = None,
    num_restarts: int | None = None,
    raw_samples: int | None = None,
    sample_around_best: bool | None = None,
    maxiter: int | None = None,
    device: str | None = None,
    generator_name: str | None = None,
) -> GenerationNode:
    """A ``BOTORCH_MODULAR`` step around a ``Surrogate`` instance (shared by baselines).

    The acquisition is Ax's own (see :class:`AcquisitionOptions`) with the acquisition
    arguments that are not ``None`` applied (``**PAPER_ACQUISITION``: the paper
    authors' settings). Objective values of
    inf or NaN are kept out of the model with a warning naming the trial
    (:class:`~ax_kernel_discovery.transforms.KeepNonFiniteOut`).

    Checked here, before any evaluation: the acquisition settings, that ``device`` is
    usable, and for a kernel-discovery surrogate whose proposer is an LLM, that the LLM
    can work (model string, key or server, ``xllamacpp`` and the model file of ``"local"``).

    Args:
        surrogate: The ``Surrogate`` instance (e.g. a
            :class:`~ax_kernel_discovery.KernelDiscoverySurrogate`).
        botorch_acqf_class: Acquisition function (``None``: Ax's choice for the
            experiment, computed for a kernel-discovery surrogate by its
            ``acqf_class_for``; see :func:`default_acqf_class`).
        acqf_options: Options of the acquisition function.
        num_restarts: Acquisition optimizer restarts (``None``: Ax's, 20).
        raw_samples: Raw samples of the restarts' initialization (``None``: Ax's, 1024).
        sample_around_best: RAASP, sampling around the best points (``None``: Ax's, off).
        maxiter: L-BFGS-B iterations of the acquisition optimizer (``None``: BoTorch's).
        device: torch device of the BO step, resolved by
            :func:`~ax_kernel_discovery.devices.resolve_device` (``None``: Ax's choice, the
            CPU; ``auto``: CUDA when available), the one resolution every method goes
            through.
        generator_name: Name of the node's generator (shown in trials' metadata).

    Raises:
        pydantic.ValidationError: A bad acquisition setting (e.g. ``num_restarts=0``).
        DeviceUnavailableError: ``device`` is CUDA on a machine or torch without it.
        LLMSetupError: The surrogate's LLM proposer cannot work.

    Example:
        >>> step = botorch_step(KernelDiscoverySurrogate(), num_restarts=4, raw_samples=512)
        >>> gs = GenerationStrategy(nodes=[sobol_step(20, seed=0), step])  # doctest: +SKIP
    """
    import torch

    acq = AcquisitionOptions(
        botorch_acqf_class=botorch_acqf_class,
        acqf_options=acqf_options,
        num_restarts=num_restarts,
        raw_samples=raw_samples,
        sample_around_best=sample_around_best,
        maxiter=maxiter,
    )
    device = resolve_device(device)
    if isinstance(surrogate, KernelDiscoverySurrogate) and surrogate.needs_llm:
        check_llm_config(surrogate.config)
    optimizer_kwargs = acq.optimizer_kwargs()
    generator_kwargs: dict[str, Any] = {
        "surrogate": surrogate,
        # None: Ax chooses by experiment (qLogNEI, qLogNEHVI for several objectives, ...)
        "botorch_acqf_class": acq.botorch_acqf_class,
        "acquisition_class": KernelDiscoveryAcquisition,
        "torch_device": torch.device(device),
        # Ax's transforms of BOTORCH_MODULAR, after one that keeps inf values out and
        # before one that tells the surrogate which trial each row is (changes nothing)
        "transforms": [KeepNonFiniteOut, *MBM_X_trans, *Y_trans, ShareRows],
        # as Ax's own BO node: relative outcome constraints against the raw status quo
        "transform_configs": get_derelativize_config(derelativize_with_raw_status_quo=True),
    }
    if acq.acqf_options:
        generator_kwargs["botorch_acqf_options"] = acq.acqf_options
    return GenerationNode(
        name=BO_NODE_NAME,
        generator_specs=[
            GeneratorSpec(
                generator_enum=Generators.BOTORCH_MODULAR,
                generator_kwargs=generator_kwargs,
                generator_gen_kwargs=(
                    {"model_gen_options": {"optimizer_kwargs": optimizer_kwargs}}
                    if optimizer_kwargs
                    else {}
                ),
                generator_key_override=generator_name,
            )
        ],
        should_deduplicate=True,  # as Ax's own BO node
        suggested_experiment_status=ExperimentStatus.OPTIMIZATION,
    )


def surrogate_of(source: GenerationStrategy | Any) -> Any:
    """The ``Surrogate`` instance of the BO node of a strategy, or of an Ax ``Client``'s.

    The public way to reach a :class:`~ax_kernel_discovery.KernelDiscoverySurrogate`
    (its ``population`` and ``history``) during or after a run.

    Args:
        source: A ``GenerationStrategy``, or an Ax ``Client`` after
            ``set_generation_strategy`` (also one loaded from a file or a database).

    Returns:
        The surrogate instance, or ``None`` when no node holds one (e.g. Sobol only).

    Raises:
        ValueError: ``source`` has no generation strategy.

    Example:
        >>> surrogate = surrogate_of(client)  # doctest: +SKIP
        >>> surrogate.history[-1].chosen  # doctest: +SKIP
    """
    gs: GenerationStrategy | None
    if isinstance(source, GenerationStrategy):
        gs = source
    else:
        try:  # Ax's Client has no public accessor of its strategy; unset, it asserts
            gs = client_generation_strategy(source)
        except (AttributeError, AssertionError):
            gs = None
    if gs is None:
        raise ValueError(
            f"{type(source).__name__} has no generation strategy: pass a GenerationStrategy, "
            "or call client.set_generation_strategy(...) first"
        )
    for node in strategy_nodes(gs):
        for spec in node.generator_specs:
            surrogate = (spec.generator_kwargs or {}).get("surrogate")
            if surrogate is not None:
                return surrogate
    return None


def check_num_sobol(num_sobol: int) -> int:
    """``num_sobol`` if BO can start after that many Sobol trials; else a ``ValueError``."""
    if num_sobol < 1:
        raise ValueError(f"num_sobol must be >= 1 (a GP needs data to start from), got {num_sobol}")
    return num_sobol


def sobol_then_botorch(
    surrogate: Any,
    name: str,
    num_sobol: int = 20,
    seed: int = 0,
    *,
    initialize_with_center: bool = True,
    **step_options: Any,
) -> GenerationStrategy:
    """Ax's initialization (the centre, then seeded Sobol trials: ``num_sobol`` in all),
    then BO around ``surrogate``: the strategy of kernel discovery and a library kernel.

    Kernel discovery and a library kernel differ only in ``surrogate``; the initial design
    (:func:`initialization_nodes`, Ax's own) and the BO step (:func:`botorch_step`, which
    checks the acquisition, the device and an LLM before any evaluation) are the same
    for all of them.

    Args:
        surrogate: The ``Surrogate`` instance of the BO step.
        name: The strategy's name (``"Sobol+KernelDiscovery"``...).
        num_sobol: Initialization trials before BO, the centre included (paper: 20),
            checked by :func:`check_num_sobol`.
        seed: Seed of the Sobol step.
        initialize_with_center: The centre of the box is the first trial (Ax's default).
        **step_options: The arguments of :func:`botorch_step`: the acquisition
            (``botorch_acqf_class``, ``acqf_options``, ``num_restarts``, ``raw_samples``,
            ``sample_around_best``, ``maxiter``; default: Ax's own), ``device``,
            ``generator_name``.

    Returns:
        A ``GenerationStrategy`` for ``Client.set_generation_strategy``.

    Raises:
        ValueError: ``num_sobol < 1``.

    Example:
        >>> gs = sobol_then_botorch(Surrogate(), "Sobol+AxDefault", num_sobol=10)  # doctest: +SKIP
    """
    check_num_sobol(num_sobol)
    step = botorch_step(surrogate, **step_options)
    init = initialization_nodes(num_sobol, seed, initialize_with_center=initialize_with_center)
    return GenerationStrategy(name=name, nodes=[*init, step])


def kernel_discovery_generation_strategy(
    config: ConfigSource = None,
    num_sobol: int = 20,
    botorch_acqf_class: type[AcquisitionFunction] | None = None,
    num_restarts: int | None = None,
    raw_samples: int | None = None,
    sample_around_best: bool | None = None,
    maxiter: int | None = None,
    seed: int | None = None,
    surrogate: KernelDiscoverySurrogate | None = None,
    *,
    acqf_options: dict[str, Any] | None = None,
    initialize_with_center: bool = True,
) -> GenerationStrategy:
    """Ax's initialization (the centre, then Sobol), then BO with the kernel-discovery
    surrogate.

    Args:
        config: Kernel-discovery settings, a dict of them, or the path of a JSON file
            holding them (defaults: offline operator, population 10).
        num_sobol: Initialization trials before BO, the centre included (paper: 20;
            see :func:`initialization_nodes`).
        botorch_acqf_class: ``None``: the acquisition's; by default the surrogate's,
            :class:`~ax_kernel_discovery.surrogate.new_rows_qlognei.NewRowsqLogNEI` (qLogNEI,
            the same values as BoTorch's to rounding, cheaper per optimizer step; see
            ``KernelDiscoveryConfig.acquisition``). Analytic ``LogExpectedImprovement``
            works only when one trial is asked per round (it rejects pending points).
        num_restarts: Acquisition optimizer restarts (default: Ax's, 20; paper: 4).
        raw_samples: Raw samples for the restarts' initialization (default: Ax's, 1024;
            paper: 512).
        sample_around_best: RAASP, sampling around the best points (default: Ax's, off;
            paper: on).
        maxiter: L-BFGS-B iterations of the acquisition optimizer (default: BoTorch's;
            paper: 300). The defaults are Ax's own, so that replacing Ax's default
            strategy by this one changes the kernel and nothing else; pass
            ``**PAPER_ACQUISITION`` for the paper's cheaper settings (docs/results.md
            measures both).
        seed: Seed of the Sobol step (defaults to ``config.seed``).
        surrogate: An existing surrogate to reuse (e.g. to continue a population).
        acqf_options: Options of the acquisition function (``botorch_acqf_options``).
        initialize_with_center: The centre of the box is the first trial (Ax's default).

    Returns:
        A ``GenerationStrategy`` usable with ``Client.set_generation_strategy``.

    Raises:
        pydantic.ValidationError: A bad setting (with a "did you mean" for a misspelt one).
        KernelLibraryError: A kernel of ``config.start_kernels`` fails validation.
        DeviceUnavailableError: ``config.device`` is CUDA where there is none.
        LLMSetupError: ``proposer="llm"``/``"direct"`` and the LLM cannot work.

    Example:
        >>> gs = kernel_discovery_generation_strategy(KernelDiscoveryConfig(), num_sobol=20)
        >>> [n.name for n in gs.nodes_by_name.values()]  # doctest: +SKIP
    """
    config = KernelDiscoveryConfig.coerce(config)
    check_num_sobol(num_sobol)
    return sobol_then_botorch(
        surrogate or KernelDiscoverySurrogate(config),
        "Sobol+KernelDiscovery",
        num_sobol,
        config.seed if seed is None else seed,
        initialize_with_center=initialize_with_center,
        botorch_acqf_class=botorch_acqf_class,
        acqf_options=acqf_options,
        num_restarts=num_restarts,
        raw_samples=raw_samples,
        sample_around_best=sample_around_best,
        maxiter=maxiter,
        device=config.device,
        generator_name="KernelDiscovery",
    )


# ------------------------------------------------------------- one kernel of a library


def model_config_for(
    kernel: LibraryKernel | KernelCandidate | dict[str, Any] | str,
    fit_timeout: float | None = None,
    maxiter: int | None = None,
) -> ModelConfig:
    """The Ax ``ModelConfig`` of one kernel, for a user's own ``SurrogateSpec``.

    The kernel is validated first (see :func:`validate_library_kernel`).

    Args:
        kernel: A library kernel, a candidate, an entry's dict, or ``"kernels.json:NAME"``.
        fit_timeout: Seconds allowed for each MLL fit (``None``: no limit).
        maxiter: L-BFGS iterations of each fit (``None``: BoTorch's default).

    Example:
        >>> spec = SurrogateSpec(model_configs=[model_config_for("kernels.json:SL")])  # doctest: +SKIP
    """
    entry = get_kernel(kernel)
    validate_library_kernel(entry)
    return candidate_model_config(entry.candidate, fit_timeout, maxiter)


def fixed_kernel_generation_strategy(
    kernel: LibraryKernel | KernelCandidate | dict[str, Any] | str,
    num_sobol: int = 20,
    *,
    seed: int = 0,
    botorch_acqf_class: type[AcquisitionFunction] | None = None,
    num_restarts: int | None = None,
    raw_samples: int | None = None,
    sample_around_best: bool | None = None,
    maxiter: int | None = None,
    acqf_options: dict[str, Any] | None = None,
    device: str | None = None,
) -> GenerationStrategy:
    """Sobol, then BO with one kernel: a library kernel in any Ax experiment.

    The BO step is Ax's plain ``Surrogate`` with the kernel's single ``ModelConfig``
    (so no model selection), with the same acquisition settings as every method of the
    package (:func:`~ax_kernel_discovery.strategy.botorch_step`). The strategy saves
    and loads with Ax's JSON storage.

    Args:
        kernel: A library kernel, a candidate, an entry's dict, or ``"kernels.json:NAME"``;
            validated first (see :func:`validate_library_kernel`).
        num_sobol: Sobol trials before BO (paper: 20).
        seed: Seed of the Sobol step.
        botorch_acqf_class: Acquisition function (default: the acquisition's,
            ``qLogNoisyExpectedImprovement``).
        num_restarts: Acquisition optimizer restarts (default: Ax's).
        raw_samples: Raw samples of the restarts' initialization (default: Ax's).
        sample_around_best: RAASP, sampling around the best points (default: Ax's, off).
        maxiter: L-BFGS-B iterations of the acquisition optimizer (default: BoTorch's).
        acqf_options: Options of the acquisition function (``botorch_acqf_options``).
        device: torch device of the BO step (default: Ax's choice, the CPU; ``auto``: CUDA
            when available).

    Returns:
        A ``GenerationStrategy`` for ``Client.set_generation_strategy``.
    """
    check_num_sobol(num_sobol)  # before the kernel's validation
    entry = get_kernel(kernel)
    surrogate = Surrogate(surrogate_spec=SurrogateSpec(model_configs=[model_config_for(entry)]))
    return sobol_then_botorch(
        surrogate,
        f"Sobol+fixed:{entry.name}",
        num_sobol,
        seed,
        botorch_acqf_class=botorch_acqf_class,
        acqf_options=acqf_options,
        num_restarts=num_restarts,
        raw_samples=raw_samples,
        sample_around_best=sample_around_best,
        maxiter=maxiter,
        device=device,
        generator_name=f"Fixed-{entry.name}",
    )


__all__ = [
    "ACQUISITION_ARGUMENTS",
    "AcquisitionOptions",
    "BO_NODE_NAME",
    "PAPER_ACQUISITION",
    "SAMPLE_AROUND_BEST_SIGMA",
    "SobolHandOver",
    "botorch_step",
    "check_num_sobol",
    "default_acqf_class",
    "fixed_kernel_generation_strategy",
    "initialization_nodes",
    "kernel_discovery_generation_strategy",
    "model_config_for",
    "optimizer_options",
    "sobol_step",
    "sobol_then_botorch",
    "surrogate_of",
]
