"""Ax ``GenerationStrategy`` builders: Sobol, then kernel discovery."""

from __future__ import annotations

from typing import Any

from ax.adapter.registry import Generators
from ax.generation_strategy.generation_node import GenerationNode, GenerationStep
from ax.generation_strategy.generation_strategy import GenerationStrategy
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.logei import qLogNoisyExpectedImprovement

from ax_kernel_discovery.acquisition import KernelDiscoveryAcquisition
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate


#: The paper authors' acquisition-optimizer settings (their released code).
PAPER_ACQUISITION: dict[str, Any] = {
    "num_restarts": 4,
    "raw_samples": 512,
    "sample_around_best": True,
    "maxiter": 300,
}


def optimizer_options(
    num_restarts: int | None = None,
    raw_samples: int | None = None,
    sample_around_best: bool | None = None,
    maxiter: int | None = None,
    batch_limit: int | None = None,
) -> dict[str, Any]:
    """Acquisition-optimizer settings for Ax's ``optimizer_kwargs``.

    Every argument left ``None`` keeps Ax's own default (Ax 1.3: 20 restarts, 1024 raw
    samples, BoTorch's L-BFGS-B iteration limit, no sampling around the best points), so
    ``optimizer_options()`` is Ax's default acquisition exactly. ``**PAPER_ACQUISITION``
    gives the paper authors' settings (4 restarts, 512 raw samples, ``maxiter`` 300,
    sample_around_best with sigma 0.1), which cost less per round and search less.
    """
    out: dict[str, Any] = {}
    if num_restarts is not None:
        out["num_restarts"] = num_restarts
    if raw_samples is not None:
        out["raw_samples"] = raw_samples
    inner: dict[str, Any] = {}
    if sample_around_best is not None:
        inner["sample_around_best"] = sample_around_best
        if sample_around_best:
            inner["sample_around_best_sigma"] = 0.1
    if maxiter is not None:
        inner["maxiter"] = maxiter
    if batch_limit is not None:
        inner["batch_limit"] = batch_limit
    if inner:
        out["options"] = inner
    return out


def sobol_step(num_sobol: int, seed: int) -> GenerationNode:
    """The seeded Sobol design every method starts with (``num_sobol`` trials, all observed)."""
    return GenerationStep(
        generator=Generators.SOBOL,
        num_trials=num_sobol,
        min_trials_observed=num_sobol,
        generator_kwargs={"seed": seed},
    )


def botorch_step(
    surrogate: Any,
    botorch_acqf_class: type[AcquisitionFunction] = qLogNoisyExpectedImprovement,
    acqf_options: dict[str, Any] | None = None,
    num_restarts: int | None = None,
    raw_samples: int | None = None,
    sample_around_best: bool | None = None,
    maxiter: int | None = None,
    device: str = "cpu",
    generator_name: str | None = None,
) -> GenerationNode:
    """A ``BOTORCH_MODULAR`` step around a ``Surrogate`` instance (shared by baselines).

    Optimizer settings left ``None`` are Ax's own defaults (see :func:`optimizer_options`).
    """
    import torch

    optimizer_kwargs = optimizer_options(num_restarts, raw_samples, sample_around_best, maxiter)
    generator_kwargs: dict[str, Any] = {
        "surrogate": surrogate,
        "botorch_acqf_class": botorch_acqf_class,
        "acquisition_class": KernelDiscoveryAcquisition,
        "torch_device": torch.device(device),
    }
    if acqf_options:
        generator_kwargs["botorch_acqf_options"] = acqf_options
    return GenerationStep(
        generator=Generators.BOTORCH_MODULAR,
        num_trials=-1,
        generator_kwargs=generator_kwargs,
        generator_gen_kwargs=(
            {"model_gen_options": {"optimizer_kwargs": optimizer_kwargs}}
            if optimizer_kwargs
            else {}
        ),
        generator_name=generator_name,
    )


def kernel_discovery_generation_strategy(
    config: KernelDiscoveryConfig | None = None,
    num_sobol: int = 20,
    botorch_acqf_class: type[AcquisitionFunction] = qLogNoisyExpectedImprovement,
    num_restarts: int | None = None,
    raw_samples: int | None = None,
    sample_around_best: bool | None = None,
    maxiter: int | None = None,
    seed: int | None = None,
    surrogate: KernelDiscoverySurrogate | None = None,
) -> GenerationStrategy:
    """Sobol initialization, then BO with the kernel-discovery surrogate.

    Args:
        config: Kernel-discovery settings (defaults: offline operator, population 10).
        num_sobol: Number of Sobol trials before BO (paper: 20).
        botorch_acqf_class: qLogNoisyExpectedImprovement by default. Analytic
            ``LogExpectedImprovement`` works only when one trial is asked per round
            (it rejects pending points).
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

    Returns:
        A ``GenerationStrategy`` usable with ``Client.set_generation_strategy``.

    Example:
        >>> gs = kernel_discovery_generation_strategy(KernelDiscoveryConfig(), num_sobol=20)
        >>> [n.name for n in gs._nodes]  # doctest: +SKIP
    """
    config = config or KernelDiscoveryConfig()
    if num_sobol < 1:
        raise ValueError(f"num_sobol must be >= 1 (a GP needs data to start from), got {num_sobol}")
    surrogate = surrogate or KernelDiscoverySurrogate(config)
    steps: list[GenerationNode] = [
        sobol_step(num_sobol, config.seed if seed is None else seed),
        botorch_step(
            surrogate,
            botorch_acqf_class=botorch_acqf_class,
            num_restarts=num_restarts,
            raw_samples=raw_samples,
            sample_around_best=sample_around_best,
            maxiter=maxiter,
            device=config.resolved_device(),
            generator_name="KernelDiscovery",
        ),
    ]
    return GenerationStrategy(name="Sobol+KernelDiscovery", nodes=steps)


__all__ = [
    "PAPER_ACQUISITION",
    "botorch_step",
    "kernel_discovery_generation_strategy",
    "optimizer_options",
    "sobol_step",
]
