"""HeldoutScorer on its own: last round's forecasts of the new batch, scored against a
hand computation (BoTorch's posterior of a GP fitted on the older rows, and the CRPS as
the integral of the squared difference of the forecast's and the observation's CDFs),
with fakes of the round (:mod:`ax_kernel_discovery.surrogate.testing`): no Ax, no fit."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import Tensor

from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.surrogate.heldout import HeldoutScorer
from ax_kernel_discovery.surrogate.state import PastRound, RoundContext, warm_parameters
from ax_kernel_discovery.surrogate.testing import (
    TinyGPBuilder,
    fake_population,
    forecasts,
    round_context,
    tiny_gp,
)
from ax_kernel_discovery.surrogate.trial_rows import FitRows, YMap

N, OLD, DIM = 10, 7, 2
#: Each member's fit of last round (lengthscale, noise, constant mean).
FITS = {"RBF": (0.2, 0.05, 0.1), "SL": (0.6, 0.3, -0.2), "RQ": (0.35, 0.1, 0.0)}


def _data() -> tuple[Tensor, Tensor]:
    X = torch.quasirandom.SobolEngine(DIM, scramble=True, seed=3).draw(N, dtype=torch.float64)
    y = 3.0 + 2.0 * torch.sin(5.0 * X[:, 0]) + X[:, 1]
    return X, y.unsqueeze(-1)


def _warm(X: Tensor, Y: Tensor, Yvar: Tensor | None = None) -> dict[str, dict[str, Tensor]]:
    """Last round's fitted parameters of each member (float32, as a state keeps them)."""
    return {
        name: warm_parameters(tiny_gp(X, Y, Yvar, lengthscale=ls, noise=noise, constant=c))
        for name, (ls, noise, c) in FITS.items()
    }


def _crps(mean: Tensor, std: Tensor, y: Tensor) -> Tensor:
    """CRPS by its definition, the integral of ``(F(x) - 1{x >= y})^2`` (trapezoids on
    each side of ``y``, where the integrand is smooth)."""
    out = []
    for m, s, v in zip(mean.tolist(), std.tolist(), y.tolist(), strict=True):
        normal = torch.distributions.Normal(m, s)
        below = torch.linspace(m - 12 * s, v, 20001, dtype=torch.float64)
        above = torch.linspace(v, m + 12 * s, 20001, dtype=torch.float64)
        cdf_below, cdf_above = normal.cdf(below), normal.cdf(above)
        total = torch.trapezoid(cdf_below**2, below) + torch.trapezoid((1 - cdf_above) ** 2, above)
        out.append(float(total))
    return torch.tensor(out, dtype=torch.float64)


def _expected(
    warm: dict[str, Tensor],
    X: Tensor,
    Y: Tensor,
    new: slice,
    Yvar: Tensor | None = None,
) -> tuple[list[float], list[float]]:
    """A member's forecast of rows ``new`` by its fit on the rows before: BoTorch's
    posterior with the new rows' noise (their known noise, or the fitted one)."""
    old = slice(0, new.start)
    model = tiny_gp(X[old], Y[old], None if Yvar is None else Yvar[old])
    model.load_state_dict(warm, strict=False)
    with torch.no_grad():
        post = model.posterior(X[new])
        noise = Yvar[new].reshape(-1) if Yvar is not None else model.likelihood.noise
        mean = post.mean.reshape(-1)
        std = (post.variance.reshape(-1) + noise).sqrt()
    y = Y[new].reshape(-1)
    logpdf = torch.distributions.Normal(mean, std).log_prob(y)
    return logpdf.tolist(), _crps(mean, std, y).tolist()


def _scorer(builder: TinyGPBuilder | None = None) -> HeldoutScorer:
    return HeldoutScorer(KernelDiscoveryConfig().heldout_options(), builder or TinyGPBuilder())


def _context(**kwargs: object) -> RoundContext:
    X, Y = _data()
    pop = fake_population({name: [] for name in FITS})
    return round_context(pop, [PastRound(0, OLD)], X=X, Y=Y, warm=_warm(X[:OLD], Y[:OLD]), **kwargs)  # type: ignore[arg-type]


def test_each_members_forecast_of_the_new_rows_is_scored_in_restandardized_units() -> None:
    ctx = _context()
    builder = TinyGPBuilder()
    found = _scorer(builder).score_heldout(ctx)
    scored = found.scores
    # the older rows standardized again (mean, ddof=1 std): the units of last round's fit
    X, Y = _data()
    head = Y[:OLD]
    Ys = (Y - head.mean()) / head.std()
    assert found.units == "restandardized" and not found.failed
    assert set(scored) == set(FITS)
    for name, h in scored.items():
        logpdf, crps = _expected(ctx.state.warm[name], X, Ys, slice(OLD, N))
        assert h.round == 0 and len(h.logpdf) == N - OLD
        assert h.logpdf == pytest.approx(logpdf, rel=1e-8, abs=1e-10)
        assert h.crps == pytest.approx(crps, rel=1e-6, abs=1e-8)
    # built on all rows at the member's warm start, never fitted
    assert builder.calls == [(name, N, False) for name in FITS]
    # the members' forecasts differ: the scores are each member's own
    assert len({round(sum(h.logpdf), 6) for h in scored.values()}) == len(FITS)


