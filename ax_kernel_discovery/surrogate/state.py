"""What a kernel-discovery surrogate carries from one round to the next, in storable form.

Ax saves a :class:`~ax_kernel_discovery.KernelDiscoverySurrogate` through
``_serialize_attributes_as_kwargs`` (JSON and SQL storage); a run that
is saved and reloaded between every round (the Ax Service API behind a web service)
must make the same choices as one that never stops. Besides the population and the
history, the next round needs:

* **warm starts**: each member's fitted GP parameters (``named_parameters``, not
  buffers: priors, constraints and input transforms are rebuilt with the model). They
  are kept as float32 in memory *and* on disk, so that a reload reproduces them bit for
  bit; an L-BFGS start point needs no more than float32's seven digits. Stored as
  base64 of the raw float32 bytes: 4/3 x 4 bytes per number. One member of a
  D-dimensional problem holds about D numbers per ARD leaf (ARD lengthscales), so a
  population of 10 at D = 6392 with one or two ARD leaves per member stores about
  0.35-0.7 MB, once per saved strategy (Ax's own generator runs copy the search space,
  ~1.5 MB each at that D);
* **the last choice**, for the strike rule: the chosen member and the round it was
  chosen in (the rows before the choice are those a fit up to that round saw: see
  ``row_rounds``); for a fit without keyed rows, how many training rows there were and
  a digest of the best row for either direction. Rows are identified there by a BLAKE2
  digest of their bytes, stable across processes (Python's ``hash`` of bytes is salted
  per process by ``PYTHONHASHSEED``). Constant size, whatever the number of rounds;
* **the proposer's dedup keys** (the offline operator never proposes a kernel it has
  seen): 8 bytes per key seen, about 10-40 KB after 1000 rounds;
* **every round's index and size**, per outcome (:class:`PastRound`: what the guard
  count, the held-out forecast and the batches read), so that ``history_limit``, which
  trims the round records, changes nothing but memory: two numbers per round.

The dedup fingerprints (Gram signatures of the members on fixed reference points) are
recomputed from the members when needed, not saved: they depend only on the member and
the input dimension.

:class:`OutcomeState` is the one owner of what a surrogate keeps per outcome (the
population, the warm starts, the last choice and last round's fitted models), with one
way to drop a member; :class:`SurrogateState` is everything a surrogate keeps (one
:class:`OutcomeState` per outcome, the history, the round counter, the objectives), the one
thing that is saved (:meth:`SurrogateState.to_json`, in format :data:`STATE_FORMAT`);
:class:`RoundContext` is what the round's steps (admission, fitting, choice) are handed:
an outcome's state plus the round's data, index and timings (the steps return their
results; the runner builds the round's record from them).
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import hashlib
import logging
import re
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch
from ax.core.optimization_config import OptimizationConfig
from ax.core.search_space import SearchSpaceDigest
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from pydantic import BaseModel, ValidationError
from torch import Tensor

from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.population import Population
from ax_kernel_discovery.surrogate.round_record import RoundRecord, RoundTimer
from ax_kernel_discovery.surrogate.trial_rows import ExperimentKey, FitRows, RowKey, YMap

__all__ = [
    "STATE_FORMAT",
    "FittedModels",
    "LastChoice",
    "OutcomeState",
    "PastRound",
    "RoundContext",
    "SurrogateState",
    "check_state_format",
    "decode_tensors",
    "encode_tensors",
    "row_digests",
    "saved_config",
    "warm_parameters",
]

logger = logging.getLogger(__name__)

#: The format of :meth:`SurrogateState.to_json`: 1, the states before the format was
#: written down; 2, with the rows keyed by trial, the objectives' matrix, the batch
#: portfolio's bookkeeping and the experiment's parameters.
STATE_FORMAT = 2

_DIGEST_BYTES = 8


def row_digests(X: Tensor) -> list[str]:
    """A process-independent digest of each row of ``X`` (16 hex characters)."""
    rows = np.ascontiguousarray(X.detach().cpu().double().numpy())
    return [hashlib.blake2b(r.tobytes(), digest_size=_DIGEST_BYTES).hexdigest() for r in rows]


class LastChoice(BaseModel):
    """The kernel chosen last round and what the strike rule needs to judge its batch.

    Attributes:
        name: The chosen member.
        n: Number of training rows when it was chosen.
        best_high: Digest of the row with the highest observed value then.
        best_low: Digest of the row with the lowest observed value then (which one is
            the best depends on the objective's direction, unknown before the first
            acquisition).
        round: The round of the choice: the rows a fit of that round or an earlier one
            saw are the rows before it (``None``: a state saved before it was kept;
            the rows earlier rounds saw).
    """

    name: str
    n: int
    best_high: str
    best_low: str
    round: int | None = None

    @classmethod
    def of(cls, name: str, X: Tensor, Y: Tensor, round_index: int | None = None) -> LastChoice:
        y = Y.reshape(-1)
        digests = row_digests(X)
        return cls(
            name=name,
            n=int(X.shape[0]),
            best_high=digests[int(y.argmax())],
            best_low=digests[int(y.argmin())],
            round=round_index,
        )

    def rows_before(self, first_seen: Mapping[RowKey, int], now: int) -> set[RowKey]:
        """The rows known when the choice was made, from the round each was first seen in
        (``now``: the current round, whose rows are new in any case)."""
        last = self.round if self.round is not None else now - 1
        return {key for key, r in first_seen.items() if r <= min(last, now - 1)}

    def improved(self, X: Tensor, Y: Tensor, weight: float) -> bool | None:
        """Whether the rows added since the choice beat the best value seen at the choice,
        for a fit whose rows are not keyed by trial (no :class:`~.trial_rows.ShareRows`; rows
        are then known only by their parameters, and a repeated arm is not told apart:
        kernel discovery's strategy always keys them, see :mod:`.strike`).

        Training data only grow between rounds, so the rows seen at the choice are
        still there and their best value is the best row's: the new rows improved on it
        exactly when the best value now is strictly above the old best row's (values
        times ``weight``, positive for maximization). Ax standardizes ``Y`` anew each
        round, an increasing affine map, which keeps the order of rows.

        Returns:
            ``None`` when there is nothing to judge: no rows were added, or the old
            best row is no longer in the data.
        """
        if X.shape[0] <= self.n or weight == 0:
            return None
        best = self.best_high if weight > 0 else self.best_low
        try:
            i = row_digests(X).index(best)
        except ValueError:
            return None
        y = Y.reshape(-1) * weight
        return bool(y.max() > y[i])


class PastRound(NamedTuple):
    """What later rounds read of an earlier round of an outcome: kept for every round, so
    that ``history_limit`` trims the records and changes no decision.

    Attributes:
        round: The round's index.
        n: Its number of training rows.
    """

    round: int
    n: int


def warm_parameters(model: torch.nn.Module) -> dict[str, Tensor]:
    """A fitted model's parameters as float32 CPU copies (what the next fit starts from)."""
    return {
        name: p.detach().to(device="cpu", dtype=torch.float32, copy=True)
        for name, p in model.named_parameters()
    }


