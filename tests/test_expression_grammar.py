"""The extended kernel grammar: the paper's discovered kernels, the validator, the offline default."""

from __future__ import annotations

import pytest
import torch

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import (
    PAPER_KERNELS,
    WARPS,
    build_kernel,
    canonical,
    formula,
    validate_spec,
)
from ax_kernel_discovery.kernels import LEAVES
from ax_kernel_discovery.population import Population, start_candidates
from ax_kernel_discovery.proposers.offline import OfflineEvolutionProposer
from ax_kernel_discovery.validation import check_kernel


def _gram(spec: dict, dim: int, n: int = 40) -> torch.Tensor:
    torch.manual_seed(0)
    X = torch.rand(n, dim, dtype=torch.float64)
    with torch.no_grad():
        return build_kernel(spec, dim).double()(X).to_dense()


@pytest.mark.parametrize("name", sorted(PAPER_KERNELS))
def test_paper_kernel_is_expressible_builds_and_is_psd(name: str) -> None:
    spec = PAPER_KERNELS[name]
    validate_spec(spec)
    K = _gram(spec, dim=12)
    assert K.shape == (40, 40)
    assert torch.allclose(K, K.T)
    assert torch.linalg.eigvalsh(K).min() > -1e-8
    cand = KernelCandidate(name=name, formula=formula(spec), spec=spec)
    result = check_kernel(cand.build, 12, check_fit=False)
    assert result.ok, result.reason


def test_paper_kernels_use_the_extended_grammar() -> None:
    text = " ".join(formula(s) for s in PAPER_KERNELS.values())
    assert "Bezier" in text and "rho(x)" in text and "tanh" in text


@pytest.mark.parametrize("kernel", sorted(LEAVES))
@pytest.mark.parametrize("warp", ["identity", "bezier", "radius", "direction"])
def test_every_new_leaf_and_feature_map_is_psd(kernel: str, warp: str) -> None:
    K = _gram({"kernel": kernel, "warp": warp, "ard": True}, dim=5, n=25)
    assert torch.isfinite(K).all()
    assert torch.linalg.eigvalsh(K).min() > -1e-7 * K.diagonal().abs().max()


@pytest.mark.parametrize("other", sorted(LEAVES))
def test_sums_with_linear_pass_the_validator(other: str) -> None:
    # linear + a rank-deficient kernel (cosine, linear, SL in few dimensions) used to
    # fail: GPyTorch's lazy low-rank linear Gram made linear_operator factor the other
    # summand (as the study's LLM run found with cosine + linear@tanh)
    spec = {"op": "sum", "args": [{"kernel": other}, {"kernel": "linear", "warp": "tanh"}]}
    result = check_kernel(lambda d: build_kernel(spec, d), 6, check_fit=False)
    assert result.ok, result.reason


def test_feature_map_parameters_get_gradients() -> None:
    spec = {"kernel": "poly2", "warp": "bezier", "ard": True}
    kernel = build_kernel(spec, 4).double()
    X = torch.rand(10, 4, dtype=torch.float64)
    kernel(X).to_dense().sum().backward()
    control = kernel.base_kernel.control
    assert control.grad is not None and control.grad.abs().sum() > 0


@pytest.mark.parametrize(
    ("tree", "reason"),
    [
        ({"kernel": ["rbf"]}, "unknown kernel"),
        ({"kernel": "rbf", "warp": {"a": 1}}, "unknown warp"),
        ({"kernel": "rbf", "ard": "yes"}, "'ard' must be true or false"),
        ({"kernel": "rbf", "lengthscale": 0.3}, "unknown field"),
        ({"op": "sum", "args": [{"kernel": "rbf"}]}, "at least two"),
        ({"op": ["sum"], "args": []}, "unknown operator"),
        ({"op": "sum", "args": [{"kernel": "rbf"}, "rq"]}, "must be a dict"),
        ({"kernel": "bock", "ard": False}, "isotropic"),
        ("rbf", "must be a dict"),
    ],
)
def test_validator_names_the_reason_and_never_crashes(tree: object, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        validate_spec(tree)  # type: ignore[arg-type]


def test_canonical_fills_defaults_so_keys_agree() -> None:
    short = {"op": "sum", "args": [{"kernel": "rbf"}, {"kernel": "imq", "warp": "radius"}]}
    full = canonical(short)
    assert full["args"][0] == {"kernel": "rbf", "warp": "identity", "ard": True}
    a = KernelCandidate(name="a", formula="", spec=full)
    b = KernelCandidate(
        name="b",
        formula="",
        spec={"op": "sum", "args": [full["args"][1], full["args"][0]]},
    )
    assert a.key == b.key


def _offline_names(grammar: str, seed: int = 0, rounds: int = 4) -> list[list[str]]:
    pop = Population(start_candidates(), size=10)
    proposer = OfflineEvolutionProposer(seed=seed, grammar=grammar)  # type: ignore[arg-type]
    out = []
    for r in range(rounds):
        proposal = proposer.propose(pop.summaries(), dim=10, num_proposals=4, round_index=r)
        out.append([c.name for c in proposal.candidates])
        for c in proposal.candidates:
            pop.add(c, r)
        for i, m in enumerate(pop):
            pop.set_score(m.name, float(i))
        pop.truncate()
    return out


def test_offline_default_proposals_are_unchanged_by_the_extended_grammar() -> None:
    # recorded with the operator before the grammar was extended (seed 0)
    first = _offline_names("classic", rounds=1)[0]
    assert first == [
        "off_r0_0:(bock+sl)",
        "off_r0_1:(rbf*poly2@tanh)",
        "off_r0_2:matern32",
        "off_r0_3:rbf@arctan",
    ]
    new_maps = ("@bezier", "@radius", "@direction", "imq", "poly3")
    classic = [n for rnd in _offline_names("classic", rounds=6) for n in rnd]
    assert not any(m in n for n in classic for m in new_maps)


def test_offline_extended_grammar_draws_the_new_leaves() -> None:
    names = [n for seed in (0, 1, 2) for rnd in _offline_names("extended", seed, 6) for n in rnd]
    assert any(m in n for n in names for m in ("@bezier", "@radius", "@direction", "imq", "poly3"))


def test_grammar_has_the_new_pieces() -> None:
    assert {"imq", "poly3", "cosine"} <= set(LEAVES)
    assert {"bezier", "radius", "direction"} <= set(WARPS)
