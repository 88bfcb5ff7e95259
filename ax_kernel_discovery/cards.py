"""Kernel discovery in Ax's analyses: cards for ``Client.compute_analyses``.

Four :class:`~ax.analysis.analysis.Analysis` classes read the history that a
:class:`~ax_kernel_discovery.KernelDiscoverySurrogate` keeps (one
:class:`~ax_kernel_discovery.RoundRecord` per round) and its populations. They fit
nothing and ask the model for nothing, so they cost milliseconds, and they work as well on
a client loaded from a file (``Client.load_from_json_file``) as on a live one:

* :class:`KernelPopulationAnalysis`: each round's population, one row per kernel:
  origin, formula, held-out and fit scores, and what happened to it (chosen, kept, new,
  dropped or rejected, and why);
* :class:`KernelChoiceAnalysis`: the kernel each round chose, its score, and the best
  value among the observations the round was fitted on;
* :class:`KernelRejectionsAnalysis`: the proposals that did not join, by stage;
* :class:`HeldOutScoresPlot`: a plotly plot of every member's score over the rounds.

:func:`kernel_discovery_analyses` lists them, as Ax's own analyses are passed::

    cards = client.compute_analyses(kernel_discovery_analyses())

Ax 1.3's ``compute_analyses()`` without arguments always computes Ax's
``OverviewAnalysis`` and has no hook for a plug-in's cards; pass both to see both:
``client.compute_analyses([OverviewAnalysis(), *kernel_discovery_analyses()])``.
:class:`KernelDiscoveryAnalysis` groups the four cards into one.

Ax says its ``Analysis`` API may change between minor versions; these cards follow Ax
1.3's (``compute(experiment, generation_strategy, adapter) -> AnalysisCard``).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pandas as pd
from ax.adapter.base import Adapter
from ax.analysis.analysis import Analysis
from ax.analysis.markdown.markdown_analysis import (
    MarkdownAnalysisCard,
    create_markdown_analysis_card,
)
from ax.analysis.plotly.plotly_analysis import PlotlyAnalysisCard, create_plotly_analysis_card
from ax.core.analysis_card import AnalysisCard, AnalysisCardGroup
from ax.core.experiment import Experiment
from ax.generation_strategy.generation_strategy import GenerationStrategy
from plotly import graph_objects as go

from ax_kernel_discovery._upstream.ax import create_analysis_card, create_analysis_card_group
from ax_kernel_discovery.population import START_SET, base_candidate
from ax_kernel_discovery.strategy import surrogate_of
from ax_kernel_discovery.surrogate.core import KernelDiscoverySurrogate
from ax_kernel_discovery.surrogate.round_record import RoundRecord

__all__ = [
    "HeldOutScoresPlot",
    "KernelChoiceAnalysis",
    "KernelDiscoveryAnalysis",
    "KernelPopulationAnalysis",
    "KernelRejectionsAnalysis",
    "kernel_discovery_analyses",
]

#: What each proposer's name prefix says about a kernel's origin.
_PREFIX_ORIGINS = {"off": "offline", "cs": "compositional", "llm": "llm", "direct": "direct"}


def kernel_discovery_analyses() -> list[Analysis]:
    """Kernel discovery's analyses, for ``client.compute_analyses(...)``.

    Returns:
        :class:`KernelPopulationAnalysis`, :class:`KernelChoiceAnalysis`,
        :class:`KernelRejectionsAnalysis` and :class:`HeldOutScoresPlot`.

    Example:
        >>> cards = client.compute_analyses(kernel_discovery_analyses())  # doctest: +SKIP
        >>> cards[0].df  # doctest: +SKIP
    """
    return [
        KernelPopulationAnalysis(),
        KernelChoiceAnalysis(),
        KernelRejectionsAnalysis(),
        HeldOutScoresPlot(),
    ]


# --------------------------------------------------------------------------- reading


def _surrogate(generation_strategy: GenerationStrategy | None) -> KernelDiscoverySurrogate:
    if generation_strategy is None:
        raise ValueError("kernel discovery's analyses need the generation strategy")
    surrogate = surrogate_of(generation_strategy)
    if not isinstance(surrogate, KernelDiscoverySurrogate):
        raise ValueError("the generation strategy holds no KernelDiscoverySurrogate")
    return surrogate


def _not_applicable(generation_strategy: GenerationStrategy | None) -> str | None:
    """Why the cards cannot be computed yet (``None``: they can)."""
    if generation_strategy is None:
        return "Kernel discovery's analyses need the generation strategy."
    try:
        surrogate = surrogate_of(generation_strategy)
    except ValueError as e:
        return str(e)
    if not isinstance(surrogate, KernelDiscoverySurrogate):
        return (
            "The generation strategy holds no KernelDiscoverySurrogate: these analyses "
            "describe kernel discovery (kernel_discovery_generation_strategy)."
        )
    if not surrogate.history:
        return (
            "No round of kernel discovery has run yet: the first one runs when the "
            "strategy moves from the initial (Sobol) trials to BO."
        )
    return None


class _KernelDiscoveryCard(Analysis):
    """What the four analyses share: when they apply, and the surrogate they read."""

    def validate_applicable_state(
        self,
        experiment: Experiment | None = None,
        generation_strategy: GenerationStrategy | None = None,
        adapter: Adapter | None = None,
    ) -> str | None:
        return _not_applicable(generation_strategy)


def _formulas(surrogate: KernelDiscoverySurrogate) -> dict[str, tuple[str, str]]:
    """``name -> (origin, formula)`` of every kernel the surrogate still knows."""
    known: dict[str, tuple[str, str]] = {
        c.name: (str(c.origin), c.formula) for c in map(base_candidate, START_SET)
    }
    for record in surrogate.history:
        if record.chosen and record.chosen_formula:
            known.setdefault(record.chosen, (_origin_of_name(record.chosen), record.chosen_formula))
    for population in surrogate.populations.values():
        for member in population:
            known[member.name] = (str(member.origin), member.formula)
    return known


def _origin_of_name(name: str) -> str:
    prefix = name.split(":", 1)[0].split("_r", 1)[0]
    if ":" not in name and "_r" not in name:
        return "base"
    return _PREFIX_ORIGINS.get(prefix, prefix)


def _score(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def population_frame(surrogate: KernelDiscoverySurrogate) -> pd.DataFrame:
    """One row per round and kernel: the population after the round, the kernels it
    dropped and the proposals it rejected (see :class:`KernelPopulationAnalysis`)."""
    known = _formulas(surrogate)
    rows: list[dict[str, Any]] = []

    def row(rec: RoundRecord, name: str, status: str, why: str, formula: str | None = None) -> None:
        origin, known_formula = known.get(name, (_origin_of_name(name), ""))
        rows.append(
            {
                "round": rec.round,
                "outcome": rec.outcome,
                "n": rec.n,
                "kernel": name,
                "origin": origin,
                "formula": formula or known_formula,
                "held_out_score": _score(rec.scores.get(name)),
                "fit_score": _score(rec.fit_scores.get(name)),
                "status": status,
                "why": why,
            }
        )

    for rec in surrogate.history:
        chosen = set(rec.mixture) or ({rec.chosen} if rec.chosen else set())
        fitted = set(rec.scores) | set(rec.fit_scores)
        for name in rec.population:
            if name in chosen:
                why = "in the acquisition's mixture" if rec.mixture else "the best score"
                row(rec, name, "chosen", why)
            elif name in rec.accepted:
                row(rec, name, "new", "proposed, validated and fitted this round")
            else:
                row(rec, name, "kept", "")
        for name in rec.dropped:
            if name == rec.struck:
                why = "struck: the batch it chose did not improve the best value"
            elif name not in fitted:
                why = "its fit failed or was too slow"
            else:
                why = "not among the population's best by score"
            row(rec, name, "dropped", why)
        for rejection in rec.rejected:
            row(
                rec,
                rejection.name,
                "rejected",
                f"{rejection.stage}: {rejection.reason}",
                rejection.formula,
            )
    columns = [
        "round",
        "outcome",
        "n",
        "kernel",
        "origin",
        "formula",
        "held_out_score",
        "fit_score",
        "status",
        "why",
    ]
    return pd.DataFrame(rows, columns=columns)


def _objective(experiment: Experiment | None) -> tuple[str, bool] | None:
    """The single objective's metric name and whether it is minimized."""
    config = getattr(experiment, "optimization_config", None)
    objective = getattr(config, "objective", None)
    names = getattr(objective, "metric_names", None)
    if objective is None or not names or len(names) != 1:
        return None
    return names[0], bool(objective.minimize)


