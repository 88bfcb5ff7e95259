"""The held-out score forecasts the batch in the units of the fit that made the forecast
(issue 30 items 3-5): Ax's Winsorize and standardization as fitted then, the known noise
in those units, and the rows keyed by trial, whatever order trials complete in."""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from ax.adapter.data_utils import ExperimentData
from ax.api import Client

from ax_kernel_discovery import kernel_discovery_generation_strategy, surrogate_of
from ax_kernel_discovery.surrogate.trial_rows import YMap
from ax_kernel_discovery.testing import TINY_ACQUISITION, unit_box_client

torch.set_num_threads(1)

DIM = 3
CONFIG = {
    "population_size": 3,
    "proposals_per_round": 0,
    "fit_maxiter": 5,
    "background_fits": "off",
}
TINY = TINY_ACQUISITION


def _client(num_sobol: int = 6) -> Client:
    strategy = kernel_discovery_generation_strategy(CONFIG, num_sobol=num_sobol, **TINY)
    return unit_box_client(DIM, strategy)


def _heavy(params: dict[str, float]) -> float:
    """Heavy-tailed: a few points are orders of magnitude worse (Winsorize clips them)."""
    x = np.array([params[f"x{i}"] for i in range(DIM)])
    return float(np.sum((x - 0.3) ** 2) + math.exp(12.0 * x[0]) / 1e3)


class _Spy:
    """Records each fit's rows and Ax's fitted transforms, and each held-out forecast."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.surrogate = surrogate_of(client)
        self.forecasts: list[tuple[Any, Any]] = []
        self.transforms: list[list[Any]] = []  # Ax's fitted transforms, per fit
        scorer = self.surrogate.heldout
        original = scorer.forecast_data

        def spy(ctx: Any, last: Any) -> Any:
            out = original(ctx, last)
            self.forecasts.append((ctx, out))
            return out

        scorer.forecast_data = spy  # type: ignore[method-assign]

    def units(self, ctx: Any) -> str | None:
        """The held-out units the record of ``ctx``'s round names."""
        (rec,) = [
            r for r in self.surrogate.history if (r.round, r.outcome) == (ctx.round, ctx.outcome)
        ]
        return rec.heldout_units

    def ask(self, n: int) -> dict[int, dict[str, Any]]:
        trials = self.client.get_next_trials(max_trials=n)
        node = self.client._generation_strategy._curr
        adapter = node._fitted_adapter if hasattr(node, "_fitted_adapter") else None
        if adapter is None:
            adapter = node.generator_spec_to_gen_from._fitted_adapter
        if adapter is not None and "StandardizeY" in adapter.transforms:
            self.transforms.append(copy.deepcopy(list(adapter.transforms.values())))
        return trials


def _ax_transform(transforms: list[Any], mean: np.ndarray, sem: np.ndarray) -> np.ndarray:
    """Ax's own fitted Y transforms applied to raw observations of metric f."""
    index = pd.MultiIndex.from_tuples(
        [(i, f"{i}_0") for i in range(len(mean))], names=["trial_index", "arm_name"]
    )
    obs = pd.DataFrame({("mean", "f"): mean, ("sem", "f"): sem}, index=index, dtype=float)
    obs.columns = pd.MultiIndex.from_tuples(obs.columns)
    data = ExperimentData(arm_data=pd.DataFrame(index=index), observation_data=obs)
    for t in transforms:
        if type(t).__name__ in ("Winsorize", "BilogY", "StandardizeY"):
            data = t.transform_experiment_data(copy.deepcopy(data))
    out = data.observation_data
    return np.stack([out["mean", "f"].to_numpy(), out["sem", "f"].to_numpy()])


def _trial_x(client: Client, index: int) -> np.ndarray:
    params = client._experiment.trials[index].arm.parameters
    return np.array([params[f"x{i}"] for i in range(DIM)])


