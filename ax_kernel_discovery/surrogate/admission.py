"""Which proposed kernels join a round (step 3), and the Gram diversity of a set of kernels.

:class:`CandidateAdmissionMixin` holds the steps of
:class:`~ax_kernel_discovery.surrogate.KernelDiscoverySurrogate` that check the
proposer's candidates before any is fitted: shapes, ``diag``, gradients, PSD and time
(untrusted code in a sandboxed subprocess), the memory limit, and functional duplicates
(by the cosine similarity of their Gram matrices on shared reference points).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.diversity import (
    cosine_similarity,
    diversity,
    gram_signature,
    reference_points,
)
from ax_kernel_discovery.memory import probe_kernel_memory
from ax_kernel_discovery.population import Population
from ax_kernel_discovery.sandbox.validate import validate_candidate
from ax_kernel_discovery.surrogate.round_record import RoundRecord


class CandidateAdmissionMixin:
    """The validation and deduplication step of a round of kernel discovery.

    Mixed into :class:`~ax_kernel_discovery.surrogate.KernelDiscoverySurrogate`, which
    holds the state these steps read and update (declared below for type checkers).
    """

    config: KernelDiscoveryConfig
    #: Dedup fingerprints by candidate key: a cache, recomputed after a reload.
    _signatures: dict[str, Tensor]

    def _validate(
        self,
        candidates: list[KernelCandidate],
        pop: Population,
        dim: int,
        rec: RoundRecord,
        n: int = 0,
        device: torch.device | str = "cpu",
    ) -> list[KernelCandidate]:
        """The candidates that pass validation, the memory limit and deduplication.

        Validation and the dedup Gram matrices run on ``device``, the run's device, so
        that a kernel is admitted on a GPU exactly when it works there. Every other
        candidate is recorded in ``rec.rejected`` with its stage and reason.
        """
        device = str(device)
        accepted: list[KernelCandidate] = []
        points = reference_points(dim, n=40, seed=self.config.seed).to(device)
        for member in pop:
            if member.candidate.key not in self._signatures:
                try:
                    self._signatures[member.candidate.key] = gram_signature(
                        member.candidate.build(dim).to(device=device, dtype=torch.float64),
                        points,
                    )
                except Exception:  # noqa: BLE001 - signatures are best effort for old members
                    pass
        for cand in candidates:
            if (
                cand.name in pop
                or pop.has_key(cand.key)
                or any(c.key == cand.key for c in accepted)
            ):
                rec.rejected.append(
                    Rejection(
                        name=cand.name,
                        stage="duplicate",
                        reason="same kernel already in population",
                    )
                )
                continue
            result = validate_candidate(
                cand, dim, fit_timeout=self.config.fit_timeout, device=device
            )
            if not result.ok:
                rec.rejected.append(
                    Rejection(
                        name=cand.name,
                        stage=result.stage or "validation",
                        reason=result.reason or "invalid",
                        formula=cand.formula,
                    )
                )
                continue
            memory = self._memory_rejection(cand, dim, n)
            if memory is not None:
                rec.rejected.append(memory)
                continue
            try:
                sig = gram_signature(cand.build(dim).to(device=device, dtype=torch.float64), points)
            except Exception as e:  # noqa: BLE001
                rec.rejected.append(
                    Rejection(name=cand.name, stage="validation", reason=f"could not build: {e!r}")
                )
                continue
            # compare with the current members and this round's accepted kernels only
            # (``_signatures`` is a cache that also holds kernels dropped long ago)
            live = [m.candidate.key for m in pop] + [c.key for c in accepted]
            twin = next(
                (
                    k
                    for k in live
                    if k in self._signatures
                    and cosine_similarity(sig, self._signatures[k]) > self.config.dedup_threshold
                ),
                None,
            )
            if twin is not None:
                rec.rejected.append(
                    Rejection(
                        name=cand.name,
                        stage="duplicate",
                        reason="Gram matrix equals an existing member's (cosine > "
                        f"{self.config.dedup_threshold})",
                    )
                )
                continue
            self._signatures[cand.key] = sig
            accepted.append(cand)
        return accepted

    def _memory_rejection(self, cand: KernelCandidate, dim: int, n: int) -> Rejection | None:
        """A rejection when the kernel's largest intermediate would pass the memory limit.

        Measured by :func:`~ax_kernel_discovery.memory.probe_kernel_memory` at the run's
        ``D``, extrapolated to ``max(2 n, memory_probe_n)`` points (room for the run to grow).
        """
        limit = self.config.max_kernel_memory_gb
        if limit is None:
            return None
        n_probe = max(2 * n, self.config.memory_probe_n)
        try:
            probe = probe_kernel_memory(cand.build(dim), dim, n_probe)
        except Exception as e:  # noqa: BLE001 - the validator already ran it; be safe
            return Rejection(name=cand.name, stage="memory", reason=f"probe failed: {e!r}"[:300])
        if probe.predicted_bytes <= limit * 1e9:
            return None
        return Rejection(
            name=cand.name,
            stage="memory",
            reason=f"{probe.describe(n_probe, dim)} > max_kernel_memory_gb={limit}",
            formula=cand.formula,
        )

    def _diversity(self, keys: list[str]) -> float | None:
        """The paper's Gram-matrix diversity of the kernels with these keys."""
        sigs = [self._signatures[k] for k in keys if k in self._signatures]
        return diversity(sigs) if len(sigs) > 1 else None


__all__ = ["CandidateAdmissionMixin"]
