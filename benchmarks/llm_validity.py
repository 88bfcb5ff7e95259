"""How often does an LLM write a valid GP kernel? Two-stage (formula -> code) vs direct code.

For each mode, the proposer is asked for N kernels (in calls of ``--per-call``) from
the seed population (RBF, Matern-5/2, RQ, BOCK, SL formulas; no data, no scores), and
every returned class goes through
:func:`ax_kernel_discovery.sandbox.validate.validate_kernel_code` (sandboxed: syntax, load,
shape, diag, gradient, PSD, finite, GP fit). Printed per mode:

* acceptance rate (accepted / N asked);
* histogram of rejection stages (proposal, parse, duplicate, then validation stages)
  with one example reason each;
* per-call latency and tokens, by LLM stage (from the client's ledger);
* functional diversity of the accepted kernels: 1 - mean pairwise cosine similarity of
  their flattened Gram matrices on 80 shared points uniform in [0, 1]^D (seed 0), with
  float64 inputs, lengthscales set to sqrt(D) where the kernel has them and every other
  hyperparameter at its initial value.

Usage:
    python benchmarks/llm_validity.py --model local --n 6 --mode both --dim 10
    python benchmarks/llm_validity.py --model gpt-4o --n 30 --cache-dir runs/llm-cache
    python benchmarks/llm_validity.py --model gpt-4o --cache-dir runs/llm-cache --replay
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch

torch.set_num_threads(1)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from ax_kernel_discovery.candidate import KernelCandidate  # noqa: E402
from ax_kernel_discovery.diversity import cosine_similarity, gram_signature, reference_points  # noqa: E402
from ax_kernel_discovery.llm.client import LLMClient  # noqa: E402
from ax_kernel_discovery.llm.factory import make_client  # noqa: E402
from ax_kernel_discovery.llm.local_model import QWEN_GGUF  # noqa: E402
from ax_kernel_discovery.llm.templates import seed_formulas  # noqa: E402
from ax_kernel_discovery.population import MemberSummary, start_candidates  # noqa: E402
from ax_kernel_discovery.proposers.base import Proposer  # noqa: E402
from ax_kernel_discovery.proposers.direct import DirectCodeProposer  # noqa: E402
from ax_kernel_discovery.proposers.llm import LLMProposer  # noqa: E402


def seed_population() -> list[MemberSummary]:
    """The five reference kernels as the prompts see them (formulas only, unscored)."""
    return [
        MemberSummary(
            name,
            formula,
            "base",
            None,
            KernelCandidate(name=name, formula=formula, spec={"seed": name}),
        )
        for name, formula in seed_formulas().items()
    ]


def start_set_signatures(dim: int) -> dict[str, torch.Tensor]:
    """Gram-matrix signatures of the start set (RBF, Matern-5/2, RQ, BOCK, SL)."""
    points = reference_points(dim)
    return {c.name: gram_signature(c.build(dim).double(), points) for c in start_candidates()}


def functional_twin(
    cand: KernelCandidate, dim: int, signatures: dict[str, torch.Tensor]
) -> str | None:
    """The start-set or earlier accepted kernel whose Gram matrix ``cand`` repeats, as the
    surrogate's duplicate check sees it (cosine > 0.9999 at perturbed hyperparameters);
    ``cand``'s own signature is added to ``signatures`` when it is new."""
    try:
        sig = gram_signature(cand.build(dim).double(), reference_points(dim))
    except Exception:  # noqa: BLE001 - validated, so this is rare; not a twin
        return None
    twin = next((n for n, s in signatures.items() if cosine_similarity(sig, s) > 0.9999), None)
    if twin is None:
        signatures[cand.name] = sig
    return twin


def gram_diversity(candidates: list[KernelCandidate], dim: int, n_points: int = 80) -> float | None:
    """1 - mean pairwise cosine similarity of the flattened Gram matrices (None if < 2)."""
    from ax_kernel_discovery.sandbox import load_kernel_class

    gen = torch.Generator().manual_seed(0)
    x = torch.rand(n_points, dim, generator=gen, dtype=torch.float64)
    grams = []
    for cand in candidates:
        try:
            cls = load_kernel_class(cand.code or "", cand.class_name)
            kernel = cls(ard_num_dims=dim).to(torch.float64)
            if getattr(kernel, "has_lengthscale", False):
                kernel.lengthscale = torch.full_like(kernel.lengthscale, math.sqrt(dim))
            with torch.no_grad():
                gram = kernel(x, x).to_dense().reshape(-1)
            if torch.isfinite(gram).all() and gram.norm() > 0:
                grams.append(gram / gram.norm())
        except Exception:  # noqa: BLE001 - a validated kernel may still fail here
            continue
    if len(grams) < 2:
        return None
    sims = [float(a @ b) for a, b in itertools.combinations(grams, 2)]
    return 1.0 - sum(sims) / len(sims)


