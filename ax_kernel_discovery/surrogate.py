"""``KernelDiscoverySurrogate``: Ax's ``Surrogate`` with an evolving kernel population.

Each time Ax fits the surrogate on new data, :meth:`KernelDiscoverySurrogate.model_selection`
runs one round of the method:

1. *strike*: the kernel chosen last round is struck if its batch did not improve the
   best observed value (base kernels are dropped after ``patience`` strikes, others at
   once); an empty population resets to the start set;
2. *propose*: the proposer (offline operator by default, or an LLM) gets the members'
   formulas and scores, never the data, and returns candidates;
3. *validate*: shapes, ``diag``, gradients, PSD, time (untrusted code in a sandboxed
   subprocess); functional duplicates are dropped;
4. *fit and score*: every member and accepted candidate is built and fitted the Ax way
   (``Surrogate._construct_model``, Ax's ``Normalize`` input transform, warm-started
   from last round's hyperparameters) and scored by the criterion on its noisy prior
   covariance (LOO-CRPS by default);
5. *update*: candidates join, the population keeps its best N, and the best-scoring
   kernel's model is returned to Ax, which uses it for the acquisition function.

Nothing here raises into the BO loop because of a bad kernel: every failure is recorded
in :attr:`KernelDiscoverySurrogate.history` with its reason.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from pydantic import BaseModel, Field
from torch import Tensor

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.diversity import (
    cosine_similarity,
    diversity,
    gram_signature,
    reference_points,
)
from ax_kernel_discovery.gp import KernelDiscoveryGP
from ax_kernel_discovery.kernels.discovered import DiscoveredKernel
from ax_kernel_discovery.memory import probe_kernel_memory
from ax_kernel_discovery.population import Population, start_candidates
from ax_kernel_discovery.proposers import make_proposer
from ax_kernel_discovery.proposers.base import MemberSummary, Proposal, Proposer
from ax_kernel_discovery.selection import (
    best_points,
    num_hyperparameters,
    prior_covariance,
    score,
)
from ax_kernel_discovery.surrogate_state import (
    LastChoice,
    decode_tensors,
    encode_tensors,
    warm_parameters,
)

logger = logging.getLogger(__name__)

#: Two placeholder configs make Ax call ``model_selection`` on every new dataset.
_PLACEHOLDER_CONFIGS = [
    ModelConfig(name="kernel-discovery"),
    ModelConfig(name="kernel-discovery-population"),
]


class RoundRecord(BaseModel):
    """What happened in one round for one outcome."""

    round: int
    outcome: str
    n: int
    dim: int
    chosen: str | None = None
    chosen_formula: str | None = None
    chosen_score: float | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    population: list[str] = Field(default_factory=list)
    proposed: list[str] = Field(default_factory=list)
    accepted: list[str] = Field(default_factory=list)
    rejected: list[Rejection] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)
    struck: str | None = None
    previous_improved: bool | None = None
    reset: bool = False
    population_diversity: float | None = None
    accepted_diversity: float | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    proposer_usage: dict[str, float] = Field(default_factory=dict)
    selection: str | None = None


def model_config_for(
    candidate: KernelCandidate, fit_timeout: float | None = None, maxiter: int | None = None
) -> ModelConfig:
    """The Ax ``ModelConfig`` that builds and fits ``candidate`` (storable in Ax's JSON)."""
    return ModelConfig(
        botorch_model_class=KernelDiscoveryGP,
        covar_module_class=DiscoveredKernel,
        covar_module_options={"candidate": candidate.model_dump_json()},
        mll_options={"fit_options": {"timeout_sec": fit_timeout, "maxiter": maxiter}},
        name=candidate.name,
    )


class KernelDiscoverySurrogate(Surrogate):
    """Ax ``Surrogate`` whose kernel is chosen from an evolving population each round.

    Use it as the ``surrogate`` of a ``BoTorchGenerator`` (see
    :func:`ax_kernel_discovery.kernel_discovery_generation_strategy`).

    Args:
        config: :class:`KernelDiscoveryConfig` (or a dict of its fields).
        state: Saved population/history state (what Ax's JSON storage passes back).
        surrogate_spec: Ignored except for its non-model fields; the model configs are
            the population's.
        **kwargs: Passed to :class:`~ax.generators.torch.botorch_modular.surrogate.Surrogate`.

    Attributes:
        population: The population of the objective outcome (members with ``.name``,
            ``.formula``, ``.origin``, ``.score``).
        populations: One population per modelled outcome.
        history: One :class:`RoundRecord` per round and outcome.

    Example:
        >>> surrogate = KernelDiscoverySurrogate(KernelDiscoveryConfig(population_size=8))
        >>> [m.name for m in surrogate.population]
        ['RBF', 'Matern52', 'RQ', 'BOCK', 'SL']
    """

    def __init__(
        self,
        config: KernelDiscoveryConfig | Mapping[str, Any] | None = None,
        state: Mapping[str, Any] | None = None,
        surrogate_spec: SurrogateSpec | None = None,
        **kwargs: Any,
    ) -> None:
        if config is None:
            config = KernelDiscoveryConfig()
        elif not isinstance(config, KernelDiscoveryConfig):
            config = KernelDiscoveryConfig.model_validate(dict(config))
        spec = SurrogateSpec(model_configs=list(_PLACEHOLDER_CONFIGS))
        if surrogate_spec is not None:
            spec = SurrogateSpec(
                model_configs=list(_PLACEHOLDER_CONFIGS),
                allow_batched_models=surrogate_spec.allow_batched_models,
                outcomes=surrogate_spec.outcomes,
            )
        super().__init__(surrogate_spec=spec, **kwargs)
        self.config: KernelDiscoveryConfig = config
        self.populations: dict[str, Population] = {}
        self.history: list[RoundRecord] = []
        self.objective_weights: dict[str, float] = {}
        self.round_index = 0
        self._proposer: Proposer | None = None
        #: Fitted parameters of every member, float32 (see :mod:`.surrogate_state`).
        self._warm: dict[tuple[str, str], dict[str, Tensor]] = {}
        #: Dedup fingerprints by candidate key: a cache, recomputed after a reload.
        self._signatures: dict[str, Tensor] = {}
        self._last_choice: dict[str, LastChoice] = {}
        #: A loaded proposer state, applied when the proposer is next used.
        self._proposer_state: dict[str, Any] | None = None
        #: Set while Ax stores a generator run's copy (see :mod:`ax_kernel_discovery.storage`).
        self._record_only = False
        self._prefetch: dict[tuple[str, int, int], Future[Proposal]] = {}
        self._executor: ThreadPoolExecutor | None = None
        #: Last round's fitted model of every member, per outcome (not saved; diagnostics).
        self.fitted_models: dict[str, dict[str, Model]] = {}
        if state:
            self._load_state(state)

    # --- public views ------------------------------------------------------------------

    @property
    def population(self) -> Population:
        """Population of the objective (the first outcome when the direction is unknown)."""
        for name, weight in self.objective_weights.items():
            if weight != 0 and name in self.populations:
                return self.populations[name]
        if self.populations:
            return next(iter(self.populations.values()))
        return self._new_population()

    @property
    def proposer(self) -> Proposer:
        if self._proposer is None:
            self._proposer = make_proposer(self.config)
        return self._proposer

    def close(self) -> None:
        """Release what the proposer holds (a local LLM server) and the prefetch thread.

        The surrogate stays usable: a later round starts them again when needed.
        """
        for future in self._prefetch.values():
            future.cancel()
        self._prefetch = {}
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        close = getattr(self._proposer, "close", None)
        if callable(close):
            close()

    def record_objective_weights(self, weights: Tensor) -> None:
        """Learn the objective direction per outcome (called by the acquisition)."""
        for name, w in zip(self.outcomes, weights.reshape(-1).tolist(), strict=False):
            self.objective_weights[name] = float(w)

    # --- Ax hooks ------------------------------------------------------------------------

    def model_selection(
        self,
        dataset: SupervisedDataset,
        model_configs: list[ModelConfig],
        search_space_digest: SearchSpaceDigest,
        candidate_metadata: Any = None,
    ) -> tuple[Model, ModelConfig]:
        """One round of kernel discovery; returns the best kernel's fitted model."""
        t_start = time.perf_counter()
        outcome = dataset.outcome_names[0]
        X, Y = dataset.X, dataset.Y
        dim = X.shape[-1]
        if outcome not in self.populations:
            self.populations[outcome] = self._new_population(dim)
        pop = self.populations[outcome]
        rec = RoundRecord(round=self.round_index, outcome=outcome, n=X.shape[0], dim=dim)

        self._strike(outcome, pop, X, Y, rec)
        rec.reset = pop.reset_if_empty()

        t0 = time.perf_counter()
        proposal = self._propose(pop, dim, outcome)
        rec.timings["propose"] = time.perf_counter() - t0
        rec.proposed = [c.name for c in proposal.candidates]
        rec.rejected.extend(proposal.rejections)
        rec.proposer_usage = dict(proposal.usage)
        rec.timings.update({f"proposer:{k}": v for k, v in proposal.timings.items()})

        t0 = time.perf_counter()
        accepted = self._validate(proposal.candidates, pop, dim, rec, n=X.shape[0])
        rec.timings["validate"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        models = self._fit_all(
            [m.candidate for m in pop] + accepted, dataset, search_space_digest, outcome, rec
        )
        rec.timings["fit_and_score"] = time.perf_counter() - t0

        for cand in accepted:
            if cand.name in models:
                pop.add(cand, self.round_index)
                rec.accepted.append(cand.name)
        for member in list(pop):
            if member.name in models:
                pop.set_score(member.name, models[member.name][2])
            else:
                pop.remove(member.name)
                rec.dropped.append(member.name)
        rec.dropped.extend(pop.truncate())
        for name in rec.dropped:
            self._warm.pop((outcome, name), None)

        if not models:
            # every kernel failed: fall back to Ax's default model so the run goes on
            rec.rejected.append(
                Rejection(
                    name="*", stage="fit", reason="no kernel could be fitted; using Ax default"
                )
            )
            pop.reset_if_empty()
            model = self._construct_model(dataset, search_space_digest, ModelConfig(), None, True)
            best_config = ModelConfig()
        else:
            best_name = self._choose(models)
            model, best_config, best_score = models[best_name]
            best = pop.get(best_name)
            best.times_chosen += 1
            rec.chosen, rec.chosen_formula, rec.chosen_score = best_name, best.formula, best_score
            self._last_choice[outcome] = LastChoice.of(best_name, X, Y)
        rec.scores = {k: v[2] for k, v in models.items()}
        self.fitted_models[outcome] = {k: v[0] for k, v in models.items()}
        rec.population = pop.names
        rec.population_diversity = self._diversity([m.candidate.key for m in pop])
        rec.accepted_diversity = (
            self._diversity([c.key for c in accepted if c.name in models])
            if len(rec.accepted) > 1
            else None
        )
        rec.timings["total"] = time.perf_counter() - t_start
        self.history.append(rec)
        self.history = self.history[-self.config.history_limit :]
        self.round_index += 1
        if self._proposer is not None:  # what failed, for the next prompts (LLM proposers)
            self._proposer.record_feedback(rec.round, rec.rejected, rec.struck, pop.summaries())
        self._start_prefetch(pop, dim, outcome)
        logger.info(
            "kernel discovery round %d: chose %s (%.4g)",
            rec.round,
            rec.chosen,
            rec.chosen_score or math.nan,
        )
        return model, best_config

    def _serialize_attributes_as_kwargs(self) -> dict[str, Any]:
        kwargs = super()._serialize_attributes_as_kwargs()
        kwargs["config"] = self.config.model_dump(mode="json")
        kwargs["state"] = self.state_dict_json()
        return kwargs

    def clone_reset(self) -> KernelDiscoverySurrogate:
        return self.__class__(**self._serialize_attributes_as_kwargs())

    # --- state -----------------------------------------------------------------------------

    def state_dict_json(self) -> dict[str, Any]:
        """Everything the next round needs, as plain JSON data.

        Population, history (the last ``history_limit`` rounds) and round counter; the
        warm-start parameters of the members, the last choice (for the strike rule) and
        the proposer's dedup keys, so that a reloaded run continues exactly as an
        uninterrupted one (see :mod:`ax_kernel_discovery.surrogate_state`). While Ax
        stores a generator run's copy (``_record_only``), only the round counter and
        the objective weights: the generation strategy holds the state.
        """
        state: dict[str, Any] = {
            "round_index": self.round_index,
            "objective_weights": dict(self.objective_weights),
        }
        if self._record_only:
            return {**state, "record": True}
        members = {(o, m.name) for o, pop in self.populations.items() for m in pop}
        warm: dict[str, dict[str, Any]] = {}
        for (outcome, name), params in self._warm.items():
            if (outcome, name) in members:
                warm.setdefault(outcome, {})[name] = encode_tensors(params)
        proposer = self._proposer_state
        if self._proposer is not None:
            proposer = self._proposer.state_dict()
        return {
            **state,
            "populations": {k: p.to_dict() for k, p in self.populations.items()},
            "history": [
                r.model_dump(mode="json") for r in self.history[-self.config.history_limit :]
            ],
            "last_choice": {k: v.model_dump() for k, v in self._last_choice.items()},
            "warm_parameters": warm,
            "proposer": proposer or {},
        }

    def _load_state(self, state: Mapping[str, Any]) -> None:
        self.round_index = int(state.get("round_index", 0))
        self.objective_weights = {
            k: float(v) for k, v in state.get("objective_weights", {}).items()
        }
        self.populations = {
            k: Population.from_dict(v) for k, v in state.get("populations", {}).items()
        }
        self.history = [RoundRecord.model_validate(r) for r in state.get("history", [])]
        self._last_choice = {
            k: LastChoice.model_validate(v) for k, v in state.get("last_choice", {}).items()
        }
        self._warm = {
            (outcome, name): decode_tensors(encoded)
            for outcome, by_name in state.get("warm_parameters", {}).items()
            for name, encoded in by_name.items()
        }
        self._proposer_state = dict(state.get("proposer") or {}) or None

    # --- steps -----------------------------------------------------------------------------

    def _new_population(self, dim: int | None = None) -> Population:
        start = start_candidates()
        if self.config.start_kernels:  # a kernel library seeds the population (validated)
            from ax_kernel_discovery.library import library_start_candidates

            start = library_start_candidates(self.config, dim)
        return Population(start, size=self.config.population_size, patience=self.config.patience)

    def _strike(
        self, outcome: str, pop: Population, X: Tensor, Y: Tensor, rec: RoundRecord
    ) -> None:
        last = self._last_choice.get(outcome)
        weight = self.objective_weights.get(outcome)
        if last is None or not weight:
            return
        improved = last.improved(X, Y, weight)
        if improved is None:
            return
        name = last.name
        rec.previous_improved = improved
        if not improved:
            rec.struck = name
            if pop.strike(name):
                rec.dropped.append(name)
                self._warm.pop((outcome, name), None)

    def _propose(self, pop: Population, dim: int, outcome: str) -> Proposal:
        n = self.config.proposals_per_round
        if n == 0 or self.config.proposer == "none":
            return Proposal()
        if self._proposer_state is not None:  # reloaded: the proposer's dedup keys
            self.proposer.load_state_dict(self._proposer_state)
            self._proposer_state = None
        proposal = None
        prefetched = self._prefetch.pop((outcome, self.round_index, dim), None)
        if prefetched is not None:
            try:
                proposal = prefetched.result(timeout=self.config.llm_timeout * 3)
                proposal.timings["prefetched"] = 1.0
            except Exception as e:  # noqa: BLE001 - fall through to a fresh call
                logger.info("prefetched proposal failed (%r); proposing again", e)
        if proposal is None:
            proposal = self._safe_propose(pop.summaries(), dim, n, self.round_index)
        if (
            not proposal.candidates
            and self.config.proposer in ("llm", "direct")
            and self.config.fallback_to_offline
        ):
            from ax_kernel_discovery.proposers.offline import OfflineEvolutionProposer

            fallback = OfflineEvolutionProposer(seed=self.config.seed).propose(
                pop.summaries(), dim, n, self.round_index
            )
            proposal.candidates.extend(fallback.candidates)
            proposal.rejections.extend(fallback.rejections)
        return proposal

    def _safe_propose(
        self, members: list[MemberSummary], dim: int, n: int, round_index: int
    ) -> Proposal:
        try:
            return self.proposer.propose(members, dim, n, round_index)
        except Exception as e:  # a proposer must not break the BO loop
            return Proposal(
                rejections=[Rejection(name=self.proposer.name, stage="proposal", reason=repr(e))]
            )

    def _start_prefetch(self, pop: Population, dim: int, outcome: str) -> None:
        """Ask the proposer for next round's kernels now, while Ax optimizes the acquisition.

        The proposals are made from the population as it stands after this round's
        update (next round's strike is not yet known), which hides LLM latency behind
        the acquisition optimization.
        """
        if not self.config.overlap_proposals or self.config.proposals_per_round == 0:
            return
        if self.config.proposer in ("offline", "none"):
            return  # nothing to hide: the offline operator takes milliseconds
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="axkd-propose")
        key = (outcome, self.round_index, dim)  # already advanced to the next round
        self._prefetch[key] = self._executor.submit(
            self._safe_propose,
            pop.summaries(),
            dim,
            self.config.proposals_per_round,
            self.round_index,
        )

    def __getstate__(self) -> dict[str, Any]:
        # Ax deep-copies surrogates; in-flight proposals and their thread stay behind
        state = self.__dict__.copy()
        state["_prefetch"] = {}
        state["_executor"] = None
        state["fitted_models"] = {}
        return state

    def _validate(
        self,
        candidates: list[KernelCandidate],
        pop: Population,
        dim: int,
        rec: RoundRecord,
        n: int = 0,
    ) -> list[KernelCandidate]:
        from ax_kernel_discovery.validation import check_kernel, validate_kernel_code

        accepted: list[KernelCandidate] = []
        points = reference_points(dim, n=40, seed=self.config.seed)
        for member in pop:
            if member.candidate.key not in self._signatures:
                try:
                    self._signatures[member.candidate.key] = gram_signature(
                        member.candidate.build(dim).double(), points
                    )
                except Exception:  # noqa: BLE001 - signatures are best effort for old members
                    pass
        for cand in candidates:
            if (
                cand.name in pop
                or pop.has_key(cand.key)
                or any(c.key == cand.key for c in accepted)
            ):
                rec.rejected.append(
                    Rejection(
                        name=cand.name,
                        stage="duplicate",
                        reason="same kernel already in population",
                    )
                )
                continue
            if cand.code is not None:
                result = validate_kernel_code(
                    cand.code, dim, class_name=cand.class_name, fit_timeout=self.config.fit_timeout
                )
            else:
                result = check_kernel(
                    cand.build,
                    dim,
                    fit_timeout=self.config.fit_timeout,
                    check_fit=False,
                )
            if not result.ok:
                rec.rejected.append(
                    Rejection(
                        name=cand.name,
                        stage=result.stage or "validation",
                        reason=result.reason or "invalid",
                        formula=cand.formula,
                    )
                )
                continue
            memory = self._memory_rejection(cand, dim, n)
            if memory is not None:
                rec.rejected.append(memory)
                continue
            try:
                sig = gram_signature(cand.build(dim).double(), points)
            except Exception as e:  # noqa: BLE001
                rec.rejected.append(
                    Rejection(name=cand.name, stage="validation", reason=f"could not build: {e!r}")
                )
                continue
            # compare with the current members and this round's accepted kernels only
            # (``_signatures`` is a cache that also holds kernels dropped long ago)
            live = [m.candidate.key for m in pop] + [c.key for c in accepted]
            twin = next(
                (
                    k
                    for k in live
                    if k in self._signatures
                    and cosine_similarity(sig, self._signatures[k]) > self.config.dedup_threshold
                ),
                None,
            )
            if twin is not None:
                rec.rejected.append(
                    Rejection(
                        name=cand.name,
                        stage="duplicate",
                        reason="Gram matrix equals an existing member's (cosine > "
                        f"{self.config.dedup_threshold})",
                    )
                )
                continue
            self._signatures[cand.key] = sig
            accepted.append(cand)
        return accepted

    def _fit_all(
        self,
        cands: list[KernelCandidate],
        dataset: SupervisedDataset,
        search_space_digest: SearchSpaceDigest,
        outcome: str,
        rec: RoundRecord,
    ) -> dict[str, tuple[Model, ModelConfig, float]]:
        """Fit and score every kernel: in full, or by successive halving.

        ``selection="full"`` fits every member (warm-started, ``fit_maxiter`` steps; new
        kernels 4x). ``selection="halving"`` first *screens*: a member with last round's
        hyperparameters is scored at them without refitting (a round adds a few points
        to many, so its hyperparameters barely move); a new kernel has no such state and
        is fitted exactly as full selection fits it, once. Then the ``halving_keep`` best
        screened members are refitted exactly as the full procedure refits them (from the
        same warm start, with the same number of steps) and scored again. Every finalist's
        score is thus the one full selection would give it; members that were only
        screened keep their screen hyperparameters and scores.
        """
        models: dict[str, tuple[Model, ModelConfig, float]] = {}
        halving = self._halving(outcome, rec.n) and len(cands) > self.config.halving_keep
        rec.selection = "halving" if halving else "full"
        warm_before = dict(self._warm) if halving else {}
        screened: set[str] = set()
        for cand in cands:
            screen = halving and (outcome, cand.name) in self._warm
            fitted = self._fit_and_score(
                cand,
                dataset,
                search_space_digest,
                outcome,
                rec,
                refit=not screen or self.config.halving_screen_maxiter > 0,
                maxiter=self.config.halving_screen_maxiter if screen else None,
            )
            if fitted is not None:
                models[cand.name] = fitted
                if screen:
                    screened.add(cand.name)
        if not halving:
            return self._drop_slow_fits(models, outcome, rec)
        ranked = sorted(models, key=lambda k: models[k][2])
        finalists = [k for k in ranked[: self.config.halving_keep] if k in screened]
        by_name = {c.name: c for c in cands}
        for name in finalists:
            self._warm[(outcome, name)] = warm_before[(outcome, name)]
            fitted = self._fit_and_score(by_name[name], dataset, search_space_digest, outcome, rec)
            if fitted is None:
                models.pop(name)
            else:
                models[name] = fitted
        rec.timings["finalists"] = float(len(finalists))
        return self._drop_slow_fits(models, outcome, rec)

    def _drop_slow_fits(
        self, models: dict[str, tuple[Model, ModelConfig, float]], outcome: str, rec: RoundRecord
    ) -> dict[str, tuple[Model, ModelConfig, float]]:
        """Reject the kernels whose fit took more than ``fit_timeout`` and more than
        ``slow_fit_factor`` times the round's fastest fit (a recorded ``timeout``).

        The limit is relative so that a problem where every fit needs the time cap (a
        large n and D on a CPU) still has kernels to choose from, while a kernel far
        slower than its peers (it also slows every acquisition step) is refused.
        """
        seconds = {k: rec.timings[f"refit:{k}"] for k in models if f"refit:{k}" in rec.timings}
        if not seconds:
            return models
        limit = max(self.config.fit_timeout, self.config.slow_fit_factor * min(seconds.values()))
        for name, elapsed in seconds.items():
            if elapsed > limit:
                models.pop(name)
                self._warm.pop((outcome, name), None)  # a rejected fit leaves no warm start
                rec.rejected.append(
                    Rejection(
                        name=name,
                        stage="timeout",
                        reason=f"fit took {elapsed:.1f}s > {limit:.1f}s (fit_timeout="
                        f"{self.config.fit_timeout}s, {self.config.slow_fit_factor}x the "
                        "fastest fit)",
                    )
                )
        return models

    def _halving(self, outcome: str, n: int) -> bool:
        """Whether this round selects by successive halving (``config.selection``).

        ``auto`` halves when the last round of ``outcome`` had ``n_last`` points and this
        one adds at most ``halving_max_new_fraction * n_last``: a member's hyperparameters
        then barely move, so its score at last round's hyperparameters ranks it as a refit
        would.
        """
        if self.config.selection != "auto":
            return self.config.selection == "halving"
        last = next((r.n for r in reversed(self.history) if r.outcome == outcome), None)
        return last is not None and 0 <= n - last <= self.config.halving_max_new_fraction * last

    def _score_blocks(self, outcome: str, n: int) -> list[Tensor] | None:
        """The last ``score_batches`` BO batches of ``outcome``, as row indices (lbo_crps).

        A batch is the rows a round added: Ax hands the surrogate its rows in trial order,
        so round ``r`` added rows ``n_{r-1} .. n_r - 1``. The initial design is never a
        batch; before the first BO batch there is none (``None``: LOO-CRPS).
        """
        if self.config.criterion != "lbo_crps":
            return None
        edges = sorted({r.n for r in self.history if r.outcome == outcome and r.n < n})
        edges.append(n)
        blocks = [torch.arange(a, b) for a, b in zip(edges, edges[1:], strict=False)]
        return blocks[-self.config.score_batches :] or None

    def _choose(self, models: dict[str, tuple[Model, ModelConfig, float]]) -> str:
        """The best-scoring kernel; with ``parsimony_tolerance``, the simplest near-best one.

        Kernels whose score is within ``parsimony_tolerance`` of the best are taken as
        tied, and the one with the fewest hyperparameters wins (the acquisition optimizer
        evaluates the chosen kernel thousands of times).
        """
        best = min(models, key=lambda k: models[k][2])
        tol = self.config.parsimony_tolerance
        if tol <= 0:
            return best
        near = [k for k in models if models[k][2] <= models[best][2] + tol]

        def cost(name: str) -> tuple[int, float]:
            covar = models[name][0].covar_module
            size = num_hyperparameters(covar) if isinstance(covar, torch.nn.Module) else 0
            return size, models[name][2]

        return min(near, key=cost)

    def _memory_rejection(self, cand: KernelCandidate, dim: int, n: int) -> Rejection | None:
        """A rejection when the kernel's largest intermediate would pass the memory limit.

        Measured by :func:`~ax_kernel_discovery.memory.probe_kernel_memory` at the run's
        ``D``, extrapolated to ``max(2 n, memory_probe_n)`` points (room for the run to grow).
        """
        limit = self.config.max_kernel_memory_gb
        if limit is None:
            return None
        n_probe = max(2 * n, self.config.memory_probe_n)
        try:
            probe = probe_kernel_memory(cand.build(dim), dim, n_probe)
        except Exception as e:  # noqa: BLE001 - the validator already ran it; be safe
            return Rejection(name=cand.name, stage="memory", reason=f"probe failed: {e!r}"[:300])
        if probe.predicted_bytes <= limit * 1e9:
            return None
        return Rejection(
            name=cand.name,
            stage="memory",
            reason=f"{probe.describe(n_probe, dim)} > max_kernel_memory_gb={limit}",
            formula=cand.formula,
        )

    def _diversity(self, keys: list[str]) -> float | None:
        """The paper's Gram-matrix diversity of the kernels with these keys."""
        sigs = [self._signatures[k] for k in keys if k in self._signatures]
        return diversity(sigs) if len(sigs) > 1 else None

    def _fit_and_score(
        self,
        cand: KernelCandidate,
        dataset: SupervisedDataset,
        search_space_digest: SearchSpaceDigest,
        outcome: str,
        rec: RoundRecord,
        refit: bool = True,
        maxiter: int | None = None,
    ) -> tuple[Model, ModelConfig, float] | None:
        """Build ``cand``'s GP (warm-started), fit it unless ``refit=False``, score it.

        A cold start gets 4 times ``fit_maxiter`` steps (``maxiter`` overrides
        ``fit_maxiter``); ``refit=False`` scores the model at last round's hyperparameters
        (it needs a warm state).
        """
        warm = self._warm.get((outcome, cand.name)) if self.config.warm_start else None
        maxiter = self.config.fit_maxiter if maxiter is None else maxiter
        if maxiter is not None and warm is None:
            maxiter *= 4  # a cold start needs more iterations than a warm one
        refit = refit or warm is None
        config = model_config_for(cand, self.config.fit_timeout, maxiter)
        t0 = time.perf_counter()
        try:
            try:
                model = self._construct_model(dataset, search_space_digest, config, warm, refit)
            except RuntimeError:
                if warm is None:
                    raise
                model = self._construct_model(dataset, search_space_digest, config, None, True)
            if refit:
                rec.timings[f"refit:{cand.name}"] = time.perf_counter() - t0
            with torch.no_grad():
                K, y = prior_covariance(model)
                top_k, sign = self.config.score_top_k, self.objective_weights.get(outcome)
                if top_k is not None and sign:
                    values = torch.as_tensor(model.train_targets).reshape(-1) * sign
                    K, y = best_points(K, y, values, top_k)
                covar = model.covar_module
                value = score(
                    self.config.criterion,
                    K,
                    y,
                    num_hyperparameters(covar),  # type: ignore[arg-type]
                    blocks=self._score_blocks(outcome, K.shape[-1]),
                )
        except Exception as e:  # noqa: BLE001 - any kernel failure is a recorded rejection
            rec.rejected.append(
                Rejection(name=cand.name, stage="fit", reason=f"{type(e).__name__}: {e}"[:500])
            )
            return None
        if not math.isfinite(value):
            rec.rejected.append(
                Rejection(
                    name=cand.name, stage="fit", reason=f"non-finite {self.config.criterion} score"
                )
            )
            return None
        key = f"fit:{cand.name}"
        rec.timings[key] = rec.timings.get(key, 0.0) + time.perf_counter() - t0
        self._warm[(outcome, cand.name)] = warm_parameters(model)
        return model, config, value