def encode_tensors(tensors: Mapping[str, Tensor]) -> dict[str, Any]:
    """float32 tensors -> ``{"keys", "shapes", "data"}`` (data: base64 of the raw bytes)."""
    keys = list(tensors)
    flat = [tensors[k].detach().to(device="cpu", dtype=torch.float32).reshape(-1) for k in keys]
    data = torch.cat(flat).numpy().astype("<f4").tobytes() if flat else b""
    return {
        "keys": keys,
        "shapes": [list(tensors[k].shape) for k in keys],
        "data": base64.b64encode(data).decode("ascii"),
    }


def decode_tensors(encoded: Mapping[str, Any]) -> dict[str, Tensor]:
    """Inverse of :func:`encode_tensors` (float32 CPU tensors)."""
    values = np.frombuffer(base64.b64decode(encoded["data"]), dtype="<f4")
    out: dict[str, Tensor] = {}
    start = 0
    for key, shape in zip(encoded["keys"], encoded["shapes"], strict=True):
        size = int(np.prod(shape)) if shape else 1
        out[key] = torch.from_numpy(values[start : start + size].copy()).reshape(shape)
        start += size
    if start != values.size:
        raise ValueError(f"encoded tensors hold {values.size} numbers, the shapes {start}")
    return out


class FittedModels(MutableMapping[str, Model]):
    """Fitted models by kernel name, some of them built only when first read.

    A kernel fitted in a worker process (``background_fits``) comes back as its state;
    its model is built from it (no refit) on first access, which only the diagnostics
    need. Built and pending entries read, iterate and drop alike.

    Args:
        models: Models already built.
        builders: Functions that build a model, by name.
    """

    def __init__(
        self,
        models: Mapping[str, Model] | None = None,
        builders: Mapping[str, Callable[[], Model]] | None = None,
    ) -> None:
        self._models: dict[str, Model] = dict(models or {})
        self._builders: dict[str, Callable[[], Model]] = dict(builders or {})

    def __getitem__(self, name: str) -> Model:
        if name not in self._models and name in self._builders:
            self._models[name] = self._builders.pop(name)()
        return self._models[name]

    def __setitem__(self, name: str, model: Model) -> None:
        self._builders.pop(name, None)
        self._models[name] = model

    def __delitem__(self, name: str) -> None:
        if name not in self._models and name not in self._builders:
            raise KeyError(name)
        self._models.pop(name, None)
        self._builders.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        # a snapshot: reading an entry while iterating builds it and moves it
        return iter([*self._models, *(k for k in self._builders if k not in self._models)])

    def __len__(self) -> int:
        return len(self._models) + sum(k not in self._models for k in self._builders)

    def copy(self) -> FittedModels:
        """A new mapping of the same models and builders."""
        return FittedModels(self._models, self._builders)


