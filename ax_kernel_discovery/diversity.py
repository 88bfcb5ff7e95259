"""Functional fingerprints of kernels: Gram matrices on shared reference points.

Two kernels are functional duplicates when their Gram matrices on the same reference
points (default hyperparameters) are nearly parallel; the paper measures the diversity
of a kernel set as one minus the mean pairwise cosine similarity of these matrices.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from gpytorch.kernels import Kernel
from torch import Tensor


def reference_points(
    dim: int, n: int = 40, seed: int = 0, dtype: torch.dtype = torch.float64
) -> Tensor:
    """``n`` fixed points in [0,1]^dim (Sobol, scrambled with ``seed``)."""
    engine = torch.quasirandom.SobolEngine(dimension=min(dim, 21201), scramble=True, seed=seed)
    pts = engine.draw(n, dtype=dtype)
    if dim > pts.shape[-1]:  # beyond Sobol's dimension limit: pad with seeded uniforms
        gen = torch.Generator().manual_seed(seed)
        pts = torch.cat([pts, torch.rand(n, dim - pts.shape[-1], generator=gen, dtype=dtype)], -1)
    return pts


def gram_signature(kernel: Kernel, points: Tensor, perturb_seed: int | None = 0) -> Tensor:
    """Flattened, unit-norm Gram matrix of ``kernel`` on ``points``.

    With ``perturb_seed`` (the default), every raw hyperparameter is first moved by a
    seeded N(0, 0.5^2) draw, so that kernels which coincide only at their initial
    values (an isotropic kernel and its ARD twin, a Kumaraswamy warp that starts at the
    identity) are told apart. The kernel passed in is not modified. The Gram matrix is
    computed on the device of ``points`` (and the kernel); the signature is on the CPU.
    """
    if perturb_seed is not None:
        kernel = copy.deepcopy(kernel)
        gen = torch.Generator().manual_seed(perturb_seed)
        with torch.no_grad():
            for _, param in sorted(kernel.named_parameters(), key=lambda kv: kv[0]):
                noise = torch.randn(param.shape, generator=gen, dtype=torch.float64)
                param.add_(0.5 * noise.to(param))
    with torch.no_grad():
        gram = kernel(points, points).to_dense().reshape(-1).to(torch.float64)
    return (gram / gram.norm().clamp_min(1e-300)).cpu()


def cosine_similarity(a: Tensor, b: Tensor) -> float:
    """Cosine similarity of two unit-norm signatures."""
    return float((a * b).sum())


def diversity(signatures: Sequence[Tensor]) -> float:
    """1 - mean pairwise cosine similarity (0 for fewer than two kernels)."""
    sims = [
        cosine_similarity(signatures[i], signatures[j])
        for i in range(len(signatures))
        for j in range(i + 1, len(signatures))
    ]
    return 1.0 - sum(sims) / len(sims) if sims else 0.0