def test_members_without_a_forecast_to_score_or_whose_forecast_fails_are_skipped() -> None:
    ctx = _context()
    del ctx.state.warm["SL"]  # no fit last round: no forecast
    ctx.population.get("RQ").heldout = forecasts([[0.1, 0.2, 0.3]], last_round=0)  # scored
    found = _scorer(TinyGPBuilder(fail=["RBF"])).score_heldout(ctx)
    assert found.scores == {} and found.failed == ("RBF",)
    # a forecast that is not finite is a failure too
    ctx = _context()
    ctx.state.warm["SL"]["covar_module.raw_lengthscale"].fill_(float("nan"))
    found = _scorer().score_heldout(ctx)
    assert set(found.scores) == {"RBF", "RQ"} and found.failed == ("SL",)


@pytest.mark.parametrize(
    "past", [[], [PastRound(0, N)], [PastRound(0, 1)]], ids=["first", "no-new-row", "one-old-row"]
)
def test_nothing_is_scored_without_a_batch_after_two_older_rows(past: list[PastRound]) -> None:
    X, Y = _data()
    ctx = round_context(
        fake_population({name: [] for name in FITS}), past, X=X, Y=Y, warm=_warm(X, Y)
    )
    builder = TinyGPBuilder()
    found = _scorer(builder).score_heldout(ctx)
    assert found.scores == {} and found.units is None and found.failed == ()
    assert builder.calls == []


def test_with_rows_keyed_by_trial_the_batch_is_the_unseen_rows_in_the_fits_units() -> None:
    """Trials 3 and 6 arrived after last round's fit (out of order); every row is mapped
    from its raw value by that fit's map (clip, then standardize), its SEM with it."""
    X, _ = _data()
    rng = np.random.default_rng(0)
    raw = rng.normal(5.0, 2.0, N)
    raw[2] = 40.0  # clipped at 9
    sem = np.full(N, 0.2)
    keys = [(i, f"{i}_0") for i in range(N)]
    new = [3, 6]
    old = [i for i in range(N) if i not in new]
    ymap = YMap((("clip", -math.inf, 9.0), ("affine", 5.0, 2.0)))
    mean, mapped_sem = ymap(raw, sem)
    Y = torch.as_tensor(mean, dtype=torch.float64).reshape(-1, 1)
    Yvar = torch.as_tensor(mapped_sem**2, dtype=torch.float64).reshape(-1, 1)
    order = old + new
    ctx = round_context(
        fake_population({name: [] for name in FITS}),
        [PastRound(0, len(old))],
        X=X,
        Y=torch.zeros(N, 1, dtype=torch.float64),  # today's units are not the fit's
        Yvar=Yvar,
        warm=_warm(X[old], Y[old], Yvar[old]),
        rows=FitRows(keys, raw, sem, np.zeros(N), ymap=None),
    )
    ctx.state.ymap = ymap
    ctx.state.row_rounds = {keys[i]: 0 for i in old}
    scorer = _scorer()
    data, block = scorer.forecast_data(ctx, ctx.past[-1])  # type: ignore[misc]
    assert block.tolist() == [len(old), len(old) + 1]
    torch.testing.assert_close(data.X, X[order])
    torch.testing.assert_close(data.Y, Y[order])
    torch.testing.assert_close(data.Yvar, Yvar[order])
    assert float(data.Y.max()) == pytest.approx(2.0)  # the clipped row, (9 - 5) / 2
    found = scorer.score_heldout(ctx)
    scored = found.scores
    assert found.units == "fit" and set(scored) == set(FITS)
    for name, h in scored.items():
        logpdf, crps = _expected(
            ctx.state.warm[name], X[order], Y[order], slice(len(old), N), Yvar[order]
        )
        assert h.logpdf == pytest.approx(logpdf, rel=1e-8, abs=1e-10)
        assert h.crps == pytest.approx(crps, rel=1e-6, abs=1e-8)


def test_keyed_rows_without_the_fits_map_are_restandardized_and_recorded_so() -> None:
    """Rows keyed by trial, but no map of last round's fit (a Y transform the map does
    not know): the last rows by position are the batch, the older ones standardized
    again, and the record says ``"restandardized"``."""
    X, Y = _data()
    keys = [(i, f"{i}_0") for i in range(N)]
    raw = Y.reshape(-1).numpy()
    rows = FitRows(keys, raw, np.full(N, np.nan), raw, ymap=None)
    pop = fake_population({name: [] for name in FITS})
    ctx = round_context(pop, [PastRound(0, OLD)], X=X, Y=Y, warm=_warm(X, Y), rows=rows)
    ctx.state.row_rounds = {keys[i]: 0 for i in range(OLD)}
    assert HeldoutScorer.units(ctx) == "restandardized"
    with_map = round_context(pop, [PastRound(0, OLD)], X=X, Y=Y, rows=rows)
    with_map.state.row_rounds, with_map.state.ymap = ctx.state.row_rounds, YMap()
    assert HeldoutScorer.units(with_map) == "fit"
    found = _scorer().score_heldout(ctx)
    scored = found.scores
    assert found.units == "restandardized" and set(scored) == set(FITS)
    Ys = (Y - Y[:OLD].mean()) / Y[:OLD].std()
    logpdf, _ = _expected(ctx.state.warm["RBF"], X, Ys, slice(OLD, N))
    assert scored["RBF"].logpdf == pytest.approx(logpdf, rel=1e-8, abs=1e-10)