def _observations(experiment: Experiment | None, metric: str) -> list[float]:
    """The metric's finite values of completed trials, by trial index (the order in which
    Ax hands the rows to the surrogate)."""
    if experiment is None:
        return []
    df = experiment.lookup_data().df
    if df.empty:
        return []
    df = df[df["metric_name"] == metric]
    completed = {i for i, t in experiment.trials.items() if t.status.is_completed}
    df = df[df["trial_index"].isin(completed)].sort_values("trial_index")
    return [float(v) for v in df["mean"] if math.isfinite(float(v))]


def choice_frame(
    surrogate: KernelDiscoverySurrogate, experiment: Experiment | None = None
) -> pd.DataFrame:
    """One row per round: the chosen kernel, its score, and the best value among the
    ``n`` observations the round was fitted on (see :class:`KernelChoiceAnalysis`)."""
    known = _formulas(surrogate)
    objective = _objective(experiment)
    values = _observations(experiment, objective[0]) if objective else []
    rows = []
    for rec in surrogate.history:
        seen = values[: rec.n] if objective and objective[0] == rec.outcome else []
        best = (min(seen) if objective and objective[1] else max(seen)) if seen else None
        formula = rec.chosen_formula or (known.get(rec.chosen or "", ("", ""))[1])
        rows.append(
            {
                "round": rec.round,
                "outcome": rec.outcome,
                "n": rec.n,
                "chosen": rec.chosen,
                "formula": formula,
                "score": _score(rec.chosen_score),
                "criterion": surrogate.config.criterion,
                "guard": rec.guarded,
                "mixture": dict(rec.mixture) or None,
                "best_value_so_far": best,
                "population": len(rec.population),
                "proposed": len(rec.proposed),
                "accepted": len(rec.accepted),
                "seconds": rec.timings.get("total"),
            }
        )
    return pd.DataFrame(rows)


