"""CandidateAdmission: the checks a proposed kernel passes before it is fitted."""

from __future__ import annotations

import pytest

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.expression import formula, leaf
from ax_kernel_discovery.population import Population, start_candidates
from ax_kernel_discovery.surrogate.admission import CandidateAdmission


def test_a_tree_is_built_once_for_its_check_memory_probe_and_signature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    admission = CandidateAdmission(
        KernelDiscoveryConfig(max_kernel_memory_gb=8.0).admission_options()
    )
    pop = Population(start_candidates(), size=8)
    admission.admit([], pop, 6)  # the members' signatures: cached from now on
    spec = {"op": "sum", "args": [leaf("rbf", "tanh"), leaf("poly2")]}
    cand = KernelCandidate(name="new", formula=formula(spec), origin="offline", spec=spec)
    builds: list[str] = []
    build = KernelCandidate.build

    def counting(self: KernelCandidate, dim: int):  # type: ignore[no-untyped-def]
        builds.append(self.name)
        return build(self, dim)

    monkeypatch.setattr(KernelCandidate, "build", counting)
    assert [c.name for c in admission.admit([cand], pop, 6, n=20).accepted] == ["new"]
    assert builds == ["new"]
    assert cand.key in admission.signatures


def test_a_tree_that_cannot_be_built_is_rejected_with_the_builds_error() -> None:
    admission = CandidateAdmission(KernelDiscoveryConfig().admission_options())
    pop = Population(start_candidates(), size=8)
    bad = KernelCandidate(name="bad", formula="?", origin="offline", spec={"kernel": "nope"})
    admitted = admission.admit([bad], pop, 6)
    assert admitted.accepted == ()
    (rejection,) = admitted.rejected
    assert rejection.name == "bad" and "nope" in rejection.reason