@dataclass
class OutcomeState:
    """Everything kernel discovery keeps for one outcome between rounds: one owner.

    A member leaves only through :meth:`drop` (directly, or by :meth:`strike` and
    :meth:`truncate`), which also forgets its warm start and fitted model, so that no
    stale warm start outlives its member.

    Attributes:
        population: The members.
        warm: Each member's fitted parameters, float32 (:func:`warm_parameters`), by name;
            a new kernel's entry is written when its first fit succeeds.
        last_choice: What the strike rule needs about last round's choice.
        fitted_models: Last round's fitted model of every kernel, by name (diagnostics
            and the acquisition's mixture; not saved; a :class:`FittedModels` where some
            are built on first access).
        row_rounds: The round whose fit first saw each training row, by ``(trial index,
            arm name)`` (what is new since a fit, whatever order trials complete in).
        ymap: The map from raw observations to the units of the last fit (Ax's Y
            transforms then; ``None``: unknown), so that its forecasts are scored in
            those units.
        gains: Each member's summed batch-portfolio rewards (:mod:`.portfolio`).
        portfolio_points: Digests (:func:`row_digests`) of the points each member of last
            round's portfolio generated, credited when their values arrive.
        rounds: Every earlier round of the outcome, oldest first (:class:`PastRound`; what
            the guard count, the held-out forecast and the batches read, however few
            records ``history_limit`` keeps).
    """

    population: Population
    warm: dict[str, dict[str, Tensor]] = field(default_factory=dict)
    last_choice: LastChoice | None = None
    fitted_models: MutableMapping[str, Model] = field(default_factory=dict)
    row_rounds: dict[RowKey, int] = field(default_factory=dict)
    ymap: YMap | None = None
    gains: dict[str, float] = field(default_factory=dict)
    portfolio_points: dict[str, list[str]] = field(default_factory=dict)
    rounds: list[PastRound] = field(default_factory=list)

    def note_rows(self, rows: FitRows | None, round_index: int) -> None:
        """Record a fit's rows: the new ones are first seen in ``round_index``; its map
        becomes the last fit's (``None`` rows: unknown, so no map)."""
        if rows is None:
            self.ymap = None
            return
        for key in rows.keys:
            self.row_rounds.setdefault(key, round_index)
        self.ymap = rows.ymap

    def note_rows_by_position(self, rows: FitRows, history: Sequence[RoundRecord]) -> None:
        """Key the rows the earlier fits saw by their position (a state saved before rows
        were keyed by trial, format 1, or fits without keyed rows): Ax hands the rows in
        trial order, so the fit of round ``r``, on ``n_r`` rows, first saw rows
        ``n_{r-1} .. n_r - 1``, what those rounds assumed. The rows after the last round's
        are left to :meth:`note_rows`."""
        i = 0
        for rec in sorted(history, key=lambda r: r.round):
            while i < min(rec.n, len(rows.keys)):
                self.row_rounds.setdefault(rows.keys[i], rec.round)
                i += 1

    def snapshot(self) -> OutcomeState:
        """A copy to return to (:meth:`SurrogateState.restore`): everything is copied but
        last round's fitted models, which the copy shares."""
        models = self.fitted_models
        shared = models.copy() if isinstance(models, FittedModels) else dict(models)
        return copy.deepcopy(self, memo={id(models): shared})

    def rows_to_dict(self) -> dict[str, Any]:
        """The row and portfolio bookkeeping as JSON data (see :meth:`rows_from_dict`)."""
        return {
            "row_rounds": [[t, a, r] for (t, a), r in self.row_rounds.items()],
            "ymap": self.ymap.to_dict() if self.ymap is not None else None,
            "gains": dict(self.gains),
            "portfolio_points": {k: list(v) for k, v in self.portfolio_points.items()},
            "rounds": [list(r) for r in self.rounds],
        }

    def rows_from_dict(self, data: Mapping[str, Any]) -> None:
        """Restore :meth:`rows_to_dict`'s bookkeeping."""
        self.row_rounds = {(int(t), str(a)): int(r) for t, a, r in data.get("row_rounds", [])}
        ymap = data.get("ymap")
        self.ymap = YMap.from_dict(ymap) if ymap else None
        self.gains = {k: float(v) for k, v in data.get("gains", {}).items()}
        self.portfolio_points = {
            k: [str(d) for d in v] for k, v in data.get("portfolio_points", {}).items()
        }
        self.rounds = [PastRound(int(r), int(n)) for r, n in data.get("rounds", [])]

    def without_models(self) -> OutcomeState:
        """A copy of what a deep copy of the surrogate carries: no fitted models (and no
        batch-portfolio bookkeeping)."""
        return OutcomeState(
            self.population,
            self.warm,
            self.last_choice,
            row_rounds=self.row_rounds,
            ymap=self.ymap,
            rounds=list(self.rounds),
        )

    def drop(self, name: str) -> None:
        """Remove ``name`` (a member or a kernel of this round) with its warm start."""
        self.population.remove(name)
        self.warm.pop(name, None)
        self.fitted_models.pop(name, None)
        self.gains.pop(name, None)

    def strike(self, name: str) -> bool:
        """The population's strike rule for ``name``; a struck-out member is dropped."""
        dropped = self.population.strike(name)
        if dropped:
            self.drop(name)
        return dropped

    def truncate(self, protect: Sequence[str] = ()) -> list[str]:
        """Keep the population's best; the others are dropped. Returns their names."""
        dropped = self.population.truncate(protect=protect)
        for name in dropped:
            self.drop(name)
        return dropped


