"""The selection rules: what each answers, the registry by name, and no criterion name
compared outside it."""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from pydantic import ValidationError
from torch import Tensor

from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.gp import KernelDiscoveryGP
from ax_kernel_discovery.population import HeldOut, Member, Population, start_candidates
from ax_kernel_discovery.selection import (
    lbo_crps,
    log_marginal_likelihood,
    loo_crps,
    prior_covariance,
)
from ax_kernel_discovery.selection_rules import (
    BIC,
    LBOCRPS,
    LOOCRPS,
    LOOCRPSBIC,
    SELECTION_RULES,
    NegativeMLL,
    Prequential,
    SelectionRule,
    register_selection_rule,
    selection_rule,
)
from ax_kernel_discovery.surrogate.choice import Chooser
from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel
from ax_kernel_discovery.surrogate.fitting import FittedKernel, KernelFitter
from ax_kernel_discovery.surrogate.state import OutcomeState, RoundContext

PACKAGE = Path(__file__).resolve().parents[1] / "ax_kernel_discovery"
REGISTRY_MODULE = PACKAGE / "selection_rules.py"
SETTINGS = KernelDiscoveryConfig()  # heldout_score="log", score_batches=3


def _spd(n: int, seed: int = 0) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 3, generator=g, dtype=torch.float64)
    K = torch.exp(-0.5 * torch.cdist(X, X).pow(2) / 0.3**2) + 0.05 * torch.eye(
        n, dtype=torch.float64
    )
    return K, torch.randn(n, generator=g, dtype=torch.float64)


def _member(name: str = "RBF", heldout: Sequence[float] = ()) -> Member:
    """A start kernel's member with one forecast batch per loss in ``heldout``."""
    cand = next(c for c in start_candidates() if c.name == name)
    return Member(
        candidate=cand,
        heldout=[HeldOut(round=r, logpdf=[-v], crps=[v / 2]) for r, v in enumerate(heldout)],
    )


@pytest.fixture
def registry() -> Iterator[dict[str, type[SelectionRule]]]:
    """The registry, restored after the test (a rule a test registers does not outlive it)."""
    saved = dict(SELECTION_RULES)
    yield SELECTION_RULES
    SELECTION_RULES.clear()
    SELECTION_RULES.update(saved)


# --- each rule's answers ---------------------------------------------------------------


def test_the_registry_holds_the_criteria_config_has_always_taken() -> None:
    assert {k: v.__name__ for k, v in SELECTION_RULES.items()} == {
        "loo_crps": "LOOCRPS",
        "loo_crps_bic": "LOOCRPSBIC",
        "lbo_crps": "LBOCRPS",
        "mll": "NegativeMLL",
        "bic": "BIC",
        "prequential": "Prequential",
    }
    for name, cls in SELECTION_RULES.items():
        assert cls.name == name and cls.summary  # the docs' table reads both
        assert isinstance(KernelDiscoveryConfig(criterion=name).selection_rule(), cls)


def test_each_rule_scores_a_fitted_gp_by_its_criterion() -> None:
    K, y = _spd(10, seed=3)
    n, k = 10, 5
    lml = float(log_marginal_likelihood(K, y))
    block = [torch.tensor([7, 8, 9])]
    expected = {
        LOOCRPS: float(loo_crps(K, y)),
        LOOCRPSBIC: float(loo_crps(K, y)) + k * math.log(n) / n,
        NegativeMLL: -lml / n,
        BIC: k * math.log(n) - 2 * lml,
    }
    for cls, value in expected.items():
        assert cls(SETTINGS).fit_score(K, y, k) == pytest.approx(value, rel=1e-12), cls
        # the batches are for the rules that leave them out; these ignore them
        assert cls(SETTINGS).fit_score(K, y, k, blocks=block) == pytest.approx(value, rel=1e-12)
    for cls in (LBOCRPS, Prequential):  # prequential's in-sample fallback is lbo_crps
        rule = cls(SETTINGS)
        assert rule.fit_score(K, y, k, blocks=block) == pytest.approx(float(lbo_crps(K, y, block)))
        assert rule.fit_score(K, y, k, blocks=block) != pytest.approx(float(loo_crps(K, y)))
        # before the first BO batch: LOO-CRPS
        for blocks in (None, [], [torch.tensor([], dtype=torch.long)]):
            assert rule.fit_score(K, y, k, blocks=blocks) == pytest.approx(float(loo_crps(K, y)))


