"""What a user swaps in: kd with Ax's acquisition settings against kd with the paper's.

Ax's default BoTorch step optimizes the acquisition with 20 restarts from 1024 raw
samples (L-BFGS-B up to BoTorch's 2000 iterations, no sampling around the best points);
the paper's authors used 4 restarts, 512 raw samples, ``maxiter`` 300 and
sample_around_best. A user who replaces Ax's default strategy by kernel discovery's
should change the kernel and nothing else; this script measures what each setting does
to kd at the budgets where a user first judges it, beside Ax's default:

* ``kd_ax``: kd (default ``KernelDiscoveryConfig``) with Ax's settings, what
  ``kernel_discovery_generation_strategy`` now does by default;
* ``kd_paper``: kd with the paper's settings (``**PAPER_ACQUISITION``);
* ``ax_default``: Ax's default surrogate with Ax's settings (what the user had).

Runs: 20 Sobol points + 10 rounds of q = 4 (60 evaluations), seeds 0-2, on rover100 and
hartmann6_100 (the problems where kd trails Ax's default in the study), one torch thread
each; results go to ``benchmarks/results/acquisition/<arm>/`` (resumable, run by run).
The printed table gives best-so-far at 40 and 60 evaluations and the mean seconds per
round by phase, paired by seed.

    python benchmarks/acquisition_settings.py --workers 2
    python benchmarks/acquisition_settings.py --report     # the table from the files
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from ax_kernel_discovery.runner import make_run_config
from ax_kernel_discovery.runner.report import load_results
from ax_kernel_discovery.runner.sweep import run_configs
from ax_kernel_discovery.study.report import checkpoint_comparison, round_time

OUT = Path("benchmarks/results/acquisition")
AX_SETTINGS: dict[str, Any] = {
    "num_restarts": 20,
    "raw_samples": 1024,
    "maxiter": 2000,
    "sample_around_best": False,
}
PAPER_SETTINGS: dict[str, Any] = {
    "num_restarts": 4,
    "raw_samples": 512,
    "maxiter": 300,
    "sample_around_best": True,
}
ARMS: dict[str, tuple[str, dict[str, Any]]] = {
    "kd_ax": ("kd", AX_SETTINGS),
    "kd_paper": ("kd", PAPER_SETTINGS),
    "ax_default": ("ax_default", AX_SETTINGS),
}
PROBLEMS = ("rover100", "hartmann6_100")
SEEDS = (0, 1, 2)
BUDGET, BATCH, NUM_SOBOL = 60, 4, 20
CHECKPOINTS = (40, 60)


def configs(kd_config: dict[str, Any] | None = None) -> list[Any]:
    """The runs, seed by seed (every finished seed adds a complete paired set)."""
    return [
        make_run_config(
            problem=p,
            method=method,
            seed=s,
            budget=BUDGET,
            batch=BATCH,
            num_sobol=NUM_SOBOL,
            out=str(OUT / arm),
            kd_config=kd_config,
            **settings,
        )
        for s in SEEDS
        for p in PROBLEMS
        for arm, (method, settings) in ARMS.items()
    ]


def report() -> None:
    runs = {arm: load_results(OUT / arm) for arm in ARMS if (OUT / arm).is_dir()}
    for p in PROBLEMS:
        mine = {arm: [r for r in rs if r["problem"] == p] for arm, rs in runs.items()}
        if not all(mine.values()):
            continue
        minimize = next(iter(mine.values()))[0]["direction"] == "minimize"
        print(f"\n{p} ({'min' if minimize else 'max'}imize), seeds by arm:")
        for arm in ARMS:
            t = round_time(mine[arm])
            values = [r["best_value"] for r in mine[arm]]
            print(
                f"  {arm:11s} best {np.mean(values):9.4g} ({len(values)} seeds); s/round: "
                f"fit {t['fit'] or 0:.1f}, acquisition {t['acquisition'] or 0:.1f}, "
                f"round {t['round'] or 0:.1f}"
            )
        for a, b in [("kd_ax", "ax_default"), ("kd_paper", "ax_default"), ("kd_ax", "kd_paper")]:
            for row in checkpoint_comparison(
                mine[a], mine[b], p, ARMS[a][0], ARMS[b][0], minimize, CHECKPOINTS
            ):
                c = row["paired"]
                ci = "" if c["ci"] is None else f" [{c['ci'][0]:.4g}, {c['ci'][1]:.4g}]"
                print(
                    f"  {a} vs {b} @{row['evaluations']}: {row['mean']:.4g} vs "
                    f"{row['reference_mean']:.4g}, W/T/L {c['wins']}/{c['ties']}/{c['losses']}, "
                    f"Δ {c['mean_diff']:.4g}{ci}"
                )


def main() -> None:
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--kd-config", default=None, help="KernelDiscoveryConfig fields (JSON)")
    parser.add_argument("--report", action="store_true", help="print the table only")
    args = parser.parse_args()
    if not args.report:
        kd_config = json.loads(args.kd_config) if args.kd_config else None
        run_configs(configs(kd_config), workers=args.workers, progress=False)
    report()


if __name__ == "__main__":
    main()
