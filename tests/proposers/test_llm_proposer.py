"""LLMProposer with scripted LLM replies (no real LLM): candidates, rejections, replay."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

import litellm
import pytest
import torch

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.llm.client import LLMClient
from ax_kernel_discovery.llm.templates import load_prompt, seed_formulas
from ax_kernel_discovery.population import MemberSummary
from ax_kernel_discovery.proposers import llm_base
from ax_kernel_discovery.proposers.from_config import make_proposer
from ax_kernel_discovery.proposers.llm import LLMProposer
from ax_kernel_discovery.validation import ValidationResult

# litellm 1.106.2 builds a pydantic schema with a ReadOnly TypedDict on first use.
pytestmark = pytest.mark.filterwarnings("ignore:Item .summary. on TypedDict:UserWarning")

DISCOVERY = """Here are two kernels.
```formula
KERNEL: AdditiveMatern
PARAMETERS: lengthscale l (one per dimension)
INPUT TRANSFORM: none
COVARIANCE FUNCTION: k(x, x') = (1/D) sum_d (1 + sqrt(5) r_d + 5 r_d^2 / 3) exp(-sqrt(5) r_d), r_d = |x_d - x'_d| / l_d
PSD GUARANTEE: average of PSD kernels.
```
```formula
KERNEL: ScaledRBF
PARAMETERS: lengthscale l (one per dimension)
INPUT TRANSFORM: none
COVARIANCE FUNCTION: k(x, x') = exp(-||x - x'||^2 / (2 D l^2))
PSD GUARANTEE: RBF with a rescaled lengthscale.
```"""

COMPOSITION = """```formula
KERNEL: RBFPlusSL
PARENTS: RBF, SL
COMBINATION: sum
COVARIANCE FUNCTION: k(x, x') = k_RBF(x, x') + k_SL(x, x')
```"""

CODE_TEMPLATE = '''```python
import torch
import gpytorch



class {name}(gpytorch.kernels.Kernel):
    """{name}"""

    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        a = x1.div(self.lengthscale)
        b = x2.div(self.lengthscale)
        if diag:
            return torch.exp(-{scale} * (a - b).pow(2).sum(-1))
        return torch.exp(-{scale} * torch.cdist(a, b).pow(2))
```'''


def code_for(name: str) -> str:
    """Scripted conversion reply; the forward() differs per class name."""
    return CODE_TEMPLATE.format(name=name, scale=0.1 + sum(map(ord, name)) % 97 / 10)


Script = Callable[[str], str]


def stage_of(text: str) -> str:
    if text.startswith("Convert a Gaussian-process kernel"):
        return "conversion"
    if "Composition:" in text:
        return "composition"
    if "rejected by our checks" in text:
        return "repair"
    if "write the code of" in text:
        return "direct"
    return "discovery"


def default_script(stage: str, text: str) -> str:
    if stage == "discovery":
        return DISCOVERY
    if stage == "composition":
        return COMPOSITION
    name = re.search(r"the class (\w+)", text)
    return code_for(name.group(1) if name else "Repaired")


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Register provider ``scripted``; ``handler.script(stage, prompt) -> reply``."""

    class Scripted(litellm.CustomLLM):
        def __init__(self) -> None:
            super().__init__()
            self.script: Callable[[str, str], str] = default_script
            self.prompts: list[tuple[str, str]] = []
            self.delay = 0.0
            self._lock = threading.Lock()

        def completion(self, *args: Any, **kwargs: Any) -> Any:
            text = kwargs["messages"][-1]["content"]
            stage = stage_of(text)
            with self._lock:
                self.prompts.append((stage, text))
            if self.delay:
                time.sleep(self.delay)
            return litellm.completion(
                model="gpt-4o",
                messages=kwargs["messages"],
                mock_response=self.script(stage, text) or " ",
            )

    handler = Scripted()
    monkeypatch.setattr(
        litellm, "custom_provider_map", [{"provider": "scripted", "custom_handler": handler}]
    )
    return handler


def members() -> list[MemberSummary]:
    out = []
    for i, (name, formula) in enumerate(seed_formulas().items()):
        cand = KernelCandidate(name=name, formula=formula, spec={"kernel": name})
        out.append(MemberSummary(name, formula, "base", 0.3 + 0.01 * i, cand))
    return out


