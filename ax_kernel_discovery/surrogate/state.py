"""What a kernel-discovery surrogate carries from one round to the next, in storable form.

Ax saves a :class:`~ax_kernel_discovery.KernelDiscoverySurrogate` through
``_serialize_attributes_as_kwargs`` (JSON and SQL storage, ``clone_reset``); a run that
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
* **the last choice**, for the strike rule: the chosen member, how many training rows
  there were, and a digest of the best row for either direction. Rows are identified
  by a BLAKE2 digest of their bytes, stable across processes (Python's ``hash`` of
  bytes is salted per process by ``PYTHONHASHSEED``). Constant size, whatever the
  number of rounds;
* **the proposer's dedup keys** (the offline operator never proposes a kernel it has
  seen): 8 bytes per key seen, about 10-40 KB after 1000 rounds.

The dedup fingerprints (Gram signatures of the members on fixed reference points) are
recomputed from the members when needed, not saved: they depend only on the member and
the input dimension.

:class:`OutcomeState` is the one owner of what a surrogate keeps per outcome (the
population, the warm starts, the last choice and last round's fitted models), with one
way to drop a member; :class:`RoundContext` is what the round's steps (admission,
fitting, choice) are handed: that state plus the round's data and record.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from ax.core.search_space import SearchSpaceDigest
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from pydantic import BaseModel
from torch import Tensor

from ax_kernel_discovery.candidate import decode_keys, encode_keys
from ax_kernel_discovery.population import Population
from ax_kernel_discovery.surrogate.round_record import RoundRecord
from ax_kernel_discovery.surrogate.rows import FitRows, RowKey, YMap

__all__ = [
    "FittedModels",
    "LastChoice",
    "OutcomeState",
    "RoundContext",
    "decode_keys",
    "decode_tensors",
    "encode_keys",
    "encode_tensors",
    "row_digests",
    "warm_parameters",
]

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
    """

    name: str
    n: int
    best_high: str
    best_low: str

    @classmethod
    def of(cls, name: str, X: Tensor, Y: Tensor) -> LastChoice:
        y = Y.reshape(-1)
        digests = row_digests(X)
        return cls(
            name=name,
            n=int(X.shape[0]),
            best_high=digests[int(y.argmax())],
            best_low=digests[int(y.argmin())],
        )

    def improved(self, X: Tensor, Y: Tensor, weight: float) -> bool | None:
        """Whether the rows added since the choice beat the best value seen at the choice.

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
    """

    population: Population
    warm: dict[str, dict[str, Tensor]] = field(default_factory=dict)
    last_choice: LastChoice | None = None
    fitted_models: MutableMapping[str, Model] = field(default_factory=dict)
    row_rounds: dict[RowKey, int] = field(default_factory=dict)
    ymap: YMap | None = None
    gains: dict[str, float] = field(default_factory=dict)
    portfolio_points: dict[str, list[str]] = field(default_factory=dict)

    def note_rows(self, rows: FitRows | None, round_index: int) -> None:
        """Record a fit's rows: the new ones are first seen in ``round_index``; its map
        becomes the last fit's (``None`` rows: unknown, so no map)."""
        if rows is None:
            self.ymap = None
            return
        for key in rows.keys:
            self.row_rounds.setdefault(key, round_index)
        self.ymap = rows.ymap

    def rows_to_dict(self) -> dict[str, Any]:
        """The row and portfolio bookkeeping as JSON data (see :meth:`rows_from_dict`)."""
        return {
            "row_rounds": [[t, a, r] for (t, a), r in self.row_rounds.items()],
            "ymap": self.ymap.to_dict() if self.ymap is not None else None,
            "gains": dict(self.gains),
            "portfolio_points": {k: list(v) for k, v in self.portfolio_points.items()},
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
    """What one round's steps are handed: the outcome's state, its data and its record.

    Attributes:
        outcome: The modelled outcome.
        state: Its :class:`OutcomeState` (updated in place by the steps).
        dataset: The training data Ax hands the surrogate this round.
        search_space_digest: Ax's digest of the search space.
        rec: This round's record (the steps append what they did).
        history: The earlier rounds of this outcome, oldest first.
        sign: The objective weight of the outcome (``None``: not known yet).
        rows: The dataset's rows, keyed by trial and arm, with their raw values
            (``None``: not known, e.g. a node without kernel discovery's transforms).
    """

    outcome: str
    state: OutcomeState
    dataset: SupervisedDataset
    search_space_digest: SearchSpaceDigest
    rec: RoundRecord
    history: Sequence[RoundRecord] = ()
    sign: float | None = None
    rows: FitRows | None = None

    @property
    def population(self) -> Population:
        return self.state.population

    @property
    def n(self) -> int:
        return int(self.dataset.X.shape[0])

    @property
    def dim(self) -> int:
        return int(self.dataset.X.shape[-1])