@pytest.mark.parametrize("sem", [None, 0.05])
def test_the_batch_is_scored_in_the_units_of_the_fit_that_forecast_it(sem: float | None) -> None:
    """Items 3 and 4: the forecast's targets (and known noise) are what last round's fit
    saw, and the batch is mapped by that fit's Winsorize and standardization, as Ax's own
    transforms of that round map it; with today's restandardization they differed by up
    to 1.07 on a heavy-tailed objective."""
    client = _client()
    spy = _Spy(client)
    raw: dict[int, float] = {}
    for _ in range(6):
        for index, params in spy.ask(3).items():
            raw[index] = _heavy(params)
            data = {"f": raw[index] if sem is None else (raw[index], sem)}
            client.complete_trial(index, raw_data=data)
    scored = [(ctx, out) for ctx, out in spy.forecasts if out is not None]
    assert len(scored) >= 3
    # Ax winsorized in these rounds (else this test would not test item 3)
    clipped = [
        t.cutoffs["f"] for ts in spy.transforms for t in ts if type(t).__name__ == "Winsorize"
    ]
    assert any(math.isfinite(hi) for _, hi in clipped)
    fits = spy.transforms  # one per BO ask: fit k made the forecasts scored at fit k + 1
    for k, (ctx, (data, block)) in enumerate(scored, start=1):
        assert ctx.rows is not None and spy.units(ctx) == "fit"
        X = data.X.numpy()
        trials = [next(i for i in raw if np.allclose(_trial_x(client, i), x, atol=1e-9)) for x in X]
        values = np.array([raw[i] for i in trials])
        sems = np.full(len(trials), np.nan if sem is None else sem)
        expected, expected_sem = _ax_transform(fits[k - 1], values, sems)
        np.testing.assert_allclose(data.Y.numpy().reshape(-1), expected, rtol=0, atol=1e-9)
        if sem is None:
            assert data.Yvar is None
        else:
            np.testing.assert_allclose(
                data.Yvar.numpy().reshape(-1), expected_sem**2, rtol=1e-9, atol=0
            )
        # the old rows' targets are exactly what that fit's surrogate was handed
        seen = spy.surrogate.state.outcomes["f"].row_rounds
        assert all(seen[(trials[i], f"{trials[i]}_0")] < ctx.round for i in range(block[0]))


def test_the_batch_is_the_trials_no_earlier_fit_saw() -> None:
    """Item 5: trial 5 completes before trial 4; the next fit's batch is {4, 6}, not the
    last rows by position ({5, 6})."""
    client = _client(num_sobol=4)
    spy = _Spy(client)
    for index, params in spy.ask(4).items():
        client.complete_trial(index, raw_data={"f": _heavy(params)})
    first = spy.ask(2)  # trials 4 and 5, fitted on 0-3 (the guard round)
    assert sorted(first) == [4, 5]
    client.complete_trial(5, raw_data={"f": _heavy(first[5])})
    second = spy.ask(1)  # trial 6, fitted on 0-3 and 5
    assert list(second) == [6]
    client.complete_trial(4, raw_data={"f": _heavy(first[4])})
    client.complete_trial(6, raw_data={"f": _heavy(second[6])})
    spy.ask(1)  # fitted on 0-6: the batch since the last fit is trials 4 and 6
    ctx, out = spy.forecasts[-1]
    assert out is not None
    data, block = out
    batch = {
        next(i for i in range(7) if np.allclose(_trial_x(client, i), x, atol=1e-12))
        for x in data.X[block].numpy()
    }
    assert batch == {4, 6}
    before = {
        next(i for i in range(7) if np.allclose(_trial_x(client, i), x, atol=1e-12))
        for x in data.X[: block[0]].numpy()
    }
    assert before == {0, 1, 2, 3, 5}


def test_a_y_map_round_trips_and_maps_like_ax() -> None:
    ymap = YMap((("clip", -math.inf, 2.0), ("affine", 0.5, 3.0)))
    assert YMap.from_dict(ymap.to_dict()) == ymap
    mean, sem = ymap(np.array([1.0, 9.0]), np.array([0.3, np.nan]))
    np.testing.assert_allclose(mean, [0.5 / 3.0, 1.5 / 3.0])
    assert sem[0] == pytest.approx(0.1) and math.isnan(sem[1])


def test_the_record_names_the_units_of_the_branch_that_ran() -> None:
    """Issue 52 item 7: with the rows keyed by trial but no map of last round's fit (a Y
    transform the map does not know, or a state saved without one), the forecast falls
    back to restandardizing the older rows, and the record says so: it said ``"fit"``
    whenever the rows were keyed."""
    client = _client(num_sobol=4)
    spy = _Spy(client)
    state = spy.surrogate.state
    for size in (4, 2, 2, 2):
        for index, params in spy.ask(size).items():
            client.complete_trial(index, raw_data={"f": _heavy(params)})
        if "f" in state.outcomes:
            state.outcomes["f"].ymap = None  # as after a transform the map does not know
    scored = [ctx for ctx, out in spy.forecasts if out is not None]
    assert scored and all(ctx.rows is not None for ctx in scored)
    assert [spy.units(ctx) for ctx in scored] == ["restandardized"] * len(scored)
