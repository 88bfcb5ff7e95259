"""The surrogate's extension points: start set, proposer factory, strike rule, fallback.

CAKE and compositional search are configurations of these, not overrides of the
surrogate's private steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch
from botorch.acquisition.logei import qLogNoisyExpectedImprovement

from ax_kernel_discovery import KernelDiscoveryConfig, KernelDiscoverySurrogate
from ax_kernel_discovery.baselines.cake import CakeSurrogate
from ax_kernel_discovery.baselines.compositional import CompositionalSearchSurrogate
from ax_kernel_discovery.population import MemberSummary, base_candidate
from ax_kernel_discovery.proposers.base import Proposal, Proposer
from ax_kernel_discovery.proposers.offline import OfflineEvolutionProposer
from ax_kernel_discovery.surrogate.state import LastChoice, OutcomeState, RoundContext


class Silent(Proposer):
    """An LLM proposer whose every reply is empty."""

    name = "silent"

    def propose(
        self, members: Sequence[MemberSummary], dim: int, num_proposals: int, round_index: int
    ) -> Proposal:
        return Proposal()


def test_start_candidates_and_the_proposer_factory_are_constructor_arguments() -> None:
    made: list[KernelDiscoveryConfig] = []

    def factory(config: KernelDiscoveryConfig) -> Proposer:
        made.append(config)
        return Silent()

    s = KernelDiscoverySurrogate(
        KernelDiscoveryConfig(seed=4),
        start_candidates=lambda config, dim: [base_candidate("rbf"), base_candidate("sl")],
        proposer_factory=factory,
    )
    assert [m.name for m in s.population] == ["RBF", "SL"]
    assert isinstance(s.proposer, Silent) and s.proposer is s.proposer
    assert [c.seed for c in made] == [4]


@pytest.mark.parametrize(("rule", "struck"), [("batch", "SL"), ("none", None)])
def test_the_strike_rule_is_a_setting(rule: str, struck: str | None) -> None:
    s = KernelDiscoverySurrogate(KernelDiscoveryConfig(strike_rule=rule))
    X = torch.rand(6, 3, dtype=torch.float64)
    Y = torch.arange(6, dtype=torch.float64).unsqueeze(-1)
    state = OutcomeState(s._new_population(3))
    state.last_choice = LastChoice.of("SL", X[:4], Y[:4])
    state.warm["SL"] = {}
    from ax.core.search_space import SearchSpaceDigest
    from botorch.utils.datasets import SupervisedDataset

    names = ["a", "b", "c"]
    worse = torch.cat([Y[:4], torch.tensor([[5.0], [4.5]], dtype=torch.float64)])  # no new best
    ctx = RoundContext(
        outcome="f",
        state=state,
        dataset=SupervisedDataset(X, worse, feature_names=names, outcome_names=["f"]),
        search_space_digest=SearchSpaceDigest(feature_names=names, bounds=[(0.0, 1.0)] * 3),
        round=1,
        sign=-1.0,  # minimize: the rows 4.5 and 5 do not beat the best (0)
    )
    opened = s.steps.strike(ctx, s.state.objective_matrix, {})
    assert opened.struck == struck
    assert state.population.get("SL").strikes == (1 if struck else 0)


def test_cake_and_compositional_search_are_configurations() -> None:
    hooks = {
        "__init__",
        "__module__",
        "__doc__",
        "__qualname__",
        "__firstlineno__",
        "__static_attributes__",
        "serialize_kwargs",  # the storage hook (Ax's private one is _upstream's)
        "__annotations__",
    }  # fmt: skip  (made on first access in 3.10+)
    base = set(dir(KernelDiscoverySurrogate))
    for cls, own in (
        # the baselines keep BoTorch's qLogNEI (fixed_acqf_class), as in their study runs
        (CompositionalSearchSurrogate, {"expansion_proposer", "fixed_acqf_class"}),
        (CakeSurrogate, {"cake_proposer", "model_selection", "needs_llm", "fixed_acqf_class"}),
    ):
        overridden = {k for k in vars(cls) if k in base} - hooks
        assert overridden <= own, (cls.__name__, overridden)
        assert not {k for k in vars(cls) if k.startswith("_")} - hooks, cls.__name__
    cake = CakeSurrogate(KernelDiscoveryConfig(llm_model="gpt-4o"))
    assert cake.config.strike_rule == "none" and [m.name for m in cake.population][0] == "SE"
    comp = CompositionalSearchSurrogate()
    assert comp.config.strike_rule == "none" and comp.fitter.start_rule is not None
    for baseline in (cake, comp):  # whatever the config says
        assert baseline.config.acquisition == "new_rows"
        assert baseline.default_acqf_class is qLogNoisyExpectedImprovement


def test_the_offline_fallback_honours_the_grammar_and_remembers_its_proposals() -> None:
    config = KernelDiscoveryConfig(
        proposer="llm", llm_model="openai/fake", offline_grammar="extended", seed=1
    )
    s = KernelDiscoverySurrogate(config, proposer_factory=lambda c: Silent())
    pop = s._new_population(6)
    first = s.proposing.proposal(pop, 6, "f", 0)
    fallback = s.proposing.fallback
    assert isinstance(fallback, OfflineEvolutionProposer) and fallback.grammar == "extended"
    assert first.candidates and all(c.origin == "offline" for c in first.candidates)
    s.state.round_index = 0  # the same round again: a fresh operator would repeat itself
    again = s.proposing.proposal(pop, 6, "f", 0)
    assert s.proposing.fallback is fallback
    assert not {c.key for c in again.candidates} & {c.key for c in first.candidates}
    # the memory is saved with the run and reloaded
    reloaded = KernelDiscoverySurrogate(config, state=s.state_dict_json())
    assert reloaded.proposing.fallback.state_dict() == fallback.state_dict()
