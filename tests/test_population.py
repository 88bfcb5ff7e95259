"""Population ranking, truncation, strikes, reset, dedup keys and serialization."""

from __future__ import annotations

import json

import pytest

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import formula, leaf
from ax_kernel_discovery.population import Population, start_candidates


def _cand(name: str, kernel: str = "rbf", warp: str = "tanh") -> KernelCandidate:
    spec = leaf(kernel, warp)
    return KernelCandidate(name=name, formula=formula(spec), origin="offline", spec=spec)


def test_start_set_is_the_papers() -> None:
    pop = Population(start_candidates())
    assert pop.names == ["RBF", "Matern52", "RQ", "BOCK", "SL"]
    assert all(m.origin == "base" for m in pop)
    assert "Kumaraswamy" not in pop.get("BOCK").formula  # formulas are math, not prose
    assert "kappa(r) = 1 - (1 - r^alpha)^beta" in pop.get("BOCK").formula


def test_rank_and_keep_top_n() -> None:
    pop = Population(start_candidates(), size=3)
    pop.add(_cand("a"), 1)
    for name, value in zip(pop.names, [0.5, 0.1, 0.9, 0.3, 0.2, 0.05], strict=True):
        pop.set_score(name, value)
    dropped = pop.truncate()
    assert pop.names == ["a", "Matern52", "SL"]
    assert sorted(dropped) == ["BOCK", "RBF", "RQ"]
    assert pop.best().name == "a"


def test_strikes_base_after_patience_others_at_once() -> None:
    pop = Population(start_candidates(), patience=3)
    pop.add(_cand("new"), 1)
    assert pop.strike("new") is True and "new" not in pop
    assert pop.strike("RBF") is False
    assert pop.strike("RBF") is False
    assert pop.strike("RBF") is True and "RBF" not in pop
    assert pop.strike("missing") is False


def test_reset_when_empty() -> None:
    pop = Population(start_candidates(), patience=1)
    for name in list(pop.names):
        pop.strike(name)
    assert len(pop) == 0
    assert pop.reset_if_empty() is True
    assert pop.names == ["RBF", "Matern52", "RQ", "BOCK", "SL"]
    assert pop.resets == 1
    assert pop.reset_if_empty() is False


def test_names_unique_and_keys_ignore_commutation() -> None:
    pop = Population(start_candidates())
    with pytest.raises(ValueError, match="already has a member named 'RBF'"):
        pop.add(_cand("RBF"), 0)
    a = KernelCandidate(
        name="x", formula="f", spec={"op": "sum", "args": [leaf("rbf"), leaf("sl")]}
    )
    b = KernelCandidate(
        name="y", formula="g", spec={"op": "sum", "args": [leaf("sl"), leaf("rbf")]}
    )
    c = KernelCandidate(
        name="z", formula="g", spec={"op": "product", "args": [leaf("sl"), leaf("rbf")]}
    )
    assert a.key == b.key != c.key


def test_candidate_needs_exactly_one_builder() -> None:
    with pytest.raises(ValueError, match="exactly one of `spec` or `code`"):
        KernelCandidate(name="bad", formula="f")
    with pytest.raises(ValueError, match="exactly one"):
        KernelCandidate(name="bad", formula="f", spec=leaf("rbf"), code="class K: pass")


def test_json_round_trip() -> None:
    pop = Population(start_candidates(), size=4, patience=2)
    pop.add(_cand("a"), 2)
    pop.set_score("a", 0.25)
    pop.strike("RBF")
    data = json.loads(json.dumps(pop.to_dict()))
    back = Population.from_dict(data)
    assert back.names == pop.names
    assert back.get("a").score == 0.25 and back.get("a").born == 2
    assert back.get("RBF").strikes == 1
    assert back.size == 4 and back.patience == 2
