"""Analyse what a kernel-discovery run found: choices, acceptance, structure, lineage.

Works on a live :class:`KernelDiscoverySurrogate` or on one loaded from an Ax Client
JSON file (``load_surrogate``)::

    from ax_kernel_discovery.analysis import load_surrogate, discovery_report
    print(discovery_report(load_surrogate("run.json")))
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from ax_kernel_discovery._upstream.ax import experiment_of
from ax_kernel_discovery.expression import leaves
from ax_kernel_discovery.library_format import LIBRARY_FORMAT, KernelLibraryError, LibraryKernel
from ax_kernel_discovery.storage import register_storage
from ax_kernel_discovery.strategy import surrogate_of
from ax_kernel_discovery.surrogate.core import KernelDiscoverySurrogate


def load_surrogate(path: str | Path) -> KernelDiscoverySurrogate:
    """The kernel-discovery surrogate of an Ax Client saved with ``save_to_json_file``."""
    from ax.api import Client

    register_storage()  # the surrogate's classes, for Ax's decoder
    client = Client.load_from_json_file(str(path))
    try:
        return find_surrogate(client)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def find_surrogate(client: Any) -> KernelDiscoverySurrogate:
    """The kernel-discovery surrogate in an Ax ``Client``'s generation strategy.

    Raises:
        ValueError: The client has no generation strategy, or none with such a surrogate.
    """
    surrogate = surrogate_of(client)
    if isinstance(surrogate, KernelDiscoverySurrogate):
        return surrogate
    raise ValueError(
        "the Ax client holds no KernelDiscoverySurrogate (was the run made with kernel discovery?)"
    )


def summarize(surrogate: KernelDiscoverySurrogate) -> dict[str, Any]:
    """Counts over the run's history and final population."""
    history = surrogate.history
    proposed = sum(len(r.proposed) for r in history)
    accepted = sum(len(r.accepted) for r in history)
    chosen = Counter(r.chosen for r in history if r.chosen)
    population = list(surrogate.population)
    structure: Counter[str] = Counter()
    warps: Counter[str] = Counter()
    for m in population:
        if m.candidate.spec is not None:
            for node in leaves(m.candidate.spec):
                structure[node["kernel"]] += 1
                warps[node.get("warp", "identity")] += 1
    return {
        "rounds": len(history),
        "proposed": proposed,
        "accepted": accepted,
        "acceptance_rate": accepted / proposed if proposed else None,
        "rejections_by_stage": dict(Counter(r.stage for rec in history for r in rec.rejected)),
        "chosen": dict(chosen.most_common()),
        "chosen_origin": dict(
            Counter(_origin_of(surrogate, r.chosen) for r in history if r.chosen)
        ),
        "population_origin": dict(Counter(m.origin for m in population)),
        "leaf_kernels": dict(structure.most_common()),
        "warps": dict(warps.most_common()),
        "resets": surrogate.population.resets,
        "mean_selection_seconds": (sum(r.timings.get("total", 0.0) for r in history) / len(history))
        if history
        else None,
    }


def lineage(surrogate: KernelDiscoverySurrogate, name: str) -> list[str]:
    """Ancestry of a current member, nearest first, as far as the population still knows it."""
    members = {m.name: m for m in surrogate.population}
    if name not in members:
        raise KeyError(f"{name!r} is not in the population; members: {sorted(members)}")
    out: list[str] = []
    frontier = list(members[name].parents)
    while frontier:
        parent = frontier.pop(0)
        if parent in out:
            continue
        out.append(parent)
        if parent in members:
            frontier.extend(members[parent].parents)
    return out


