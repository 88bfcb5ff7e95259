"""Ax adapter transforms of the package: objective values of inf or NaN are kept out.

Ax's own transforms standardize the outcomes with their mean and standard deviation: a
single ``inf`` makes every standardized value NaN, Ax then drops them all and the next
``get_next_trials`` fails with ``DataRequiredError: Objective metric ... not found in
fitted data``, with no word about the inf. :class:`KeepNonFiniteOut` runs first in the
BO step's transforms (:func:`~ax_kernel_discovery.strategy.botorch_step`): it turns
``inf`` into "no value" (NaN, which Ax drops before fitting) and warns once per trial
with a :class:`NonFiniteObjectiveWarning` that names the trial and the value. Ax builds
the transform again for every fit (every ask), so the warning is remembered per
experiment: a trial is named once per process, not on every ask.

Example:
    >>> client.complete_trial(3, raw_data={"f": float("inf")})  # doctest: +SKIP
    >>> client.get_next_trials(max_trials=4)  # doctest: +SKIP
    NonFiniteObjectiveWarning: trial 3: 'f' is inf; kept out of the model ...
"""

from __future__ import annotations

import warnings
import weakref
from functools import partial
from typing import Any

import numpy as np
from ax.adapter.data_utils import ExperimentData
from ax.adapter.transforms.base import Transform
from ax.core.search_space import SearchSpace

from ax_kernel_discovery._upstream.ax import experiment_of

__all__ = ["KeepNonFiniteOut", "NonFiniteObjectiveWarning"]


class NonFiniteObjectiveWarning(UserWarning):
    """A trial reported inf or NaN for a metric; the value is kept out of the model."""


class KeepNonFiniteOut(Transform):
    """Observations of ``inf`` become missing (NaN), with a warning naming the trial.

    NaN observations are dropped by Ax itself; they get the same warning, since a NaN
    reported for an objective is as much a failed evaluation as an inf. Mark a failed
    evaluation with ``client.mark_trial_failed(index)`` to keep it quiet.

    Args:
        search_space: The experiment's search space (unused).
        experiment_data: The data the adapter is built from.
        adapter: The adapter (unused).
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
        if experiment_data is not None:
            found = non_finite_observations(experiment_data)
            for trial, metric, value in _not_warned_yet(adapter, found):
                warnings.warn(
                    f"trial {trial}: {metric!r} is {value}; kept out of the model (fix the "
                    f"objective, or client.mark_trial_failed({trial}) for a failed "
                    "evaluation)",
                    NonFiniteObjectiveWarning,
                    stacklevel=2,
                )

    def transform_experiment_data(self, experiment_data: ExperimentData) -> ExperimentData:
        obs = experiment_data.observation_data
        if obs.empty or "mean" not in obs.columns.get_level_values(0):
            return experiment_data
        means = obs["mean"]
        infinite = np.isinf(means.to_numpy(dtype=float))
        if infinite.any():
            obs = obs.copy()
            for j, metric in enumerate(means.columns):
                rows = infinite[:, j]
                if rows.any():
                    obs.loc[rows, ("mean", metric)] = np.nan
        return ExperimentData(arm_data=experiment_data.arm_data, observation_data=obs)


#: What was warned about in this process: ``id(experiment) -> (weak reference, found)``.
_WARNED: dict[int, tuple[Any, set[tuple[int, str, str]]]] = {}


def _forget(key: int, _: Any) -> None:
    _WARNED.pop(key, None)


def _not_warned_yet(adapter: Any, found: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    """The observations of ``found`` not warned about yet for the adapter's experiment
    (all of them when the transform has no adapter), now marked as warned."""
    experiment = experiment_of(adapter)
    if experiment is None or not found:
        return found
    key = id(experiment)
    ref, warned = _WARNED.get(key, (None, set()))
    if ref is None or ref() is not experiment:  # first time, or a new object at that id
        try:
            ref = weakref.ref(experiment, partial(_forget, key))
        except TypeError:  # not weakly referenceable: remember nothing
            return found
        warned = set()
        _WARNED[key] = (ref, warned)
    new = [f for f in found if f not in warned]
    warned.update(new)
    return new


def non_finite_observations(experiment_data: ExperimentData) -> list[tuple[int, str, str]]:
    """``(trial index, metric, "inf" | "-inf" | "NaN")`` of every non-finite observation."""
    obs = experiment_data.observation_data
    if obs.empty or "mean" not in obs.columns.get_level_values(0):
        return []
    means = obs["mean"]
    values = means.to_numpy(dtype=float)
    found = []
    trials = means.index.get_level_values("trial_index")
    for i, j in zip(*np.nonzero(~np.isfinite(values)), strict=True):
        value = values[i, j]
        text = "NaN" if np.isnan(value) else ("inf" if value > 0 else "-inf")
        found.append((int(trials[i]), str(means.columns[j]), text))
    return found