def proposer(**kwargs: Any) -> LLMProposer:
    client = LLMClient("scripted/m", num_retries=0, **kwargs.pop("client_kwargs", {}))
    return LLMProposer(client, **kwargs)


def test_plumbing_two_stage_candidates(scripted: Any) -> None:
    proposal = proposer(num_formulas=2).propose(members(), dim=30, num_proposals=3, round_index=4)
    assert proposal.rejections == []
    names = [c.name for c in proposal.candidates]
    assert names == ["llm_r4_0", "llm_r4_1", "llm_r4_c0"]
    disc, _, comp = proposal.candidates
    assert disc.origin == "discovery" and disc.parents == () and disc.code is not None
    assert disc.class_name == "AdditiveMatern" and disc.formula.startswith("k(x, x') = (1/D)")
    assert comp.origin == "composition" and comp.parents == ("RBF", "SL")
    assert comp.class_name == "RBFPlusSL"
    stages = sorted(s for s, _ in scripted.prompts)
    assert stages == ["composition", "conversion", "conversion", "conversion", "discovery"]
    assert proposal.usage["llm_calls"] == 5 and proposal.usage["prompt_tokens"] == 50
    assert set(proposal.timings) >= {"llm_stage1_s", "llm_conversion_s", "total_s"}


def test_plumbing_prompts_hold_formulas_not_data(scripted: Any) -> None:
    proposer(num_formulas=2).propose(members(), dim=30, num_proposals=3, round_index=0)
    discovery = next(t for s, t in scripted.prompts if s == "discovery")
    assert "1. RBF (LOO-CRPS 0.3)" in discovery and "exactly 2" in discovery
    conversion = [t for s, t in scripted.prompts if s == "conversion"]
    assert any("KERNEL: ScaledRBF" in t for t in conversion)


def test_plumbing_stage1_runs_concurrently(scripted: Any) -> None:
    scripted.delay = 0.5
    proposal = proposer(num_formulas=2).propose(members(), dim=30, num_proposals=3, round_index=0)
    assert proposal.timings["llm_stage1_s"] < 0.95  # discovery + composition in parallel
    assert proposal.timings["llm_conversion_s"] < 1.4  # three conversions in parallel


def test_plumbing_garbage_becomes_rejections(scripted: Any) -> None:
    def script(stage: str, text: str) -> str:
        if stage == "discovery":
            return DISCOVERY
        if stage == "composition":
            return "I like both kernels."
        if "ScaledRBF" in text:
            return "```python\nprint('no kernel here')\n```"
        return ""

    scripted.script = script
    proposal = proposer(num_formulas=2).propose(members(), dim=30, num_proposals=3, round_index=1)
    assert proposal.candidates == []
    by_name = {r.name: r for r in proposal.rejections}
    assert set(by_name) == {"llm_r1_0", "llm_r1_1", "llm_r1_c0"}
    assert all(r.stage == "parse" for r in proposal.rejections)
    assert "empty reply" in by_name["llm_r1_0"].reason
    assert "none defines a gpytorch Kernel" in by_name["llm_r1_1"].reason
    assert by_name["llm_r1_1"].formula is not None
    assert "no formula block" in by_name["llm_r1_c0"].reason


def test_plumbing_duplicates_and_copied_example(scripted: Any) -> None:
    example = load_prompt("conversion_example")
    example_code = example[example.index("```python") :]

    def script(stage: str, text: str) -> str:
        if stage == "discovery":
            return (
                "```formula\nKERNEL: Again\nCOVARIANCE FUNCTION: k(x, x') = exp(-r^2 / 2)\n```\n"
                "```formula\nKERNEL: New\nCOVARIANCE FUNCTION: k(x, x') = exp(-r)\n```\n"
                "```formula\nKERNEL: NewTwice\nCOVARIANCE FUNCTION: k(x,x') = exp(-r)\n```"
            )
        return example_code

    scripted.script = script
    proposal = proposer(num_formulas=3, num_compositions=0).propose(
        members(), dim=5, num_proposals=3, round_index=0
    )
    stages = {r.name: (r.stage, r.reason) for r in proposal.rejections}
    assert stages["llm_r0_0"] == ("duplicate", "formula repeats RBF")
    assert stages["llm_r0_2"] == ("duplicate", "formula repeats llm_r0_1")
    assert stages["llm_r0_1"][0] == "parse" and "copies the worked example" in stages["llm_r0_1"][1]