def rejection_frame(surrogate: KernelDiscoverySurrogate) -> pd.DataFrame:
    """One row per round and stage: how many proposals were rejected there, with the
    first reason (see :class:`KernelRejectionsAnalysis`)."""
    rows = []
    for rec in surrogate.history:
        by_stage: dict[str, list[str]] = {}
        for rejection in rec.rejected:
            by_stage.setdefault(rejection.stage, []).append(rejection.reason)
        for stage, reasons in by_stage.items():
            rows.append(
                {
                    "round": rec.round,
                    "outcome": rec.outcome,
                    "stage": stage,
                    "count": len(reasons),
                    "proposed": len(rec.proposed),
                    "example": reasons[0],
                }
            )
    columns = ["round", "outcome", "stage", "count", "proposed", "example"]
    return pd.DataFrame(rows, columns=columns)


# --------------------------------------------------------------------------- the cards


class KernelPopulationAnalysis(_KernelDiscoveryCard):
    """Each round's population, one row per kernel.

    The DataFrame has one row per round and kernel, with the columns ``round``,
    ``outcome``, ``n`` (observations the round was fitted on), ``kernel``, ``origin``
    (``base``, ``offline``, ``llm``, ...), ``formula`` (empty for a kernel that left the
    population before the run was saved and was never chosen: its name says its
    structure), ``held_out_score`` and ``fit_score`` (the criterion's, lower is better),
    ``status`` and ``why``:

    * ``chosen``: the kernel the acquisition used (every member of a mixture);
    * ``new``: joined this round; ``kept``: stayed;
    * ``dropped``: left the population: struck (its batch did not improve the best
      value), its fit failed, or not among the best by score;
    * ``rejected``: a proposal that never joined, with its stage and reason.
    """

    def compute(
        self,
        experiment: Experiment | None = None,
        generation_strategy: GenerationStrategy | None = None,
        adapter: Adapter | None = None,
    ) -> AnalysisCard:
        surrogate = _surrogate(generation_strategy)
        df = population_frame(surrogate)
        last = surrogate.history[-1]
        return create_analysis_card(
            self,
            title="Kernel discovery: the population, round by round",
            subtitle=(
                f"{len(surrogate.history)} rounds; the last kept {len(last.population)} "
                f"kernels. Scores are the {surrogate.config.criterion!r} criterion's "
                "(lower is better). status: chosen, new, kept, dropped or rejected; why: "
                "the reason a kernel left or never joined."
            ),
            df=df,
        )


