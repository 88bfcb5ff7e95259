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

This module is the arithmetic; the surrogate holds the portfolio of a round and the
acquisition (:class:`~ax_kernel_discovery.surrogate.acquisition.KernelDiscoveryAcquisition`)
optimizes each member's share.

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

__all__ = ["Portfolio", "batch_rewards", "hedge_weights"]


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
        assigned: Points each member generated so far this round.
        record: The round's record, where the points each member generated are counted.
    """

    names: list[str]
    weights: list[float]
    models: Mapping[str, Any]
    assigned: dict[str, int] = field(default_factory=dict)
    record: Any = None

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
