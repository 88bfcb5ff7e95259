"""What the L-BFGS-B memory of kd's fits costs and finds, on recorded rounds.

Replays each recorded round (``benchmarks/results/replay/*.json``, see
``replay_rounds.py``) with kd's fit + selection in this process (``background_fits="off"``:
every fit is counted here), once with scipy's memory of 10 corrections (BoTorch's and
Ax's default) and once with ``fit_lbfgs_memory=M``, both under the same configuration
otherwise (today's default unless ``--kd-config``), alternating (A/B, then B/A on the
next round), in one process. Per round it prints

* the L-BFGS iterations and CPU seconds of the members' fits (warm starts: members of the
  round's state; cold: the round's new kernels) and the round's CPU seconds in all, each
  with its ratio M / 10;
* the chosen kernel under each (under the prequential criterion the choice is made from
  last round's forecasts, before the fits: the same unless something else differs);
* the members' fit scores (``RoundRecord.fit_scores``, lower is better): their mean under
  each and how many members scored better / equal (to 1e-4) / worse with memory M.

Output in ``--out``: ``lbfgs_memory.md`` (the table as printed) and ``lbfgs_memory.json``.

    python benchmarks/lbfgs_memory.py --memory 100 --out benchmarks/results/cost/lbfgs_memory

Torch runs single-threaded (``torch.set_num_threads(1)``). CPU seconds are this
process's (``time.process_time``), after an unmeasured warm-up replay; on a loaded
machine both settings share the load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import replay_rounds as rr  # noqa: E402
from user_pays import Meter  # noqa: E402

from ax_kernel_discovery.runner.environment import source_commit  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "results" / "replay"
DEFAULT_FIXTURES = (
    "hartmann6_100__seed0__r9",
    "rover100__seed0__r9",
    "lasso_dna__seed0__r6",
    "svm__seed0__r6",
)
#: Fit scores closer than this count as equal.
EQUAL = 1e-4


def replay(fixture: rr.Fixture, config: dict[str, Any]) -> dict[str, Any]:
    """One kd round of ``fixture`` under ``config`` with every fit in this process."""
    surrogate = rr.replay_surrogate(fixture, {**config, "background_fits": "off"})
    warm = {name for o in surrogate.state.outcomes.values() for name in o.warm}
    with Meter().installed() as meter:
        t0 = time.process_time()
        surrogate.fit([fixture.dataset()], fixture.digest())
        cpu = time.process_time() - t0
    record = surrogate.history[-1]
    surrogate.close()
    phases = meter.take()
    members = {  # kd's members and new kernels (not Ax's model, which both fit alike)
        name: {"iterations": phases.iterations.get(name, 0), "cpu": seconds}
        for name, seconds in phases.member_cpu.items()
    }
    split = {kind: {"iterations": 0, "cpu": 0.0} for kind in ("warm", "cold")}
    for name, entry in members.items():
        kind = split["warm" if name in warm else "cold"]
        kind["iterations"] += int(entry["iterations"])
        kind["cpu"] += entry["cpu"]
    return {
        "cpu": cpu,
        "chosen": record.chosen,
        "fit_scores": dict(record.fit_scores),
        "members": members,
        **split,
    }


def ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def compare(fixture: rr.Fixture, memory: int, config: dict[str, Any], flip: bool) -> dict:
    """Both settings on one recorded round (the order flipped on every other round)."""
    settings: list[tuple[str, dict[str, Any]]] = [
        ("scipy", dict(config)),
        ("memory", {**config, "fit_lbfgs_memory": memory}),
    ]
    runs = {label: replay(fixture, cfg) for label, cfg in (settings[::-1] if flip else settings)}
    a, b = runs["scipy"], runs["memory"]
    common = sorted(set(a["fit_scores"]) & set(b["fit_scores"]))
    diffs = [b["fit_scores"][k] - a["fit_scores"][k] for k in common]
    return {
        "fixture": fixture.name,
        "n": int(fixture.X.shape[0]),
        "dim": int(fixture.X.shape[1]),
        "runs": runs,
        "better": sum(d < -EQUAL for d in diffs),
        "equal": sum(abs(d) <= EQUAL for d in diffs),
        "worse": sum(d > EQUAL for d in diffs),
        "mean_score": {
            label: statistics.fmean(r["fit_scores"][k] for k in common) if common else None
            for label, r in runs.items()
        },
    }


def _f(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def table(rows: Sequence[dict[str, Any]], memory: int) -> str:
    """The comparison as a markdown table."""
    lines = [
        f"| round | n | D | iterations warm (10 / {memory}) | cold (10 / {memory}) | "
        f"fit CPU s (10 / {memory}) | ratio | round CPU s (10 / {memory}) | ratio | "
        f"chosen (10 / {memory}) | mean fit score (10 / {memory}) | "
        f"members better / equal / worse with {memory} |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        a, b = r["runs"]["scipy"], r["runs"]["memory"]
        fit_a = a["warm"]["cpu"] + a["cold"]["cpu"]
        fit_b = b["warm"]["cpu"] + b["cold"]["cpu"]
        chosen = a["chosen"] if a["chosen"] == b["chosen"] else f"{a['chosen']} / {b['chosen']}"
        lines.append(
            f"| {r['fixture']} | {r['n']} | {r['dim']} | "
            f"{a['warm']['iterations']} / {b['warm']['iterations']} | "
            f"{a['cold']['iterations']} / {b['cold']['iterations']} | "
            f"{fit_a:.1f} / {fit_b:.1f} | {_f(ratio(fit_b, fit_a))} | "
            f"{a['cpu']:.1f} / {b['cpu']:.1f} | {_f(ratio(b['cpu'], a['cpu']))} | "
            f"{'same: ' if a['chosen'] == b['chosen'] else ''}{chosen} | "
            f"{_f(r['mean_score']['scipy'], 4)} / {_f(r['mean_score']['memory'], 4)} | "
            f"{r['better']} / {r['equal']} / {r['worse']} |"
        )
    cpu_a = sum(r["runs"]["scipy"]["cpu"] for r in rows)
    cpu_b = sum(r["runs"]["memory"]["cpu"] for r in rows)
    lines.append(
        f"| all | | | | | | | {cpu_a:.1f} / {cpu_b:.1f} | **{_f(ratio(cpu_b, cpu_a))}** | | | "
        f"{sum(r['better'] for r in rows)} / {sum(r['equal'] for r in rows)} / "
        f"{sum(r['worse'] for r in rows)} |"
    )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory", type=int, default=100, help="fit_lbfgs_memory to compare")
    parser.add_argument(
        "--fixtures",
        nargs="+",
        default=list(DEFAULT_FIXTURES),
        help=f"recorded rounds (names in {FIXTURES} or paths)",
    )
    parser.add_argument(
        "--kd-config", type=json.loads, default={}, help="KernelDiscoveryConfig fields (JSON)"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/cost/lbfgs_memory"))
    return parser.parse_args(argv)


def fixture_path(name: str) -> Path:
    path = Path(name)
    return path if path.suffix == ".json" else FIXTURES / f"{name}.json"


def main(argv: list[str] | None = None, emit: Callable[[str], None] = print) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(1)
    fixtures = [rr.Fixture.load(fixture_path(name)) for name in args.fixtures]
    replay(fixtures[0], {**args.kd_config, "fit_maxiter": 1})  # warm-up, not measured
    rows = [
        compare(fixture, args.memory, args.kd_config, i % 2 == 1)
        for i, fixture in enumerate(fixtures)
    ]
    commit = source_commit()
    at = f"{str(commit.get('commit'))[:10]}{' (dirty)' if commit.get('dirty') else ''}"
    command = "python benchmarks/lbfgs_memory.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    text = (
        f"# kd's fits with scipy's L-BFGS-B memory (10) and with {args.memory}, on recorded "
        f"rounds\n\nGenerated by `{command}` at commit {at} (torch threads "
        f"{torch.get_num_threads()}; kd config {args.kd_config or 'the default'} otherwise; "
        "every fit in this process; fit scores: lower is better).\n\n"
        + table(rows, args.memory)
        + "\n"
    )
    emit(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lbfgs_memory.md").write_text(text)
    data = {"command": command, "commit": commit, "memory": args.memory, "rows": rows}
    (args.out / "lbfgs_memory.json").write_text(json.dumps(data, indent=1, default=str))
    return data


if __name__ == "__main__":
    main()