@pytest.mark.parametrize("name", ["loo_crps", "loo_crps_bic", "lbo_crps", "mll", "bic"])
def test_a_rule_of_fit_scores_chooses_after_the_fits(name: str) -> None:
    rule = selection_rule(name, SETTINGS)
    forecast = _member(heldout=[1.0, 2.0])
    assert rule.score_before_fits(forecast) is None  # the choice waits for the fits
    assert rule.member_score(forecast, 0.25) == 0.25
    assert rule.protected([_member(), forecast]) == []
    assert not rule.scores_forecasts and rule.default_tie_break == "none"
    assert rule.scores_batches == (name == "lbo_crps")


def test_prequential_judges_members_by_their_forecasts_before_the_fits() -> None:
    rule = Prequential(KernelDiscoveryConfig(score_batches=2))
    new, old = _member("RBF"), _member("SL", heldout=[9.0, 1.0, 3.0])
    assert rule.score_before_fits(old) == pytest.approx((1.0 + 3.0) / 2)  # the last 2 batches
    assert rule.member_score(old, 0.25) == pytest.approx(2.0)  # not the fit's score
    assert rule.score_before_fits(new) is None and rule.member_score(new, 0.25) is None
    assert rule.protected([new, old]) == ["RBF"]  # new kernels stay until they forecast
    crps = Prequential(KernelDiscoveryConfig(heldout_score="crps", score_batches=2))
    assert crps.score_before_fits(old) == pytest.approx((0.5 + 1.5) / 2)
    assert rule.scores_forecasts and rule.scores_batches and rule.default_tie_break == "cost"


def test_the_config_asks_the_rule_what_its_settings_need() -> None:
    assert KernelDiscoveryConfig(criterion="prequential").resolved_tie_break() == "cost"
    assert KernelDiscoveryConfig(criterion="bic").resolved_tie_break() == "none"
    for name in ("lbo_crps", "prequential"):  # scores_batches: whole batches, not top points
        with pytest.raises(ValidationError, match="score_top_k"):
            KernelDiscoveryConfig(criterion=name, score_top_k=50)
    assert KernelDiscoveryConfig(criterion="mll", score_top_k=50).score_top_k == 50
    with pytest.raises(ValidationError, match="mixture_top_k"):  # not scores_forecasts
        KernelDiscoveryConfig(criterion="mll", mixture_top_k=2)


# --- the registry by name ----------------------------------------------------------------


def test_an_unknown_criterion_names_the_registered_rules() -> None:
    with pytest.raises(ValidationError, match="unknown criterion 'aic'") as info:
        KernelDiscoveryConfig(criterion="aic")
    for name in SELECTION_RULES:
        assert repr(name) in str(info.value)
    assert "register_selection_rule" in str(info.value)
    with pytest.raises(ValueError, match="unknown criterion 'aic'.*'prequential'"):
        selection_rule("aic", SETTINGS)


def test_a_name_is_registered_once(registry: dict[str, type[SelectionRule]]) -> None:
    with pytest.raises(ValueError, match="'bic' is registered already"):
        register_selection_rule("bic")(BIC)
    assert registry["bic"] is BIC


