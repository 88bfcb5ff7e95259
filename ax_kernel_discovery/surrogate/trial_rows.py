"""Which trial each training row is, and the units of the fit that saw it.

Ax hands a surrogate its training data already transformed (Ax's ``Y_trans``:
``Winsorize``, ``BilogY``, ``StandardizeY``), in trial order, with no row identity.
Kernel discovery's held-out score compares a member's forecast, made by last round's
fit, with the batch that arrived since; for that it must know

* which rows are new since that fit: a trial that completes late is a row *inside* the
  data, not at its end, so rows are keyed by ``(trial index, arm name)``, never by
  position;
* what last round's fit saw, in its own units: Ax recomputes the Winsorize cutoffs and
  the standardization from all rows each round, so the new batch moves them; the
  forecast is scored against the batch in the units and transform of the fit that made
  it (:class:`YMap`), and with the known noise (SEMs) in those units.

:class:`ShareRows`, the last transform of kernel discovery's BO step
(:func:`~ax_kernel_discovery.strategy.botorch_step`), passes the surrogate each fit's
rows: their keys in the dataset's order, their raw values and the map Ax's transforms
applied (:class:`FitRows`). Ax's transforms are not changed; the map is derived from
their fitted state and checked against the values they produced, row by row, before it
is used (a transform this module does not know makes the map ``None``, and the surrogate
then falls back to re-standardizing the older rows, as before). It also tells the
surrogate which experiment the rows come from (:class:`ExperimentKey`), so that a
surrogate reused on another experiment starts afresh.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
from ax.adapter.data_utils import ExperimentData
from ax.adapter.transforms.base import Transform
from ax.adapter.transforms.bilog_y import BilogY, bilog_transform
from ax.adapter.transforms.derelativize import Derelativize
from ax.adapter.transforms.standardize_y import StandardizeY
from ax.adapter.transforms.utils import (
    derelativize_optimization_config_with_raw_status_quo,
    match_ci_width,
)
from ax.adapter.transforms.winsorize import Winsorize
from ax.core.experiment import Experiment
from ax.core.optimization_config import OptimizationConfig
from ax.core.search_space import SearchSpace
from ax.exceptions.core import DataRequiredError

from ax_kernel_discovery._upstream.ax import (
    adapter_optimization_config,
    adapter_training_data,
    experiment_of,
    generator_surrogate,
)

__all__ = [
    "ExperimentKey",
    "ExperimentObserver",
    "FitRows",
    "GoalObserver",
    "RowKey",
    "RowsObserver",
    "ShareRows",
    "YMap",
    "fit_rows",
    "raw_goal",
]

#: A training row: ``(trial index, arm name)``.
RowKey = tuple[int, str]

#: How close Ax's transformed values must be to the map's (absolute and relative).
_MAP_TOLERANCE = 1e-9


@dataclass(frozen=True)
class YMap:
    """The map Ax's Y transforms applied to one metric in one fit, as plain numbers.

    ``steps`` are applied in order to an observation's mean and SEM:

    * ``("clip", lower, upper)``: Ax's ``Winsorize`` (the mean is clipped, the SEM kept);
    * ``("bilog", bound)``: Ax's ``BilogY`` (its own ``match_ci_width``);
    * ``("affine", mean, std)``: Ax's ``StandardizeY``, ``(y - mean) / std``, SEM ``/ std``.

    Example:
        >>> m = YMap((("clip", -math.inf, 3.0), ("affine", 1.0, 2.0)))
        >>> m(np.array([0.0, 5.0]), np.array([0.2, 0.2]))[0].tolist()
        [-0.5, 1.0]
    """

    steps: tuple[tuple[Any, ...], ...] = ()

    def __call__(self, mean: np.ndarray, sem: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The transformed means and SEMs (NaN SEMs stay NaN)."""
        mean = np.asarray(mean, dtype=float).copy()
        sem = np.asarray(sem, dtype=float).copy()
        for step in self.steps:
            kind = step[0]
            if kind == "clip":
                mean = np.clip(mean, step[1], step[2])
            elif kind == "bilog":
                bound = float(step[1])

                def bilog(y: np.ndarray, bound: float = bound) -> np.ndarray:
                    return bilog_transform(y, bound)

                mean, sem = match_ci_width(mean=mean, sem=sem, variance=None, transform=bilog)
            elif kind == "affine":
                mean = (mean - step[1]) / step[2]
                sem = sem / step[2]
            else:
                raise ValueError(f"unknown step {kind!r} of a Y map")
        return mean, sem

    def to_dict(self) -> dict[str, Any]:
        """JSON form (infinite bounds as strings)."""
        return {"steps": [[s[0], *(_encode(v) for v in s[1:])] for s in self.steps]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> YMap:
        """Inverse of :meth:`to_dict`."""
        return cls(tuple((s[0], *(float(v) for v in s[1:])) for s in data["steps"]))


def _encode(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)


@dataclass
class FitRows:
    """One metric's training rows of one fit, in the order of the dataset Ax hands over.

    Attributes:
        keys: ``(trial index, arm name)`` of each row.
        raw_mean: The observed means, before Ax's transforms.
        raw_sem: Their SEMs (NaN where none was reported).
        mean: The means the surrogate receives (after Ax's transforms).
        ymap: The map from raw values to the surrogate's units (``None``: a transform
            this module does not know changed the values).
    """

    keys: list[RowKey]
    raw_mean: np.ndarray
    raw_sem: np.ndarray
    mean: np.ndarray
    ymap: YMap | None = None
    index: dict[RowKey, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = {k: i for i, k in enumerate(self.keys)}

    def matches(self, Y: Any) -> bool:
        """Whether these rows are the dataset whose targets are ``Y`` (same values, order)."""
        y = np.asarray(Y.detach().cpu().double().reshape(-1) if hasattr(Y, "detach") else Y)
        return y.shape == self.mean.shape and bool(
            np.allclose(y, self.mean, rtol=_MAP_TOLERANCE, atol=_MAP_TOLERANCE)
        )


@dataclass(frozen=True)
class ExperimentKey:
    """Which Ax experiment a surrogate's rows come from: its name and creation time.

    Ax gives every experiment its creation time (``Experiment.time_created``), to the
    microsecond, and keeps it through JSON storage; SQL storage keeps whole seconds.
    Two keys name the same experiment when their times agree (to the second where one
    of them was read back from SQL, so has no microseconds) and so do their names where
    both are known (a name may be given later, e.g. before saving to SQL). The search
    space and the outcomes are not part of it: an experiment may change them while it
    runs.

    Attributes:
        name: The experiment's name (``None``: it has none).
        created: Its creation time (``datetime.isoformat``, local time as Ax keeps it).
    """

    name: str | None
    created: str

    @classmethod
    def of(cls, experiment: Experiment) -> ExperimentKey:
        """The key of an Ax experiment."""
        name = experiment.name if experiment.has_name else None
        return cls(name=name, created=experiment.time_created.isoformat())

    def same_as(self, other: ExperimentKey) -> bool:
        """Whether ``other`` names the same experiment (see the class docstring)."""
        if self.name is not None and other.name is not None and self.name != other.name:
            return False
        if self.created == other.created:
            return True
        mine, theirs = datetime.fromisoformat(self.created), datetime.fromisoformat(other.created)
        whole_seconds = mine.microsecond == 0 or theirs.microsecond == 0
        return whole_seconds and mine.replace(microsecond=0) == theirs.replace(microsecond=0)

    def to_dict(self) -> dict[str, str | None]:
        """JSON form (:meth:`from_dict` reads it back)."""
        return {"name": self.name, "created": self.created}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExperimentKey:
        """Inverse of :meth:`to_dict`."""
        name = data.get("name")
        return cls(name=None if name is None else str(name), created=str(data["created"]))

    def __str__(self) -> str:
        name = repr(self.name) if self.name is not None else "unnamed"
        return f"{name}, created {self.created}"


@runtime_checkable
class ExperimentObserver(Protocol):
    """A surrogate that takes the key of the experiment each fit is on (:class:`ShareRows`
    calls it before the rows)."""

    def observe_experiment(self, key: ExperimentKey) -> None: ...


@runtime_checkable
class RowsObserver(Protocol):
    """A surrogate that takes each fit's rows (:class:`ShareRows` calls it)."""

    def observe_fit_rows(self, rows: Mapping[str, FitRows]) -> None: ...


@runtime_checkable
class GoalObserver(Protocol):
    """A surrogate that takes each fit's optimization config (:class:`ShareRows` calls it)."""

    def observe_goal(self, goal: OptimizationConfig | None) -> None: ...


def raw_goal(adapter: Any) -> OptimizationConfig | None:
    """The adapter's optimization config in the metrics' own units: relative constraints
    and thresholds made absolute with the raw status quo, as Ax's best point and Pareto
    front do (``None``: no config, or no status quo observed to derelativize it)."""
    goal = adapter_optimization_config(adapter)
    if not isinstance(goal, OptimizationConfig):
        return None
    if any(c.relative for c in goal.all_constraints):
        try:
            goal = derelativize_optimization_config_with_raw_status_quo(goal, adapter)
        except (DataRequiredError, ValueError):
            return None
    return goal


def _ymap(transforms: Sequence[Transform], metric: str) -> YMap | None:
    """The map the Y transforms ``transforms`` apply to ``metric``, or ``None`` if unknown."""
    steps: list[tuple[Any, ...]] = []
    for t in transforms:
        if isinstance(t, Winsorize):
            if metric in t.cutoffs:
                lower, upper = t.cutoffs[metric]
                steps.append(("clip", float(lower), float(upper)))
        elif isinstance(t, BilogY):
            if metric in t.metric_to_bound:
                steps.append(("bilog", float(t.metric_to_bound[metric])))
        elif isinstance(t, StandardizeY):
            if metric in t.Ymean:
                steps.append(("affine", float(t.Ymean[metric]), float(t.Ystd[metric])))
        elif isinstance(t, Derelativize):
            continue  # changes the optimization config, not the data
    return YMap(tuple(steps))


def fit_rows(
    transformed: ExperimentData, raw: ExperimentData, transforms: Sequence[Transform]
) -> dict[str, FitRows]:
    """Each metric's rows as the surrogate will receive them (see :class:`FitRows`).

    Args:
        transformed: The data after every transform (what the datasets are built from:
            Ax drops a metric's NaN rows and keeps the order).
        raw: The adapter's training data before its transforms.
        transforms: The adapter's transforms applied so far, in order.
    """
    obs = transformed.observation_data
    if obs.empty or list(obs.index.names)[:2] != ["trial_index", "arm_name"]:
        return {}
    if obs.index.nlevels != 2:  # map data (progressions): not keyed by trial and arm alone
        return {}
    raw_obs = raw.observation_data
    out: dict[str, FitRows] = {}
    for metric in obs["mean"].columns:
        mean = obs["mean", metric]
        kept = mean.notna().to_numpy()
        index = mean.index[kept]
        keys = [(int(t), str(a)) for t, a in index]
        try:
            raw_mean = raw_obs["mean", metric].reindex(index).to_numpy(dtype=float)
            raw_sem = raw_obs["sem", metric].reindex(index).to_numpy(dtype=float)
        except KeyError:
            continue
        values = mean.to_numpy(dtype=float)[kept]
        ymap = _ymap(transforms, str(metric))
        if ymap is not None:
            mapped, mapped_sem = ymap(raw_mean, raw_sem)
            sem = obs["sem", metric].to_numpy(dtype=float)[kept]
            same_sem = np.allclose(
                np.nan_to_num(mapped_sem, nan=-1.0),
                np.nan_to_num(sem, nan=-1.0),
                rtol=_MAP_TOLERANCE,
                atol=_MAP_TOLERANCE,
            )
            same = np.allclose(mapped, values, rtol=_MAP_TOLERANCE, atol=_MAP_TOLERANCE)
            if not (same and same_sem):
                ymap = None  # a transform changed the values in a way the map does not know
        out[str(metric)] = FitRows(keys, raw_mean, raw_sem, values, ymap)
    return out


class ShareRows(Transform):
    """The last transform of kernel discovery's BO step: hands the surrogate the fit's rows.

    It changes nothing: its data and search space go on as they came. When the adapter's
    generator holds a surrogate that takes rows (:class:`RowsObserver`), it passes it
    :func:`fit_rows` of the data every fit is built from, before them the key of the
    adapter's experiment (:class:`ExperimentObserver`, :class:`ExperimentKey`), and
    (:class:`GoalObserver`) the fit's optimization config in the metrics' units
    (:func:`raw_goal`).

    Args:
        search_space: The experiment's search space (unused).
        experiment_data: The data after the adapter's other transforms.
        adapter: The adapter (its raw training data, its transforms and generator).
        config: Unused.
    """

    def __init__(
        self,
        search_space: SearchSpace | None = None,
        experiment_data: ExperimentData | None = None,
        adapter: Any = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            search_space=search_space,
            experiment_data=experiment_data,
            adapter=adapter,
            config=config,
        )
        surrogate = generator_surrogate(getattr(adapter, "generator", None))
        experiment = experiment_of(adapter)
        if isinstance(experiment, Experiment) and isinstance(surrogate, ExperimentObserver):
            surrogate.observe_experiment(ExperimentKey.of(experiment))
        raw = adapter_training_data(adapter)
        if experiment_data is None or raw is None or not isinstance(surrogate, RowsObserver):
            return
        transforms = list(getattr(adapter, "transforms", {}).values())
        surrogate.observe_fit_rows(fit_rows(experiment_data, raw, transforms))
        if isinstance(surrogate, GoalObserver):
            surrogate.observe_goal(raw_goal(adapter))

    def transform_experiment_data(self, experiment_data: ExperimentData) -> ExperimentData:
        """Unchanged."""
        return experiment_data
