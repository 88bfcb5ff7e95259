"""Strategy builders: Sobol, then kernel discovery, with Ax's own acquisition settings."""

from __future__ import annotations

from ax.generators.torch.botorch_modular.optimizer_argparse import optimizer_argparse
from ax.generators.torch.botorch_modular.optimizer_defaults import NUM_RESTARTS, RAW_SAMPLES

from ax_kernel_discovery import KernelDiscoveryConfig, kernel_discovery_generation_strategy
from ax_kernel_discovery.strategy import PAPER_ACQUISITION, optimizer_options


def _gen_kwargs(gs) -> dict:  # noqa: ANN001
    return gs._nodes[-1].generator_specs[0].generator_gen_kwargs


def test_switching_to_kd_keeps_axs_acquisition_optimizer() -> None:
    gs = kernel_discovery_generation_strategy(KernelDiscoveryConfig(), num_sobol=5)
    assert "model_gen_options" not in _gen_kwargs(gs)  # nothing overrides Ax's defaults
    resolved = optimizer_argparse(
        None, optimizer="optimize_acqf", optimizer_options=optimizer_options()
    )
    assert (resolved["num_restarts"], resolved["raw_samples"]) == (NUM_RESTARTS, RAW_SAMPLES)
    assert "sample_around_best" not in resolved["options"]


def test_the_papers_settings_are_one_argument_away() -> None:
    gs = kernel_discovery_generation_strategy(num_sobol=5, **PAPER_ACQUISITION)
    opts = _gen_kwargs(gs)["model_gen_options"]["optimizer_kwargs"]
    assert opts == {
        "num_restarts": 4,
        "raw_samples": 512,
        "options": {"sample_around_best": True, "sample_around_best_sigma": 0.1, "maxiter": 300},
    }
    resolved = optimizer_argparse(None, optimizer="optimize_acqf", optimizer_options=opts)
    assert (resolved["num_restarts"], resolved["options"]["maxiter"]) == (4, 300)
    # a single override keeps Ax's other defaults
    assert (
        optimizer_argparse(
            None, optimizer="optimize_acqf", optimizer_options=optimizer_options(num_restarts=8)
        )["raw_samples"]
        == RAW_SAMPLES
    )
