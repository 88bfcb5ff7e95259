"""A batch portfolio: several members' acquisitions share one BO batch (GP-Hedge style).

A held-out score says how well a kernel *predicts*; what a BO run needs is a kernel whose
acquisition finds better points, and the two agree only weakly (docs/concepts.md). With
``portfolio_size = k > 1`` the batch is split among the first ``k`` members of the choice
order (plus ``portfolio_keep``): each member's points come from its own acquisition
function, with the points of the members before it as pending. At the next round every
member is credited with the progress its points made, relative to the whole batch:

.. math::

    r_m = \\bar z_m - \\bar z, \\qquad z_i = w\\,\\frac{y_i - \\mu}{\\sigma},

the mean standardized, direction-signed value of its points minus that of the batch (in
the units Ax hands the model that round). A member's share of the next batch follows the
Hedge weights of its summed rewards :math:`G_m`, :math:`p_m \\propto \\exp(\\eta G_m)`
(Hoffman, Brochu & de Freitas 2011, "Portfolio Allocation for Bayesian Optimization"),
with one point for every member first, so that every member keeps being credited.

:func:`hedge_weights`, :func:`batch_rewards` and :class:`Portfolio` are the arithmetic;
:class:`Portfolios` keeps each outcome's portfolio of the round (who shares the batch, the
credit of last round's members), and the acquisition
(:class:`~ax_kernel_discovery.surrogate.acquisition.KernelDiscoveryAcquisition`) optimizes
each member's share, through the surrogate's ``portfolio_plan`` and
``record_portfolio_points``.

Example:
    >>> p = Portfolio(["A", "B"], hedge_weights([0.5, 0.0], eta=1.0), models={})
    >>> p.plan(5)
    [('A', 3), ('B', 2)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from botorch.models.model import Model
from torch import Tensor

from ax_kernel_discovery.options import PortfolioOptions
from ax_kernel_discovery.surrogate.choice import Choice, Chooser
from ax_kernel_discovery.surrogate.fitting import FittedKernel
from ax_kernel_discovery.surrogate.round_record import RoundRecord
from ax_kernel_discovery.surrogate.state import OutcomeState, RoundContext, row_digests

__all__ = ["Portfolio", "Portfolios", "batch_rewards", "hedge_weights"]


def hedge_weights(gains: Sequence[float], eta: float) -> list[float]:
    """Hedge probabilities ``exp(eta * G_m) / sum``, computed stably."""
    if not gains:
        return []
    g = np.asarray(gains, dtype=float) * eta
    w = np.exp(g - g.max())
    return (w / w.sum()).tolist()


def batch_rewards(z: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Each member's mean ``z`` minus the mean over all points of the batch.

    Args:
        z: Direction-signed, standardized values of each member's points (higher is
            better).

    Returns:
        ``{member: reward}`` for the members with points; empty when fewer than two
        members had points (nothing to compare).
    """
    groups = {k: np.asarray(v, dtype=float) for k, v in z.items() if len(v)}
    if len(groups) < 2:
        return {}
    batch = float(np.concatenate(list(groups.values())).mean())
    return {k: float(v.mean()) - batch for k, v in groups.items()}


@dataclass
class Portfolio:
    """The members that share a round's batch, their weights and what they have had.

    Attributes:
        names: The members, the chosen (main) one first.
        weights: Their Hedge weights (summing to 1).
        models: Their fitted models, by name (not saved).
        assigned: Points each member generated so far this round (the round's record is
            built with them: its ``portfolio_points``).
        record: The round's record once it is built (:meth:`Portfolios.attach`), where the
            points generated after that are counted too.
        state: The outcome's state, where each member's points wait for their values.
        round: The round whose batch the members share (``None``: not said).
    """

    names: list[str]
    weights: list[float]
    models: Mapping[str, Any]
    assigned: dict[str, int] = field(default_factory=dict)
    record: RoundRecord | None = None
    state: OutcomeState | None = None
    round: int | None = None

    def plan(self, n: int) -> list[tuple[str, int]]:
        """How the next ``n`` points of this round are split (members in order, counts > 0).

        Over the round, every member gets one point first, then the rest follow the
        weights (largest deficit first): ``target_m = 1 + w_m (N - k)`` of the ``N``
        points the round has generated, whether they are asked for at once (a joint
        batch) or one at a time (``Client.get_next_trials``).
        """
        counts = dict.fromkeys(self.names, 0)
        done = sum(self.assigned.get(m, 0) for m in self.names)
        k = len(self.names)
        for step in range(n):
            total = done + step + 1
            given = {m: self.assigned.get(m, 0) + counts[m] for m in self.names}

            def deficit(i: int, total: int = total, given: dict[str, int] = given) -> float:
                m = self.names[i]
                target = (
                    1 + self.weights[i] * (total - k) if total >= k else total * self.weights[i]
                )
                return target - given[m]

            best = max(range(k), key=lambda i: (deficit(i), -i))
            counts[self.names[best]] += 1
        return [(m, counts[m]) for m in self.names if counts[m] > 0]

    def note(self, name: str, count: int) -> None:
        """Record that ``name`` generated ``count`` points."""
        self.assigned[name] = self.assigned.get(name, 0) + count

    @property
    def main(self) -> str:
        """The chosen member."""
        return self.names[0]

    def shares(self) -> dict[str, float]:
        """The weights by member."""
        return {m: float(w) for m, w in zip(self.names, self.weights, strict=True)}


