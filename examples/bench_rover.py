"""Rover trajectory planning (D=100, maximize; the paper's 50-waypoint variant).

Paper settings (1000 evaluations, q=20, 4 seeds, kernel discovery + baselines)::

    python examples/bench_rover.py

A small run::

    python examples/bench_rover.py --budget 60 --batch 10 --seeds 0,1 --methods kd,rbf --workers 2

Results go to ``results/rover100/`` (one JSON per run, resumable), the report to
``results/rover100/report/``. The data ships with
the package; ``--data-dir`` (or ``AXKD_DATA_DIR``) names a folder of replacements.
"""

import sys

from bench_common import main

if __name__ == "__main__":
    sys.exit(
        main(
            "rover100",
            "Rover trajectory planning (D=100, maximize; the paper's 50-waypoint variant).",
        )
    )
