"""Ax ``GenerationStrategy`` builders: Sobol, then kernel discovery."""

from __future__ import annotations

from typing import Any

from ax.adapter.registry import Generators
from ax.generation_strategy.generation_node import GenerationNode, GenerationStep
from ax.generation_strategy.generation_strategy import GenerationStrategy
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.logei import qLogNoisyExpectedImprovement

from ax_kernel_discovery.acquisition import KernelDiscoveryAcquisition
from ax_kernel_discovery.config import KernelDiscoveryConfig, resolve_device
from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate


def optimizer_options(
    num_restarts: int = 4,
    raw_samples: int = 512,
    sample_around_best: bool = True,
    maxiter: int = 300,
    batch_limit: int = 64,
) -> dict[str, Any]:
    """Acquisition-optimizer settings of the paper's authors (RAASP on by default)."""
    return {
        "num_restarts": num_restarts,
        "raw_samples": raw_samples,
        "options": {
            "sample_around_best": sample_around_best,
            "sample_around_best_sigma": 0.1,
            "maxiter": maxiter,
            "batch_limit": batch_limit,
        },
    }


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
    num_restarts: int = 4,
    raw_samples: int = 512,
    sample_around_best: bool = True,
    maxiter: int = 300,
    device: str | None = "auto",
    generator_name: str | None = None,
) -> GenerationNode:
    """A ``BOTORCH_MODULAR`` step around a ``Surrogate`` instance (shared by baselines).

    ``device`` is resolved by :func:`~ax_kernel_discovery.config.resolve_device` (``auto``
    or ``None``: CUDA when available), the one resolution every method goes through.
    """
    import torch

    generator_kwargs: dict[str, Any] = {
        "surrogate": surrogate,
        "botorch_acqf_class": botorch_acqf_class,
        "acquisition_class": KernelDiscoveryAcquisition,
        "torch_device": torch.device(resolve_device(device)),
    }
    if acqf_options:
        generator_kwargs["botorch_acqf_options"] = acqf_options
    return GenerationStep(
        generator=Generators.BOTORCH_MODULAR,
        num_trials=-1,
        generator_kwargs=generator_kwargs,
        generator_gen_kwargs={
            "model_gen_options": {
                "optimizer_kwargs": optimizer_options(
                    num_restarts, raw_samples, sample_around_best, maxiter
                )
            }
        },
        generator_name=generator_name,
    )


def kernel_discovery_generation_strategy(
    config: KernelDiscoveryConfig | None = None,
    num_sobol: int = 20,
    botorch_acqf_class: type[AcquisitionFunction] = qLogNoisyExpectedImprovement,
    num_restarts: int = 4,
    raw_samples: int = 512,
    sample_around_best: bool = True,
    maxiter: int = 300,
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
        num_restarts: Acquisition optimizer restarts (paper: 4).
        raw_samples: Raw samples for the restarts' initialization (paper: 512).
        sample_around_best: RAASP, sampling around the best points (paper: on).
        maxiter: L-BFGS-B iterations of the acquisition optimizer.
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
            device=config.device,
            generator_name="KernelDiscovery",
        ),
    ]
    return GenerationStrategy(name="Sobol+KernelDiscovery", nodes=steps)


__all__ = [
    "botorch_step",
    "kernel_discovery_generation_strategy",
    "optimizer_options",
    "sobol_step",
]
