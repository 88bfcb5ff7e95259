"""Does a cheaper selection setting choose what the default chooses? On recorded rounds.

For each committed replay fixture (``benchmarks/results/replay``: a recorded round of the
study's default kd runs, its data and the surrogate's state before it), the round's
``KernelDiscoverySurrogate.fit`` runs with the default configuration and with the
variant (``--variant``, JSON fields of ``KernelDiscoveryConfig``), alternating which goes
first, ``--repeats`` times. Printed per fixture: both choices, the median seconds of each,
and the new kernels' fit scores (lower is better) where both fitted them; at the end the
agreement rate, the time ratio and how often the variant's fit score of a new kernel was
better or worse.

    python benchmarks/replay_agreement.py --variant '{"inherit_parameters": true}'
    python benchmarks/replay_agreement.py --variant '{"fit_workers": 2}' --out results.json
    python benchmarks/replay_agreement.py --base '{"background_fits": "off"}' \\
        --variant '{"background_fits": "on"}'

``identical`` compares the whole round record but its timings (every decision and score).

Under the default prequential criterion a round's choice is made from last round's
forecasts, before any fit; a setting that changes only the fits (their start, their
number of steps) can then change a choice only through a fit that fails, and otherwise
acts on the next rounds, through the new kernels' forecasts. The fit scores of the new
kernels are the first sign of that. Torch runs single-threaded.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import replay_rounds as rr  # noqa: E402

REPLAY = Path(__file__).resolve().parent / "results" / "replay"


def compare(
    fixture: Any, variant: dict[str, Any], repeats: int, base: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The default (or ``base``) against ``variant`` on one fixture (alternating order)."""
    seconds: dict[str, list[float]] = {"default": [], "variant": []}
    records: dict[str, Any] = {}
    for rep in range(repeats):
        for which in ("default", "variant") if rep % 2 == 0 else ("variant", "default"):
            elapsed, rec = rr.replay_fit(fixture, (base or {}) if which == "default" else variant)
            seconds[which].append(elapsed)
            records[which] = rec
    d, v = records["default"], records["variant"]
    new = [k for k in d.accepted if k in (d.fit_scores or {}) and k in (v.fit_scores or {})]
    return {
        "fixture": fixture.name,
        "default": d.chosen,
        "variant": v.chosen,
        "same": d.chosen == v.chosen,
        # the whole round record but its timings: every decision and score
        "identical": d.model_dump(exclude={"timings"}) == v.model_dump(exclude={"timings"}),
        "t_default": statistics.median(seconds["default"]),
        "t_variant": statistics.median(seconds["variant"]),
        "new_fit_scores": {k: [d.fit_scores[k], v.fit_scores[k]] for k in new},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", type=json.loads, required=True)
    parser.add_argument(
        "--base",
        type=json.loads,
        default={},
        help="the configuration compared against (default: {})",
    )
    parser.add_argument("--fixtures", type=Path, nargs="+", default=sorted(REPLAY.glob("*.json")))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(
        f"torch {torch.__version__}, threads=1, base {json.dumps(args.base)}, "
        f"variant {json.dumps(args.variant)}"
    )
    print("| fixture | default chose | variant chose | same | identical | default s | variant s |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for path in args.fixtures:
        row = compare(rr.Fixture.load(path), args.variant, args.repeats, args.base)
        rows.append(row)
        print(
            f"| {row['fixture']} | {row['default']} | {row['variant']} | {row['same']} | "
            f"{row['identical']} | "
            f"{row['t_default']:.2f} | {row['t_variant']:.2f} |",
            flush=True,
        )
    same = sum(r["same"] for r in rows)
    identical = sum(r["identical"] for r in rows)
    ratio = sum(r["t_variant"] for r in rows) / sum(r["t_default"] for r in rows)
    pairs = [p for r in rows for p in r["new_fit_scores"].values()]
    better = sum(v < d for d, v in pairs)
    worse = sum(v > d for d, v in pairs)
    print(
        f"\nagreement {same}/{len(rows)}, identical rounds {identical}/{len(rows)}; time variant/default {ratio:.3f}; new kernels' fit "
        f"score: variant better {better}, worse {worse}, equal {len(pairs) - better - worse}"
    )
    if args.out:
        out = {"base": args.base, "variant": args.variant, "rows": rows}
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
