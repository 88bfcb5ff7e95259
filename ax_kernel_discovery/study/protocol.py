"""The quality study: does kernel discovery beat fixed kernels, at one documented protocol?

:data:`STUDY` fixes problems, methods, seeds, budget and the acquisition settings that
every method shares; :func:`study_configs` lists its runs in the order they are worth
running (seed by seed, so that every finished seed adds a complete paired comparison;
cheap problems first), and :func:`run_study` runs the ones not finished yet. Every run
writes its result JSON into the study folder (committed to git in
``benchmarks/results/study/``), so the study grows run by run across machines and a
finished run is never repeated.

The protocol, and what was reduced to fit a 2-core CPU machine:

* problems: Rover (100-D, the paper's variant), Lasso-DNA (180-D), SVM (388-D, on the
  bundled 682-row CT-slice sample) and Hartmann6 hidden in 100-D (an embedded synthetic
  whose optimum is off the box centre, so the centre bias of BOCK/SL is not flattered).
  Humanoid (6392-D) is left out: a joint q = 15 acquisition over 95,880 variables does
  not fit the machine's time;
* methods: ``kd`` (default :class:`~ax_kernel_discovery.KernelDiscoveryConfig`),
  ``ax_default``, ``matern52``, ``bock``, ``sl``, ``compositional``;
* seeds 0-4; budget 170 = 20 Sobol points + 10 rounds of one joint batch of q = 15
  (the paper: 1000 = 20 + 49 x 20);
* acquisition, the same for every method: qLogNoisyExpectedImprovement, 2 restarts,
  128 raw samples, L-BFGS-B ``maxiter`` 50, ``sample_around_best`` on (the paper: 4
  restarts, 512 raw samples, ``maxiter`` 300). ``kd`` computes it with its default,
  :class:`~ax_kernel_discovery.surrogate.new_rows_qlognei.NewRowsqLogNEI` (the same values to
  1e-9), the other methods with BoTorch's class.

Example:
    >>> [c.run_id for c in study_configs(seeds=[0], problems=["rover100"], methods=["kd"])]
    ['rover100__kd__seed0']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ax_kernel_discovery.runner import RunConfig, make_run_config
from ax_kernel_discovery.runner.sweep import run_configs

DEFAULT_OUT = "benchmarks/results/study"
"""Where the study's result files live in the repository."""


class StudyProtocol(BaseModel):
    """The settings every run of the study shares (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    problems: tuple[str, ...] = ("rover100", "hartmann6_100", "lasso_dna", "svm")
    methods: tuple[str, ...] = ("kd", "ax_default", "matern52", "bock", "sl", "compositional")
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    budget: int = Field(170, ge=1)
    batch: int = Field(15, ge=1)
    num_sobol: int = Field(20, ge=1)
    num_restarts: int = Field(2, ge=1)
    raw_samples: int = Field(128, ge=1)
    maxiter: int = Field(50, ge=1)
    sample_around_best: bool = True

    def run_settings(self) -> dict[str, Any]:
        """The :class:`~ax_kernel_discovery.runner.RunConfig` fields shared by every run."""
        return self.model_dump(exclude={"problems", "methods", "seeds"})


STUDY = StudyProtocol()
"""The study's protocol."""

TUNING_SEEDS: tuple[int, ...] = tuple(range(10))
"""The hold-out study's tuning seeds: kd's variants are screened, and its default chosen,
on these only (``benchmarks/results/holdout/PROTOCOL.md``)."""

CONFIRMATION_SEEDS: tuple[int, ...] = tuple(range(1000, 1015))
"""The hold-out study's confirmation seeds: run once, for the final default."""

HOLDOUT_OUT = "benchmarks/results/holdout"
"""Where the hold-out study's result files live (``tuning/``, ``confirmation/``)."""

