"""The CAKE baseline: expression parsing, the proposer, the method and the CLI (scripted LLM)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from ax_kernel_discovery.baselines import METHODS, get_method
from ax_kernel_discovery.baselines.cake import CakeSurrogate, NoLLMError
from ax_kernel_discovery.cli import main
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.llm.client import LLMClient
from ax_kernel_discovery.population import Population
from ax_kernel_discovery.proposers.cake import (
    CakeProposer,
    cake_expression,
    cake_start_candidates,
    parse_cake_expression,
)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Provider ``scripted`` (litellm ``CustomLLM`` answering with ``mock_response``)."""
    import litellm

    class Scripted(litellm.CustomLLM):
        def __init__(self) -> None:
            super().__init__()
            self.prompts: list[str] = []
            self.kwargs: list[dict[str, Any]] = []
            self.script: Callable[[str], str] = lambda prompt: "{}"
            self._lock = threading.Lock()

        def completion(self, *args: Any, **kwargs: Any) -> Any:
            prompt = kwargs["messages"][-1]["content"]
            with self._lock:
                self.prompts.append(prompt)
                self.kwargs.append(kwargs.get("optional_params", {}))
            return litellm.completion(
                model="gpt-4o", messages=kwargs["messages"], mock_response=self.script(prompt)
            )

    handler = Scripted()
    monkeypatch.setattr(
        litellm, "custom_provider_map", [{"provider": "scripted", "custom_handler": handler}]
    )
    return handler


def _reply(*expressions: str) -> str:
    return json.dumps(
        {
            "kernels": [
                {"rationale": f"idea {i}", "expression": e} for i, e in enumerate(expressions)
            ]
        }
    )


@pytest.mark.parametrize(
    ("text", "short"),
    [
        ("SE", "rbf"),
        ("(SE + PER) * RQ", "((rbf+periodic)*rq)"),
        ("M52 x LIN", "(matern52*linear)"),
        ("SE + M32 + RQ", "(rbf+matern32+rq)"),
        ("rbf * Matern52", "(rbf*matern52)"),
    ],
)
def test_parse_cake_expression(text: str, short: str) -> None:
    from ax_kernel_discovery.expression import short_name

    spec = parse_cake_expression(text)
    assert short_name(spec) == short
    assert parse_cake_expression(cake_expression(spec)) == spec


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("SE + FOO", "unknown base kernel"),
        ("(SE + PER", "unbalanced"),
        ("SE +", "ends early"),
        ("SE PER", "unexpected"),
        ("", "empty"),
    ],
)
def test_parse_cake_expression_errors(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_cake_expression(text)


def _members() -> list[Any]:
    pop = Population(cake_start_candidates())
    for i, m in enumerate(pop):
        pop.set_score(m.name, 100.0 + i)
    return pop.summaries()


def test_proposer_sees_a_truncated_view_of_the_data(scripted: Any) -> None:
    scripted.script = lambda prompt: _reply("(SE + PER) * RQ", "SE", "SE * M32 * RQ * LIN", "HUH")
    proposer = CakeProposer(LLMClient("scripted/m", num_retries=0), max_rows=5, max_dims=3)
    X = torch.rand(12, 7)
    proposer.observe(X, torch.arange(12.0).reshape(-1, 1))
    out = proposer.propose(_members(), dim=7, num_proposals=4, round_index=1)
    prompt = scripted.prompts[0]
    assert "showing 5 of 12 observations, first 3 of 7 coordinates" in prompt
    assert prompt.count("x = [") == 5 and "y = 11" in prompt and "y = 6" not in prompt
    assert "SE (BIC 100)" in prompt and "M52 (BIC 105)" in prompt
    assert [c.name for c in out.candidates] == ["cake_r1_0:((rbf+periodic)*rq)"]
    stages = {r.name: (r.stage, r.reason) for r in out.rejections}
    assert stages["cake_r1_1"] == ("duplicate", "repeats SE")
    assert stages["cake_r1_2"][0] == "grammar" and "4 base kernels" in stages["cake_r1_2"][1]
    assert stages["cake_r1_3"][0] == "grammar" and "unknown base kernel" in stages["cake_r1_3"][1]


def test_proposer_reads_plain_lines_and_reports_garbage(scripted: Any) -> None:
    replies = iter(["1. `SE + LIN`\n2. M52 * PER\n", "no idea"])
    scripted.script = lambda prompt: next(replies)
    proposer = CakeProposer(LLMClient("scripted/m", num_retries=0))
    out = proposer.propose(_members(), dim=3, num_proposals=2, round_index=0)
    assert [c.spec is not None for c in out.candidates] == [True, True]
    out = proposer.propose(_members(), dim=3, num_proposals=2, round_index=1)
    assert not out.candidates and out.rejections[0].stage == "parse"


def test_method_needs_an_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AXKD_LLM_MODEL", raising=False)
    assert "cake" in METHODS
    with pytest.raises(NoLLMError, match="--llm"):
        get_method("cake", num_sobol=5)
    gs = get_method("cake", num_sobol=5, config=KernelDiscoveryConfig(llm_model="scripted/m"))
    assert gs.name == "Sobol+cake"


def test_surrogate_defaults() -> None:
    s = CakeSurrogate(KernelDiscoveryConfig(llm_model="scripted/m", criterion="loo_crps"))
    assert s.config.criterion == "bic"
    assert [m.name for m in s.population] == ["SE", "PER", "LIN", "RQ", "M32", "M52"]
    clone = s.clone_reset()
    assert isinstance(clone, CakeSurrogate) and clone.config.llm_model == "scripted/m"


def test_cake_runs_from_the_cli(scripted: Any, tmp_path: Path) -> None:
    scripted.script = lambda prompt: _reply("SE * LIN", "(M52 + PER) * RQ")
    argv = ["run", "--problem", "rover60", "--method", "cake", "--llm", "scripted/m"]
    argv += ["--budget", "14", "--batch", "2", "--num-sobol", "10", "--num-restarts", "1"]
    argv += ["--raw-samples", "32", "--maxiter", "20", "--out", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    result = json.loads((tmp_path / "rover60__cake__seed0.json").read_text())
    assert result["status"] == "complete" and result["n_evaluations"] == 14
    bo = [r for r in result["rounds"] if r["kind"] == "bo"]
    assert bo and bo[0]["chosen"] is not None
    accepted = [name for r in bo for name in r.get("accepted", [])]
    assert any(name.startswith("cake_r0_") for name in accepted)
    assert any("showing 10 of 10 observations" in p for p in scripted.prompts)


def test_cake_cli_without_llm_fails_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AXKD_LLM_MODEL", raising=False)
    argv = ["run", "--problem", "rover60", "--method", "cake", "--budget", "12", "--batch", "2"]
    argv += ["--num-sobol", "10", "--out", str(tmp_path), "--no-progress"]
    assert main(argv) != 0
    assert "needs an LLM" in capsys.readouterr().err
