"""SVM hyperparameters and feature scalings (D=388, minimize; the 682-row CT-slice sample unless the full file is in the data folder).

Paper settings (1000 evaluations, q=20, 4 seeds, kernel discovery + baselines)::

    python examples/bench_svm.py

A small run::

    python examples/bench_svm.py --budget 60 --batch 10 --seeds 0,1 --methods kd,rbf --workers 2

Results go to ``results/svm/`` (one JSON per run, resumable), the report to
``results/svm/report/``. The data ships with
the package; ``--data-dir`` (or ``AXKD_DATA_DIR``) names a folder of replacements.
"""

import sys

from bench_common import main

if __name__ == "__main__":
    sys.exit(
        main(
            "svm",
            "SVM hyperparameters and feature scalings (D=388, minimize; the 682-row CT-slice sample unless the full file is in the data folder).",
        )
    )