def run_mode(
    mode: str,
    client: LLMClient,
    *,
    n: int,
    per_call: int,
    dim: int,
    seed: int,
    validation: dict[str, Any],
    conversion_style: str = "class",
) -> dict[str, Any]:
    """Ask for ``n`` kernels in calls of ``per_call``; validate every candidate."""
    from ax_kernel_discovery.sandbox.validate import validate_kernel_code

    members = seed_population()
    proposer: Proposer
    if mode == "two-stage":
        proposer = LLMProposer(
            client,
            num_formulas=per_call,
            num_compositions=0,
            seed=seed,
            conversion_style=conversion_style,
        )
    else:
        # direct code generation has no "function" target: it writes classes then
        proposer = DirectCodeProposer(
            client,
            num_kernels=per_call,
            seed=seed,
            code_style="pair" if conversion_style == "pair" else "class",
        )

    signatures = start_set_signatures(dim)
    outcomes: list[dict[str, Any]] = []
    call_failures: list[dict[str, Any]] = []
    accepted: list[KernelCandidate] = []
    started = time.perf_counter()
    for round_index in range(math.ceil(n / per_call)):
        k = min(per_call, n - round_index * per_call)
        proposal = proposer.propose(members, dim, k, round_index)
        # Rejections named after a call (``llm_r0_discovery``, ``direct_r0``) explain
        # kernels that never came; the others are one kernel each.
        call_rejs = [
            r
            for r in proposal.rejections
            if r.name.endswith("_discovery") or re.fullmatch(r"\w+_r\d+", r.name)
        ]
        per_kernel = [r for r in proposal.rejections if r not in call_rejs]
        call_failures.extend(
            {"name": r.name, "stage": r.stage, "reason": r.reason} for r in call_rejs
        )
        outcomes.extend({"name": r.name, "stage": r.stage, "reason": r.reason} for r in per_kernel)
        for i in range(max(0, k - len(proposal.candidates) - len(per_kernel))):
            why = call_rejs[0] if call_rejs else None
            outcomes.append(
                {
                    "name": f"missing_r{round_index}_{i}",
                    "stage": why.stage if why else "parse",
                    "reason": why.reason if why else "kernel missing from the reply",
                }
            )
        for cand in proposal.candidates:
            res = validate_kernel_code(cand.code or "", dim, cand.class_name, **validation)
            stage, reason = ("accepted", "") if res.ok else (res.stage or "validation", res.reason)
            twin = functional_twin(cand, dim, signatures) if res.ok else None
            if twin is not None:  # what the surrogate's Gram-matrix check would reject
                stage, reason = "duplicate", f"Gram matrix equals {twin}'s (cosine > 0.9999)"
            outcomes.append(
                {
                    "name": cand.name,
                    "stage": stage,
                    "reason": reason or "",
                    "formula": cand.formula,
                    "class_name": cand.class_name,
                }
            )
            if stage == "accepted":
                accepted.append(cand)
    stages = Counter(o["stage"] for o in outcomes)
    reasons = {st: Counter(o["reason"] for o in outcomes if o["stage"] == st) for st in stages}
    examples = {st: c.most_common(1)[0][0] for st, c in reasons.items()}
    summary = client.summary()
    return {
        "mode": mode,
        "asked": n,
        "accepted": len(accepted),
        "acceptance_rate": len(accepted) / n if n else 0.0,
        "stages": dict(stages),
        "examples": examples,
        "diversity": gram_diversity(accepted, dim),
        "accepted_formulas": [c.formula for c in accepted],
        "llm": summary,
        "wall_s": time.perf_counter() - started,
        "outcomes": outcomes,
        "call_failures": call_failures,
    }


