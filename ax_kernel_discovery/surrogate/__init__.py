"""The kernel-discovery surrogate: Ax's ``Surrogate`` with an evolving population.

Its rooms, from the top (Ax storage of the surrogate is :mod:`ax_kernel_discovery.storage`,
above :mod:`ax_kernel_discovery.strategy`, whose hand-over criterion it also registers):

* :mod:`~ax_kernel_discovery.surrogate.core`: :class:`KernelDiscoverySurrogate`, Ax's hooks
  only: ``model_selection`` hands a round to the runner (``fit`` is Ax's, which calls it
  once per outcome); the views; ``close``;
* :mod:`~ax_kernel_discovery.surrogate.runner`: the round's steps in order (open, propose,
  admit, fit, choose, hand on, end), once for every executor;
* :mod:`~ax_kernel_discovery.surrogate.round`: the steps around the fits (strike, admit,
  hand on, end); :mod:`~ax_kernel_discovery.surrogate.executors`: where the fits run (here,
  in worker processes, in the background while Ax optimizes the acquisition);
* :mod:`~ax_kernel_discovery.surrogate.proposing`: the proposer host (proposer, offline
  stand-in, prefetch, LLM failures);
* :mod:`~ax_kernel_discovery.surrogate.portfolio`: the batch portfolio;
* :mod:`~ax_kernel_discovery.surrogate.choice` (which member the acquisition gets),
  :mod:`~ax_kernel_discovery.surrogate.heldout` (the held-out forecast scores) and
  :mod:`~ax_kernel_discovery.surrogate.admission` (which candidates enter a round);
* :mod:`~ax_kernel_discovery.surrogate.fitting` (fit and score, no choosing);
* :mod:`~ax_kernel_discovery.surrogate.state` (the one thing saved),
  :mod:`~ax_kernel_discovery.surrogate.strike` (the strike rule's verdict) and
  :mod:`~ax_kernel_discovery.surrogate.round_record` (what a round records);
* :mod:`~ax_kernel_discovery.surrogate.acquisition`: the Ax ``Acquisition`` of every
  method and the protocols by which it asks the surrogate (``AcquisitionPartner``,
  ``PortfolioPartner``); :mod:`~ax_kernel_discovery.surrogate.new_rows_qlognei`, kd's qLogNEI;
  :mod:`~ax_kernel_discovery.surrogate.trial_rows`, the rows of each fit (``ShareRows``).
"""

from __future__ import annotations

from ax_kernel_discovery.surrogate.core import KernelDiscoverySurrogate
from ax_kernel_discovery.surrogate.fitting import candidate_model_config
from ax_kernel_discovery.surrogate.round_record import RoundRecord

__all__ = ["KernelDiscoverySurrogate", "RoundRecord", "candidate_model_config"]
