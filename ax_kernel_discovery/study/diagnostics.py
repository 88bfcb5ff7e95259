"""The study's diagnostics: search behaviour, kernel selection and the chosen kernels.

Aggregates, over a method's runs, what each run's result file records per round
(:mod:`ax_kernel_discovery.runner.diagnostics` computes it during the run): the boundary hit
ratio and OTSD of the queries (:func:`search_diagnostics`), whether the criterion picks
the kernel that predicts the next batch best (:func:`selection_diagnostics`), and which
kernel families ``kd`` chose per BO round with their Gram diversity
(:func:`chosen_timeline`, families by :func:`kernel_family`), and how many proposed
kernels survive and what proposing cost (:func:`proposal_diagnostics`). The report
(:mod:`ax_kernel_discovery.study.report`) re-exports them.

Example:
    >>> kernel_family("off_r3_1:(matern52@tanh*rq)")
    'evolved[Matern52+RQ]'
"""

from __future__ import annotations

import collections
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ax_kernel_discovery.kernels import LEAVES
from ax_kernel_discovery.population import start_candidates
from ax_kernel_discovery.study.statistics import spearman
from ax_kernel_discovery.surrogate.choice import GUARD_NAME

BASE_KERNELS = tuple(c.name for c in start_candidates())
"""The start set's kernels, each its own family."""
GUARD_CHOICE = GUARD_NAME
"""What a round that handed the acquisition Ax's default model records as chosen."""
_LEAF_NAMES = {
    name: leaf.title or (name.upper() if len(name) <= 3 else name.capitalize())
    for name, leaf in LEAVES.items()
    if not leaf.polynomial  # a feature map of the inner product, not a family
}
"""The family name of each leaf of the grammar (``kernels.LEAVES``)."""


def kernel_family(name: str | None) -> str:
    """A start kernel's name, or ``evolved[...]`` with the base kernels it is built of."""
    if not name:
        return "none"
    if name in BASE_KERNELS or name == GUARD_CHOICE:
        return name
    body = name.split(":", 1)[1] if ":" in name else name
    leaves = sorted(
        {_LEAF_NAMES[t] for t in re.findall(r"[a-z]+\d*", body.lower()) if t in _LEAF_NAMES}
    )
    return f"evolved[{'+'.join(leaves)}]" if leaves else "evolved"