def _context(pop: Population, n: int = 10) -> RoundContext:
    X = torch.rand(n, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    names = ["x0", "x1"]
    return RoundContext(
        outcome="f",
        state=OutcomeState(pop),
        dataset=SupervisedDataset(X, X[:, :1], feature_names=names, outcome_names=["f"]),
        search_space_digest=SearchSpaceDigest(feature_names=names, bounds=[(0.0, 1.0)] * 2),
        round=0,
    )


def _fitted(scores: dict[str, float]) -> dict[str, FittedKernel]:
    return {k: FittedKernel(None, ModelConfig(), v) for k, v in scores.items()}


def _unfitted(
    dataset: SupervisedDataset,
    search_space_digest: SearchSpaceDigest,
    model_config: ModelConfig,
    state_dict: object,
    refit: bool,
) -> Model:
    """A model builder without Ax and without a fit: the candidate's GP at its initial values."""
    options = model_config.covar_module_options or {}
    covar = DiscoveredKernel(options["candidate"], dataset.X.shape[-1])
    return KernelDiscoveryGP(dataset.X, dataset.Y, covar_module=covar).eval()


def test_a_registered_rule_is_usable_by_name_from_the_config(
    registry: dict[str, type[SelectionRule]],
) -> None:
    @register_selection_rule("negated_loo")
    class NegatedLOO(LOOCRPS):  # the worst LOO-CRPS wins: a rule no built-in one is
        summary = "minus the LOO-CRPS"

        def fit_score(
            self, K: Tensor, y: Tensor, num_params: int, blocks: Sequence[Tensor] | None = None
        ) -> float:
            return -super().fit_score(K, y, num_params, blocks)

    config = KernelDiscoveryConfig(criterion="negated_loo", guard_rounds=0)
    assert registry["negated_loo"] is NegatedLOO and NegatedLOO.name == "negated_loo"
    assert isinstance(config.selection_rule(), NegatedLOO)
    assert KernelDiscoveryConfig.model_validate_json(config.model_dump_json()) == config
    K, y = _spd(8)
    assert config.selection_rule().fit_score(K, y, 3) == pytest.approx(-float(loo_crps(K, y)))

    pop = Population(start_candidates()[:3], size=3)
    ctx, chooser = _context(pop), Chooser(config.choice_options())
    assert chooser.choice_before_fits(ctx) is None  # its choice needs the fit scores
    # the fitter scores by the rule, and the chooser takes its best score
    fitter = KernelFitter(config.fit_options(), _unfitted)
    models: dict[str, FittedKernel] = {}
    loo: dict[str, float] = {}
    for member in pop:
        fitted = fitter.fit_and_score(member.candidate, ctx, refit=False).get(member.name)
        assert fitted is not None and fitted.model is not None
        with torch.no_grad():
            loo[member.name] = float(loo_crps(*prior_covariance(fitted.model)))
        assert fitted.score == pytest.approx(-loo[member.name], rel=1e-12)
        models[member.name] = fitted
    assert len(set(loo.values())) == 3
    assert chooser.select(models, ctx).names == [max(loo, key=lambda k: loo[k])]
    assert chooser.member_score(pop.get("RBF"), models) == models["RBF"].score


def test_a_rule_that_scores_before_the_fits_chooses_as_it_said_before_them(
    registry: dict[str, type[SelectionRule]],
) -> None:
    @register_selection_rule("alphabetical")
    class Alphabetical(LOOCRPS):  # a score before the fits: the name's first letter
        summary = "the member first in the alphabet"

        def score_before_fits(self, member: Member) -> float | None:
            return None if member.name == "RQ" else float(ord(member.name[0]))

    config = KernelDiscoveryConfig(criterion="alphabetical", guard_rounds=0)
    pop = Population(start_candidates()[:3], size=3)  # RBF, Matern52, RQ
    ctx, chooser = _context(pop), Chooser(config.choice_options())
    early = chooser.choice_before_fits(ctx)
    assert early is not None and early.ranked == ["Matern52", "RBF"]  # RQ has no score
    models = _fitted({"RBF": 0.3, "Matern52": 0.1, "RQ": 0.0})
    for fitted in (["RBF", "Matern52", "RQ"], ["RBF", "RQ"], ["RQ"]):
        choice = chooser.select({k: models[k] for k in fitted}, ctx)
        # the first of the early order whose fit succeeded; none fitted: the fit scores
        first = next((k for k in early.ranked if k in fitted), "RQ")
        assert choice.names == [first], fitted


# --- no criterion name compared outside the registry --------------------------------------


def criterion_comparisons(source: str) -> list[int]:
    """The lines of ``source`` that compare something named ``criterion`` with ``==``,
    ``!=``, ``in`` or ``not in``."""

    def named(node: ast.expr) -> bool:
        return (isinstance(node, ast.Name) and "criterion" in node.id.lower()) or (
            isinstance(node, ast.Attribute) and "criterion" in node.attr.lower()
        )

    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Compare)
        and any(isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops)
        and any(named(operand) for operand in [node.left, *node.comparators])
    ]


def test_no_criterion_name_is_compared_outside_the_registry() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != REGISTRY_MODULE
        for line in criterion_comparisons(path.read_text())
    ]
    assert found == [], "ask the selection rule (config.selection_rule()) instead: " + ", ".join(
        found
    )


def test_the_comparison_check_finds_each_form() -> None:
    assert criterion_comparisons(
        'if self.config.criterion == "prequential":\n    pass\n'
        'a = criterion != "bic"\n'
        'b = config.criterion in ("lbo_crps", "prequential")\n'
        'c = "mll" not in criterion\n'
    ) == [1, 3, 4, 5]
    assert criterion_comparisons('f"{config.criterion!r}"\nrule = config.selection_rule()\n') == []