@dataclass
class RoundContext:
    """What one round's steps are handed: the outcome's state, its data, its index and its
    timings.

    Attributes:
        outcome: The modelled outcome.
        state: Its :class:`OutcomeState` (updated in place by the steps).
        dataset: The training data Ax hands the surrogate this round.
        search_space_digest: Ax's digest of the search space.
        round: The round's index.
        history: The earlier rounds' records of this outcome, oldest first (the last
            ``history_limit`` rounds': decisions read :attr:`past`).
        sign: The objective weight of the outcome (``None``: not known yet).
        rows: The dataset's rows, keyed by trial and arm, with their raw values
            (``None``: not known, e.g. a node without kernel discovery's transforms).
        earlier: Every earlier round of this outcome when the round opened
            (:attr:`OutcomeState.rounds`; ``None``: read off ``history``, see :attr:`past`).
        goal: Ax's optimization config of the fit, in the metrics' own units
            (derelativized; ``None``: not known), for the strike rule.
        first_seen: The round each row was first seen in, by any outcome's fit.
        timings: The round's seconds, written by its one timer (:meth:`timer`); the
            round's record is built from them.
    """

    outcome: str
    state: OutcomeState
    dataset: SupervisedDataset
    search_space_digest: SearchSpaceDigest
    round: int
    history: Sequence[RoundRecord] = ()
    sign: float | None = None
    rows: FitRows | None = None
    earlier: Sequence[PastRound] | None = None
    goal: OptimizationConfig | None = None
    first_seen: Mapping[RowKey, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def timer(self) -> RoundTimer:
        """The round's one timer (it writes :attr:`timings`)."""
        return RoundTimer(self.timings)

    @property
    def population(self) -> Population:
        return self.state.population

    @property
    def past(self) -> Sequence[PastRound]:
        """Every earlier round of this outcome, oldest first: what the guard count, the
        held-out forecast and the batches read (:attr:`earlier`; a context built without
        them reads them off :attr:`history`)."""
        if self.earlier is not None:
            return self.earlier
        return [PastRound(r.round, r.n) for r in self.history]

    @property
    def n(self) -> int:
        return int(self.dataset.X.shape[0])

    def for_worker(self) -> RoundContext:
        """A copy of this context for fits in a worker process: what
        :meth:`~.fitting.KernelFitter.fit_all` reads (the population, the warm starts and
        the rows' rounds, copied; the data, the history and the rounds), with timings of
        its own and none of the state the fits do not read (fitted models, the strike's
        bookkeeping, the goal), so that it pickles small."""
        state = OutcomeState(
            copy.deepcopy(self.state.population),
            warm=dict(self.state.warm),
            row_rounds=dict(self.state.row_rounds),
        )
        return dataclasses.replace(
            self,
            state=state,
            timings={},
            history=list(self.history),
            earlier=list(self.past),
            goal=None,
            first_seen={},
        )

    @property
    def dim(self) -> int:
        return int(self.dataset.X.shape[-1])


@dataclass
class SurrogateState:
    """Everything a kernel-discovery surrogate keeps between rounds: the one thing saved.

    Attributes:
        outcomes: One :class:`OutcomeState` per modelled outcome.
        history: One :class:`~.round_record.RoundRecord` per round and outcome, oldest first.
        round_index: The next round's index (one per fit, shared by its outcomes).
        objective_weights: Each outcome's direction (see :meth:`record_objectives`).
        objective_matrix: Ax's objectives, one ``{outcome: weight}`` per objective.
        features: The experiment's parameters, in order (``None``: not fitted yet).
        experiment: The experiment's key (``None``: not known, e.g. a strategy without
            kernel discovery's BO step, or a state saved before it was kept).
    """

    outcomes: dict[str, OutcomeState] = field(default_factory=dict)
    history: list[RoundRecord] = field(default_factory=list)
    round_index: int = 0
    objective_weights: dict[str, float] = field(default_factory=dict)
    objective_matrix: list[dict[str, float]] = field(default_factory=list)
    features: list[str] | None = None
    experiment: ExperimentKey | None = None

    def record_objectives(self, weights: Tensor, outcomes: Sequence[str]) -> None:
        """Learn the objectives from Ax's objective weights over ``outcomes``: a vector
        for one objective (several nonzero entries: a scalarized objective), a matrix
        with one row per objective for several. :attr:`objective_matrix` keeps them as
        rows; :attr:`objective_weights` gives each outcome its direction (the sum of its
        column: 0 for an outcome that is only constrained)."""
        rows = weights.detach().cpu().double()
        rows = rows.reshape(1, -1) if rows.dim() < 2 else rows.reshape(-1, rows.shape[-1])
        self.objective_matrix = [
            {o: float(w) for o, w in zip(outcomes, row.tolist(), strict=False)} for row in rows
        ]
        for j, name in enumerate(outcomes):
            self.objective_weights[name] = float(rows[:, j].sum()) if j < rows.shape[1] else 0.0

    def objective_population(self) -> Population | None:
        """The population of the objective (the first outcome when the direction is unknown)."""
        for name, weight in self.objective_weights.items():
            if weight != 0 and name in self.outcomes:
                return self.outcomes[name].population
        if self.outcomes:
            return next(iter(self.outcomes.values())).population
        return None

    def round_context(
        self,
        dataset: SupervisedDataset,
        digest: SearchSpaceDigest,
        rows: FitRows | None,
        new_population: Callable[[int], Population],
        goal: OptimizationConfig | None = None,
    ) -> RoundContext:
        """The context of a round on ``dataset`` (its outcome's state, made with a
        ``new_population`` on its first round; the next round index; the
        fit's ``goal`` and the round each row was first seen in, by any outcome)."""
        outcome = dataset.outcome_names[0]
        if outcome not in self.outcomes:
            self.outcomes[outcome] = OutcomeState(new_population(dataset.X.shape[-1]))
        state = self.outcomes[outcome]
        history = [r for r in self.history if r.outcome == outcome]
        if rows is not None and history and not state.row_rounds:
            state.note_rows_by_position(rows, history)  # earlier fits' rows were not keyed
        return RoundContext(
            outcome=outcome,
            state=state,
            dataset=dataset,
            search_space_digest=digest,
            round=self.round_index,
            history=history,
            sign=self.objective_weights.get(outcome),
            rows=rows,
            earlier=list(self.outcomes[outcome].rounds),
            goal=goal,
            first_seen=self.first_seen(),
        )

    def first_seen(self) -> dict[RowKey, int]:
        """The round each row was first seen in, by the fit of any outcome (a trial that
        reported the objectives but not yet a constraint metric is a known row)."""
        seen: dict[RowKey, int] = {}
        for kept in self.outcomes.values():
            for key, r in kept.row_rounds.items():
                if r < seen.get(key, r + 1):
                    seen[key] = r
        return seen

    def without_models(self) -> SurrogateState:
        """A copy for a copy of the surrogate: no fitted models (nor portfolio bookkeeping)."""
        return SurrogateState(
            {k: v.without_models() for k, v in self.outcomes.items()},
            self.history,
            self.round_index,
            self.objective_weights,
            self.objective_matrix,
            self.features,
            self.experiment,
        )

    def snapshot(self) -> SurrogateState:
        """A copy to return to with :meth:`restore` (a round cut short leaves no trace):
        everything is copied but last round's fitted models, which the copy shares."""
        return SurrogateState(
            {k: v.snapshot() for k, v in self.outcomes.items()},
            # a kept record changes only by the acquisition's points (count_points),
            # which come before the next fit: the records are shared
            list(self.history),
            self.round_index,
            dict(self.objective_weights),
            [dict(row) for row in self.objective_matrix],
            None if self.features is None else list(self.features),
            self.experiment,
        )

    def restore(self, saved: SurrogateState) -> None:
        """Return to ``saved`` (a :meth:`snapshot` of this state), in place: an outcome
        state that others hold (last round's batch portfolio) stays the state's."""
        outcomes: dict[str, OutcomeState] = {}
        for name, kept in saved.outcomes.items():
            live = self.outcomes.get(name)
            if live is not None:
                vars(live).update(vars(kept))
                kept = live
            outcomes[name] = kept
        vars(self).update(vars(saved))
        self.outcomes = outcomes

    def keep(self, record: RoundRecord, limit: int) -> None:
        """Append a round's record to the history, which keeps the last ``limit``, and the
        round to its outcome's :attr:`~OutcomeState.rounds`, which keep every round."""
        self.history.append(record)
        self.history = self.history[-limit:]
        if record.outcome in self.outcomes:
            self.outcomes[record.outcome].rounds.append(PastRound(record.round, record.n))

    def another_experiment(
        self, features: list[str], experiment: ExperimentKey | None = None
    ) -> bool:
        """Whether a fit on ``features`` (the parameter names, in order) of ``experiment``
        (its key; ``None``: not known) belongs to another experiment than the state; it
        then forgets everything (see :meth:`forget`).

        The state (population, warm starts, history, strike bookkeeping, objectives)
        describes the experiment it was found on; in another one its warm starts may not
        fit, its history would skip the guard round and its rows' keys (trial, arm) name
        other rows. Another experiment is one with other parameter names, or one whose
        key (:class:`~.rows.ExperimentKey`: name and creation time) is not the state's,
        where both are known. Kernels travel between experiments through kernel
        libraries (``export_kernels``, ``KernelDiscoveryConfig(start_kernels=...)``).
        """
        previous, self.features = self.features, features
        known = self.experiment
        if experiment is not None:
            self.experiment = experiment
        if not (self.outcomes or self.history):
            return False
        if previous is not None and previous != features:
            why = f"parameters {_describe(previous)}; now {_describe(features)}"
        elif known is not None and experiment is not None and not known.same_as(experiment):
            why = f"experiment {known}; now {experiment}"
        else:
            return False
        logger.warning(
            "kernel discovery: this surrogate was used on another experiment (%s); it starts "
            "afresh: a new population, no history. To carry kernels over, export them "
            "(export_kernels) and start from them (KernelDiscoveryConfig(start_kernels=...))",
            why,
        )
        self.forget()
        return True

    def forget(self) -> None:
        """Start afresh: no populations, history, round count or objectives."""
        self.outcomes = {}
        self.history = []
        self.objective_weights = {}
        self.objective_matrix = []
        self.round_index = 0

    def header(self) -> dict[str, Any]:
        """The format, the round counter and the objectives: all that a generator run's
        record keeps (the generation strategy holds the rest)."""
        return {
            "format": STATE_FORMAT,
            "round_index": self.round_index,
            "objective_weights": dict(self.objective_weights),
            "objective_matrix": [dict(row) for row in self.objective_matrix],
        }

    def to_json(self, history_limit: int) -> dict[str, Any]:
        """Everything the next round needs, as plain JSON data (see the module docstring):
        the populations, the last ``history_limit`` rounds, the members' warm starts, the
        last choices, the rows' bookkeeping and the experiment's parameters and key
        (:meth:`from_json` reads it back; a state without a key reads as unknown)."""
        warm: dict[str, dict[str, Any]] = {}
        for outcome, kept in self.outcomes.items():
            members = set(kept.population.names)
            for name, params in kept.warm.items():
                if name in members:
                    warm.setdefault(outcome, {})[name] = encode_tensors(params)
        return {
            **self.header(),
            "populations": {k: v.population.to_dict() for k, v in self.outcomes.items()},
            "history": [r.model_dump(mode="json") for r in self.history[-history_limit:]],
            "last_choice": {
                k: v.last_choice.model_dump()
                for k, v in self.outcomes.items()
                if v.last_choice is not None
            },
            "warm_parameters": warm,
            "features": self.features,
            "experiment": self.experiment.to_dict() if self.experiment is not None else None,
            "rows": {k: v.rows_to_dict() for k, v in self.outcomes.items()},
        }

    @classmethod
    def from_json(cls, state: Mapping[str, Any]) -> SurrogateState:
        """The state :meth:`to_json` wrote (any format up to :data:`STATE_FORMAT`)."""
        last = state.get("last_choice", {})
        warm = state.get("warm_parameters", {})
        outcomes = {
            outcome: OutcomeState(
                population=Population.from_dict(pop),
                warm={k: decode_tensors(v) for k, v in warm.get(outcome, {}).items()},
                last_choice=LastChoice.model_validate(last[outcome]) if outcome in last else None,
            )
            for outcome, pop in state.get("populations", {}).items()
        }
        for outcome, rows in state.get("rows", {}).items():
            if outcome in outcomes:
                outcomes[outcome].rows_from_dict(rows)
        history = [RoundRecord.model_validate(r) for r in state.get("history", [])]
        for outcome, kept in outcomes.items():
            if not kept.rounds:  # saved before the rounds were: read off the history
                kept.rounds = [PastRound(r.round, r.n) for r in history if r.outcome == outcome]
        features = state.get("features")
        experiment = state.get("experiment")
        return cls(
            outcomes=outcomes,
            history=history,
            round_index=int(state.get("round_index", 0)),
            objective_weights={k: float(v) for k, v in state.get("objective_weights", {}).items()},
            objective_matrix=[
                {k: float(v) for k, v in row.items()} for row in state.get("objective_matrix", [])
            ],
            features=list(features) if features is not None else None,
            experiment=ExperimentKey.from_dict(experiment) if experiment else None,
        )


def check_state_format(state: Mapping[str, Any]) -> None:
    """Refuse a saved state this version cannot continue, saying why and what to do.

    Raises:
        ValueError: The state was written by a newer format, or lacks what a run's state
            holds (its populations): loading it would silently start over and lose every
            discovered kernel.
    """
    version = state.get("format", 1)
    if not isinstance(version, int) or version > STATE_FORMAT:
        raise ValueError(
            f"the saved kernel-discovery state has format {version!r}, newer than this "
            f"version of ax-kernel-discovery reads (formats 1-{STATE_FORMAT}): it was saved by "
            "a newer release; install that release (or newer) to continue this run"
        )
    if not state.get("record") and "populations" not in state:
        raise ValueError(
            "the saved kernel-discovery state has no 'populations' (keys: "
            f"{sorted(state)}): it is not a state this package wrote, or it was cut short; "
            "continuing from it would start a new population and lose every discovered "
            "kernel. Load the run's complete JSON, or start a new strategy"
        )


def saved_config(
    config: KernelDiscoveryConfig | Mapping[str, Any] | None, state: Mapping[str, Any] | None
) -> KernelDiscoveryConfig:
    """A config read back with its state (:meth:`KernelDiscoveryConfig.coerce`): an unknown
    setting names the version skew."""
    try:
        return KernelDiscoveryConfig.coerce(config)
    except ValidationError as e:
        unknown = [str(err["loc"][0]) for err in e.errors() if err["type"] == "extra_forbidden"]
        unknown += re.findall(r"unknown setting '(\w+)'", str(e))
        if state is None or not unknown:
            raise
        raise ValueError(
            f"the saved kernel-discovery config has settings this version of "
            f"ax-kernel-discovery does not know ({', '.join(unknown)}; state format "
            f"{state.get('format', 1)}, this version writes {STATE_FORMAT}): the run was saved "
            "by another release. Install that release to continue it, or remove those "
            "settings from the saved JSON to continue without them"
        ) from None


def _describe(features: Sequence[str]) -> str:
    """A parameter list in a few words (``x0..x4, 5 parameters``)."""
    if len(features) <= 4:
        return ", ".join(features) or "none"
    return f"{features[0]}..{features[-1]}, {len(features)} parameters"