def print_report(result: dict[str, Any]) -> None:
    print(f"\n== {result['mode']} ==")
    print(
        f"accepted: {result['accepted']}/{result['asked']} ({100 * result['acceptance_rate']:.0f}%)  wall {result['wall_s']:.0f} s"
    )
    print("outcomes by stage:")
    for stage, count in sorted(result["stages"].items(), key=lambda kv: -kv[1]):
        example = " ".join(str(result["examples"].get(stage, "")).split())[:110]
        print(f"  {stage:<11} {count:>3}  {example}")
    print("LLM calls (stage: calls, mean latency, mean prompt / completion tokens):")
    for stage, s in result["llm"]["by_stage"].items():
        calls = max(s["calls"], 1)
        print(
            f"  {stage:<11} {s['calls']:>3}  {s['mean_latency_s']:>6.1f} s  "
            f"{s['prompt_tokens'] / calls:>6.0f} / {s['completion_tokens'] / calls:<5.0f}"
            f"  failed {s['failed']}, cached {s['cached']}, cost ${s['cost_usd']:.4f}"
        )
    div = result["diversity"]
    print(
        f"functional diversity of accepted kernels: {'n/a (< 2 accepted)' if div is None else f'{div:.3f}'}"
    )
    for formula in result["accepted_formulas"]:
        print(f"  + {formula[:120]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model",
        default=os.environ.get("AXKD_LLM_MODEL", "local"),
        help="litellm model string or 'local'",
    )
    parser.add_argument("--api-base", default=None, help="OpenAI-compatible base URL")
    parser.add_argument("--model-path", default=None, help="GGUF file for --model local")
    parser.add_argument("--n", type=int, default=6, help="kernels asked for per mode")
    parser.add_argument(
        "--per-call", type=int, default=3, help="kernels asked for per discovery/direct call"
    )
    parser.add_argument("--mode", choices=["two-stage", "direct", "both"], default="both")
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument(
        "--conversion-style",
        choices=["class", "function", "pair"],
        default="class",
        help="code target: a whole Kernel class (paper), PARAMETERS + a batched "
        "covariance(x1, x2, p) (two-stage only; direct then writes classes), or PARAMETERS + "
        "covariance(x, y, p) for one pair of points (both modes)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-tokens", type=int, default=1500)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per LLM call")
    parser.add_argument("--cache-dir", default=None, help="LLM response cache (record/replay)")
    parser.add_argument("--replay", action="store_true", help="answer only from --cache-dir")
    parser.add_argument("--fit-timeout", type=float, default=30.0)
    parser.add_argument("--no-fit", action="store_true", help="skip the GP fit check")
    parser.add_argument("--json", default=None, help="write the full results here")
    args = parser.parse_args(argv)

    client_kwargs: dict[str, Any] = {
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "timeout": args.timeout,
        "num_retries": 1,
        "cache_dir": args.cache_dir,
        "mode": "replay" if args.replay else "live",  # live + cache dir: read-through
    }
    server = None
    if args.model == "local" and not args.replay:
        from ax_kernel_discovery.llm.local_model import LocalLLMServer

        server = LocalLLMServer(args.model_path).start()
        print(f"local model {server.model_path.name} on {server.api_base} (1 thread)")
    modes = ["two-stage", "direct"] if args.mode == "both" else [args.mode]
    validation = {"fit_timeout": args.fit_timeout, "check_fit": not args.no_fit}
    results = []
    try:
        for mode in modes:
            if server is not None:
                client = server.client(**client_kwargs)
            elif args.model == "local":  # replay of a local run: the same model string
                path = (
                    args.model_path
                    or os.environ.get("AXKD_LOCAL_MODEL")
                    or QWEN_GGUF["0.5b"].filename
                )
                alias = Path(path).name.removesuffix(".gguf")
                client = LLMClient(f"openai/{alias}", **client_kwargs)
            else:
                client = make_client(args.model, api_base=args.api_base, **client_kwargs)
            print(
                f"\n[{mode}] asking {client.model} for {args.n} kernels, D = {args.dim} ...",
                flush=True,
            )
            result = run_mode(
                mode,
                client,
                n=args.n,
                per_call=args.per_call,
                dim=args.dim,
                seed=args.seed,
                validation=validation,
                conversion_style=args.conversion_style,
            )
            print_report(result)
            results.append(result)
    finally:
        if server is not None:
            server.stop()
    if len(results) == 2:
        print("\n== two-stage vs direct ==")
        print(
            f"{'mode':<10} {'accepted':>9} {'rate':>6} {'diversity':>10} {'tokens':>8} {'LLM s':>7}"
        )
        for r in results:
            div = "n/a" if r["diversity"] is None else f"{r['diversity']:.3f}"
            print(
                f"{r['mode']:<10} {r['accepted']:>4}/{r['asked']:<4} {100 * r['acceptance_rate']:>5.0f}% {div:>10} "
                f"{r['llm']['total_tokens']:>8} {r['llm']['latency_s']:>7.0f}"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
