"""Lasso-DNA weighted-Lasso hyperparameters (D=180, minimize).

Paper settings (1000 evaluations, q=20, 4 seeds, kernel discovery + baselines)::

    python examples/bench_lasso_dna.py

A small run::

    python examples/bench_lasso_dna.py --budget 60 --batch 10 --seeds 0,1 --methods kd,rbf --workers 2

Results go to ``results/lasso_dna/`` (one JSON per run, resumable), the report to
``results/lasso_dna/report/``. The data ships with
the package; ``--data-dir`` (or ``AXKD_DATA_DIR``) names a folder of replacements.
"""

import sys

from bench_common import main

if __name__ == "__main__":
    sys.exit(main("lasso_dna", "Lasso-DNA weighted-Lasso hyperparameters (D=180, minimize)."))
