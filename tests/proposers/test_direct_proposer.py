"""DirectCodeProposer (one stage) with scripted LLM replies (no real LLM)."""

from __future__ import annotations

import socket
from typing import Any

import litellm
import pytest

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.llm.client import LLMClient
from ax_kernel_discovery.llm.templates import seed_formulas
from ax_kernel_discovery.population import MemberSummary
from ax_kernel_discovery.proposers.direct import DirectCodeProposer

# litellm 1.106.2 builds a pydantic schema with a ReadOnly TypedDict on first use.
pytestmark = pytest.mark.filterwarnings("ignore:Item .summary. on TypedDict:UserWarning")

CODE = '''import torch
import gpytorch



class {name}(gpytorch.kernels.Kernel):
    """{doc}"""

    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        a = x1.div(self.lengthscale)
        b = x2.div(self.lengthscale)
        if diag:
            return torch.exp(-{scale} * (a - b).abs().sum(-1))
        return torch.exp(-{scale} * torch.cdist(a, b, p=1))
'''


@pytest.fixture
def reply(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Provider ``scripted`` answering ``state["text"]``; prompts land in ``state["prompts"]``."""
    state: dict[str, Any] = {"text": "", "prompts": []}

    class Scripted(litellm.CustomLLM):
        def completion(self, *args: Any, **kwargs: Any) -> Any:
            state["prompts"].append(kwargs["messages"][-1]["content"])
            return litellm.completion(
                model="gpt-4o", messages=kwargs["messages"], mock_response=state["text"] or " "
            )

    monkeypatch.setattr(
        litellm, "custom_provider_map", [{"provider": "scripted", "custom_handler": Scripted()}]
    )
    return state


def members() -> list[MemberSummary]:
    return [
        MemberSummary(n, f, "base", 0.5, KernelCandidate(name=n, formula=f, spec={"kernel": n}))
        for n, f in seed_formulas().items()
    ]


def test_plumbing_direct_candidates(reply: dict[str, Any]) -> None:
    one = CODE.format(
        name="Laplace", doc="k(x, x') = exp(-||x - x'||_1 / l)\n\n    More text.", scale=1.0
    )
    two = CODE.format(name="Other", doc="", scale=2.0)
    reply["text"] = f"Two kernels:\n```python\n{one}```\n\n```python\n{two}```\nDone."
    proposer = DirectCodeProposer(LLMClient("scripted/m", num_retries=0))
    proposal = proposer.propose(members(), dim=12, num_proposals=3, round_index=5)
    assert [c.name for c in proposal.candidates] == ["direct_r5_0", "direct_r5_1"]
    first, second = proposal.candidates
    assert first.origin == "direct" and first.class_name == "Laplace"
    assert first.formula == "k(x, x') = exp(-||x - x'||_1 / l)"
    assert second.formula == "Other (no formula given)"
    assert proposal.rejections[0].reason == "direct reply had 2 of 3 kernel classes"
    prompt = reply["prompts"][0]
    assert "write the code of 3 new kernels" in prompt and "ard_num_dims" in prompt
    assert proposal.usage["llm_calls"] == 1


def test_plumbing_direct_garbage_and_duplicates(reply: dict[str, Any]) -> None:
    reply["text"] = "I would rather not."
    proposer = DirectCodeProposer(LLMClient("scripted/m", num_retries=0))
    proposal = proposer.propose(members(), dim=12, num_proposals=2, round_index=0)
    assert proposal.candidates == [] and proposal.rejections[0].stage == "parse"

    same = CODE.format(name="Same", doc="k = exp(-r)", scale=1.0)
    renamed = CODE.format(name="Renamed", doc="k = exp(-r)", scale=1)  # 1 == 1.0
    reply["text"] = f"```python\n{same}```\n```python\n{renamed}```"
    proposal = proposer.propose(members(), dim=12, num_proposals=2, round_index=1)
    assert len(proposal.candidates) == 1 and proposal.rejections[0].stage == "duplicate"


def test_plumbing_direct_unreachable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = LLMClient(
        "openai/fake", api_base=f"http://127.0.0.1:{port}/v1", timeout=2, num_retries=0
    )
    proposal = DirectCodeProposer(client).propose(members(), dim=12, num_proposals=2, round_index=0)
    assert proposal.candidates == [] and proposal.rejections[0].stage == "proposal"


PAIR_REPLY = """Two kernels.

```python
# KERNEL: AdditiveLaplace
# k(x, x') = mean_d exp(-|x_d - x'_d| / l_d)
import torch

PARAMETERS = {"lengthscale": "ard"}


def covariance(x, y, p):
    return torch.mean(torch.exp(-torch.abs(x - y) / p["lengthscale"]))
```

```python
# KERNEL: Rowwise
import torch

PARAMETERS = {"b": "unit"}


def covariance(x, y, p):
    return p["b"] + (1.0 - p["b"]) * (x * y)
```

```python
# KERNEL: Again
# k(x, x') = mean_d exp(-|x_d - x'_d| / l_d)
import torch

PARAMETERS = {"lengthscale": "ard"}


def covariance(x, y, p):
    return torch.mean(torch.exp(-torch.abs(x - y) / p["lengthscale"]))
```
"""


def test_plumbing_direct_pair_style(reply: dict[str, Any]) -> None:
    from ax_kernel_discovery.sandbox.validate import validate_kernel_code

    reply["text"] = PAIR_REPLY
    proposer = DirectCodeProposer(LLMClient("scripted/m", num_retries=0), code_style="pair")
    proposal = proposer.propose(members(), dim=6, num_proposals=3, round_index=2)
    prompt = reply["prompts"][0]
    assert "def covariance(x, y, p)" in prompt and "ONE pair of points" in prompt
    assert "write 3 new kernels" in prompt and "$" not in prompt
    first, second = proposal.candidates
    assert first.class_name == "AdditiveLaplace" and second.class_name == "Rowwise"
    assert first.formula == "k(x, x') = mean_d exp(-|x_d - x'_d| / l_d)"
    assert second.formula == "Rowwise (no formula given)"
    (dup,) = proposal.rejections
    assert dup.name == "direct_r2_2" and dup.stage == "duplicate"
    assert validate_kernel_code(first.code or "", 6, first.class_name, fit_timeout=60.0).ok
    bad = validate_kernel_code(second.code or "", 6, second.class_name, fit_timeout=60.0)
    assert not bad.ok and "one number per pair" in (bad.reason or "")
    with pytest.raises(ValueError, match="code_style"):
        DirectCodeProposer("scripted/m", code_style="function")  # type: ignore[arg-type]


def test_direct_code_style_from_config() -> None:
    from ax_kernel_discovery.config import KernelDiscoveryConfig
    from ax_kernel_discovery.proposers.from_config import make_proposer

    cfg = KernelDiscoveryConfig(proposer="direct", llm_model="scripted/m", conversion_style="pair")
    proposer = make_proposer(cfg)
    assert isinstance(proposer, DirectCodeProposer) and proposer.code_style == "pair"
    with pytest.raises(ValueError, match="one call"):
        KernelDiscoveryConfig(proposer="direct", llm_model="m", conversion_style="function")
