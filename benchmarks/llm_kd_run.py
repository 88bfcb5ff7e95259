"""A short kernel-discovery run with the LLM proposer (the local GGUF model by default).

Runs an Ax Client loop (Sobol, then R rounds) with ``proposer="llm"`` and prints, per
round, the LLM kernels proposed, accepted and rejected (with stage and reason), the
chosen kernel, and at the end the validity rate and the LLM ledger. With no key and no
network it uses ``llm_model="local"`` (Qwen2.5-Coder GGUF assembled from PyPI; see
docs/llm.md). Any litellm model works: ``--model gpt-4o`` with ``OPENAI_API_KEY`` set.

    python benchmarks/llm_kd_run.py --rounds 2 --model local --size 1.5b
    python benchmarks/llm_kd_run.py --rounds 10 --proposal-format expression   # structured
    python benchmarks/llm_kd_run.py --rounds 10 --model offline                # no LLM

``--proposal-format`` picks structured JSON trees (``expression``, the default here) or
the paper's free-form formulas + code (``code``); ``--model offline`` runs the offline
operator on the same loop, for the diversity comparison.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import time
from collections import Counter

import numpy as np
import torch
from ax.api import Client
from ax.api.configs import RangeParameterConfig
from ax.utils.common.logger import set_ax_logger_levels

from ax_kernel_discovery import (
    KernelDiscoveryConfig,
    kernel_discovery_generation_strategy,
    surrogate_of,
)
from ax_kernel_discovery.benchmarks import Branin
from ax_kernel_discovery.runner.report import format_value


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="local")
    parser.add_argument("--size", default="1.5b", choices=["0.5b", "1.5b"], help="local model size")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dim", type=int, default=20)
    parser.add_argument("--formulas", type=int, default=2)
    parser.add_argument("--repair", action="store_true")
    parser.add_argument("--conversion-style", default="pair", choices=["class", "function", "pair"])
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--proposal-format", default="expression", choices=["expression", "code"])
    parser.add_argument("--feedback-rounds", type=int, default=3)
    parser.add_argument("--overlap", action="store_true", help="overlap_proposals=True")
    parser.add_argument("--followups", type=int, default=0, help="proposal_followups")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="llm_temperature (default: the config's, 1.0 for structured local calls)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    set_ax_logger_levels(logging.ERROR)
    offline = args.model == "offline"
    if args.model == "local" and not os.environ.get("AXKD_LOCAL_MODEL"):
        from ax_kernel_discovery.llm.local_model import assemble_qwen_gguf

        os.environ["AXKD_LOCAL_MODEL"] = str(assemble_qwen_gguf(args.size))
    config = KernelDiscoveryConfig(
        proposer="offline" if offline else "llm",
        llm_model=None if offline else args.model,
        proposal_format=args.proposal_format,
        feedback_rounds=args.feedback_rounds,
        overlap_proposals=args.overlap,
        proposal_followups=args.followups,
        seed=args.seed,
        num_formulas=args.formulas,
        proposals_per_round=args.formulas + 1,
        repair=args.repair,
        conversion_style=args.conversion_style,
        fallback_to_offline=False,
        llm_timeout=900.0,
        llm_retries=0,
        llm_cache_dir=args.cache_dir,
        llm_mode="live",  # with --cache-dir: read-through cache, new replies recorded
        population_size=8,
        **({} if args.temperature is None else {"llm_temperature": args.temperature}),
    )
    problem = Branin(dim=args.dim)
    client = Client(random_seed=args.seed)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(args.dim)
        ]
    )
    client.configure_optimization("-f")
    gs = kernel_discovery_generation_strategy(
        config, num_sobol=10, num_restarts=2, raw_samples=128, maxiter=100
    )
    client.set_generation_strategy(gs)
    surrogate = surrogate_of(gs)
    print(
        f"model {args.model} ({args.size if args.model == 'local' else ''}); D={args.dim}; {args.rounds} rounds",
        flush=True,
    )
    origins: dict[str, str] = {}
    for r in range(args.rounds + 1):
        q, trials = (10 if r == 0 else 2), {}
        t0 = time.perf_counter()
        while len(trials) < q:
            trials.update(client.get_next_trials(max_trials=q - len(trials)))
        for index, p in trials.items():
            x = np.array([[p[f"x{i}"] for i in range(args.dim)]])
            client.complete_trial(index, raw_data={"f": float(problem.evaluate(x)[0])})
        if r == 0:
            continue
        rec = surrogate.history[-1]
        print(
            f"\nround {rec.round} ({time.perf_counter() - t0:.0f}s): proposed {rec.proposed}; accepted {rec.accepted}"
        )
        members = {m.name: m for m in surrogate.population}
        ranking = sorted(rec.scores, key=rec.scores.__getitem__)
        for name in rec.accepted:
            member = members.get(name)
            origins[name] = member.origin if member is not None else "?"
            where = (
                f"LOO-CRPS {rec.scores[name]:.4f}, rank {ranking.index(name) + 1}/{len(ranking)}"
                if name in rec.scores
                else "not scored"
            )
            formula = member.formula if member is not None else ""
            print(f"  accepted {name} ({origins[name]}; {where}): {formula[:120]}")
        for rej in rec.rejected:
            print(f"  rejected {rej.name} [{rej.stage}]: {rej.reason[:160]}")
        print(
            f"  chose {rec.chosen} ({format_value(rec.chosen_score)}); "
            f"LLM usage {rec.proposer_usage}",
            flush=True,
        )
    # every LLM kernel: validated ones (proposed) plus those rejected before validation
    # (parse, duplicate formula, conversion failure); call-level rejections
    # (``llm_r0_discovery``: "had 1 of 2 blocks") name no kernel
    kernels = {n for r in surrogate.history for n in r.proposed} | {
        x.name
        for r in surrogate.history
        for x in r.rejected
        if not re.fullmatch(r"\w+_r\d+(_discovery)?", x.name)
    }
    proposed = len(kernels)
    accepted = sum(len(r.accepted) for r in surrogate.history)
    stages = Counter(x.stage for r in surrogate.history for x in r.rejected)
    llm_chosen = [
        r.chosen
        for r in surrogate.history
        if r.chosen and r.chosen.startswith(("llm_", "direct_", "expression_", "off_"))
    ]
    diversities = [r.accepted_diversity for r in surrogate.history if r.accepted_diversity]
    round_times = [r.timings.get("total", 0.0) for r in surrogate.history]
    propose_times = [r.timings.get("propose", 0.0) for r in surrogate.history]
    print(
        f"\nvalidity: {accepted}/{proposed} LLM kernels accepted ({100 * accepted / max(proposed, 1):.0f}%)"
    )
    print(f"accepted by origin: {dict(Counter(origins.values()))}")
    print(f"rejections by stage: {dict(stages)}")
    print(f"rounds where a proposed kernel was chosen: {llm_chosen or 'none'}")
    if diversities:
        mean_div = sum(diversities) / len(diversities)
        print(f"accepted diversity per round: mean {mean_div:.3f} over {len(diversities)} rounds")
    print(
        f"model_selection time per round: mean {sum(round_times) / len(round_times):.1f}s "
        f"(propose {sum(propose_times) / len(propose_times):.1f}s)"
    )
    print("population:", [(m.name, m.origin, round(m.score or 0, 4)) for m in surrogate.population])
    proposer = surrogate.proposer
    client_ = getattr(proposer, "client", None)
    if client_ is not None and hasattr(client_, "summary"):
        print("ledger:", client_.summary())
    return {
        "proposed": proposed,
        "accepted": accepted,
        "stages": dict(stages),
        "llm_chosen": llm_chosen,
        "accepted_by_origin": dict(Counter(origins.values())),
        "accepted_diversity": diversities,
    }


if __name__ == "__main__":
    main()