class Portfolios:
    """Each outcome's batch portfolio of this round (``portfolio_size``, ``portfolio_keep``;
    not saved), and the credit of last round's members.

    Args:
        options: Its settings (:class:`~ax_kernel_discovery.options.PortfolioOptions`:
            ``portfolio_size``, ``portfolio_keep``, ``portfolio_eta``).
        chooser: The choice step, whose order ranks the members after the chosen one.
    """

    def __init__(self, options: PortfolioOptions, chooser: Chooser) -> None:
        self.options = options
        self.chooser = chooser
        self.by_outcome: dict[str, Portfolio] = {}

    def __getstate__(self) -> dict[str, Any]:
        # a copy of the surrogate (Ax deep-copies it) carries no round's portfolio
        return {**self.__dict__, "by_outcome": {}}

    def wanted(self, objectives: int) -> bool:
        """Whether rounds share their batch among members (one objective only)."""
        return self.configured and objectives <= 1

    @property
    def configured(self) -> bool:
        """Whether the settings ask for a batch portfolio (``portfolio_size``,
        ``portfolio_keep``)."""
        return self.options.configured

    def check_outcomes(self, outcomes: Sequence[str]) -> None:
        """Refuse a batch portfolio on an experiment that models several outcomes.

        A member is one outcome's model, and its acquisition would replace Ax's model of
        every outcome (a constraint, a tracking metric, another objective) by it: called
        when the acquisition is built, before it generates a point.

        Raises:
            ValueError: When a portfolio is configured and ``outcomes`` has more than one.
        """
        if self.configured and len(outcomes) > 1:
            raise ValueError(
                f"a batch portfolio (portfolio_size={self.options.portfolio_size}, "
                f"portfolio_keep={self.options.portfolio_keep}) shares a batch among the "
                f"members of one outcome, and this experiment models {len(outcomes)} "
                f"outcomes ({', '.join(outcomes)}: several objectives, an outcome "
                "constraint or a tracking metric): set portfolio_size=1 and "
                "portfolio_keep=() for it, or model one outcome"
            )

    def choose(
        self,
        ctx: RoundContext,
        choice: Choice,
        models: Mapping[str, FittedKernel],
        objectives: int,
    ) -> dict[str, float]:
        """The members that share this round's batch: the chosen one, the next best of the
        choice order, and ``portfolio_keep``, with Hedge weights of their gains.

        Returns:
            The members' weights, by name (empty: no portfolio this round).
        """
        self.by_outcome.pop(ctx.outcome, None)
        if choice.guarded or not choice.names or not self.wanted(objectives):
            return {}
        order, _ = self.chooser.choice_order(ctx)
        fitted = {n for n, v in models.items() if v.model is not None}
        names = [choice.names[0]]
        names += [n for n in order if n in fitted and n not in names][
            : self.options.portfolio_size - 1
        ]
        names += [n for n in self.options.portfolio_keep if n in fitted and n not in names]
        if len(names) < 2:
            return {}
        weights = hedge_weights(
            [ctx.state.gains.get(n, 0.0) for n in names], self.options.portfolio_eta
        )
        portfolio = Portfolio(
            names,
            weights,
            {n: models[n].model for n in names},
            state=ctx.state,
            round=ctx.round,
        )
        self.by_outcome[ctx.outcome] = portfolio
        return portfolio.shares()

    def points(self, outcome: str, round_index: int) -> dict[str, int]:
        """The points each member of ``outcome``'s portfolio of round ``round_index`` has
        generated so far (empty: no such portfolio)."""
        portfolio = self.by_outcome.get(outcome)
        if portfolio is None or portfolio.round != round_index:
            return {}
        return dict(portfolio.assigned)

    def attach(self, record: RoundRecord) -> None:
        """The round's record is built: the points its portfolio's members generate from
        now on (the acquisition of a round that ended before it) are counted in it too."""
        portfolio = self.by_outcome.get(record.outcome)
        if portfolio is not None and portfolio.round == record.round:
            portfolio.record = record

    def credit(self, ctx: RoundContext) -> dict[str, float]:
        """Credit last round's portfolio members with the progress their points made.

        Returns:
            Their rewards, by name (empty: nothing to credit).
        """
        points, state = ctx.state.portfolio_points, ctx.state
        state.portfolio_points = {}
        if not points or not ctx.sign:
            return {}
        index = {d: i for i, d in enumerate(row_digests(ctx.dataset.X))}
        y = (ctx.dataset.Y.reshape(-1) * ctx.sign).detach().cpu().double().numpy()
        z = {m: [float(y[index[d]]) for d in ds if d in index] for m, ds in points.items()}
        rewards = batch_rewards(z)
        for name, reward in rewards.items():
            if name in ctx.population.names:
                state.gains[name] = state.gains.get(name, 0.0) + reward
        return rewards

    def plan(self, n: int) -> list[tuple[str, Model, int]] | None:
        """How the next ``n`` points are split among this round's portfolio members
        (``None``: no portfolio; an experiment of several outcomes has none, see
        :meth:`check_outcomes`)."""
        if not self.by_outcome:
            return None
        if len(self.by_outcome) > 1:
            self.check_outcomes(list(self.by_outcome))
        portfolio = next(iter(self.by_outcome.values()))
        return [(name, portfolio.models[name], count) for name, count in portfolio.plan(n)]

    def record_points(self, name: str, X: Tensor) -> None:
        """``name`` generated the points ``X``; they are credited when their values arrive."""
        portfolio = next(iter(self.by_outcome.values()))
        if portfolio.state is not None:
            portfolio.state.portfolio_points.setdefault(name, []).extend(row_digests(X))
        portfolio.note(name, int(X.shape[0]))
        if portfolio.record is not None:
            portfolio.record.count_points(name, int(X.shape[0]))
