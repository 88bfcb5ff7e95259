"""ExpressionLLMProposer against a fake OpenAI-compatible server (plumbing, not LLM quality)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import torch
from gpytorch.kernels import ProductKernel, ScaleKernel

from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.kernels import LEAVES, DimScaledMatern52Kernel, FeatureMapKernel
from ax_kernel_discovery.llm.client import LLMClient
from ax_kernel_discovery.population import Population, start_candidates
from ax_kernel_discovery.proposers.expression_llm import ExpressionLLMProposer
from ax_kernel_discovery.proposers.from_config import make_proposer
from ax_kernel_discovery.proposers.llm import LLMProposer

GOOD = {
    "op": "product",
    "args": [
        {"kernel": "matern52", "warp": "identity", "ard": True},
        {"kernel": "periodic", "warp": "radius", "ard": True},
    ],
}


def _members() -> list[Any]:
    pop = Population(start_candidates())
    for i, m in enumerate(pop):
        pop.set_score(m.name, 0.3 + 0.01 * i)
    return pop.summaries()


def _reply(*trees: Any) -> str:
    return json.dumps(
        {"kernels": [{"rationale": f"idea {i}", "kernel": t} for i, t in enumerate(trees)]}
    )


def _proposer(server: Any, **kwargs: Any) -> ExpressionLLMProposer:
    client = LLMClient("openai/qwen-local", api_base=server.url, num_retries=0)
    return ExpressionLLMProposer(client, **kwargs)


def test_structured_round_accepts_valid_trees_and_records_rejections(fake_openai: Any) -> None:
    too_deep = {"op": "sum", "args": [GOOD, {"op": "sum", "args": [GOOD, GOOD]}]}
    fake_openai.replies = [
        _reply(
            GOOD, {"kernel": "rbf", "warp": "identity", "ard": True}, {"kernel": "foo"}, too_deep
        )
    ]
    proposer = _proposer(fake_openai)
    out = proposer.propose(_members(), dim=10, num_proposals=4, round_index=2)
    assert [c.name for c in out.candidates] == ["expression_r2_0:(matern52*periodic@radius)"]
    cand = out.candidates[0]
    assert cand.spec == GOOD and cand.code is None and cand.origin == "discovery"
    assert "[idea: idea 0]" in cand.formula
    stages = {r.name: (r.stage, r.reason) for r in out.rejections}
    assert stages["expression_r2_1"] == ("duplicate", "the tree repeats RBF")
    assert (
        stages["expression_r2_2"][0] == "grammar"
        and "unknown kernel" in stages["expression_r2_2"][1]
    )
    assert stages["expression_r2_3"][0] == "grammar" and "depth" in stages["expression_r2_3"][1]
    # one call, no conversion, constrained by the unrolled schema
    assert len(fake_openai.requests) == 1
    body = fake_openai.requests[0]
    assert body["response_format"]["json_schema"]["schema"] == proposer.schema(4)
    assert out.usage["llm_calls"] == 1.0 and out.usage["schema_constrained"] == 1.0
    prompt = body["messages"][-1]["content"]
    assert '"kernel": "rbf"' in prompt and "bezier" in prompt and "LOO-CRPS" in prompt


def test_candidates_build(fake_openai: Any) -> None:
    """The accepted tree builds the kernel it names: ``s * Matern52(x) x Periodic(rho(x))``,
    ``rho(x) = |x - 0.5| / sqrt(D)``, the Matern leaf with one lengthscale per input."""
    fake_openai.replies = [_reply(GOOD)]
    out = _proposer(fake_openai).propose(_members(), dim=6, num_proposals=1, round_index=0)
    kernel = out.candidates[0].build(6).to(torch.float64)
    assert isinstance(kernel, ScaleKernel) and isinstance(kernel.base_kernel, ProductKernel)
    matern, periodic = kernel.base_kernel.kernels
    assert isinstance(matern, DimScaledMatern52Kernel) and matern.lengthscale.shape == (1, 6)
    assert isinstance(periodic, FeatureMapKernel) and periodic.feature_map == "radius"
    x = torch.rand(5, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    rho = (x - 0.5).norm(dim=-1, keepdim=True) / math.sqrt(6)
    leaf_matern = LEAVES["matern52"].factory(6).to(torch.float64)
    leaf_periodic = LEAVES["periodic"].factory(1).to(torch.float64)
    with torch.no_grad():
        K = kernel(x).to_dense()
        expected = kernel.outputscale * leaf_matern(x).to_dense() * leaf_periodic(rho).to_dense()
    torch.testing.assert_close(K, expected, rtol=1e-10, atol=1e-12)
    assert torch.linalg.eigvalsh(K).min() > -1e-10  # a covariance


def test_garbage_and_short_replies_are_rejections(fake_openai: Any) -> None:
    fake_openai.replies = ["I think an RBF kernel would do.", _reply(GOOD)]
    proposer = _proposer(fake_openai)
    out = proposer.propose(_members(), dim=10, num_proposals=2, round_index=0)
    assert not out.candidates and out.rejections[0].stage == "parse"
    out = proposer.propose(_members(), dim=10, num_proposals=2, round_index=1)
    assert len(out.candidates) == 1
    assert any("1 of 2 kernels" in r.reason for r in out.rejections)


def test_server_refusing_the_schema_falls_back_to_parse_and_validate(fake_openai: Any) -> None:
    fake_openai.statuses = [400]
    fake_openai.replies = ["Here you go:\n```json\n" + _reply(GOOD) + "\n```"]
    proposer = _proposer(fake_openai)
    out = proposer.propose(_members(), dim=10, num_proposals=1, round_index=0)
    assert len(out.candidates) == 1
    assert "response_format" in fake_openai.requests[0]
    assert "response_format" not in fake_openai.requests[1]
    proposer.propose(_members(), dim=10, num_proposals=1, round_index=1)
    assert "response_format" not in fake_openai.requests[2]  # stays unconstrained


def test_unreachable_server_is_a_rejection(closed_port: int) -> None:
    client = LLMClient("openai/x", api_base=f"http://127.0.0.1:{closed_port}/v1", num_retries=0)
    out = ExpressionLLMProposer(client).propose(_members(), 10, 2, 0)
    assert not out.candidates and out.rejections[0].stage == "proposal"


def test_feedback_reaches_the_next_prompt(fake_openai: Any) -> None:
    fake_openai.replies = [_reply({"kernel": "rbf"}, {"kernel": "nope"}), _reply(GOOD)]
    proposer = _proposer(fake_openai)
    members = _members()
    out = proposer.propose(members, dim=10, num_proposals=2, round_index=0)
    first_prompt = fake_openai.requests[0]["messages"][-1]["content"]
    assert "Recently refused" not in first_prompt
    proposer.record_feedback(0, out.rejections, struck="SL", members=members)
    proposer.propose(members, dim=10, num_proposals=2, round_index=1)
    prompt = fake_openai.requests[1]["messages"][-1]["content"]
    assert "Recently refused" in prompt
    assert "duplicate" in prompt and "the tree repeats RBF" in prompt
    assert "grammar" in prompt and '"kernel":"nope"' in prompt
    assert "struck: SL" in prompt


def test_feedback_can_be_switched_off_and_forgets_old_rounds(fake_openai: Any) -> None:
    proposer = _proposer(fake_openai, feedback_rounds=0)
    proposer.record_feedback(0, [], struck="SL", members=_members())
    assert proposer.feedback_text() == ""
    proposer = _proposer(fake_openai, feedback_rounds=1)
    proposer.record_feedback(0, [], struck="SL", members=_members())
    proposer.record_feedback(1, [], struck="RQ", members=_members())
    text = proposer.feedback_text()
    assert "RQ" in text and "SL" not in text


def test_two_stage_discovery_prompt_carries_feedback(fake_openai: Any) -> None:
    from ax_kernel_discovery.candidate import Rejection

    client = LLMClient("openai/qwen-local", api_base=fake_openai.url, num_retries=0)
    proposer = LLMProposer(client, num_formulas=1, num_compositions=0)
    proposer.record_feedback(
        3, [Rejection(name="llm_r3_0", stage="psd", reason="Gram matrix not PSD", formula="k = -x")]
    )
    proposer.propose(_members(), dim=10, num_proposals=1, round_index=4)
    prompt = fake_openai.requests[0]["messages"][-1]["content"]
    assert "round 3, psd: k = -x -- Gram matrix not PSD" in prompt


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"llm_model": "local"}, ExpressionLLMProposer),
        ({"llm_model": "gpt-4o"}, LLMProposer),
        ({"llm_model": "gpt-4o", "proposal_format": "expression"}, ExpressionLLMProposer),
        ({"llm_model": "local", "proposal_format": "code"}, LLMProposer),
    ],
)
def test_proposal_format_auto(fields: dict[str, Any], expected: type) -> None:
    config = KernelDiscoveryConfig(proposer="llm", **fields)
    proposer = make_proposer(config)  # no client (and no local server) yet
    assert type(proposer) is expected
    resolved = "expression" if expected is ExpressionLLMProposer else "code"
    assert config.resolved_proposal_format() == resolved


def test_local_structured_calls_sample_hotter_unless_told() -> None:
    from ax_kernel_discovery.proposers.from_config import LOCAL_STRUCTURED_TEMPERATURE

    local = make_proposer(KernelDiscoveryConfig(proposer="llm", llm_model="local"))
    assert local._client_kwargs["temperature"] == LOCAL_STRUCTURED_TEMPERATURE == 1.0
    mine = KernelDiscoveryConfig(proposer="llm", llm_model="local", llm_temperature=0.7)
    assert make_proposer(mine)._client_kwargs["temperature"] == 0.7
    code = KernelDiscoveryConfig(proposer="llm", llm_model="local", proposal_format="code")
    assert make_proposer(code)._client_kwargs["temperature"] == 0.7


NEW = {"kernel": "rq", "warp": "tanh", "ard": True}


def test_followup_asks_for_the_slots_a_reply_left_empty(fake_openai: Any) -> None:
    first = _reply(GOOD, {"kernel": "rbf"}, GOOD)  # a member, then a repeat within the reply
    fake_openai.replies = [first, _reply(NEW, GOOD)]
    proposer = _proposer(fake_openai, followups=1)
    out = proposer.propose(_members(), dim=10, num_proposals=3, round_index=2)
    assert [c.name for c in out.candidates] == [
        "expression_r2_0:(matern52*periodic@radius)",
        "expression_r2_3:rq@tanh",
    ]
    assert len(fake_openai.requests) == 2
    follow = fake_openai.requests[1]
    # the same conversation, then the refusals and the number still missing
    assert follow["messages"][:-2] == fake_openai.requests[0]["messages"]
    assert follow["messages"][-2] == {"role": "assistant", "content": first}
    ask = follow["messages"][-1]["content"]
    assert "1 is new and kept" in ask and "it repeats RBF" in ask
    assert "it repeats expression_r2_0" in ask and "2 more" in ask
    assert follow["response_format"]["json_schema"]["schema"] == proposer.schema(2)
    assert follow["seed"] != fake_openai.requests[0]["seed"]
    # the follow-up's own repeat is a recorded rejection, not a second follow-up
    stages = {r.name: r.stage for r in out.rejections}
    assert stages == {
        "expression_r2_1": "duplicate",
        "expression_r2_2": "duplicate",
        "expression_r2_4": "duplicate",
    }
    assert out.usage["llm_calls"] == 2.0 and out.usage["llm_followups"] == 1.0


def test_followups_stop_when_the_round_is_full_or_the_reply_is_unusable(
    fake_openai: Any,
) -> None:
    fake_openai.replies = [_reply(GOOD, NEW)]
    out = _proposer(fake_openai, followups=2).propose(_members(), 10, 2, 0)
    assert len(out.candidates) == 2 and len(fake_openai.requests) == 1
    fake_openai.replies = ["no JSON at all"]
    out = _proposer(fake_openai, followups=2).propose(_members(), 10, 2, 0)
    assert not out.candidates and len(fake_openai.requests) == 2  # one more call, no follow-up
    assert out.usage["llm_followups"] == 0.0


def test_followup_fills_a_short_reply_and_is_off_by_default(fake_openai: Any) -> None:
    fake_openai.replies = [_reply(GOOD), _reply(GOOD), _reply(NEW)]  # served in order
    out = _proposer(fake_openai).propose(_members(), 10, 2, 0)
    assert len(out.candidates) == 1 and len(fake_openai.requests) == 1
    out = _proposer(fake_openai, followups=1).propose(_members(), 10, 2, 1)
    assert len(out.candidates) == 2
    assert "you gave 1 of the 2 kernels" in fake_openai.requests[-1]["messages"][-1]["content"]


def test_followups_from_config() -> None:
    cfg = KernelDiscoveryConfig(
        proposer="llm", llm_model="openai/x", proposal_format="expression", proposal_followups=2
    )
    proposer = make_proposer(cfg)
    assert isinstance(proposer, ExpressionLLMProposer) and proposer.followups == 2
    with pytest.raises(ValueError, match="followups"):
        ExpressionLLMProposer("openai/x", followups=-1)