HOLDOUT = StudyProtocol(methods=("kd", "ax_default", "bock"), seeds=CONFIRMATION_SEEDS)
"""The hold-out study's confirmation runs: the earlier study's problems and settings, kd
against stock ``ax_default`` and ``bock``, on seeds nobody tuned on."""


class HoldoutRound(BaseModel):
    """One round of the hold-out study: its folder, its confirmation seeds and its rule.

    A round's protocol (``<out>/PROTOCOL.md``) is committed before its runs. Its candidates
    run on :data:`TUNING_SEEDS` into ``<out>/tuning/<candidate>/`` (and, for runs an earlier
    round made, into the folders of ``reused_tuning``); stock ``ax_default``'s tuning runs
    in the same folders are the rule's baseline; the chosen default, ``ax_default`` and
    ``bock`` run on ``confirmation_seeds`` into ``<out>/confirmation/``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="How the report names the round.")
    out: str = Field(description="The round's folder (PROTOCOL.md, tuning/, confirmation/).")
    confirmation_seeds: tuple[int, ...]
    rule_problems: tuple[str, ...] = Field(description="The problems the rule decides on.")
    candidates: tuple[str, ...] = Field(
        description="The variants the rule chooses among; other variants are reported only."
    )
    dropped: tuple[str, ...] = Field(
        (),
        description="Candidates the protocol's early-drop rule removed before they were "
        "complete: reported, not ranked, and the rule does not wait for them.",
    )
    reused_tuning: tuple[str, ...] = Field(
        (),
        description="Tuning folders of earlier rounds, relative to ``out``, whose runs (a "
        "candidate's, ``ax_default``'s) this round reuses beside its own ``tuning/``.",
    )
    rule: Literal["ahead_then_z", "target_chance"] = Field(
        "ahead_then_z",
        description="How the candidates are ranked: ``ahead_then_z`` (rounds 1-3: the most "
        "problems with a mean difference >= 0, then the largest mean z) or ``target_chance`` "
        "(round 4: the largest estimated chance of meeting the target on fresh seeds).",
    )
    rule_text: str = Field(description="The rule, in the report's words.")
    closed: str = Field(
        "",
        description="Why the round ended without a confirmation, once its decision kept a "
        "default an earlier round confirmed (empty while it is under way or confirmed).",
    )
    reported_only: str = Field(
        "not candidates of this round", description="Why a non-candidate is reported only."
    )
    outside_rule: str = Field(
        "reported only",
        description="Why rows on problems outside ``rule_problems`` do not enter the rule.",
    )

    def folder(self, root: str | Path | None = None) -> Path:
        """The round's folder: ``root`` where given (a copy elsewhere), else :attr:`out`."""
        return Path(root if root is not None else self.out)

    def under(self, results: str | Path) -> Path:
        """The round's folder in ``results``, a folder of the rounds' folders (another
        checkout's ``benchmarks/results``)."""
        return Path(results) / Path(self.out).name


