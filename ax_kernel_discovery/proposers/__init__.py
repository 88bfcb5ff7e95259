"""Kernel proposers: the offline evolution operator (default) and the LLM proposers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ax_kernel_discovery.proposers.base import MemberSummary, Proposal, Proposer
from ax_kernel_discovery.proposers.from_config import proposer_from_config
from ax_kernel_discovery.proposers.offline import OfflineEvolutionProposer

if TYPE_CHECKING:
    from ax_kernel_discovery.config import KernelDiscoveryConfig

__all__ = ["MemberSummary", "OfflineEvolutionProposer", "Proposal", "Proposer", "make_proposer"]


def make_proposer(config: KernelDiscoveryConfig) -> Proposer:
    """The proposer named by ``config.proposer``."""
    if config.proposer in ("offline", "none"):
        return OfflineEvolutionProposer(seed=config.seed, grammar=config.offline_grammar)
    return proposer_from_config(config)
