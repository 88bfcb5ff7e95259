"""Which proposed kernels join a round (step 3), and the Gram diversity of a set of kernels.

:class:`CandidateAdmission` is a collaborator of
:class:`~ax_kernel_discovery.surrogate.KernelDiscoverySurrogate`: it checks the
proposer's candidates before any is fitted: shapes, ``diag``, gradients, PSD and time
(untrusted code in a sandboxed subprocess), the memory limit, and functional duplicates
(by the cosine similarity of their Gram matrices on shared reference points). An
expression-tree candidate is built once for all three checks. It keeps one cache, the
Gram signatures by candidate key, and needs no Ax surrogate.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.diversity import (
    cosine_similarity,
    diversity,
    gram_signature,
    reference_points,
)
from ax_kernel_discovery.errors import is_kernel_failure, rejection_stage, unexpected
from ax_kernel_discovery.memory import probe_kernel_memory
from ax_kernel_discovery.options import AdmissionOptions
from ax_kernel_discovery.population import Population
from ax_kernel_discovery.sandbox.validate import validate_candidate
from ax_kernel_discovery.surrogate.steps import Admitted


class CandidateAdmission:
    """The validation and deduplication step of a round of kernel discovery.

    Args:
        options: The settings it reads (``fit_timeout``, ``dedup_threshold``,
            ``max_kernel_memory_gb``, ``memory_probe_n``, ``seed``; the config's
            :meth:`~ax_kernel_discovery.config.KernelDiscoveryConfig.admission_options`).

    Attributes:
        signatures: Dedup fingerprints by candidate key: a cache, recomputed after a
            reload (they depend only on the kernel and the input dimension).
    """

    def __init__(self, options: AdmissionOptions) -> None:
        self.options = options
        self.signatures: dict[str, Tensor] = {}

    def admit(
        self,
        candidates: list[KernelCandidate],
        pop: Population,
        dim: int,
        n: int = 0,
        device: torch.device | str = "cpu",
    ) -> Admitted:
        """The candidates that pass validation, the memory limit and deduplication.

        Validation and the dedup Gram matrices run on ``device``, the run's device, so
        that a kernel is admitted on a GPU exactly when it works there.

        Returns:
            The accepted candidates, and every other one's rejection with its stage and
            reason, in the proposer's order.
        """
        device = str(device)
        accepted: list[KernelCandidate] = []
        rejected: list[Rejection] = []
        points = reference_points(dim, n=40, seed=self.options.seed).to(device)
        for member in pop:
            if member.candidate.key not in self.signatures:
                try:
                    self.signatures[member.candidate.key] = gram_signature(
                        member.candidate.build(dim).to(device=device, dtype=torch.float64),
                        points,
                    )
                except Exception as e:  # noqa: BLE001 - signatures are best effort for old members
                    if not is_kernel_failure(e):
                        unexpected(e, f"the Gram signature of member {member.name}")
        for cand in candidates:
            if (
                cand.name in pop
                or pop.has_key(cand.key)
                or any(c.key == cand.key for c in accepted)
            ):
                rejected.append(
                    Rejection(
                        name=cand.name,
                        stage="duplicate",
                        reason="same kernel already in population",
                    )
                )
                continue
            build = _BuildOnce(cand.build)  # built once for every check in this process
            result = validate_candidate(
                cand, dim, factory=build, fit_timeout=self.options.fit_timeout, device=device
            )
            if not result.ok:
                rejected.append(
                    Rejection(
                        name=cand.name,
                        stage=result.stage or "validation",
                        reason=result.reason or "invalid",
                        formula=cand.formula,
                    )
                )
                continue
            memory = self.memory_rejection(cand, dim, n, build)
            if memory is not None:
                rejected.append(memory)
                continue
            try:
                sig = gram_signature(build(dim).to(device=device, dtype=torch.float64), points)
            except Exception as e:  # noqa: BLE001 - a kernel failure is a recorded rejection
                stage = rejection_stage(e, "validation", "the Gram signature")
                rejected.append(
                    Rejection(name=cand.name, stage=stage, reason=f"could not build: {e!r}")
                )
                continue
            # compare with the current members and this round's accepted kernels only
            # (``signatures`` is a cache that also holds kernels dropped long ago)
            live = [m.candidate.key for m in pop] + [c.key for c in accepted]
            twin = next(
                (
                    k
                    for k in live
                    if k in self.signatures
                    and cosine_similarity(sig, self.signatures[k]) > self.options.dedup_threshold
                ),
                None,
            )
            if twin is not None:
                rejected.append(
                    Rejection(
                        name=cand.name,
                        stage="duplicate",
                        reason="Gram matrix equals an existing member's (cosine > "
                        f"{self.options.dedup_threshold})",
                    )
                )
                continue
            self.signatures[cand.key] = sig
            accepted.append(cand)
        return Admitted(tuple(accepted), tuple(rejected))

    def memory_rejection(
        self,
        cand: KernelCandidate,
        dim: int,
        n: int,
        build: Callable[[int], Kernel] | None = None,
    ) -> Rejection | None:
        """A rejection when the kernel's largest intermediate would pass the memory limit.

        Measured by :func:`~ax_kernel_discovery.memory.probe_kernel_memory` at the run's
        ``D``, extrapolated to ``max(2 n, memory_probe_n)`` points (room for the run to grow),
        on the kernel ``build`` gives (default: a fresh ``cand.build``).
        """
        limit = self.options.max_kernel_memory_gb
        if limit is None:
            return None
        n_probe = max(2 * n, self.options.memory_probe_n)
        try:
            probe = probe_kernel_memory((build or cand.build)(dim), dim, n_probe)
        except Exception as e:  # noqa: BLE001 - the validator already ran it; be safe
            stage = rejection_stage(e, "memory", "the memory probe")
            return Rejection(name=cand.name, stage=stage, reason=f"probe failed: {e!r}"[:300])
        if probe.predicted_bytes <= limit * 1e9:
            return None
        return Rejection(
            name=cand.name,
            stage="memory",
            reason=f"{probe.describe(n_probe, dim)} > max_kernel_memory_gb={limit}",
            formula=cand.formula,
        )

    def diversity(self, keys: list[str]) -> float | None:
        """The paper's Gram-matrix diversity of the kernels with these keys."""
        sigs = [self.signatures[k] for k in keys if k in self.signatures]
        return diversity(sigs) if len(sigs) > 1 else None


class _BuildOnce:
    """``build`` called at most once: later calls return the same kernel (or raise the
    same error), so that the checks, the memory probe and the Gram signature of a
    candidate share one build."""

    def __init__(self, build: Callable[[int], Kernel]) -> None:
        self._build = build
        self._kernel: Kernel | None = None
        self._error: Exception | None = None

    def __call__(self, dim: int) -> Kernel:
        if self._kernel is None and self._error is None:
            try:
                self._kernel = self._build(dim)
            except Exception as e:  # noqa: BLE001 - re-raised to every caller
                self._error = e
        if self._error is not None:
            raise self._error
        assert self._kernel is not None
        return self._kernel


__all__ = ["CandidateAdmission"]