HOLDOUT_ROUNDS: tuple[HoldoutRound, ...] = (
    HoldoutRound(
        name="round 1",
        out=HOLDOUT_OUT,
        confirmation_seeds=CONFIRMATION_SEEDS,
        rule_problems=("rover100", "svm"),  # amendment 1
        candidates=("preq_fixed", "hedge3"),  # amendment 2
        rule_text="The rule (amendment 1: on rover100 and svm): among variants run on both "
        "with all tuning seeds, the most problems with Δ >= 0, then the largest mean z.",
        reported_only="amendment 2: they did not enter the decision",
        outside_rule="amendment 3: run after the confirmation, reported only",
    ),
    HoldoutRound(
        name="round 2",
        out="benchmarks/results/holdout2",
        confirmation_seeds=tuple(range(2000, 2015)),
        rule_problems=HOLDOUT.problems,
        candidates=("preq_fixed", "hedge3", "notie"),
        reused_tuning=("../holdout/tuning",),
        rule_text="The rule: among the candidates run on all four problems with all tuning "
        "seeds, the most problems with Δ >= 0, then the largest mean z; it chooses once "
        "every candidate is complete.",
    ),
    HoldoutRound(
        name="round 3",
        out="benchmarks/results/holdout3",
        confirmation_seeds=tuple(range(3000, 3015)),
        rule_problems=HOLDOUT.problems,
        candidates=("preq_fixed", "saas", "saas_full", "full_fit"),  # amendments 1 and 2
        dropped=("saas",),  # behind preq_fixed on hartmann6_100 and rover100 (EARLY_DROP.md)
        reused_tuning=("../holdout/tuning",),
        rule_text="The rule (as round 2's): among the candidates run on all four problems "
        "with all tuning seeds, the most problems with Δ >= 0, then the largest mean z; it "
        "chooses once every candidate not dropped early is complete or can no longer rank "
        "first (amendment 3).",
        closed="its rule kept `preq_fixed`, which round 2 confirmed "
        "([decision](benchmarks/results/holdout3/DECISION.md)).",
    ),
    HoldoutRound(
        name="round 4",
        out="benchmarks/results/holdout4",
        confirmation_seeds=tuple(range(4000, 4015)),
        rule_problems=HOLDOUT.problems,
        candidates=("preq_fixed", "hedge3", "notie", "saas_full"),
        reused_tuning=("../holdout/tuning", "../holdout2/tuning", "../holdout3/tuning"),
        rule="target_chance",
        rule_text="The rule: among the candidates run on all four problems with all tuning "
        "seeds, the largest estimated chance of meeting the target against ax_default on 15 "
        "fresh seeds (20,000 simulated confirmations, each problem's 15 differences drawn "
        "with replacement from its tuning differences); chances within 0.01 tie, and a tie "
        "goes to the fewer fields changed. A forecast to rank candidates, not a claim.",
    ),
)
"""The hold-out study's rounds, in the order they were run (``benchmarks/results/holdout``,
``holdout2``, ``holdout3`` and ``holdout4``; each round's PROTOCOL.md says why it was run)."""

COST_CANDIDATES: dict[str, dict[str, Any]] = {
    "converge_chosen_50": {"fit_maxiter": 50, "converge_chosen": True},
    "converge_chosen_200": {"fit_maxiter": 200, "converge_chosen": True},
    "converge_top3_200": {"fit_maxiter": 200, "converge_chosen": True, "converge_contenders": 2},
    "refit_top3_200": {
        "fit_maxiter": 200,
        "converge_chosen": True,
        "converge_contenders": 2,
        "refit_members": "contenders",
    },
    "refit_chosen_50": {"fit_maxiter": 50, "converge_chosen": True, "refit_members": "contenders"},
    "saas_full_mem100": {"fit_lbfgs_memory": 100},
}
"""The cheap default's candidates (``benchmarks/results/cost/PROTOCOL.md``): each variant's
:class:`~ax_kernel_discovery.KernelDiscoveryConfig` fields, changed from today's default,
committed before its first run. ``converge_chosen_50``: the member that drives the
acquisition is fitted to convergence, as Ax fits its model; every other member gets 50
warm-started L-BFGS steps (a new kernel 200), the previous default's budget.
``converge_chosen_200`` (added after ``converge_chosen_50`` failed on hartmann6_100, before
any run of its own): the same, with 200 warm-started steps for every other member (a new
kernel 800), so that the members whose forecasts the prequential choice reads are fitted
closer to convergence. ``converge_top3_200`` (added after ``converge_chosen_200`` failed on
hartmann6_100 by 0.00082, before any run of its own): the same, and the two members after
the choice in the prequential choice order (the likeliest next choices: the members
whose forecasts decide the next round) are fitted to convergence too, with the round's
other fits after the choice is handed on; the other members keep 200 warm-started steps.
``refit_top3_200`` (added while ``converge_top3_200``'s runs were under way, 18 of 40
done, before any run of its own; its lever is the fits' cost at large n, where every
marginal-likelihood step of every member grows with n): the same three members converge,
and the other members are not refitted at all: each is scored at its last
hyperparameters on today's data (new kernels are fitted as always).
``refit_chosen_50`` (added while ``refit_top3_200``'s runs were under way, 14 of 40 done,
before any run of its own; its lever is the cost half of the rule at large n, where a
round's L-BFGS steps, each growing with n, must stay near the one from-scratch fit of
Ax's model: ``refit_top3_200`` converges three members and gives each of the round's new
kernels 800 cold steps): only the choice is refitted, to convergence from its warm
start; every other member is scored at its last hyperparameters on today's data; new
kernels get 200 cold steps (4 x ``fit_maxiter``).
``saas_full_mem100`` (added while ``refit_top3_200``'s runs were under way, 19 of 40
done, before any run of its own; ``refit_chosen_50`` has not run): today's default
unchanged, every member and new kernel still fitted to L-BFGS-B's convergence test, with
an L-BFGS-B memory of 100 corrections instead of scipy's 10 (``fit_lbfgs_memory``). Its
lever is the iterations a convergent fit needs with about one lengthscale per input
dimension (``benchmarks/lbfgs_memory.py``, on the recorded rounds); the method and its
step budgets are today's, so it is the candidate closest to ``saas_full`` in what it
computes. Ax's own model is fitted as Ax fits it (scipy's memory) on both sides."""

