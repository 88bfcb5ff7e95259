"""Tests of the kernel memory probe and the validator's memory rejection."""

from __future__ import annotations

import pytest
import torch
from gpytorch.kernels import Kernel, RBFKernel

from ax_kernel_discovery import KernelDiscoveryConfig, KernelDiscoverySurrogate
from ax_kernel_discovery.memory import probe_kernel_memory
from ax_kernel_discovery.population import start_candidates


class PairwiseDifferenceRBF(Kernel):
    """exp(-|x - x'|^2) through an explicit n x m x D difference tensor."""

    def forward(self, x1, x2, diag=False, **params):  # type: ignore[no-untyped-def]
        diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
        return torch.exp(-(diff**2).sum(-1))


def test_probe_predicts_pairwise_tensor_size() -> None:
    probe = probe_kernel_memory(PairwiseDifferenceRBF(), dim=500, n=1000)
    assert probe.exponent == pytest.approx(2.0, abs=0.05)
    expected = 1000 * 1000 * 500 * 8  # n x n x D doubles
    assert probe.predicted_bytes == pytest.approx(expected, rel=0.1)
    assert "GB predicted at n=1000" in probe.describe(1000, 500)


@pytest.mark.parametrize("cand", start_candidates(), ids=lambda c: c.name)
def test_start_kernels_stay_small(cand) -> None:  # type: ignore[no-untyped-def]
    probe = probe_kernel_memory(cand.build(500), dim=500, n=1000)
    assert probe.predicted_bytes < 0.1e9  # O(n D) or O(n^2), never n^2 D


def test_the_probe_draws_its_inputs_where_the_kernel_lives() -> None:
    # On a GPU the validator hands the probe a kernel already moved there; inputs made
    # without a device (the default device) then mixed devices and every new kernel was
    # rejected as "probe failed". A default device other than the kernel's shows it here.
    kernel = start_candidates()[3].build(40)  # BOCK: buffers and parameters of its own
    expected = probe_kernel_memory(kernel, 40, 1000)
    torch.set_default_device("meta")
    try:
        probe = probe_kernel_memory(kernel, 40, 1000)
    finally:
        torch.set_default_device("cpu")
    assert probe == expected


def test_rbf_is_not_pairwise() -> None:
    assert probe_kernel_memory(RBFKernel(ard_num_dims=500), 500, 1000).exponent < 1.5


def test_surrogate_rejects_a_kernel_over_the_memory_limit() -> None:
    cand = start_candidates()[0]
    tight = KernelDiscoverySurrogate(KernelDiscoveryConfig(max_kernel_memory_gb=1e-6))
    rejection = tight.admission.memory_rejection(cand, dim=50, n=100)
    assert rejection is not None and rejection.stage == "memory"
    assert "max_kernel_memory_gb=1e-06" in rejection.reason
    assert KernelDiscoverySurrogate().admission.memory_rejection(cand, dim=50, n=100) is None
    off = KernelDiscoverySurrogate(KernelDiscoveryConfig(max_kernel_memory_gb=None))
    assert off.admission.memory_rejection(cand, dim=50, n=100) is None