def test_plumbing_fewer_blocks_than_asked(scripted: Any) -> None:
    scripted.script = lambda stage, text: (
        DISCOVERY.split("```\n```")[0] + "```"
        if stage == "discovery"
        else default_script(stage, text)
    )
    proposal = proposer(num_formulas=3, num_compositions=0).propose(
        members(), dim=5, num_proposals=3, round_index=0
    )
    assert len(proposal.candidates) == 1
    assert proposal.rejections[0].reason == "discovery reply had 1 of 3 formula blocks"


def test_plumbing_unreachable_llm_no_crash(closed_port_url: str) -> None:
    client = LLMClient("openai/fake", api_base=closed_port_url, timeout=2, num_retries=0)
    start = time.perf_counter()
    proposal = LLMProposer(client).propose(members(), dim=10, num_proposals=4, round_index=0)
    assert time.perf_counter() - start < 10
    assert proposal.candidates == []
    assert {r.stage for r in proposal.rejections} == {"proposal"}
    assert {r.name for r in proposal.rejections} == {"llm_r0_discovery", "llm_r0_c0"}
    assert proposal.usage["llm_failed_calls"] == 2


def test_plumbing_no_model_is_a_rejection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AXKD_LLM_MODEL", raising=False)
    proposal = LLMProposer(None).propose(members(), dim=10, num_proposals=2, round_index=0)
    assert proposal.candidates == [] and "AXKD_LLM_MODEL" in proposal.rejections[0].reason


def test_plumbing_replay_reproduces_a_run(scripted: Any, tmp_path: Any) -> None:
    recorded = proposer(num_formulas=2, client_kwargs={"cache_dir": tmp_path, "mode": "record"})
    first = recorded.propose(members(), dim=30, num_proposals=3, round_index=2)
    scripted.script = lambda stage, text: pytest.fail("replay must not call the LLM")
    replay = LLMProposer(LLMClient("scripted/m", cache_dir=tmp_path, mode="replay"), num_formulas=2)
    second = replay.propose(members(), dim=30, num_proposals=3, round_index=2)
    assert second.candidates == first.candidates and second.usage["llm_cached_calls"] == 5
    # Another round has other seeds: nothing cached, every call is a rejection.
    third = replay.propose(members(), dim=30, num_proposals=3, round_index=3)
    assert third.candidates == [] and all("not in cache" in r.reason for r in third.rejections)


