"""``KernelDiscoverySurrogate``: Ax's ``Surrogate`` with an evolving kernel population.

Each time Ax fits the surrogate on new data, :meth:`KernelDiscoverySurrogate.model_selection`
runs one round of the method:

1. *strike*: the kernel chosen last round is struck if its batch did not improve the
   best feasible observed value, or the feasible Pareto front (:mod:`.strike`; base
   kernels are dropped after ``patience`` strikes, others at once); an empty population
   resets to the start set;
2. *propose*: the proposer (offline operator by default, or an LLM) gets the members'
   formulas and scores, never the data, and returns candidates;
3. *validate*: shapes, ``diag``, gradients, PSD, time (untrusted code in a sandboxed
   subprocess); functional duplicates are dropped;
4. *fit and score*: every member and accepted candidate is built and fitted the Ax way
   (``Surrogate._construct_model``, Ax's ``Normalize`` input transform, warm-started
   from last round's hyperparameters) and scored by the criterion: under the default,
   ``prequential``, by how well its previous fit forecast the batches that followed
   (the held-out score); under the others, on its noisy prior covariance;
5. *update*: candidates join, the population keeps its best N, and the chosen kernel's
   model is returned to Ax, which uses it for the acquisition function.

Nothing here raises into the BO loop because of a bad kernel: every failure is recorded
in :attr:`KernelDiscoverySurrogate.history` with its reason.

This module holds Ax's hooks only; ``model_selection`` hands each round to one runner
(:mod:`~ax_kernel_discovery.surrogate.runner`), which calls the steps in order (see ``docs/architecture.md``): the
proposer host (:mod:`.proposing`), the candidate checks (:mod:`.admission`), the fits
(:mod:`.fitting`) behind one executor (:mod:`~ax_kernel_discovery.surrogate.executors`: here, in worker processes or in
the background), the held-out scores (:mod:`.heldout`), the choice (:mod:`.choice`), the
steps around the fits (:mod:`.round`), and the one thing saved
(:class:`~.state.SurrogateState`). The surrogate takes part in the
acquisition through the protocols of :mod:`.acquisition`.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any, ClassVar

from ax.core.optimization_config import OptimizationConfig
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.surrogate import SurrogateSpec
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.acquisition.acquisition import AcquisitionFunction
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from torch import Tensor

from ax_kernel_discovery._upstream.ax import (
    HookedSurrogate,
    builds_with_ax,
    forget_datasets,
    model_builder,
    serialized_kwargs,
)
from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.library_format import library_start_candidates, validate_start_kernels
from ax_kernel_discovery.log import use_ax_handler
from ax_kernel_discovery.population import Population, start_candidates
from ax_kernel_discovery.proposers.base import Proposer
from ax_kernel_discovery.surrogate.admission import CandidateAdmission
from ax_kernel_discovery.surrogate.choice import Chooser
from ax_kernel_discovery.surrogate.fitting import KernelFitter, StartRule
from ax_kernel_discovery.surrogate.heldout import HeldoutScorer
from ax_kernel_discovery.surrogate.new_rows_qlognei import NewRowsqLogNEI
from ax_kernel_discovery.surrogate.portfolio import Portfolios
from ax_kernel_discovery.surrogate.proposing import ProposerFactory, ProposerHost
from ax_kernel_discovery.surrogate.round import RoundSteps
from ax_kernel_discovery.surrogate.round_record import RoundRecord
from ax_kernel_discovery.surrogate.runner import RoundRunner
from ax_kernel_discovery.surrogate.state import (
    RoundContext,
    SurrogateState,
    check_state_format,
    saved_config,
)
from ax_kernel_discovery.surrogate.steps import Chosen
from ax_kernel_discovery.surrogate.trial_rows import ExperimentKey, FitRows
from ax_kernel_discovery.surrogate.worker import release_shared_pools

logger = logging.getLogger(__name__)

#: Two placeholder configs make Ax call ``model_selection`` on every new dataset.
_PLACEHOLDER_CONFIGS = [
    ModelConfig(name="kernel-discovery"),
    ModelConfig(name="kernel-discovery-population"),
]

#: Builds the start set of a new population for input dimension ``dim`` (``None``: unknown).
StartCandidates = Callable[[KernelDiscoveryConfig, "int | None"], list[KernelCandidate]]

#: What a fit returns to if its round is cut short: the state, the proposers' states and
#: the batch portfolios (see :meth:`KernelDiscoverySurrogate.fit`).
_Snapshot = tuple[SurrogateState, Any, dict[str, Any]]


def default_start_candidates(
    config: KernelDiscoveryConfig, dim: int | None
) -> list[KernelCandidate]:
    """The paper's start set, or the kernel library of ``config.start_kernels`` (validated)."""
    if config.start_kernels:
        return library_start_candidates(config, dim)
    return start_candidates()