class KernelChoiceAnalysis(_KernelDiscoveryCard):
    """The kernel each round chose for the acquisition.

    The DataFrame has one row per round: ``chosen`` and its ``formula`` (``AxDefault``
    in a guard round, when Ax's default model chooses the points), ``score``,
    ``criterion``, ``guard``, ``mixture`` (member weights, when the acquisition mixes
    several), ``best_value_so_far`` (the best objective value among the ``n``
    observations the round was fitted on), the population's size, the proposals and
    accepted kernels, and the round's seconds.
    """

    def compute(
        self,
        experiment: Experiment | None = None,
        generation_strategy: GenerationStrategy | None = None,
        adapter: Adapter | None = None,
    ) -> MarkdownAnalysisCard:
        surrogate = _surrogate(generation_strategy)
        df = choice_frame(surrogate, experiment)
        chosen = Counter(c for c in df["chosen"] if c)
        lines = [
            "| round | n | chosen | score | best so far |",
            "|---|---|---|---|---|",
        ]
        for r in df.itertuples():
            score = "-" if r.score is None or pd.isna(r.score) else f"{r.score:.4g}"
            best = (
                "-"
                if r.best_value_so_far is None or pd.isna(r.best_value_so_far)
                else f"{r.best_value_so_far:.6g}"
            )
            name = f"{r.chosen} (guard: Ax's default model)" if r.guard else str(r.chosen)
            lines.append(f"| {r.round} | {r.n} | `{name}` | {score} | {best} |")
        most = ", ".join(f"`{k}` ({v})" for k, v in chosen.most_common(3))
        return create_markdown_analysis_card(
            name=type(self).__name__,
            title="Kernel discovery: the kernel chosen each round",
            subtitle=(
                f"Most chosen: {most}. Score: the {surrogate.config.criterion!r} criterion "
                "(lower is better); best so far: the best objective value among the "
                "observations the round was fitted on."
            ),
            df=df,
            message="\n".join(lines),
        )