def test_plumbing_repair_loop(scripted: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def fake_validate(code: str, dim: int, class_name: str | None = None, **options: Any) -> Any:
        seen.append(code)
        ok = "Repaired" in code or "ScaledRBF" in code
        return ValidationResult(ok, None if ok else "shape: wrong", None if ok else "shape")

    def script(stage: str, text: str) -> str:
        if stage == "repair":
            assert "Reason: shape: wrong" in text and "Stage that failed: shape" in text
            return code_for("Repaired")
        return default_script(stage, text)

    scripted.script = script
    monkeypatch.setattr(llm_base, "validate_kernel_code", fake_validate)
    proposal = proposer(num_formulas=2, num_compositions=0, repair=True).propose(
        members(), dim=5, num_proposals=2, round_index=0
    )
    origins = {c.name: (c.origin, c.class_name) for c in proposal.candidates}
    assert origins == {"llm_r0_0": ("repair", "Repaired"), "llm_r0_1": ("discovery", "ScaledRBF")}
    assert proposal.usage["repair_attempted"] == 1 and proposal.usage["repair_succeeded"] == 1
    assert len(seen) == 2


def test_plumbing_names_unique_against_members(scripted: Any) -> None:
    pop = members()
    cand = KernelCandidate(name="llm_r0_0", formula="k = 1", spec={"kernel": "x"})
    pop.append(MemberSummary("llm_r0_0", "k = 1", "discovery", 0.5, cand))
    proposal = proposer(num_formulas=2, num_compositions=0).propose(pop, 5, 2, 0)
    assert [c.name for c in proposal.candidates] == ["llm_r0_0_2", "llm_r0_1"]


def test_make_proposer_builds_the_llm_proposers() -> None:
    from ax_kernel_discovery.config import KernelDiscoveryConfig
    from ax_kernel_discovery.proposers.direct import DirectCodeProposer

    cfg = KernelDiscoveryConfig(
        proposer="llm", llm_model="gpt-4o", num_formulas=2, psd_guidance=False
    )
    built = make_proposer(cfg)
    assert isinstance(built, LLMProposer) and built.num_formulas == 2
    assert built.options.psd_guidance is False and built.client.model == "gpt-4o"
    direct = make_proposer(cfg.model_copy(update={"proposer": "direct"}))
    assert isinstance(direct, DirectCodeProposer)


@pytest.fixture
def closed_port_url() -> str:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_plumbing_copy_and_pickle(scripted: Any) -> None:
    import copy
    import pickle

    original = proposer(num_formulas=2)
    original.propose(members(), dim=5, num_proposals=2, round_index=0)
    clone = copy.deepcopy(original)
    assert clone.client is original.client  # a client is a shared handle
    restored = pickle.loads(pickle.dumps(original))
    assert restored.client.model == "scripted/m" and len(restored.client.ledger) == 4
    again = restored.propose(members(), dim=5, num_proposals=2, round_index=1)
    assert len(again.candidates) == 2


def test_plumbing_local_model_missing_is_rejection(tmp_path: Any) -> None:
    missing = tmp_path / "absent.gguf"
    local = LLMProposer("local", client_kwargs={"model_path": str(missing)})
    proposal = local.propose(members(), dim=5, num_proposals=2, round_index=0)
    assert proposal.candidates == []
    assert (
        "LocalModelError" in proposal.rejections[0].reason
        and "not found" in proposal.rejections[0].reason
    )


def spec_members() -> list[MemberSummary]:
    """The start set as the surrogate holds it: expression-tree leaves."""
    from ax_kernel_discovery.expression import formula, leaf

    out = []
    for i, (name, kernel) in enumerate([("RBF", "rbf"), ("RQ", "rq"), ("SL", "sl")]):
        spec = leaf(kernel)
        cand = KernelCandidate(name=name, formula=formula(spec), spec=spec)
        out.append(MemberSummary(name, cand.formula, "base", 0.3 + 0.01 * i, cand))
    return out


def test_plumbing_structural_composition(scripted: Any) -> None:
    from ax_kernel_discovery.expression import build_kernel

    proposal = proposer(num_formulas=1).propose(
        spec_members(), dim=6, num_proposals=2, round_index=1
    )
    comp = next(c for c in proposal.candidates if c.origin == "composition")
    assert comp.spec == {
        "op": "sum",
        "args": [
            {"kernel": "rbf", "warp": "identity", "ard": True},
            {"kernel": "sl", "warp": "identity", "ard": True},
        ],
    }
    assert comp.parents == ("RBF", "SL") and comp.code is None
    assert "+" in comp.formula
    # no conversion call for it: one conversion (the discovery formula) only
    assert sorted(s for s, _ in scripted.prompts) == ["composition", "conversion", "discovery"]
    assert build_kernel(comp.spec, 6)(torch.rand(4, 6), torch.rand(3, 6)).shape == (4, 3)

    # a product, and an unclear combination (goes to conversion)
    scripted.script = lambda stage, text: (
        COMPOSITION.replace("COMBINATION: sum", "COMBINATION: product")
        if stage == "composition"
        else default_script(stage, text)
    )
    proposal = proposer(num_formulas=1).propose(spec_members(), 6, 2, 2)
    comp = next(c for c in proposal.candidates if c.origin == "composition")
    assert comp.spec is not None and comp.spec["op"] == "product"
    scripted.script = lambda stage, text: (
        COMPOSITION.replace("COMBINATION: sum", "COMBINATION: blend")
        if stage == "composition"
        else default_script(stage, text)
    )
    proposal = proposer(num_formulas=1).propose(spec_members(), 6, 2, 3)
    comp = next(c for c in proposal.candidates if c.origin == "composition")
    assert comp.spec is None and comp.code is not None
    # switched off: the paper's path, a conversion call
    proposal = proposer(num_formulas=1, structural_composition=False).propose(
        spec_members(), 6, 2, 4
    )
    comp = next(c for c in proposal.candidates if c.origin == "composition")
    assert comp.code is not None and comp.spec is None


def test_plumbing_discovery_example_copies_are_duplicates(scripted: Any) -> None:
    example = load_prompt("discovery_example")
    copied = example[example.index("```formula") :]
    scripted.script = lambda stage, text: (
        copied if stage == "discovery" else default_script(stage, text)
    )
    with_example = proposer(num_formulas=1, num_compositions=0, discovery_example=True)
    proposal = with_example.propose(members(), 8, 1, 0)
    discovery = next(t for s, t in scripted.prompts if s == "discovery")
    assert "KERNEL: AdditiveWarpedRBF" in discovery and "do not propose it" in discovery
    (rejection,) = proposal.rejections
    assert rejection.stage == "duplicate" and "format example" in rejection.reason
    assert proposal.candidates == []
    without = proposer(num_formulas=1, num_compositions=0)  # the default
    assert without.propose(members(), 8, 1, 1).candidates  # no example: nothing to copy
    assert "AdditiveWarpedRBF" not in scripted.prompts[-2][1]


def test_close_drops_an_own_client_and_keeps_a_given_one(scripted: Any) -> None:
    from ax_kernel_discovery.config import KernelDiscoveryConfig
    from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate

    own = LLMProposer("scripted/m", client_kwargs={"num_retries": 0})
    first = own.client
    own.close()
    assert own.client is not first  # a new client on the next call
    given = LLMClient("scripted/m", num_retries=0)
    kept = LLMProposer(given)
    kept.close()
    assert kept.client is given

    surrogate = KernelDiscoverySurrogate(
        config=KernelDiscoveryConfig(proposer="llm", llm_model="scripted/m")
    )
    proposer = surrogate.proposer
    client = proposer.client
    surrogate.close()
    assert proposer.client is not client and surrogate.proposer is proposer


@pytest.mark.parametrize("fallback", [True, False])
def test_a_round_without_llm_proposals_warns_once_and_is_counted(
    fallback: bool, closed_port_url: str, kd_caplog: pytest.LogCaptureFixture
) -> None:
    """The surrogate logs one WARNING with the reason; llm_rounds() counts the round."""
    import logging

    from ax_kernel_discovery import KernelDiscoveryConfig, KernelDiscoverySurrogate
    from ax_kernel_discovery.surrogate.round_record import RoundRecord

    config = KernelDiscoveryConfig(
        proposer="llm",
        llm_model="openai/fake",
        llm_api_base=closed_port_url,
        llm_retries=0,
        fallback_to_offline=fallback,
    )
    surrogate = KernelDiscoverySurrogate(config)
    population = surrogate._new_population(6)
    with kd_caplog.at_level(logging.WARNING, logger="ax_kernel_discovery.surrogate"):
        proposal = surrogate.proposing.proposal(population, 6, "f", 0)
    warnings = [r for r in kd_caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    text = warnings[0].getMessage()
    assert "the LLM proposer (openai/fake) gave no usable kernel" in text
    assert "APIConnectionError" in text or "Connection" in text  # the reason itself
    if fallback:
        assert "the offline operator proposed this round's kernels instead" in text
        assert proposal.candidates and all(c.origin == "offline" for c in proposal.candidates)
    else:
        assert "no new kernel this round (fallback_to_offline=False)" in text
        assert proposal.candidates == ()
    assert proposal.llm_used is False and proposal.llm_failure
    record = RoundRecord(
        round=0,
        outcome="f",
        n=10,
        dim=6,
        llm_used=proposal.llm_used,
        llm_failure=proposal.llm_failure,
    )
    surrogate.history.append(record)
    assert surrogate.llm_rounds() == {"rounds": 1, "used_llm": 0, "without_llm": 1}
