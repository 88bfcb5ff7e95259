"""The held-out score: how well each member's last fit forecast the batch that followed.

Under ``criterion="prequential"`` a member is judged by forecasts it could not have fitted
to: at the start of a round, each member's GP is rebuilt at the hyperparameters of its
fit last round and predicts the rows that arrived since, in closed form, in the units and
transform of that fit. :class:`HeldoutScorer` computes those forecasts' log densities and
CRPS; the round (:mod:`.round`) keeps them with the members, and the choice
(:mod:`.choice`) ranks by them. It needs a model builder and no Ax surrogate.
"""

from __future__ import annotations

import logging
import math

import torch
from botorch.utils.datasets import SupervisedDataset
from torch import Tensor

from ax_kernel_discovery.errors import KernelFailure, is_kernel_failure, unexpected
from ax_kernel_discovery.options import HeldoutOptions
from ax_kernel_discovery.population import HeldOut
from ax_kernel_discovery.selection import (
    gaussian_crps,
    gaussian_log_density,
    heldout_predictive,
    prior_covariance,
)
from ax_kernel_discovery.surrogate.fitting import (
    MEMBER_FIT_ATTEMPTS,
    ModelBuilder,
    candidate_model_config,
)
from ax_kernel_discovery.surrogate.state import PastRound, RoundContext
from ax_kernel_discovery.surrogate.steps import HeldoutScores

logger = logging.getLogger(__name__)


class HeldoutScorer:
    """Scores last round's forecasts of each member (``criterion="prequential"``).

    Args:
        options: Its settings (:class:`~ax_kernel_discovery.options.HeldoutOptions`:
            ``fit_timeout``).
        build_model: Builds a kernel's GP at given hyperparameters
            (:class:`~.fitting.ModelBuilder`; no fit is made).
    """

    def __init__(self, options: HeldoutOptions, build_model: ModelBuilder) -> None:
        self.options = options
        self.build_model = build_model

    def score_heldout(self, ctx: RoundContext) -> HeldoutScores:
        """Score each member's last-round forecast of the batch that arrived since.

        The member's GP is rebuilt at the hyperparameters it was fitted to last round (its
        warm start, saved with the state, so a reloaded run scores identically) and the
        new rows are predicted from the rows that fit saw, in closed form, in the units
        and transform of that fit (:meth:`forecast_data`). The score is the forecast's
        log density (and CRPS) at each new row.

        Returns:
            The new forecast scores by member (members without a warm start, or that
            scored this batch already, have none), the units they were scored in
            (``None``: no batch to score) and the members whose forecast failed.
        """
        scored: dict[str, HeldOut] = {}
        last = ctx.past[-1] if ctx.past else None
        forecast = self.forecast_data(ctx, last) if last is not None else None
        if last is None or forecast is None:
            return HeldoutScores()
        data, block = forecast
        failed: list[str] = []
        for member in ctx.population:
            warm = ctx.state.warm.get(member.name)
            if warm is None or any(h.round == last.round for h in member.heldout):
                continue
            config = candidate_model_config(
                member.candidate, self.options.fit_timeout, max_attempts=MEMBER_FIT_ATTEMPTS
            )
            try:
                model = self.build_model(data, ctx.search_space_digest, config, warm, False)
                with torch.no_grad():
                    K, centred = prior_covariance(model)
                    mu, var = heldout_predictive(K, centred, block.to(K.device))
                    std = var.sqrt()
                    logpdf = gaussian_log_density(mu, std, centred[block.to(K.device)])
                    crps = gaussian_crps(mu, std, centred[block.to(K.device)])
                if not (torch.isfinite(logpdf).all() and torch.isfinite(crps).all()):
                    raise KernelFailure("non-finite held-out forecast")
            except Exception as e:  # noqa: BLE001 - an unscored batch is recorded, not raised
                if not is_kernel_failure(e):
                    unexpected(e, f"the held-out score of {member.name}")
                logger.info("held-out score of %s failed: %r", member.name, e)
                failed.append(member.name)
                continue
            scored[member.name] = HeldOut(
                round=last.round, logpdf=logpdf.tolist(), crps=crps.tolist()
            )
        return HeldoutScores(scored, self.units(ctx), tuple(failed))

    @staticmethod
    def units(ctx: RoundContext) -> str:
        """The units :meth:`forecast_data` scores the batch in, as the record names them:
        ``"fit"`` where the rows are keyed by trial and last round's fit left its map
        (:attr:`~.state.OutcomeState.ymap`) and the rows it saw; ``"restandardized"``
        otherwise (the older rows standardized again)."""
        state = ctx.state
        keyed = ctx.rows is not None and state.ymap is not None and bool(state.row_rounds)
        return "fit" if keyed else "restandardized"

    def forecast_data(
        self, ctx: RoundContext, last: PastRound
    ) -> tuple[SupervisedDataset, Tensor] | None:
        """The data last round's fits forecast from, and which of its rows are the batch.

        Returns a dataset whose first rows are those last round's fit saw and whose last
        rows (the returned indices) arrived since, with targets and known noise in the
        units of that fit; ``None`` when there is no batch to score (no new row, or
        fewer than two rows before it).

        * With the rows keyed by trial (:attr:`RoundContext.rows`, kernel discovery's BO
          step): the new rows are those no earlier fit saw, wherever they sit in Ax's
          order (trials complete out of order), and every row is mapped from its raw
          value by Ax's Y transforms *as fitted last round* (Winsorize cutoffs,
          standardization), SEMs included: exactly the targets that fit saw, and the
          batch in its units.
        * Otherwise (no keyed rows, or a Y transform the map does not know): the last
          ``n - last.n`` rows are the batch and the older rows are standardized again
          (Ax's ``StandardizeY``: mean, ``ddof=1`` std), the known noise with them.
        """
        dataset, state, rows = ctx.dataset, ctx.state, ctx.rows
        Yvar = dataset.Yvar
        if self.units(ctx) == "fit":
            assert rows is not None and state.ymap is not None
            old = [i for i, k in enumerate(rows.keys) if k in state.row_rounds]
            new = [i for i, k in enumerate(rows.keys) if k not in state.row_rounds]
            if len(old) < 2 or not new:
                return None
            order = old + new
            mean, sem = state.ymap(rows.raw_mean[order], rows.raw_sem[order])
            X = dataset.X[torch.as_tensor(order, device=dataset.X.device)]
            like = dataset.Y
            Y = torch.as_tensor(mean, dtype=like.dtype, device=like.device).reshape(-1, 1)
            var = None
            if Yvar is not None:
                var = torch.as_tensor(sem**2, dtype=like.dtype, device=like.device).reshape(-1, 1)
                if not torch.isfinite(var).all():
                    return None
            block = torch.arange(len(old), len(order))
        else:
            n = ctx.n
            if not 1 < last.n < n:
                return None
            head = dataset.Y[: last.n].reshape(-1)
            scale = float(head.std(unbiased=True))
            scale = scale if math.isfinite(scale) and scale > 0 else 1.0
            X = dataset.X
            Y = (dataset.Y - head.mean()) / scale
            var = None if Yvar is None else Yvar / scale**2
            block = torch.arange(last.n, n)
        data = SupervisedDataset(
            X=X,
            Y=Y,
            Yvar=var,
            feature_names=dataset.feature_names,
            outcome_names=dataset.outcome_names,
        )
        return data, block


__all__ = ["HeldoutScorer"]
