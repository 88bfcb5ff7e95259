"""Humanoid scale: time and peak memory of one kernel-discovery round at n = 1000, D = 6392.

One round of :class:`~ax_kernel_discovery.KernelDiscoverySurrogate` (the full start
population, the default offline proposals, validation with the memory probe, fitting
and LOO-CRPS scoring of every member) on ``n`` points in ``[0, 1]^D``, called through
Ax's ``Surrogate.fit`` as Ax calls it. The data are uniform inputs and a smooth
synthetic response (``sin`` of a random projection): the round's cost and memory
depend on ``n``, ``D`` and the kernels, not on the objective, and 1000 Humanoid rollouts
would only add minutes.

Printed: the round's wall time, the process's peak resident memory (``ru_maxrss``)
before and after the round, and whether the peak stays within ``--limit-gb`` (8 GB).
The round's fits are capped at ``--fit-maxiter`` L-BFGS steps (new kernels 4x); memory
does not depend on that cap, time does.

``--device`` (``cpu``, the default; ``cuda``, ``cuda:N`` or ``auto``): the data, and so
the round, go there; on CUDA the GPU's peak allocated memory
(``torch.cuda.max_memory_allocated``) is printed too, and the round's wall time ends
with ``torch.cuda.synchronize()``.

    python benchmarks/humanoid_scale.py                      # n = 1000, D = 6392
    python benchmarks/humanoid_scale.py --n 300 --fit-maxiter 10
    python benchmarks/humanoid_scale.py --device cuda

Torch runs single-threaded (``torch.set_num_threads(1)``, printed).
"""

from __future__ import annotations

import argparse
import logging
import resource
import time

import torch
from ax.core.search_space import SearchSpaceDigest
from ax.utils.common.logger import set_ax_logger_levels
from botorch.utils.datasets import SupervisedDataset

from ax_kernel_discovery import KernelDiscoveryConfig, KernelDiscoverySurrogate
from ax_kernel_discovery.devices import device_label, resolve_device


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KB -> GB


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(torch.device(device))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=6392)
    parser.add_argument("--fit-maxiter", type=int, default=5)
    parser.add_argument("--proposals", type=int, default=4)
    parser.add_argument("--limit-gb", type=float, default=8.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--device", default="cpu", help="cpu (default), cuda, cuda:N or auto (CUDA when available)"
    )
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    cuda = device.startswith("cuda")
    torch.set_num_threads(1)
    set_ax_logger_levels(logging.ERROR)
    gen = torch.Generator().manual_seed(args.seed)
    X = torch.rand(args.n, args.dim, generator=gen, dtype=torch.float64)
    w = torch.randn(args.dim, generator=gen, dtype=torch.float64) / args.dim**0.5
    Y = torch.sin(3 * X @ w).unsqueeze(-1)
    Y = (Y - Y.mean()) / Y.std()
    X, Y = X.to(device), Y.to(device)
    names = [f"x{i}" for i in range(args.dim)]
    dataset = SupervisedDataset(X=X, Y=Y, feature_names=names, outcome_names=["f"])
    digest = SearchSpaceDigest(feature_names=names, bounds=[(0.0, 1.0)] * args.dim)
    surrogate = KernelDiscoverySurrogate(
        KernelDiscoveryConfig(
            fit_maxiter=args.fit_maxiter,
            proposals_per_round=args.proposals,
            device=device,
            seed=args.seed,
        )
    )
    before = _peak_gb()
    where = device_label(device)
    if cuda:
        _sync(device)
        torch.cuda.reset_peak_memory_stats(torch.device(device))
        gpu_before = torch.cuda.max_memory_allocated(torch.device(device)) / 1e9
        where += f", GPU memory allocated before the round {gpu_before:.2f} GB"
    print(
        f"torch {torch.__version__}, device {where}, threads={torch.get_num_threads()}, n={args.n}, "
        f"D={args.dim}, fit_maxiter={args.fit_maxiter}, proposals={args.proposals}; "
        f"peak RSS before the round: {before:.2f} GB (data {X.numel() * 8 / 1e9:.2f} GB)",
        flush=True,
    )
    t0 = time.perf_counter()
    surrogate.fit(datasets=[dataset], search_space_digest=digest)
    _sync(device)
    elapsed = time.perf_counter() - t0
    rec = surrogate.history[-1]
    peak = _peak_gb()
    fits = {k[4:]: round(v, 1) for k, v in rec.timings.items() if k.startswith("fit:")}
    print(f"members fitted and scored: {len(rec.scores)}; chosen {rec.chosen}")
    print(f"fit seconds per member: {fits}")
    for r in rec.rejected:
        print(f"rejected {r.name} [{r.stage}]: {r.reason[:160]}")
    model = surrogate.model
    on = sorted({str(model.train_inputs[0].device), *(str(p.device) for p in model.parameters())})
    print(f"chosen model's tensors on: {on}")
    gpu = ""
    if cuda:
        gpu_peak = torch.cuda.max_memory_allocated(torch.device(device)) / 1e9
        gpu = f"; peak GPU memory allocated {gpu_peak:.2f} GB (torch.cuda.max_memory_allocated)"
    print(
        f"round: {elapsed:.1f} s; peak RSS {peak:.2f} GB "
        f"({'within' if peak <= args.limit_gb else 'OVER'} the {args.limit_gb:g} GB limit){gpu}"
    )


if __name__ == "__main__":
    main()
