"""Round overhead: one kernel-discovery round vs one fixed-RBF Ax round on the same data.

For each (n, D), both methods get the same Ax experiment with n completed trials. Each
first runs one untimed warm-up round on the first n - q points (so the kernel-discovery
population is full, as in a running optimization, and both have warm caches); then q
more points arrive and the next round is timed: model fit (+ for kernel discovery:
proposals, validation, fitting and scoring every member) and the acquisition
optimization for q candidates, i.e. ``GenerationStrategy.gen``.

Printed: seconds per round for each method and the ratio KD / RBF, measured in the
same run. Goal: ratio <= 1.5 at n = 300.

    python benchmarks/round_overhead.py                  # n in {100, 300}, D in {100, 388}
    python benchmarks/round_overhead.py --n 100 --dims 100 --device cuda

Torch runs with ``torch.set_num_threads(1)`` (printed); on 2 shared cores two threads
made GP fits 25-50x slower.
"""

from __future__ import annotations

import argparse
import json
import logging
import time

import numpy as np
import torch
from ax.api import Client
from ax.api.configs import RangeParameterConfig
from ax.generation_strategy.generation_strategy import GenerationStrategy
from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
from ax.utils.common.logger import set_ax_logger_levels

from ax_kernel_discovery import KernelDiscoveryConfig, KernelDiscoverySurrogate
from ax_kernel_discovery.benchmarks import Ackley
from ax_kernel_discovery.population import base_candidate
from ax_kernel_discovery.strategy import botorch_step
from ax_kernel_discovery.surrogate import candidate_model_config


def _experiment(n: int, dim: int, seed: int) -> tuple[Client, np.ndarray, np.ndarray]:
    problem = Ackley(dim=dim, effective_dim=10, seed=seed)
    X = (
        torch.quasirandom.SobolEngine(dim, scramble=True, seed=seed)
        .draw(n, dtype=torch.float64)
        .numpy()
    )
    y = problem.evaluate(X)
    client = Client(random_seed=seed)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(dim)
        ]
    )
    client.configure_optimization("-f")
    return client, X, y


def _attach(client: Client, X: np.ndarray, y: np.ndarray) -> None:
    for row, value in zip(X, y, strict=True):
        index = client.attach_trial({f"x{i}": float(v) for i, v in enumerate(row)})
        client.complete_trial(index, raw_data={"f": float(value)})


def _round(gs: GenerationStrategy, client: Client, q: int) -> float:
    t0 = time.perf_counter()
    gs.gen(experiment=client._experiment, n=q)
    return time.perf_counter() - t0


def measure(
    n: int,
    dim: int,
    q: int,
    device: str,
    seed: int,
    opt: dict,
    kd_options: dict,
    verbose: bool = False,
) -> dict[str, float]:
    out: dict[str, float] = {}
    for method in ("rbf", "kd"):
        client, X, y = _experiment(n, dim, seed)
        if method == "rbf":
            surrogate = Surrogate(
                surrogate_spec=SurrogateSpec(
                    model_configs=[candidate_model_config(base_candidate("rbf"))]
                )
            )
        else:
            surrogate = KernelDiscoverySurrogate(
                KernelDiscoveryConfig(population_size=10, device=device, seed=seed, **kd_options)
            )
        gs = GenerationStrategy(nodes=[botorch_step(surrogate, device=device, **opt)], name=method)
        _attach(client, X[: n - q], y[: n - q])
        _round(gs, client, q)  # warm-up (fills the KD population)
        _attach(client, X[n - q :], y[n - q :])
        out[method] = _round(gs, client, q)
        if method == "kd":
            rec = surrogate.history[-1]
            out["kd_members"] = float(len(rec.scores))
            out["kd_propose"] = rec.timings.get("propose", 0.0)
            out["kd_validate"] = rec.timings.get("validate", 0.0)
            out["kd_fit_and_score"] = rec.timings["fit_and_score"]
            out["kd_selection_total"] = rec.timings["total"]
            out["kd_acquisition"] = out["kd"] - rec.timings["total"]
            out["kd_chosen"] = rec.chosen  # type: ignore[assignment]
            if verbose:
                for key, value in sorted(rec.timings.items()):
                    if key.startswith("fit:"):
                        print(f"      {key[4:]:<40} {value:6.2f} s", flush=True)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--dims", type=int, nargs="+", default=[100, 388])
    parser.add_argument("--q", type=int, default=4, help="candidates per round (joint q-batch)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-restarts", type=int, default=4)
    parser.add_argument("--raw-samples", type=int, default=512)
    parser.add_argument("--maxiter", type=int, default=300)
    parser.add_argument(
        "--fit-maxiter", type=int, default=None, help="KD member fit cap (default: config's)"
    )
    parser.add_argument(
        "--kd-config", type=json.loads, default={}, help="KernelDiscoveryConfig fields (JSON)"
    )
    parser.add_argument("--verbose", action="store_true", help="print each member's fit time")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    set_ax_logger_levels(logging.ERROR)
    opt = {
        "num_restarts": args.num_restarts,
        "raw_samples": args.raw_samples,
        "maxiter": args.maxiter,
    }
    print(
        f"torch {torch.__version__}, threads={torch.get_num_threads()}, device={args.device}, q={args.q}, "
        f"acquisition: qLogNEI, {opt}"
    )
    print(f"kernel discovery config: {args.kd_config or 'default'}")
    print(
        f"{'n':>5} {'D':>5} {'RBF round s':>12} {'KD round s':>11} {'ratio':>6} "
        f"{'members':>7} {'propose':>8} {'validate':>8} {'fit+score':>9} {'acq.':>6}  chosen"
    )
    for n in args.n:
        for dim in args.dims:
            kd_options = dict(args.kd_config)
            if args.fit_maxiter is not None:
                kd_options["fit_maxiter"] = args.fit_maxiter
            r = measure(n, dim, args.q, args.device, args.seed, opt, kd_options, args.verbose)
            print(
                f"{n:5d} {dim:5d} {r['rbf']:12.1f} {r['kd']:11.1f} {r['kd'] / r['rbf']:6.2f} "
                f"{int(r['kd_members']):7d} {r['kd_propose']:8.2f} {r['kd_validate']:8.2f} "
                f"{r['kd_fit_and_score']:9.1f} {r['kd_acquisition']:6.1f}  {r['kd_chosen']}",
                flush=True,
            )


if __name__ == "__main__":
    main()