class KernelRejectionsAnalysis(_KernelDiscoveryCard):
    """Proposals that did not join the population, by stage.

    The DataFrame has one row per round and stage (``proposal``, ``parse``, ``sandbox``,
    ``validation``, ``fit``, ``duplicate``, ...): ``count``, the round's ``proposed``
    count and an ``example`` reason.
    """

    def compute(
        self,
        experiment: Experiment | None = None,
        generation_strategy: GenerationStrategy | None = None,
        adapter: Adapter | None = None,
    ) -> AnalysisCard:
        surrogate = _surrogate(generation_strategy)
        df = rejection_frame(surrogate)
        proposed = sum(len(r.proposed) for r in surrogate.history)
        totals = df.groupby("stage")["count"].sum().to_dict() if len(df) else {}
        shown = ", ".join(f"{k} {v}" for k, v in sorted(totals.items())) or "none"
        return create_analysis_card(
            self,
            title="Kernel discovery: rejected proposals by stage",
            subtitle=(
                f"{sum(totals.values())} of {proposed} proposals rejected ({shown}). A "
                "rejected kernel never reaches the model; the BO loop goes on."
            ),
            df=df,
        )


class HeldOutScoresPlot(_KernelDiscoveryCard):
    """Every member's score over the rounds (plotly), the chosen one marked.

    The DataFrame has one row per round and scored kernel: ``round``, ``kernel``,
    ``score`` and ``chosen``. Under ``criterion="prequential"`` the score is held out:
    each member's forecast, made by its previous round's fit, of the batch that arrived
    since (lower is better); the other criteria's scores are plotted the same way.
    """

    def compute(
        self,
        experiment: Experiment | None = None,
        generation_strategy: GenerationStrategy | None = None,
        adapter: Adapter | None = None,
    ) -> PlotlyAnalysisCard:
        surrogate = _surrogate(generation_strategy)
        df = heldout_frame(surrogate)
        fig = go.Figure()
        for name, part in df.groupby("kernel", sort=False):
            fig.add_trace(
                go.Scatter(
                    x=part["round"],
                    y=part["score"],
                    mode="lines+markers",
                    name=str(name),
                    marker={"size": [12 if c else 6 for c in part["chosen"]]},
                    marker_symbol=["star" if c else "circle" for c in part["chosen"]],
                )
            )
        criterion = surrogate.config.criterion
        fig.update_layout(
            xaxis_title="round of kernel discovery",
            yaxis_title=f"{criterion} score (lower is better)",
            legend_title="kernel (star: chosen)",
        )
        return create_plotly_analysis_card(
            name=type(self).__name__,
            title="Kernel discovery: scores over the rounds",
            subtitle=(
                f"Each line is one kernel's {criterion!r} score in the rounds it was scored "
                "(lower is better); a star marks the round's choice. A prequential score is "
                "held out: the forecast a member's previous fit made of the batch that "
                "arrived since."
            ),
            df=df,
            fig=fig,
        )


def heldout_frame(surrogate: KernelDiscoverySurrogate) -> pd.DataFrame:
    """One row per round and scored kernel (see :class:`HeldOutScoresPlot`)."""
    rows = []
    for rec in surrogate.history:
        chosen = set(rec.mixture) or ({rec.chosen} if rec.chosen else set())
        for name, value in rec.scores.items():
            score = _score(value)
            if score is not None:
                rows.append(
                    {"round": rec.round, "kernel": name, "score": score, "chosen": name in chosen}
                )
    return pd.DataFrame(rows, columns=["round", "kernel", "score", "chosen"])


class KernelDiscoveryAnalysis(_KernelDiscoveryCard):
    """The four kernel-discovery cards as one group (see :func:`kernel_discovery_analyses`)."""

    def compute(
        self,
        experiment: Experiment | None = None,
        generation_strategy: GenerationStrategy | None = None,
        adapter: Adapter | None = None,
    ) -> AnalysisCardGroup:
        children = [
            a.compute_or_error_card(
                experiment=experiment, generation_strategy=generation_strategy, adapter=adapter
            )
            for a in kernel_discovery_analyses()
        ]
        return create_analysis_card_group(
            self,
            title="Kernel discovery",
            subtitle=(
                "What the kernel-discovery surrogate did each round: its population, its "
                "choices, its rejections and its scores."
            ),
            children=children,
        )
