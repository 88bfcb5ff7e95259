"""Humanoid-v4 linear policy (D=6392, maximize; needs gymnasium[mujoco]; very expensive at the paper's budget).

Paper settings (1000 evaluations, q=20, 4 seeds, kernel discovery + baselines)::

    python examples/bench_humanoid.py

A small run::

    python examples/bench_humanoid.py --budget 60 --batch 10 --seeds 0,1 --methods kd,rbf --workers 2

Results go to ``results/humanoid/`` (one JSON per run, resumable), the report to
``results/humanoid/report/``. The data ships with
the package; ``--data-dir`` (or ``AXKD_DATA_DIR``) names a folder of replacements.
"""

import sys

from bench_common import main

if __name__ == "__main__":
    sys.exit(
        main(
            "humanoid",
            "Humanoid-v4 linear policy (D=6392, maximize; needs gymnasium[mujoco]; very expensive at the paper's budget).",
        )
    )
