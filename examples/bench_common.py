"""Shared command line of the ``bench_*.py`` scripts (the paper's settings by default).

Paper settings: 1000 evaluations, joint batches of q=20, 20 Sobol points, 4 seeds,
qLogNEI with 4 restarts / 512 raw samples / RAASP, kernel discovery against the
fixed-kernel and kernel-search baselines. On a laptop use e.g.
``--budget 60 --batch 10 --seeds 0,1 --num-restarts 2 --raw-samples 256 --maxiter 100``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

DEFAULT_METHODS = "kd,rbf,matern52,rq,bock,sl,greedy,compositional"


def main(
    problem: str,
    about: str,
    problem_options: dict[str, Any] | None = None,
    argv: list[str] | None = None,
) -> int:
    """Parse the flags, run the sweep with the runner, write the report; returns the exit status."""
    parser = argparse.ArgumentParser(description=f"{about} Runs a sweep, then writes a report.")
    parser.add_argument(
        "--budget", type=int, default=1000, help="evaluations per run (paper: 1000)"
    )
    parser.add_argument("--batch", type=int, default=20, help="joint batch size q (paper: 20)")
    parser.add_argument("--seeds", default="0-3", help="seeds, e.g. 0,1 or 0-3 (paper: 4 seeds)")
    parser.add_argument(
        "--methods", default=DEFAULT_METHODS, help=f"comma-separated (default {DEFAULT_METHODS})"
    )
    parser.add_argument("--num-restarts", type=int, default=4)
    parser.add_argument("--raw-samples", type=int, default=512)
    parser.add_argument("--maxiter", type=int, default=300)
    parser.add_argument(
        "--workers", type=int, default=1, help="parallel runs (one torch thread each)"
    )
    parser.add_argument("--executor", choices=("local", "dask"), default="local")
    parser.add_argument("--out", default=f"results/{problem}", help="results folder")
    parser.add_argument("--report", default=None, help="report folder (default <out>/report)")
    parser.add_argument(
        "--data-dir",
        default=None,
        help="folder of data files that replace the bundled ones (default $AXKD_DATA_DIR)",
    )
    args, extra = parser.parse_known_args(argv)

    from ax_kernel_discovery.cli import main as cli_main

    cli = [
        "sweep",
        "--problems",
        problem,
        "--methods",
        args.methods,
        "--seeds",
        args.seeds,
        "--budget",
        str(args.budget),
        "--batch",
        str(args.batch),
        "--workers",
        str(args.workers),
        "--executor",
        args.executor,
        "--out",
        args.out,
        "--num-restarts",
        str(args.num_restarts),
        "--raw-samples",
        str(args.raw_samples),
        "--maxiter",
        str(args.maxiter),
        *extra,
    ]
    if args.data_dir:
        cli += ["--data-dir", args.data_dir]
    if problem_options:
        from ax_kernel_discovery.runner import UserInputError
        from ax_kernel_discovery.runner.sweep import sweep

        # options the CLI has no flag for (e.g. the Mopta08 binary) go through the Python API
        try:
            sweep(
                [problem],
                args.methods.split(","),
                _seeds(args.seeds),
                workers=args.workers,
                executor=args.executor,
                progress=True,
                budget=args.budget,
                batch=args.batch,
                out=args.out,
                num_restarts=args.num_restarts,
                raw_samples=args.raw_samples,
                maxiter=args.maxiter,
                problem_options={
                    **problem_options,
                    **({"data_dir": args.data_dir} if args.data_dir else {}),
                },
            )
        except UserInputError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    else:
        status = cli_main(cli)
        if status not in (0, 1):
            return status
    return cli_main(
        ["report", args.out, "--out", args.report or f"{args.out}/report", "--title", about]
    )


def _seeds(text: str) -> list[int]:
    from ax_kernel_discovery.cli import _seeds as parse

    return parse(text)
