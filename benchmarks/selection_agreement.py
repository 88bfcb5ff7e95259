"""Does cheaper selection choose the same kernel as the full procedure? Measured on real rounds.

A kernel-discovery BO run (the study's runner, problem and settings) is driven by the
*full* selection. In every round, before the full selection runs, a deep copy of the
surrogate (same population, warm starts, proposer state and data) runs the cheap
variant (``--variant``, default ``selection="halving"``). Both see the same proposals.
Printed per round: both choices, the time of each, and the *score regret* when they
differ (the full procedure's score of the cheap choice minus that of its own choice;
0 when they agree). At the end: the agreement rate, the mean regret and the time ratio.

    python benchmarks/selection_agreement.py --problems rover100 hartmann6_100 --seeds 0 1
    python benchmarks/selection_agreement.py --variant '{"selection": "halving", "halving_keep": 2}'
    python benchmarks/selection_agreement.py --num-sobol 260 --batch 4 --budget 300

Torch runs single-threaded (``torch.set_num_threads(1)``, printed).
"""

from __future__ import annotations

import argparse
import copy
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ax_kernel_discovery.runner import run_experiment
from ax_kernel_discovery.study import STUDY
from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate

_full_selection = KernelDiscoverySurrogate.model_selection
ROUNDS: list[dict[str, Any]] = []
VARIANT: dict[str, Any] = {}


def _paired_selection(self: KernelDiscoverySurrogate, *args: Any, **kwargs: Any) -> Any:
    shadow = copy.deepcopy(self)
    shadow.config = self.config.model_copy(update=VARIANT)
    t0 = time.perf_counter()
    _full_selection(shadow, *args, **kwargs)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = _full_selection(self, *args, **kwargs)
    t_full = time.perf_counter() - t0
    full, fast = self.history[-1], shadow.history[-1]
    regret = None
    if fast.chosen in full.scores and full.chosen in full.scores:
        regret = full.scores[fast.chosen] - full.scores[full.chosen]
    ROUNDS.append(
        {
            "n": full.n,
            "full": full.chosen,
            "fast": fast.chosen,
            "same": full.chosen == fast.chosen,
            "regret": regret,
            "t_full": t_full,
            "t_fast": t_fast,
        }
    )
    r = ROUNDS[-1]
    print(
        f"  n={r['n']:4d} full={r['full']!s:36.36} fast={r['fast']!s:36.36} "
        f"same={r['same']!s:5} regret={r['regret'] if r['regret'] is not None else float('nan'):.4f} "
        f"t_full={t_full:6.1f}s t_fast={t_fast:6.1f}s",
        flush=True,
    )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problems", nargs="+", default=["rover100", "hartmann6_100"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--budget", type=int, default=STUDY.budget)
    parser.add_argument("--batch", type=int, default=STUDY.batch)
    parser.add_argument(
        "--num-sobol",
        type=int,
        default=STUDY.num_sobol,
        help="Sobol points before BO: e.g. 260 with --batch 4 --budget 300 records rounds "
        "where a few points join many (n = 260..296), the round-overhead setting",
    )
    parser.add_argument("--variant", type=json.loads, default={"selection": "halving"})
    parser.add_argument("--out", default=None, help="write the rounds as JSON here")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    VARIANT.update(args.variant)
    KernelDiscoverySurrogate.model_selection = _paired_selection  # type: ignore[method-assign]
    print(f"torch {torch.__version__}, threads={torch.get_num_threads()}, variant={VARIANT}")
    settings = STUDY.run_settings() | {
        "budget": args.budget,
        "batch": args.batch,
        "num_sobol": args.num_sobol,
        "kd_config": {"selection": "full"},  # the reference drives the run
    }
    with tempfile.TemporaryDirectory() as tmp:
        for problem in args.problems:
            for seed in args.seeds:
                print(f"{problem} seed {seed}", flush=True)
                run_experiment(problem, "kd", seed=seed, out=tmp, **settings)
    same = [r["same"] for r in ROUNDS]
    regrets = [r["regret"] for r in ROUNDS if r["regret"] is not None and not r["same"]]
    t_full, t_fast = sum(r["t_full"] for r in ROUNDS), sum(r["t_fast"] for r in ROUNDS)
    print(
        f"agreement: {sum(same)}/{len(same)} rounds ({100 * np.mean(same):.0f}%); "
        f"mean score regret when different: {np.mean(regrets) if regrets else 0.0:.4f}; "
        f"selection time fast/full: {t_fast:.0f}s/{t_full:.0f}s = {t_fast / t_full:.2f}"
    )
    if args.out:
        Path(args.out).write_text(json.dumps({"variant": VARIANT, "rounds": ROUNDS}, indent=1))


if __name__ == "__main__":
    main()
