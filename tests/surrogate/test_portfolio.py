"""The batch portfolio (issue 31 item 3): members share a batch, each optimizing its own
acquisition; they are credited with the progress their points made."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from ax.api import Client
from pydantic import ValidationError

from ax_kernel_discovery import (
    KernelDiscoveryConfig,
    kernel_discovery_generation_strategy,
    surrogate_of,
)
from ax_kernel_discovery.surrogate.choice import Choice, Chooser
from ax_kernel_discovery.surrogate.portfolio import (
    Portfolio,
    Portfolios,
    batch_rewards,
    hedge_weights,
)
from ax_kernel_discovery.surrogate.round_record import RoundRecord
from ax_kernel_discovery.surrogate.state import row_digests
from ax_kernel_discovery.surrogate.testing import (
    fake_population,
    fitted_kernels,
    forecasts,
    round_context,
    tiny_gp,
)
from ax_kernel_discovery.testing import TINY_ACQUISITION, acquisitions_built, unit_box_client

torch.set_num_threads(1)

DIM = 3
TINY = TINY_ACQUISITION
CONFIG = {
    "population_size": 4,
    "proposals_per_round": 0,
    "fit_maxiter": 5,
    "portfolio_size": 2,
    "portfolio_keep": ("BOCK",),
}


def _f(params: dict[str, Any]) -> float:
    x = np.array([params[f"x{i}"] for i in range(DIM)])
    return float(np.sum((x - 0.3) ** 2))


def _client(config: dict[str, Any]) -> Client:
    return unit_box_client(DIM, kernel_discovery_generation_strategy(config, num_sobol=5, **TINY))


def _ask_and_tell(client: Client, n: int) -> list[Any]:
    """One ask; returns the models of the acquisition functions built for it."""
    with acquisitions_built() as built:
        trials = client.get_next_trials(max_trials=n)
    for index, params in trials.items():
        client.complete_trial(index, raw_data={"f": _f(params)})
    return [f.model for f in built]


def test_members_share_the_batch_and_are_credited(tmp_path: Path) -> None:
    client = _client(CONFIG)
    _ask_and_tell(client, 5)  # the initial design
    for _ in range(3):
        _ask_and_tell(client, 6)
    surrogate = surrogate_of(client)
    shared = [r for r in surrogate.history if r.portfolio]
    assert shared, "no round shared its batch"
    for rec in shared:
        assert len(rec.portfolio) >= 2 and "BOCK" in rec.portfolio
        assert next(iter(rec.portfolio)) == rec.chosen  # the chosen member leads
        assert sum(rec.portfolio.values()) == pytest.approx(1.0)
        assert sum(rec.portfolio_points.values()) == 6
        assert set(rec.portfolio_points) == set(rec.portfolio)  # every member had points
    # the round after a shared batch credits its members; the rewards, weighted by each
    # member's points, sum to zero (each is its points' mean against the batch's mean)
    credited = [r for r in surrogate.history if r.portfolio_rewards]
    assert credited
    last_shared = {r.round: r for r in shared}
    for rec in credited:
        counts = last_shared[rec.round - 1].portfolio_points
        total = sum(counts[m] * rec.portfolio_rewards[m] for m in rec.portfolio_rewards)
        assert total == pytest.approx(0.0, abs=1e-9)
    state = surrogate.state.outcomes["f"]
    assert state.gains and set(state.gains) <= set(state.population.names)
    # each member's points came from an acquisition function on its own model
    models = _ask_and_tell(client, 6)
    rec = surrogate.history[-1]
    if rec.portfolio:
        fitted = surrogate.fitted_models["f"]
        names = {next(n for n, m in fitted.items() if m is model) for model in models}
        assert names == set(rec.portfolio_points)
    # the gains and the pending points survive Ax's JSON storage
    client.save_to_json_file(str(tmp_path / "run.json"))
    loaded = surrogate_of(Client.load_from_json_file(str(tmp_path / "run.json")))
    restored = loaded.state.outcomes["f"]
    assert restored.gains == state.gains
    assert restored.portfolio_points == state.portfolio_points


def test_a_portfolio_follows_the_hedge_weights_over_a_round() -> None:
    weights = hedge_weights([1.0, 0.0, -1.0], eta=1.0)
    assert weights[0] > weights[1] > weights[2] and sum(weights) == pytest.approx(1.0)
    assert hedge_weights([0.0, 0.0], eta=5.0) == [0.5, 0.5]
    portfolio = Portfolio(["A", "B", "C"], weights, models={})
    joint = dict(portfolio.plan(15))
    assert sum(joint.values()) == 15 and min(joint.values()) >= 1
    assert joint["A"] > joint["B"] > joint["C"]
    one_by_one: dict[str, int] = {}
    for _ in range(15):  # Client.get_next_trials asks one point at a time
        ((name, count),) = portfolio.plan(1)
        portfolio.note(name, count)
        one_by_one[name] = one_by_one.get(name, 0) + count
    assert one_by_one == joint
    assert batch_rewards({"A": [1.0, 3.0], "B": [0.0]}) == {"A": 2 - 4 / 3, "B": -4 / 3}
    assert batch_rewards({"A": [1.0]}) == {}


def test_a_portfolio_needs_the_prequential_criterion_and_no_mixture() -> None:
    with pytest.raises(ValidationError, match="criterion='prequential'"):
        KernelDiscoveryConfig(criterion="loo_crps", portfolio_size=2)
    with pytest.raises(ValidationError, match="choose one"):
        KernelDiscoveryConfig(portfolio_size=2, mixture_top_k=2)


@pytest.mark.parametrize(
    ("objective", "constraints", "outcomes"),
    [("-loss", ["c <= 1.6"], "c, loss"), ("-loss, -c", [], "c, loss")],
)
def test_a_portfolio_with_several_modelled_outcomes_is_refused_before_a_bo_point(
    objective: str, constraints: list[str], outcomes: str
) -> None:
    # issue 52 item 1: with an outcome constraint, a portfolio of one outcome replaced Ax's
    # two-output model list by its single-output member (BoTorch broadcast it: the batch
    # minimized the constraint), and one of each outcome split nothing yet said it did
    def evaluate(params: dict[str, Any]) -> dict[str, float]:
        x = np.array([params[f"x{i}"] for i in range(DIM)])
        return {"loss": float(np.sum((x - 0.3) ** 2)), "c": float(np.sum(x))}

    client = _client(CONFIG)
    client.configure_optimization(objective, outcome_constraints=constraints or None)
    for index, params in client.get_next_trials(max_trials=5).items():
        client.complete_trial(index, raw_data=evaluate(params))
    with pytest.raises(ValueError, match=rf"models 2 outcomes \({outcomes}: .*portfolio_size=1"):
        client.get_next_trials(max_trials=3)
    assert len(client._experiment.trials) == 5  # no BO point was generated


# --- Portfolios on its own: fakes of the round (no Ax, no fit) ----------------------

#: Held-out losses that rank the members SL, RQ, RBF, Matern52, BOCK (tie_break="none").
_LOSSES = {"RBF": 0.6, "Matern52": 0.7, "RQ": 0.5, "BOCK": 0.8, "SL": 0.4}


def _portfolios(**fields: Any) -> Portfolios:
    config = KernelDiscoveryConfig(
        **{"guard_rounds": 0, "keep_kernels": (), "tie_break": "none", **fields}
    )
    return Portfolios(config.portfolio_options(), Chooser(config.choice_options()))


def _ctx(**kwargs: Any) -> Any:
    pop = fake_population({k: forecasts([[v, v + 0.1]]) for k, v in _LOSSES.items()})
    return round_context(pop, past=1, **kwargs)


def _models(ctx: Any, unfitted: tuple[str, ...] = ("Matern52",)) -> dict[str, Any]:
    X, Y = ctx.dataset.X, ctx.dataset.Y
    gps = {k: tiny_gp(X, Y) for k in _LOSSES if k not in unfitted}
    return fitted_kernels(dict.fromkeys(_LOSSES, 0.0), models=gps)


def test_portfolios_are_wanted_when_configured_for_one_objective() -> None:
    assert not _portfolios().wanted(1)
    assert _portfolios(portfolio_size=2).wanted(1) and not _portfolios(portfolio_size=2).wanted(2)
    assert _portfolios(portfolio_keep=("BOCK",)).wanted(1)


def test_the_portfolio_is_the_choice_the_next_fitted_in_order_and_the_kept() -> None:
    ctx = _ctx()
    ctx.state.gains = {"SL": 1.0, "BOCK": -0.5, "RBF": 3.0}
    models = _models(ctx)
    portfolios = _portfolios(portfolio_size=2, portfolio_keep=("BOCK",), portfolio_eta=2.0)
    shared = portfolios.choose(ctx, Choice(names=["RQ"]), models, objectives=1)
    # RQ chosen; SL is the best of the rest of the order; BOCK is kept. Hedge weights
    # exp(2 G) / sum over (0, 1, -0.5)
    e = [1.0, math.exp(2.0), math.exp(-1.0)]
    shares = {"RQ": e[0] / sum(e), "SL": e[1] / sum(e), "BOCK": e[2] / sum(e)}
    assert list(shared) == ["RQ", "SL", "BOCK"]
    assert shared == pytest.approx(shares, rel=1e-12)
    plan = portfolios.plan(6)
    assert plan is not None and sum(count for _, _, count in plan) == 6
    assert all(model is models[name].model for name, model, _ in plan)
    # SL's fit failed: the next fitted member in the order, RBF (Matern52 has no model)
    ctx = _ctx()
    shared = portfolios.choose(
        ctx, Choice(names=["RQ"]), _models(ctx, ("SL", "Matern52")), objectives=1
    )
    assert list(shared) == ["RQ", "RBF", "BOCK"]


def test_no_portfolio_for_a_guard_round_several_objectives_or_one_fitted_member() -> None:
    portfolios = _portfolios(portfolio_size=3)
    ctx = _ctx()
    portfolios.choose(ctx, Choice(names=["RQ"]), _models(ctx), objectives=1)
    assert portfolios.plan(2) is not None  # last round's, dropped by each later choice
    cases = [
        (Choice(names=[], guarded=True), (), 1),
        (Choice(names=["RQ"]), (), 2),
        (Choice(names=["RQ"]), tuple(k for k in _LOSSES if k != "RQ"), 1),
    ]
    for choice, unfitted, objectives in cases:
        ctx = _ctx()
        shared = portfolios.choose(ctx, choice, _models(ctx, unfitted), objectives=objectives)
        assert portfolios.plan(2) is None and shared == {}


def test_points_are_credited_against_the_batch_when_their_values_arrive() -> None:
    X = torch.rand(8, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    Y = torch.tensor([[0.3], [-1.2], [0.8], [2.0], [-0.4], [0.1], [1.5], [-2.0]], dtype=X.dtype)
    portfolios = _portfolios(portfolio_size=2)
    ctx = _ctx(X=X[:4], Y=Y[:4])
    portfolios.choose(ctx, Choice(names=["RQ"]), _models(ctx), objectives=1)
    portfolios.record_points("RQ", X[4:6])
    portfolios.record_points("SL", X[6:7])
    portfolios.record_points("RQ", X[7:8])
    assert portfolios.points(ctx.outcome, ctx.round) == {"RQ": 3, "SL": 1}
    assert portfolios.points(ctx.outcome, ctx.round + 1) == {}  # another round's: none
    # once the round's record is built (with those points), later points count in it too
    rec = RoundRecord(
        round=ctx.round,
        outcome=ctx.outcome,
        n=4,
        dim=2,
        portfolio_points=portfolios.points(ctx.outcome, ctx.round),
    )
    portfolios.attach(rec)
    portfolios.record_points("SL", X[:1])
    assert rec.portfolio_points == {"RQ": 3, "SL": 2}
    state_points = {k: len(v) for k, v in ctx.state.portfolio_points.items()}
    assert state_points == {"RQ": 3, "SL": 2}
    ctx.state.portfolio_points["SL"].pop()  # undone: the credit below is of the batch above
    state = ctx.state
    state.gains = {"SL": 0.25}
    state.portfolio_points["Gone"] = row_digests(X[:1])  # a member dropped since
    state.portfolio_points["SL"] += ["0" * 16]  # a point whose value never arrived
    # the next round: minimization (sign -1), so z = -y; the batch's mean over all points
    nxt = round_context(state.population, past=2, X=X, Y=Y, sign=-1.0)
    nxt.state = state
    credited = _portfolios(portfolio_size=2).credit(nxt)
    z = {"RQ": [0.4, -0.1, 2.0], "SL": [-1.5], "Gone": [-0.3]}
    batch = sum(sum(v) for v in z.values()) / 5
    rewards = {k: sum(v) / len(v) - batch for k, v in z.items()}
    assert credited == pytest.approx(rewards, rel=1e-12)
    assert state.gains == pytest.approx({"RQ": rewards["RQ"], "SL": 0.25 + rewards["SL"]})
    assert state.portfolio_points == {}  # credited once


def test_nothing_is_credited_before_the_objectives_direction_is_known() -> None:
    X = torch.rand(4, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    ctx = _ctx(X=X, Y=X.sum(-1, keepdim=True), sign=None)
    ctx.state.portfolio_points = {"RQ": row_digests(X[:2]), "SL": row_digests(X[2:])}
    assert _portfolios(portfolio_size=2).credit(ctx) == {}
    assert ctx.state.gains == {}
    assert ctx.state.portfolio_points == {}
