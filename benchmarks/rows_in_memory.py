"""Peak memory of ``NewRowsqLogNEI``'s baseline lookup, before and after issue 30 item 15.

``_rows_in`` finds the baseline points among the training points. It compared all
``n_b x n x D`` coordinates at once (a boolean tensor: 1 GB at ``n_b = n = 400``,
``D = 6392``, Humanoid's dimension); it now matches rows by a digest of their values,
reading a bounded chunk of rows at a time. Each version runs in a fresh child process
on the same inputs (the baseline: the training points in another order, then 3 pending
points); the child reports the growth of its peak resident set size (``ru_maxrss``)
over the call, and the call's seconds. Prints both and the ratio of the peaks.

    python benchmarks/rows_in_memory.py --n 400 --dim 6392
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

_CHILD = """
import json, resource, sys, time, torch
from ax_kernel_discovery.surrogate.new_rows import _rows_in

def whole(rows, table):  # _rows_in before the chunks (c00a207)
    equal = (rows.unsqueeze(-2) == table.unsqueeze(-3)).all(dim=-1)
    found = equal.any(dim=-1)
    leading = int(found.to(torch.int8).cumprod(0).sum())
    return None if leading == 0 else equal[:leading].to(torch.int8).argmax(dim=-1)

n, dim, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
g = torch.Generator().manual_seed(0)
table = torch.rand(n, dim, generator=g, dtype=torch.float64)
rows = torch.cat([table[torch.randperm(n, generator=g)], torch.rand(3, dim, generator=g, dtype=torch.float64)])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
index = (whole if mode == "whole" else _rows_in)(rows, table)
seconds = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
found = 0 if index is None else int(index.numel())
print(json.dumps({"kb": after - before, "found": found, "seconds": seconds}))
"""


def _peak_kb(n: int, dim: int, mode: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(n), str(dim), mode],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    """Run both versions and print their peak RSS growth (MB) and its ratio."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--dim", type=int, default=6392)
    args = parser.parse_args(argv)
    whole = _peak_kb(args.n, args.dim, "whole")
    chunked = _peak_kb(args.n, args.dim, "digest")
    assert whole["found"] == chunked["found"] == args.n
    # below 1 MB the growth is within what the imports left mapped: the ratio is a bound
    floor = 1024
    ratio = whole["kb"] / max(chunked["kb"], floor)
    print(
        f"n = {args.n}, n_b = {args.n + 3}, D = {args.dim}: peak RSS growth over the call: "
        f"whole {whole['kb'] / 1024:.1f} MB ({whole['seconds']:.2f} s), "
        f"by digest {chunked['kb'] / 1024:.1f} MB ({chunked['seconds']:.2f} s); "
        f"ratio {'>= ' if chunked['kb'] < floor else ''}{ratio:.0f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