def search_diagnostics(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean boundary hit ratio of the BO batches and final OTSD, over the runs."""
    hits, otsd = [], []
    for r in runs:
        bo = [
            x["boundary_hit"] for x in r["rounds"] if x.get("kind") == "bo" and "boundary_hit" in x
        ]
        if bo:
            hits.append(float(np.mean(bo)))
        lengths = [x.get("path_length") for x in r["rounds"]]
        if lengths and all(v is not None for v in lengths):
            otsd.append(float(sum(lengths)))
    return {
        "boundary_hit": float(np.mean(hits)) if hits else None,
        "otsd": float(np.mean(otsd)) if otsd else None,
        "n_runs": len(runs),
    }


def selection_diagnostics(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Does the criterion pick the kernel that predicts the next batch best?

    Per ``kd`` round with next-batch scores: the Spearman correlation between the
    members' criterion scores and their next-batch CRPS (positive: the criterion orders
    kernels as next-batch accuracy does), whether the chosen kernel had the best
    next-batch CRPS, and which kernel did.

    The next batch is where the *chosen* kernel's acquisition expected the most
    improvement, so it is also where that kernel is most likely to be over-optimistic (a
    winner's curse): its next-batch score is biased against it. ``spearman_crps_others``
    is the correlation over the other members only, which the acquisition did not pick
    the batch for; ``chosen_rank`` is the chosen kernel's mean next-batch CRPS rank as a
    fraction (1/m: best of m members, 1: worst).
    """
    corr: list[float] = []
    corr_others: list[float] = []
    chosen_rank: list[float] = []
    corr_ll: list[float] = []
    chosen_best: list[bool] = []
    chosen_top3: list[bool] = []
    chosen_ll: list[float] = []
    member_ll: list[float] = []
    best_family: collections.Counter[str] = collections.Counter()
    for r in runs:
        for x in r["rounds"]:
            nb, crit = x.get("next_batch") or {}, x.get("kd_scores") or {}
            names = [n for n in crit if n in nb]
            if len(names) < 3 or x.get("chosen") not in nb:
                continue
            c = [crit[n] for n in names]
            rho = spearman(c, [nb[n]["crps"] for n in names])
            if rho is not None:
                corr.append(rho)
            others = [n for n in names if n != x["chosen"]]
            rho_others = spearman([crit[n] for n in others], [nb[n]["crps"] for n in others])
            if rho_others is not None:
                corr_others.append(rho_others)
            rho_ll = spearman(c, [-nb[n]["log_lik"] for n in names])
            if rho_ll is not None:
                corr_ll.append(rho_ll)
            order = sorted(names, key=lambda n: nb[n]["crps"])
            chosen_best.append(order[0] == x["chosen"])
            chosen_rank.append((order.index(x["chosen"]) + 1) / len(order))
            chosen_top3.append(x["chosen"] in order[:3])
            chosen_ll.append(nb[x["chosen"]]["log_lik"])
            member_ll.append(float(np.median([nb[n]["log_lik"] for n in names])))
            best_family[kernel_family(order[0])] += 1
    return {
        "rounds": len(chosen_best),
        "spearman_crps": float(np.mean(corr)) if corr else None,
        "spearman_crps_others": float(np.mean(corr_others)) if corr_others else None,
        "spearman_log_lik": float(np.mean(corr_ll)) if corr_ll else None,
        "chosen_rank": float(np.mean(chosen_rank)) if chosen_rank else None,
        "chosen_is_best": float(np.mean(chosen_best)) if chosen_best else None,
        "chosen_in_top3": float(np.mean(chosen_top3)) if chosen_top3 else None,
        "chosen_log_lik": float(np.median(chosen_ll)) if chosen_ll else None,
        "median_member_log_lik": float(np.median(member_ll)) if member_ll else None,
        "best_next_batch_kernels": dict(best_family.most_common(4)),
    }


def proposal_diagnostics(
    runs: Sequence[dict[str, Any]], asked_per_round: int, start_kernels: Sequence[str]
) -> dict[str, Any]:
    """How many proposed kernels were accepted, why the others were not, and the cost.

    Over the BO rounds of the runs: ``accepted`` (valid, not a duplicate and fitted) out
    of ``asked`` (``asked_per_round`` per round), the rejections by stage (a call-level
    rejection, such as a reply with fewer kernels than asked, counts once), the share of
    rounds whose chosen kernel is not one of ``start_kernels`` (a proposed kernel drove
    the acquisition), the mean Gram diversity of a round's accepted kernels (rounds with
    at least two), and for LLM proposers the calls, the mean latency of a call that
    reached the model, the mean time a round waited for its proposals and the mean
    round time.
    """
    start = set(start_kernels)
    rounds = [x for r in runs for x in r["rounds"] if x.get("kind") == "bo"]
    stages: collections.Counter[str] = collections.Counter(
        f["stage"] for x in rounds for f in x.get("failures", []) if f.get("kind") == "rejection"
    )
    accepted = sum(len(x.get("accepted") or []) for x in rounds)
    asked = asked_per_round * len(rounds)
    usage = [x.get("llm_usage") or {} for x in rounds]
    calls = sum(u.get("llm_calls", 0.0) for u in usage)
    live = calls - sum(
        u.get("llm_cached_calls", 0.0) + u.get("llm_failed_calls", 0.0) for u in usage
    )
    latency = sum(u.get("llm_latency_s", 0.0) for u in usage)
    chosen = [x.get("chosen") for x in rounds if x.get("chosen")]
    diversity = [x["accepted_diversity"] for x in rounds if x.get("accepted_diversity") is not None]

    def mean_timing(key: str) -> float | None:
        values = [x["timings"][key] for x in rounds if key in x.get("timings", {})]
        return float(np.mean(values)) if values else None

    return {
        "n_runs": len(runs),
        "rounds": len(rounds),
        "asked": asked,
        "accepted": accepted,
        "acceptance": accepted / asked if asked else None,
        "rejections": dict(stages.most_common()),
        "chosen_proposed": sum(c not in start for c in chosen) / len(chosen) if chosen else None,
        "accepted_diversity": float(np.mean(diversity)) if diversity else None,
        "llm_calls": int(calls),
        "llm_latency_s": latency / live if live > 0 else None,
        "propose_s": mean_timing("propose"),
        "round_s": mean_timing("round_wall"),
    }


def chosen_timeline(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per BO round: the chosen kernel families over seeds and the mean Gram diversity."""
    by_round: dict[int, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in runs:
        for i, x in enumerate(x for x in r["rounds"] if x.get("kind") == "bo"):
            by_round[i].append(x)
    timeline = []
    for i in sorted(by_round):
        rows = by_round[i]
        fams = collections.Counter(kernel_family(x.get("chosen")) for x in rows)
        pop_div = [x["population_diversity"] for x in rows if x.get("population_diversity")]
        acc_div = [x["accepted_diversity"] for x in rows if x.get("accepted_diversity")]
        timeline.append(
            {
                "round": i + 1,
                "families": dict(fams.most_common()),
                "evolved_share": sum(v for k, v in fams.items() if k.startswith("evolved"))
                / len(rows),
                "population_diversity": float(np.mean(pop_div)) if pop_div else None,
                "accepted_diversity": float(np.mean(acc_div)) if acc_div else None,
            }
        )
    return timeline


__all__ = [
    "BASE_KERNELS",
    "GUARD_CHOICE",
    "chosen_timeline",
    "kernel_family",
    "proposal_diagnostics",
    "search_diagnostics",
    "selection_diagnostics",
]