def _placeholder_spec(spec: SurrogateSpec | None) -> SurrogateSpec:
    """Ax's spec of the surrogate: the placeholder configs, and ``spec``'s other fields."""
    if spec is None:
        return SurrogateSpec(model_configs=list(_PLACEHOLDER_CONFIGS))
    return SurrogateSpec(
        model_configs=list(_PLACEHOLDER_CONFIGS),
        allow_batched_models=spec.allow_batched_models,
        outcomes=spec.outcomes,
    )


class KernelDiscoverySurrogate(HookedSurrogate):
    """Ax ``Surrogate`` whose kernel is chosen from an evolving population each round.

    Use it as the ``surrogate`` of a ``BoTorchGenerator`` (see
    :func:`ax_kernel_discovery.kernel_discovery_generation_strategy`); it is the
    :class:`~.acquisition.PortfolioPartner` of :class:`~.acquisition.KernelDiscoveryAcquisition`.

    Args:
        config: :class:`KernelDiscoveryConfig`, or its fields (``KernelDiscoveryConfig.coerce``).
        state: Saved state (what Ax's JSON storage passes back; :class:`~.state.SurrogateState`).
        surrogate_spec: Only its non-model fields are used (the models are the population's).
        start_candidates: A new population's start set (:func:`default_start_candidates`).
        proposer_factory: Builds the proposer (default: the one ``config.proposer`` names).
        start_rule: Where a new kernel's fit starts (:data:`~.fitting.StartRule`; default:
            its members' fits when ``config.inherit_parameters``).
        **kwargs: Passed to Ax's ``Surrogate``.

    Raises:
        KernelLibraryError: A kernel of ``config.start_kernels`` fails validation (checked
            here, before any evaluation; building the config validates none).

    The three callables are not saved: a subclass that sets them (:mod:`ax_kernel_discovery.baselines`)
    registers itself with :func:`~ax_kernel_discovery.storage.register_surrogate_class`.

    Example:
        >>> surrogate = KernelDiscoverySurrogate(KernelDiscoveryConfig(population_size=8))
        >>> [m.name for m in surrogate.population]
        ['RBF', 'Matern52', 'RQ', 'BOCK', 'SL']
    """

    #: An acquisition function class that overrides ``config.acquisition`` (``None``: the
    #: config's). The study's baselines built on this class set BoTorch's qLogNEI.
    fixed_acqf_class: ClassVar[type[AcquisitionFunction] | None] = None

    def __init__(
        self,
        config: KernelDiscoveryConfig | Mapping[str, Any] | None = None,
        state: Mapping[str, Any] | None = None,
        surrogate_spec: SurrogateSpec | None = None,
        start_candidates: StartCandidates | None = None,
        proposer_factory: ProposerFactory | None = None,
        start_rule: StartRule | None = None,
        **kwargs: Any,
    ) -> None:
        use_ax_handler()  # kd's round lines beside Ax's, quieted by set_ax_logger_levels
        if state:
            check_state_format(state)
        config = saved_config(config, state)
        validate_start_kernels(config)  # the config does not: before any evaluation
        super().__init__(surrogate_spec=_placeholder_spec(surrogate_spec), **kwargs)
        self._config = config
        self.state = SurrogateState.from_json(state) if state else SurrogateState()
        self._start_candidates = start_candidates or default_start_candidates
        self._start_rule = start_rule  # as given (clone_reset passes it on)
        self.proposing = ProposerHost(config, proposer_factory)
        if state:
            self.proposing.load_state_dict(state)
        self.admission = CandidateAdmission(config.admission_options())
        self.fitter = KernelFitter(config.fit_options(), model_builder(self), start_rule)
        self.heldout = HeldoutScorer(config.heldout_options(), model_builder(self))
        self.chooser = Chooser(config.choice_options())
        portfolios = Portfolios(config.portfolio_options(), self.chooser)
        self.steps = RoundSteps(
            config.step_options(),
            self.admission,
            self.chooser,
            self.heldout,
            portfolios,
            model_builder(self),
        )
        self.runner = RoundRunner(
            config.runner_options(),
            self.fitter,
            self.chooser,
            self.steps,
            self.proposing,
            self._keep_record,
            announce=self._announce,
        )
        self._record_only = False  # see record_only()
        #: Whether a fit is in progress, and whether it ran a round (see :meth:`fit`).
        self._in_fit = self._round_used = False
        #: What the fit in progress returns to if it is cut short (see :meth:`fit`).
        self._before: _Snapshot | None = None
        #: The arguments of a fit whose round was cut short, run again when Ax next reads
        #: the model (see :meth:`fit`).
        self._interrupted: tuple[tuple[Any, ...], dict[str, Any]] | None = None
        #: The rows of the fit Ax is making, by outcome (see :meth:`observe_fit_rows`).
        self._fit_rows: dict[str, FitRows] = {}
        #: The optimization config of that fit, in the metrics' units (see :meth:`observe_goal`).
        self._fit_goal: OptimizationConfig | None = None
        #: The experiment of the fit Ax is making (see :meth:`observe_experiment`).
        self._experiment: ExperimentKey | None = None

    # --- views -------------------------------------------------------------------------

    @property
    def config(self) -> KernelDiscoveryConfig:
        """The settings (shared with the round's steps)."""
        return self._config

    @config.setter
    def config(self, value: KernelDiscoveryConfig) -> None:
        """Run the next rounds under ``value`` (the population, warm starts and proposer
        state stay): the collaborators that take the whole config get it, those that take
        their own options get them anew (``benchmarks/selection_agreement.py`` runs a
        deep copy of a surrogate under a variant's settings)."""
        self._config = value
        self.proposing.config = value
        self.heldout.options = value.heldout_options()
        self.steps.options = value.step_options()
        self.steps.portfolios.options = value.portfolio_options()
        self.runner.options = value.runner_options()
        self.admission.options = value.admission_options()
        self.fitter.options = value.fit_options()
        self.chooser.options = value.choice_options()

    @property
    def default_acqf_class(self) -> type[AcquisitionFunction]:
        """The class that computes qLogNEI for this surrogate: :attr:`fixed_acqf_class`,
        else by ``config.acquisition`` :class:`~.new_rows_qlognei.NewRowsqLogNEI` (the default:
        the same values as BoTorch's to 1e-9, cheaper per step) or BoTorch's."""
        if self.fixed_acqf_class is not None:
            return self.fixed_acqf_class
        if self._config.acquisition == "new_rows":
            return NewRowsqLogNEI
        return qLogNoisyExpectedImprovement

    @property
    def history(self) -> list[RoundRecord]:
        """One :class:`RoundRecord` per ended round and outcome, oldest first
        (``history_limit``). **Waits** for a round whose fits run in the background
        (:meth:`finish_background`), so that it is ended and recorded first."""
        self.finish_background()
        return self.state.history

    @history.setter
    def history(self, records: list[RoundRecord]) -> None:
        self.state.history = list(records)

    @property
    def populations(self) -> dict[str, Population]:
        """One population per modelled outcome. **Waits** for a round whose fits run in the
        background (:meth:`finish_background`)."""
        self.finish_background()
        return {k: v.population for k, v in self.state.outcomes.items()}

    @property
    def fitted_models(self) -> dict[str, MutableMapping[str, Model]]:
        """Last round's fitted model of every kernel, per outcome (not saved; diagnostics).
        **Waits** for a round whose fits run in the background (:meth:`finish_background`)."""
        self.finish_background()
        return {k: v.fitted_models for k, v in self.state.outcomes.items()}

    @property
    def population(self) -> Population:
        """Population of the objective (the first outcome when the direction is unknown).
        **Waits** for a round whose fits run in the background (:meth:`finish_background`)."""
        self.finish_background()
        return self.state.objective_population() or self._new_population()

    @property
    def needs_llm(self) -> bool:
        """Whether this surrogate's proposer calls an LLM (checked before a run starts)."""
        return self.proposing.needs_llm

    @property
    def proposer(self) -> Proposer:
        """The proposer (built by the proposer factory on first use)."""
        return self.proposing.proposer

    def llm_rounds(self) -> dict[str, int]:
        """``{"rounds", "used_llm", "without_llm"}``: the rounds with an LLM proposer, and
        how many really used the LLM's proposals (all zero for the offline operator)."""
        flags = [r.llm_used for r in self.history if r.llm_used is not None]
        used = sum(flags)
        return {"rounds": len(flags), "used_llm": used, "without_llm": len(flags) - used}

    def llm_waiting(self) -> str | None:
        """What the proposer's LLM is being waited for now (``None``: nothing)."""
        return self.proposing.waiting()

    def close(self) -> None:
        """Release the proposer's LLM server, the prefetch thread and the fit workers this
        surrogate used (it stays usable: a later round starts them again)."""
        self.finish_background()
        self.proposing.close()
        release_shared_pools(self.runner, self.fitter)

    # --- Ax's hooks ----------------------------------------------------------------------

    @property
    def model(self) -> Model:
        """Ax's fitted model (a fit whose round was cut short runs again first)."""
        self._run_interrupted_fit()
        return super().model

    def fit(self, *args: Any, **kwargs: Any) -> None:
        """Ax's ``fit``, one round index per fit; on another experiment the surrogate starts
        afresh (:meth:`~.state.SurrogateState.another_experiment`).

        A round cut short (Ctrl-C, Jupyter's stop button, or an error) leaves no trace:
        the state, the proposers and the batch portfolios return to what they were
        before the fit, so a state saved then is the one before the round. Ax does not
        fit the same data twice, so the next time Ax reads the model without fitting
        again (the retried ask), the round runs on that fit's data under the same index;
        a fit on new data runs it on those instead.
        """
        self._interrupted = None
        self.finish_background()  # last round's fits in the background end first
        digest = kwargs.get("search_space_digest", args[1] if len(args) > 1 else None)
        if digest is not None:
            self._start_afresh_for(list(digest.feature_names))
        self._in_fit, self._round_used, self._before = True, False, None
        try:
            super().fit(*args, **kwargs)
        except BaseException:
            if self._before is not None:  # a round had begun
                self._restore(self._before, args, kwargs)
                self._interrupted = args, kwargs
            raise
        else:
            if self._round_used:
                self.state.round_index += 1
        finally:
            self._in_fit = self._round_used = False
            self._before = None

    def _run_interrupted_fit(self) -> None:
        """Run the fit whose round was cut short (see :meth:`fit`), once."""
        if self._interrupted is not None and not self._in_fit:
            args, kwargs = self._interrupted
            logger.info("kernel discovery: running the round that was cut short again")
            self.fit(*args, **kwargs)

    def _snapshot(self) -> _Snapshot:
        return (
            self.state.snapshot(),
            self.proposing.snapshot(),
            dict(self.steps.portfolios.by_outcome),
        )

    def _restore(
        self, snapshot: _Snapshot, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> None:
        """Return to ``snapshot``; Ax's caches of the fit's datasets are dropped, so that
        its next fit on them runs every outcome's round again."""
        state, proposing, portfolios = snapshot
        self.runner.discard()
        self.state.restore(state)
        self.proposing.restore(proposing)
        self.steps.portfolios.by_outcome = portfolios
        for dataset in kwargs.get("datasets", args[0] if args else ()):
            key = tuple(dataset.outcome_names)
            forget_datasets(self, key)

    def model_selection(
        self,
        dataset: SupervisedDataset,
        model_configs: list[ModelConfig],
        search_space_digest: SearchSpaceDigest,
        candidate_metadata: Any = None,
    ) -> tuple[Model, ModelConfig]:
        """One round of kernel discovery (:class:`~ax_kernel_discovery.surrogate.runner.RoundRunner`); returns the chosen
        kernel's fitted model (with ``background_fits``, before the round's other fits
        are in: the round ends when its outcome's next round begins, or at the next read
        of the state, which then waits for them)."""
        outcome = dataset.outcome_names[0]
        self.runner.end(outcome)  # waits for last round's fits in the background
        if self._in_fit and self._before is None:  # the fit's first round begins
            self._before = self._snapshot()
        rows = self._fit_rows.get(outcome)
        if rows is not None and not rows.matches(dataset.Y):
            rows = None  # not the rows of this dataset (Ax fitted it another way)
        ctx = self.state.round_context(
            dataset, search_space_digest, rows, self._new_population, goal=self._fit_goal
        )
        self._round_used = True
        ax_builder = builds_with_ax(self, self.fitter.build_model)
        handed = self.runner.run(ctx, self.state.objective_matrix, self._fit_rows, ax_builder)
        if not self._in_fit:  # called on its own: the round is over
            self.state.round_index += 1
        return handed

    def _keep_record(self, rec: RoundRecord) -> None:
        """An ended round's record joins the history."""
        self.state.keep(rec, self.config.history_limit)

    @staticmethod
    def _announce(ctx: RoundContext, chosen: Chosen) -> None:
        """The round's log line, when its choice is handed on to the acquisition."""
        if chosen.chosen is None:  # every kernel failed (AllKernelsRejectedWarning)
            logger.info(
                "kernel discovery round %d: no kernel for %s (Ax's default model)",
                ctx.round,
                ctx.outcome,
            )
            return
        if chosen.guarded:
            why = " (a guard round: Ax's default model)"
        elif chosen.chosen_score is not None:
            why = f" (score {chosen.chosen_score:.4g})"
        else:
            why = ""
        logger.info(
            "kernel discovery round %d: chose %s for %s%s",
            ctx.round,
            chosen.chosen,
            ctx.outcome,
            why,
        )

    def _new_population(self, dim: int | None = None) -> Population:
        c, start = self.config, self._start_candidates(self.config, dim)
        return Population(start, size=c.population_size, patience=c.patience, keep=c.keep_kernels)

    def _start_afresh_for(self, features: list[str]) -> None:
        """Forget the state if this fit is on another experiment (the fit's rows, handed
        over for this fit, stay)."""
        experiment, self._experiment = self._experiment, None
        if self.state.another_experiment(features, experiment):
            self.steps.portfolios.by_outcome = {}

    def serialize_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        kwargs = super().serialize_kwargs(kwargs)
        kwargs["config"] = self.config.model_dump(mode="json")
        kwargs["state"] = self.state_dict_json()
        return kwargs

    def clone_reset(self) -> KernelDiscoverySurrogate:
        """A new surrogate with these settings and none of this one's state (Ax's
        ``Surrogate.clone_reset``): a new population, no history, no round.

        The proposer factory, start set and start rule given to this surrogate come
        along (bound to the copy where they are this surrogate's methods); Ax's best
        model configs do too (Ax's cross-validation fits the clone with them).
        """
        with self.record_only():  # the state is not needed: no background wait
            kwargs = serialized_kwargs(self)
        kwargs.pop("state", None)
        clone = self.__class__(**kwargs)
        clone._start_candidates = _rebound(self._start_candidates, self, clone)
        clone.proposing.factory = _rebound(self.proposing.factory, self, clone)
        clone.fitter.start_rule = clone._start_rule = _rebound(self._start_rule, self, clone)
        return clone

    def __deepcopy__(self, memo: dict[int, Any]) -> KernelDiscoverySurrogate:
        """A copy that starts afresh (:meth:`clone_reset`, its settings deep-copied).

        Ax deep-copies a strategy's generator arguments, this surrogate among them, to
        copy the strategy *without its state* (``GenerationStrategy.clone_reset``,
        ``GeneratorSpec.copy``); a surrogate's run lives in it, so the copy leaves it
        behind. Pickling keeps it (see :meth:`__getstate__`).
        """
        clone = self.clone_reset()
        memo[id(self)] = clone
        clone.surrogate_spec = copy.deepcopy(self.surrogate_spec, memo)
        clone.metric_to_best_model_config = copy.deepcopy(self.metric_to_best_model_config, memo)
        return clone

    # --- the acquisition's partner (see .acquisition) ------------------------------------

    def observe_fit_rows(self, rows: Mapping[str, FitRows]) -> None:
        """Take the rows of the fit Ax is about to make (from :class:`~.trial_rows.ShareRows`)."""
        self._fit_rows = dict(rows)

    def observe_goal(self, goal: OptimizationConfig | None) -> None:
        """Take the optimization config of that fit, derelativized (for the strike rule)."""
        self._fit_goal = goal

    def observe_experiment(self, key: ExperimentKey) -> None:
        """Take the experiment of the fit Ax is about to make (from :class:`~.rows.ShareRows`)."""
        self._experiment = key

    def record_objective_weights(self, weights: Tensor) -> None:
        """Learn the objectives from Ax's objective weights (one row per objective); a
        batch portfolio is refused here on an experiment of several outcomes."""
        self._run_interrupted_fit()  # the round comes first, as in a fit never cut short
        self.steps.portfolios.check_outcomes(list(self.outcomes))
        self.state.record_objectives(weights, list(self.outcomes))

    def acqf_class_for(self, chosen: type[AcquisitionFunction]) -> type[AcquisitionFunction]:
        """The class that computes the acquisition function Ax chose: Ax's qLogNEI (one
        objective) by :attr:`default_acqf_class` (the same values); any other is Ax's."""
        if chosen is qLogNoisyExpectedImprovement:
            return self.default_acqf_class
        return chosen

    def finish_background(self) -> None:
        """End the rounds whose kernels are being fitted in the background: **waits** for
        their fits (called by every read of the state; see :meth:`~ax_kernel_discovery.surrogate.runner.RoundRunner.end`)."""
        self.runner.end_all()

    def portfolio_plan(self, n: int) -> list[tuple[str, Model, int]] | None:
        """How the next ``n`` points are split among this round's batch portfolio."""
        return self.steps.portfolios.plan(n)

    def record_portfolio_points(self, name: str, X: Tensor) -> None:
        """``name`` generated the points ``X``; they are credited when their values arrive."""
        self.steps.portfolios.record_points(name, X)

    # --- the saved state -----------------------------------------------------------------

    @contextmanager
    def record_only(self) -> Iterator[None]:
        """While it lasts, :meth:`state_dict_json` is a generator run's record (the round
        counter and the objectives; the strategy holds the state): used by storage."""
        self._record_only = True
        try:
            yield
        finally:
            self._record_only = False

    def state_dict_json(self) -> dict[str, Any]:
        """What the next round needs as JSON data (:meth:`~.state.SurrogateState.to_json`,
        the proposers' states): a reloaded run continues as an uninterrupted one.
        **Waits** for a round whose fits run in the background (:meth:`finish_background`)."""
        if self._record_only:
            return {**self.state.header(), "record": True}
        self.finish_background()
        return {**self.state.to_json(self.config.history_limit), **self.proposing.state_dict()}

    def __getstate__(self) -> dict[str, Any]:
        # pickling: a round whose fits run in the background is completed first, and the
        # fitted models and this round's portfolios stay behind
        self.finish_background()
        return {**self.__dict__, "state": self.state.without_models()}


def _rebound(function: Any, old: object, new: object) -> Any:
    """``function``, or the same method of ``new`` where it is a method of ``old``."""
    if function is not None and getattr(function, "__self__", None) is old:
        return getattr(new, function.__name__)
    return function


__all__ = ["KernelDiscoverySurrogate", "StartCandidates", "default_start_candidates"]
