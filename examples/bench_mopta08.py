"""Mopta08 vehicle design (D=124, minimize; value + 10 x constraint violations).

Mopta08 is a compiled program that no package registry provides: give its path with
``--binary /path/to/mopta08_elf64.bin`` or ``AXKD_MOPTA08_BINARY``. Without it the
script stops with a clear message.

Paper settings (1000 evaluations, q=20, 4 seeds, kernel discovery + baselines)::

    python examples/bench_mopta08.py --binary /path/to/mopta08_elf64.bin

A small run::

    python examples/bench_mopta08.py --binary ... --budget 60 --batch 10 --seeds 0,1 --methods kd,rbf
"""

import argparse
import sys

from bench_common import main

if __name__ == "__main__":
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument(
        "--binary",
        default=None,
        help="path of the Mopta08 executable (default $AXKD_MOPTA08_BINARY)",
    )
    known, rest = pre.parse_known_args()
    options = {"binary": known.binary} if known.binary else None
    sys.exit(
        main(
            "mopta08",
            "Mopta08 vehicle design (D=124, minimize).",
            problem_options=options,
            argv=rest,
        )
    )
