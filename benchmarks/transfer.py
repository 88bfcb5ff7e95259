"""The paper's transfer experiment: a kernel discovered on one problem, reused on others.

1. Export the best member of a finished kernel-discovery run (``--source``, a study
   result JSON; its Ax checkpoint is read) into ``<out>/kernels.json``.
2. Run it as a fixed kernel (``--method fixed``) and plain RBF on the ``--targets`` with
   the study's protocol and seeds, into ``<out>/`` (runs resume; finished ones are
   skipped). ``--methods fixed`` leaves out the RBF runs: Ax's default surrogate, which
   the study runs at the same seeds, is RBF with the dimension-scaled lognormal prior.
3. ``ax-kernel-discovery study --report docs/results.md`` puts the table in the results
   page: the transferred kernel against RBF and, from the study's own runs at the same
   seeds, Ax's default and the start kernels (Matern-5/2, BOCK, SL).

    python benchmarks/transfer.py --source benchmarks/results/study/rover100__kd__seed0.json \\
        --targets hartmann6_100 lasso_dna --seeds 0 1

Torch runs single-threaded in every run (``torch.set_num_threads(1)``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ax_kernel_discovery import export_kernels, load_kernels, save_kernels
from ax_kernel_discovery.runner import make_run_config
from ax_kernel_discovery.runner.sweep import run_configs
from ax_kernel_discovery.study import STUDY

DEFAULT_OUT = "benchmarks/results/transfer"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", required=True, help="result JSON of a finished kd run")
    parser.add_argument("--targets", nargs="+", default=["hartmann6_100", "lasso_dna"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--methods",
        nargs="+",
        default=["fixed", "rbf"],
        choices=["fixed", "rbf"],
        help="runs to make per target and seed; the study's ax_default (RBF with the "
        "dimension-scaled lognormal prior) and start kernels are compared in any case",
    )
    args = parser.parse_args(argv)
    library = Path(args.out) / "kernels.json"
    if not library.exists():
        save_kernels(export_kernels(args.source, top=1), library)
    kernel = load_kernels(library)[0]
    print(f"transferring {kernel.name} (from {args.source}): {kernel.formula[:120]}")
    cfgs = [
        make_run_config(
            problem=problem,
            method=method,
            seed=seed,
            out=args.out,
            method_options={"kernel": kernel.entry()} if method == "fixed" else {},
            **STUDY.run_settings(),
        )
        for seed in args.seeds
        for problem in args.targets
        for method in args.methods
    ]
    for summary in run_configs(cfgs, workers=args.workers, progress=True):
        print(summary["run_id"], summary["status"], summary.get("best_value"))


if __name__ == "__main__":
    main()
