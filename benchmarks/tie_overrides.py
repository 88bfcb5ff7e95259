"""How often the cost tie rule overrode the best held-out score in recorded runs.

Reads the run files (``benchmarks/results/**/*.json``) of kd runs whose resolved config
had the cost tie rule (``criterion='prequential'``, ``tie_break`` ``auto`` or ``cost``)
and, for each BO round with held-out scores (``kd_scores``: each member's held-out loss,
lower is better), says whether the ``chosen`` member was not the best. The files record
no per-point forecasts, so today's rule (``TIE_BOUND``, the whole window) cannot be
replayed exactly: ``within bound`` counts the overrides it can still make (the chosen
member within ``TIE_BOUND`` of the best), ``any within bound`` the rounds where some
member is (an upper bound on today's overrides).

    python benchmarks/tie_overrides.py [ROOT ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ax_kernel_discovery.surrogate.choice import TIE_BOUND


def main(roots: list[str]) -> None:
    files = sorted({p for r in roots for p in Path(r).rglob("*.json")})
    rounds = overrides = within = any_within = runs = 0
    gaps: list[float] = []
    for path in files:
        try:
            run = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        cfg = run.get("resolved_kd_config") if isinstance(run, dict) else None
        if not cfg or cfg.get("criterion") != "prequential":
            continue
        if cfg.get("tie_break") not in ("auto", "cost") or cfg.get("heldout_score") != "log":
            continue
        runs += 1
        for rec in run.get("rounds", []):
            scores, chosen = rec.get("kd_scores") or {}, rec.get("chosen")
            if not scores or chosen not in scores:
                continue
            rounds += 1
            best = min(scores.values())
            gap = scores[chosen] - best
            others = [v - best for k, v in scores.items() if k != min(scores, key=scores.get)]
            any_within += any(g <= TIE_BOUND for g in others)
            if gap > 0:
                overrides += 1
                gaps.append(gap)
                within += gap <= TIE_BOUND
    gaps.sort()
    print(f"{runs} runs, {rounds} BO rounds with held-out scores")
    print(f"recorded: the tie overrode the best in {overrides} ({overrides / max(rounds, 1):.0%})")
    if gaps:
        print(
            f"  gaps (chosen - best): median {gaps[len(gaps) // 2]:.3f}, max {gaps[-1]:.3f}; "
            f"> {TIE_BOUND}: {sum(g > TIE_BOUND for g in gaps)}"
        )
    print(f"today's bound: at most {within} of them remain ({within / max(rounds, 1):.0%})")
    print(
        f"  rounds where any member is within the bound of the best: {any_within} "
        f"({any_within / max(rounds, 1):.0%}; an upper bound on today's overrides)"
    )


if __name__ == "__main__":
    main(sys.argv[1:] or ["benchmarks/results"])
