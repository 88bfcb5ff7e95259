"""Population ranking, truncation, strikes, reset, dedup keys and serialization."""

from __future__ import annotations

import json

import pytest

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import formula, leaf
from ax_kernel_discovery.population import HeldOut, Member, Population, start_candidates


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


def test_kept_kernels_survive_strikes_and_truncation() -> None:
    pop = Population(start_candidates(), size=4, patience=1, keep=("RBF", "Matern52"))
    assert pop.strike("RBF") is False and "RBF" in pop  # patience 1, but kept
    assert pop.strike("RQ") is True and "RQ" not in pop
    pop.add(_cand("a"), 1)
    pop.add(_cand("b", "matern52"), 1)
    for name, value in {"RBF": 9.0, "Matern52": 8.0, "BOCK": 0.3, "SL": 0.2, "a": 0.1}.items():
        pop.set_score(name, value)
    pop.set_score("b", None)  # not scored yet
    dropped = pop.truncate(protect=["b"])
    # the kept pair and the protected newcomer stay; one place is left for the best other
    assert sorted(pop.names) == ["Matern52", "RBF", "a", "b"]
    assert sorted(dropped) == ["BOCK", "SL"]
    restored = Population.from_dict(json.loads(json.dumps(pop.to_dict())))
    assert restored.keep == ("RBF", "Matern52")


def test_heldout_loss_averages_the_last_batches() -> None:
    m = Member(candidate=start_candidates()[0])
    assert m.heldout_loss() is None
    m.heldout = [
        HeldOut(round=0, logpdf=[-1.0, -3.0], crps=[0.5, 0.7]),
        HeldOut(round=1, logpdf=[-4.0], crps=[1.0]),
    ]
    assert m.heldout_loss("log") == pytest.approx((2.0 + 4.0) / 2)
    assert m.heldout_loss("crps") == pytest.approx((0.6 + 1.0) / 2)
    assert m.heldout_loss("log", batches=1) == pytest.approx(4.0)


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