def discovery_report(surrogate: KernelDiscoverySurrogate) -> str:
    """A Markdown report: per-round table, final population with formulas, summary."""
    s = summarize(surrogate)
    lines = ["# Kernel discovery report", ""]
    lines += [
        f"- rounds: {s['rounds']}; proposed {s['proposed']}, accepted {s['accepted']}"
        + (f" ({100 * s['acceptance_rate']:.0f}%)" if s["acceptance_rate"] is not None else ""),
        f"- rejections by stage: {s['rejections_by_stage'] or 'none'}",
        f"- chosen kernels: {s['chosen']}",
        f"- chosen by origin: {s['chosen_origin']}; population by origin: {s['population_origin']}",
        f"- leaf kernels in the population: {s['leaf_kernels']}; warps: {s['warps']}",
        f"- population resets: {s['resets']}",
        "",
        "## Rounds",
        "",
        "| round | n | chosen | score | accepted/proposed | struck | rejections | selection s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in surrogate.history:
        rej = Counter(x.stage for x in r.rejected)
        score = f"{r.chosen_score:.4f}" if r.chosen_score is not None else "-"
        lines.append(
            f"| {r.round} | {r.n} | {r.chosen} | {score} | {len(r.accepted)}/{len(r.proposed)} | "
            f"{r.struck or ''} | {dict(rej) or ''} | {r.timings.get('total', 0.0):.1f} |"
        )
    lines += ["", "## Final population (best first)", ""]
    for m in surrogate.population:
        score = f"{m.score:.4f}" if m.score is not None else "-"
        parents = ", ".join(m.parents) or "-"
        lines += [
            f"- **{m.name}** ({m.origin}, score {score}, chosen {m.times_chosen}x, parents: {parents})",
            f"  `{m.formula}`",
        ]
    return "\n".join(lines) + "\n"


def _origin_of(surrogate: KernelDiscoverySurrogate, name: str | None) -> str:
    for m in surrogate.population:
        if m.name == name:
            return m.origin
    if name is None:
        return "none"
    return "base" if ":" not in name and not name.startswith(("llm_", "direct_")) else "dropped"


# --------------------------------------------------------------------------- export


def export_kernels(
    source: KernelDiscoverySurrogate | Any | str | os.PathLike[str], top: int = 3
) -> list[LibraryKernel]:
    """The best members of a kernel-discovery run, best first.

    Args:
        source: A :class:`~ax_kernel_discovery.KernelDiscoverySurrogate`, an Ax
            ``Client`` whose strategy holds one, or the path of a ``Client`` saved with
            ``save_to_json_file`` (a result JSON of ``ax-kernel-discovery run`` also
            works: its checkpoint is read).
        top: How many members to export (the population's best scores).

    Returns:
        Up to ``top`` :class:`LibraryKernel` (members that were never scored are left
        out), each with its name, formula, origin, score and definition.

    Raises:
        ValueError: ``top < 1``, no kernel-discovery surrogate in ``source``, or no
            member has a score yet (no BO round has run).
    """
    if top < 1:
        raise ValueError(f"top must be >= 1, got {top}")
    surrogate, experiment = _run_surrogate(source)
    population = surrogate.population
    population.rank()
    outcome = next((k for k, p in surrogate.populations.items() if p is population), None)
    last = next((r for r in reversed(surrogate.history) if r.outcome == outcome), None)
    members = [m for m in population if m.score is not None][:top]
    if not members:
        when = (
            f"criterion={surrogate.config.criterion!r} scores a member by its forecast of the "
            "next BO batch: export after at least two BO rounds"
            if surrogate.config.selection_rule().scores_forecasts
            else "export after at least one BO round"
        )
        raise ValueError(
            f"{experiment or 'the surrogate'}: no population member has a score yet ({when})"
        )
    return [
        LibraryKernel.from_candidate(
            m.candidate,
            score=m.score,
            criterion=surrogate.config.criterion,
            experiment=experiment,
            dim=last.dim if last is not None else None,
            n_observations=last.n if last is not None else None,
        )
        for m in members
    ]


def _run_surrogate(source: Any) -> tuple[KernelDiscoverySurrogate, str | None]:
    """The surrogate held by ``source`` and a label of where it ran."""
    if isinstance(source, KernelDiscoverySurrogate):
        return source, None
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {str(path)!r}")
        checkpoint = _checkpoint_of_result(path)
        return load_surrogate(checkpoint or path), str(path)
    experiment: Any = experiment_of(source)
    name = experiment.name if getattr(experiment, "has_name", False) else None
    return find_surrogate(source), name


def _checkpoint_of_result(path: Path) -> Path | None:
    """The Client checkpoint of a runner result JSON, ``None`` for an Ax Client JSON.

    Raises:
        KernelLibraryError: The file is neither (not JSON, a kernel library, other JSON).
    """
    what = (
        "export reads a run: an Ax Client saved with save_to_json_file, or a result JSON "
        "of `ax-kernel-discovery run`"
    )
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise KernelLibraryError(f"{path}: not a JSON file ({e}); {what}") from None
    if isinstance(data, dict) and data.get("format") == LIBRARY_FORMAT:
        raise KernelLibraryError(
            f"{path} is a kernel library, not a run: its kernels are already exported. Use "
            f"them as they are (--method fixed --kernel {path}:NAME, or "
            f"KernelDiscoveryConfig(start_kernels={str(path)!r})); {what}"
        )
    if not isinstance(data, dict) or not ({"experiment", "checkpoint_path"} & set(data)):
        raise KernelLibraryError(f"{path} is not a run; {what}")
    if "checkpoint_path" not in data:
        return None
    checkpoint = Path(str(data["checkpoint_path"]))
    if not checkpoint.is_absolute() and not checkpoint.is_file():
        checkpoint = path.parent / "checkpoints" / checkpoint.name
    if not checkpoint.is_file():
        raise FileNotFoundError(
            f"{path} is a run result; its Ax checkpoint {str(checkpoint)!r} (which holds the "
            "population) is missing"
        )
    return checkpoint
