"""Kernel proposers: the offline evolution operator (default) and the LLM proposers.

The proposers a configuration can name are registered in
:data:`~ax_kernel_discovery.proposers.from_config.PROPOSERS`; :func:`make_proposer` builds
the one ``config.proposer`` names.
"""

from __future__ import annotations

from ax_kernel_discovery.proposers.base import Proposal, Proposer
from ax_kernel_discovery.proposers.from_config import PROPOSERS, make_proposer
from ax_kernel_discovery.proposers.offline import OfflineEvolutionProposer

__all__ = ["PROPOSERS", "OfflineEvolutionProposer", "Proposal", "Proposer", "make_proposer"]