VARIANT_METHODS: tuple[str, ...] = ("kd", "cake")
"""Methods a variant's ``kd_config`` applies to: ``kd``, and ``cake``, which takes the same
``llm_*`` fields (so an LLM variant compares kd with the LLM against CAKE on one model)."""


def study_configs(
    out: str = DEFAULT_OUT,
    *,
    problems: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
    protocol: StudyProtocol = STUDY,
    kd_config: dict[str, Any] | None = None,
    method_suffix: str = "",
) -> list[RunConfig]:
    """The study's runs, seed by seed, then problem by problem, then method by method.

    Args:
        out: Folder of the result files.
        problems, methods, seeds: A subset of the protocol's (default: all of them).
        protocol: The shared settings.
        kd_config: :class:`~ax_kernel_discovery.KernelDiscoveryConfig` fields for ``kd``
            and ``cake`` (:data:`VARIANT_METHODS`; a variant, see ``method_suffix``).
        method_suffix: Appended to the output folder of a variant, so that its files do
            not overwrite the default's (e.g. ``"topk100"`` writes ``<out>/topk100``).
    """
    folder = f"{out}/{method_suffix}" if method_suffix else out
    return [
        make_run_config(
            problem=p,
            method=m,
            seed=s,
            out=folder,
            kd_config=kd_config if m in VARIANT_METHODS else None,
            **protocol.run_settings(),
        )
        for s in (seeds if seeds is not None else protocol.seeds)
        for p in (problems if problems is not None else protocol.problems)
        for m in (methods if methods is not None else protocol.methods)
    ]


def run_study(
    out: str = DEFAULT_OUT,
    *,
    workers: int = 1,
    progress: bool = False,
    **selection: Any,
) -> list[dict[str, Any]]:
    """Run every study run that is not finished yet (finished ones are skipped).

    Args:
        out: Folder of the result files.
        workers: Parallel runs (local processes, one torch thread each).
        progress: Print each run as it finishes.
        **selection: Arguments of :func:`study_configs` (a subset, a variant).
    """
    return run_configs(study_configs(out, **selection), workers=workers, progress=progress)


__all__ = [
    "CONFIRMATION_SEEDS",
    "DEFAULT_OUT",
    "HOLDOUT",
    "HOLDOUT_OUT",
    "HOLDOUT_ROUNDS",
    "STUDY",
    "TUNING_SEEDS",
    "VARIANT_METHODS",
    "HoldoutRound",
    "StudyProtocol",
    "run_study",
    "study_configs",
]
