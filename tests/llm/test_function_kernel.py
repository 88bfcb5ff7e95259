"""Function-style conversion: parsing, the generated Kernel class, and the proposer path."""

from __future__ import annotations

import unittest
from typing import Any

import litellm
import pytest
import torch

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.llm.client import LLMClient
from ax_kernel_discovery.llm.function_kernel import build_kernel_source, kernel_class_name
from ax_kernel_discovery.llm.parsing import ParseError, extract_function_block
from ax_kernel_discovery.llm.templates import (
    copies_function_example,
    function_conversion_messages,
    function_repair_messages,
    seed_formulas,
)
from ax_kernel_discovery.population import MemberSummary
from ax_kernel_discovery.proposers.from_config import make_proposer
from ax_kernel_discovery.proposers.llm import LLMProposer
from ax_kernel_discovery.sandbox import check_source, load_kernel_class
from ax_kernel_discovery.sandbox.validate import validate_kernel_code
from ax_kernel_discovery.testing import KernelContractMixin

pytestmark = pytest.mark.filterwarnings("ignore:Item .summary. on TypedDict:UserWarning")

torch.set_num_threads(1)

RBF_FN = """import torch

def covariance(x1, x2, p):
    d = torch.cdist(x1 / p["lengthscale"], x2 / p["lengthscale"])
    return torch.exp(-0.5 * d.pow(2))
"""

RQ_FN = """import math
import torch

def _sq(a, b):
    return torch.cdist(a, b).pow(2)

def covariance(x1, x2, p):
    r2 = _sq(x1 / p["lengthscale"], x2 / p["lengthscale"])
    alpha = p["alpha"]
    return p["w"] + (1.0 - p["w"]) * (1.0 + r2 / (2.0 * alpha)).pow(-alpha)
"""

MATERN_REPLY = """Sure! Here is the function.

```python
import torch
import math

PARAMETERS = {"lengthscale": "ard", "unused": "positive"}


def covariance(x1, x2, p):
    r = torch.cdist(x1 / p["lengthscale"], x2 / p["lengthscale"]).clamp_min(1e-12)
    s5 = math.sqrt(5.0)
    return (1.0 + s5 * r + 5.0 / 3.0 * r.pow(2)) * torch.exp(-s5 * r)


print(covariance(torch.rand(3, 2), torch.rand(4, 2), {}))
```

This is the Matern 5/2 kernel."""


# ----------------------------------------------------------------- the template


@pytest.mark.parametrize(
    ("params", "fn", "name"),
    [
        ({"lengthscale": "ard"}, RBF_FN, "FnRBF"),
        ({"lengthscale": "ard", "alpha": "positive", "w": "unit"}, RQ_FN, "FnRQ"),
    ],
)
def test_template_output_passes_sandbox_and_validation(
    params: dict[str, str], fn: str, name: str
) -> None:
    src = build_kernel_source(params, fn, name, "k(x, x') = ...")
    check_source(src)
    cls = load_kernel_class(src, name)
    kernel = cls(ard_num_dims=3)
    x = torch.rand(2, 5, 3)
    assert kernel.forward(x, x[..., :4, :]).shape == (2, 5, 4)
    assert kernel.forward(x, x, diag=True).shape == (2, 5)
    result = validate_kernel_code(src, 6, name, fit_timeout=60.0)
    assert result.ok, result.reason


def test_template_parameters_and_constraints() -> None:
    src = build_kernel_source(
        {"lengthscale": "ard", "alpha": "positive", "w": "unit"}, RQ_FN, "K", ""
    )
    kernel = load_kernel_class(src, "K")(ard_num_dims=4)
    shapes = {n: tuple(p.shape) for n, p in kernel.named_parameters()}
    assert shapes == {"raw_lengthscale": (1, 4), "raw_alpha": (1, 1), "raw_w": (1, 1)}
    assert 0.0 < float(kernel.raw_w_constraint.transform(kernel.raw_w).detach()) < 1.0
    with pytest.raises(ValueError, match="unknown kind"):
        build_kernel_source({"a": "huge"}, RBF_FN, "K", "")
    with pytest.raises(ValueError, match="identifier"):
        build_kernel_source({"a-b": "positive"}, RBF_FN, "K", "")


def test_kernel_class_name_avoids_collisions() -> None:
    assert kernel_class_name("Warped RQ (v2)") == "WarpedRQv2"
    assert kernel_class_name("covariance") == "Covariance"
    assert kernel_class_name("Kernel") == "KernelKernel"
    assert kernel_class_name("_x", {"X"}) == "XKernel"
    assert kernel_class_name("2d") == "K2d"


# ----------------------------------------------------------------- parsing


def test_parse_reply_with_prose_and_fences() -> None:
    block = extract_function_block(MATERN_REPLY)
    assert block.parameters == {"lengthscale": "ard"}
    assert block.notes == ("dropped unused unused",)
    assert "def covariance(x1, x2, p):" in block.source
    assert "PARAMETERS" not in block.source and "print(" not in block.source
    src = build_kernel_source(block.parameters, block.source, "M52", "matern")
    check_source(src)
    kernel = load_kernel_class(src, "M52")(ard_num_dims=2)
    assert kernel.forward(torch.rand(3, 2), torch.rand(4, 2)).shape == (3, 4)


def test_parse_unfenced_and_missing_parameters_added() -> None:
    reply = (
        "PARAMETERS = {'lengthscale': 'ARD'}\n"
        "def covariance(x1, x2, p):\n"
        "    r = torch.cdist(x1 / p['lengthscale'], x2 / p['lengthscale'])\n"
        "    return p['scale'] * torch.exp(-r)\n"
        "That is all."
    )
    block = extract_function_block(reply)
    assert block.parameters == {"lengthscale": "ard", "scale": "positive"}
    assert block.notes == ("added scale (positive)",)
    assert "That is all" not in block.source


def test_parse_parameters_in_separate_block() -> None:
    reply = '```python\nPARAMETERS = {"lengthscale": "ard"}\n```\n\n```python\n' + RBF_FN + "```"
    assert extract_function_block(reply).parameters == {"lengthscale": "ard"}


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty reply"),
        ("I cannot do that.", "no Python code"),
        (
            "```python\nPARAMETERS = {}\ndef cov(x1, x2, p):\n    return x1\n```",
            "no top-level function",
        ),
        (  # no PARAMETERS, and p escapes to a helper: the names cannot be inferred
            "```python\ndef covariance(x1, x2, p):\n    return helper(x1, x2, p)\n```",
            "no PARAMETERS",
        ),
        (
            "```python\nPARAMETERS = {'lengthscale': 'huge'}\n" + RBF_FN + "```",
            "unknown kind 'huge'",
        ),
        (
            "```python\nPARAMETERS = {'length scale': 'ard'}\n" + RBF_FN + "```",
            "not a plain identifier",
        ),
        (
            "```python\nPARAMETERS = dict(lengthscale='ard')\n" + RBF_FN + "```",
            "not a dict literal",
        ),
        ("```python\nPARAMETERS = ['ard']\n" + RBF_FN + "```", "must be a dict"),
        (
            "```python\nPARAMETERS = {}\ndef covariance(x1, x2):\n    return x1\n```",
            "three arguments",
        ),
        (
            "```python\nPARAMETERS = {}\ndef covariance(x1, x2, p):\n  return (\n```",
            "does not parse",
        ),
    ],
)
def test_parse_errors_have_reasons(reply: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason.replace("(", r"\(")):
        extract_function_block(reply)


def test_prompts_and_example_copy_detection() -> None:
    msgs = function_conversion_messages("k(x, x') = exp(-r)", dim=7)
    user = msgs[1]["content"]
    assert user.startswith("Convert a Gaussian-process kernel")
    assert "def covariance(x1, x2, p)" in user and "(D = 7)" in user and "$" not in user
    example = extract_function_block(
        '```python\nimport torch\n\nPARAMETERS = {"lengthscale": "ard"}\n\n\n'
        "def covariance(x1, x2, p):\n"
        '    u1 = x1 / p["lengthscale"]\n    u2 = x2 / p["lengthscale"]\n'
        "    sq_dist = torch.cdist(u1, u2).pow(2)\n    return torch.exp(-0.5 * sq_dist)\n```"
    )
    assert copies_function_example(example.fingerprint)
    assert not copies_function_example(extract_function_block(MATERN_REPLY).fingerprint)
    repair = function_repair_messages("PARAMETERS = {}", "shape: bad", formula="f", dim=3)
    assert "rejected by our checks" in repair[1]["content"] and "$" not in repair[1]["content"]


# ----------------------------------------------------------------- the proposer

DISCOVERY = """```formula
KERNEL: Matern52ARD
PARAMETERS: lengthscale l (one per dimension)
INPUT TRANSFORM: none
COVARIANCE FUNCTION: k(x, x') = (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r), r = ||(x - x') / l||
```
```formula
KERNEL: covariance
PARAMETERS: lengthscale l
INPUT TRANSFORM: none
COVARIANCE FUNCTION: k(x, x') = exp(-r)
```"""

EXP_REPLY = """```python
import torch
PARAMETERS = {"lengthscale": "ard"}
def covariance(x1, x2, p):
    return torch.exp(-torch.cdist(x1 / p["lengthscale"], x2 / p["lengthscale"]))
```"""


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Any:
    class Scripted(litellm.CustomLLM):
        def __init__(self) -> None:
            super().__init__()
            self.prompts: list[str] = []
            self.discovery = DISCOVERY
            self.conversion: str | None = None

        def completion(self, *args: Any, **kwargs: Any) -> Any:
            text = kwargs["messages"][-1]["content"]
            self.prompts.append(text)
            if text.startswith("Convert a Gaussian-process kernel"):
                reply = self.conversion or (MATERN_REPLY if "Matern52ARD" in text else EXP_REPLY)
            elif "rejected by our checks" in text:
                reply = EXP_REPLY
            else:
                reply = self.discovery
            return litellm.completion(
                model="gpt-4o", messages=kwargs["messages"], mock_response=reply
            )

    handler = Scripted()
    monkeypatch.setattr(
        litellm, "custom_provider_map", [{"provider": "scripted", "custom_handler": handler}]
    )
    return handler


def _members() -> list[MemberSummary]:
    out = []
    for i, (name, formula) in enumerate(seed_formulas().items()):
        cand = KernelCandidate(name=name, formula=formula, spec={"kernel": name})
        out.append(MemberSummary(name, formula, "base", 0.3 + 0.01 * i, cand))
    return out


def test_proposer_function_mode_yields_valid_candidates(scripted: Any) -> None:
    proposer = LLMProposer(
        LLMClient("scripted/m", num_retries=0),
        num_formulas=2,
        num_compositions=0,
        conversion_style="function",
    )
    proposal = proposer.propose(_members(), dim=5, num_proposals=2, round_index=0)
    assert proposal.rejections == []
    first, second = proposal.candidates
    assert first.class_name == "Matern52ARD" and second.class_name == "Covariance"
    conversions = [t for t in scripted.prompts if t.startswith("Convert")]
    assert len(conversions) == 2 and all("def covariance(x1, x2, p)" in t for t in conversions)
    assert "class Matern52ARD(Kernel):" in (first.code or "")
    result = validate_kernel_code(first.code or "", 5, first.class_name, fit_timeout=60.0)
    assert result.ok, result.reason


def test_proposer_function_mode_duplicates(scripted: Any) -> None:
    proposer = LLMProposer(
        LLMClient("scripted/m", num_retries=0),
        num_formulas=2,
        num_compositions=0,
        conversion_style="function",
    )
    discovery = DISCOVERY.replace("Matern52ARD", "Other")  # both get EXP_REPLY
    scripted.discovery = discovery
    proposal = proposer.propose(_members(), dim=5, num_proposals=2, round_index=3)
    assert [c.name for c in proposal.candidates] == ["llm_r3_0"]
    (rejection,) = proposal.rejections
    assert rejection.stage == "duplicate" and "same covariance() as llm_r3_0" in rejection.reason


def test_proposer_function_mode_repair(scripted: Any) -> None:
    scripted.conversion = (
        '```python\nPARAMETERS = {"lengthscale": "ard"}\n'
        "def covariance(x1, x2, p):\n"
        '    return -torch.cdist(x1 / p["lengthscale"], x2 / p["lengthscale"])\n```'
    )
    proposer = LLMProposer(
        LLMClient("scripted/m", num_retries=0),
        num_formulas=1,
        num_compositions=0,
        conversion_style="function",
        repair=True,
    )
    proposal = proposer.propose(_members(), dim=4, num_proposals=1, round_index=0)
    (candidate,) = proposal.candidates
    assert proposal.usage["repair_attempted"] == 1.0 and proposal.usage["repair_succeeded"] == 1.0
    repair = next(t for t in scripted.prompts if "rejected by our checks" in t)
    assert 'PARAMETERS = {"lengthscale": "ard"}' in repair and "class Matern52ARD" not in repair
    assert candidate.origin == "repair" and candidate.class_name == "Matern52ARD"
    result = validate_kernel_code(candidate.code or "", 4, candidate.class_name, fit_timeout=60.0)
    assert result.ok, result.reason


def test_conversion_style_from_config() -> None:
    cfg = KernelDiscoveryConfig(proposer="llm", llm_model="scripted/m", conversion_style="function")
    from_cfg = make_proposer(cfg)
    assert isinstance(from_cfg, LLMProposer) and from_cfg.conversion_style == "function"
    default = make_proposer(KernelDiscoveryConfig(proposer="llm", llm_model="scripted/m"))
    assert isinstance(default, LLMProposer) and default.conversion_style == "class"
    with pytest.raises(ValueError, match="conversion_style"):
        LLMProposer("scripted/m", conversion_style="code")  # type: ignore[arg-type]


def test_torch_math_on_plain_numbers_is_rewritten_to_math() -> None:
    from ax_kernel_discovery.llm.parsing import extract_function_block

    reply = (
        "```python\nPARAMETERS = {'lengthscale': 'ard'}\n"
        "def covariance(x1, x2, p):\n"
        "    d = torch.cdist(x1 / p['lengthscale'], x2 / p['lengthscale'])\n"
        "    return (1 + torch.sqrt(5.0) * d + 5.0 / 3.0 * d ** 2) * torch.exp(-torch.sqrt(5.0) * d)\n```"
    )
    block = extract_function_block(reply)
    assert "torch.sqrt(5.0)" not in block.source
    assert block.source.count("math.sqrt(5.0)") == 2
    assert "torch.exp(" in block.source  # tensor calls are left alone
    assert any("math.<fn>" in note for note in block.notes)


# ----------------------------------------------------------------- pair style

PAIR_RBF = """import torch

def covariance(x, y, p):
    r2 = torch.sum(((x - y) / p["lengthscale"]) ** 2)
    return p["b"] + (1.0 - p["b"]) * torch.exp(-0.5 * r2)
"""

PAIR_WARPED_DOT = """import torch

def covariance(x, y, p):
    u = torch.tanh(p["c"] * (x - 0.5) / p["w"])
    v = torch.tanh(p["c"] * (y - 0.5) / p["w"])
    return torch.dot(u, v) / x.size(0)
"""


def _reference_rbf(kernel: Any, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    ls = kernel.lengthscale
    b = kernel.raw_b_constraint.transform(kernel.raw_b)
    return b + (1.0 - b) * torch.exp(-0.5 * torch.cdist(x1 / ls, x2 / ls).pow(2))


def test_pair_template_matches_the_batched_formula() -> None:
    src = build_kernel_source(
        {"lengthscale": "ard", "b": "unit"}, PAIR_RBF, "PairRBF", "k", pairwise=True
    )
    check_source(src)
    kernel = load_kernel_class(src, "PairRBF")(ard_num_dims=3).double()
    with torch.no_grad():
        kernel.lengthscale = torch.tensor([[0.3, 0.7, 1.9]])
    x1 = torch.rand(2, 5, 3, dtype=torch.float64)
    x2 = torch.rand(2, 4, 3, dtype=torch.float64)
    gram = kernel.forward(x1, x2)
    assert gram.shape == (2, 5, 4)
    torch.testing.assert_close(gram, _reference_rbf(kernel, x1, x2))
    # unbatched x2 against batched x1 (Ax's acquisition calls), and diag
    x3 = torch.rand(7, 1, 2, 3, dtype=torch.float64)
    torch.testing.assert_close(kernel.forward(x3, x2[0]), _reference_rbf(kernel, x3, x2[0]))
    diag = kernel.forward(x1, x1, diag=True)
    torch.testing.assert_close(diag, torch.diagonal(kernel.forward(x1, x1), dim1=-2, dim2=-1))
    # gradients reach the inputs and the hyperparameters
    xg = x1.clone().requires_grad_(True)
    kernel.forward(xg, x2).sum().backward()
    assert xg.grad is not None and torch.isfinite(xg.grad).all()
    assert kernel.raw_lengthscale.grad is not None and kernel.raw_b.grad is not None
    result = validate_kernel_code(src, 6, "PairRBF", fit_timeout=60.0)
    assert result.ok, result.reason


def test_pair_template_with_batched_hyperparameters() -> None:
    src = build_kernel_source(
        {"c": "positive", "w": "ard"}, PAIR_WARPED_DOT, "WarpedDot", "k", pairwise=True
    )
    kernel = load_kernel_class(src, "WarpedDot")(ard_num_dims=4, batch_shape=torch.Size([2]))
    with torch.no_grad():
        kernel.raw_c.copy_(torch.tensor([[[0.5]], [[2.0]]]))
        kernel.raw_w.copy_(torch.randn(2, 1, 4))
    x1, x2 = torch.rand(2, 5, 4), torch.rand(3, 4)
    gram = kernel.forward(x1, x2)
    assert gram.shape == (2, 5, 3)
    c = kernel.raw_c_constraint.transform(kernel.raw_c)
    w = kernel.raw_w_constraint.transform(kernel.raw_w)
    u, v = torch.tanh(c * (x1 - 0.5) / w), torch.tanh(c * (x2 - 0.5) / w)
    torch.testing.assert_close(gram, u @ v.transpose(-2, -1) / 4)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("    return (x - y) ** 2\n", "one number per pair of points"),
        (
            "    r = torch.norm(x - y)\n    if r > 0.5:\n        r = r * 2.0\n    return torch.exp(-r)\n",
            "data-dependent control flow",
        ),
        ("    return torch.exp(-torch.cdist(x, y))\n", "cdist"),
    ],
)
def test_pair_bugs_are_rejected_with_reasons(body: str, reason: str) -> None:
    fn = "import torch\n\ndef covariance(x, y, p):\n" + body
    src = build_kernel_source({}, fn, "Bad", "k", pairwise=True)
    result = validate_kernel_code(src, 5, "Bad", fit_timeout=30.0)
    assert not result.ok and result.stage == "shape"
    assert reason in (result.reason or "")


PAIR_REPLY = """```python
import torch
import math

PARAMETERS = {"lengthscale": "ard"}


def covariance(x, y, p):
    r = torch.norm((x - y) / p["lengthscale"]).clamp_min(1e-12)
    return (1.0 + math.sqrt(5.0) * r + 5.0 / 3.0 * r ** 2) * torch.exp(-math.sqrt(5.0) * r)
```"""


def test_proposer_pair_mode(scripted: Any) -> None:
    scripted.conversion = PAIR_REPLY
    proposer = LLMProposer(
        LLMClient("scripted/m", num_retries=0),
        num_formulas=1,
        num_compositions=0,
        conversion_style="pair",
    )
    proposal = proposer.propose(_members(), dim=5, num_proposals=1, round_index=0)
    assert proposal.rejections == []
    (candidate,) = proposal.candidates
    (conversion,) = [t for t in scripted.prompts if t.startswith("Convert")]
    assert "def covariance(x, y, p)" in conversion and "ONE pair of points" in conversion
    assert "$" not in conversion and "x1" not in conversion
    assert "torch.vmap" in (candidate.code or "")
    result = validate_kernel_code(candidate.code or "", 5, candidate.class_name, fit_timeout=60.0)
    assert result.ok, result.reason
    # the pair examples are recognised as copies too
    example = function_conversion_messages("k", dim=3, style="pair")[1]["content"]
    first = example[
        example.index("```python") : example.index("```", example.index("```python") + 9) + 3
    ]
    assert copies_function_example(extract_function_block(first).fingerprint)
    repair = function_repair_messages("PARAMETERS = {}", "bad", formula="f", dim=3, style="pair")
    assert "covariance(x, y, p)" in repair[1]["content"] and "$" not in repair[1]["content"]
    with pytest.raises(ValueError, match="function conversion style"):
        function_conversion_messages("k", dim=3, style="class")


def test_small_model_numeric_bugs_are_fixed_without_changing_the_maths() -> None:
    reply = """```python
import torch
import math

PARAMETERS = {"l": "positive", "alpha": "unit", "w0": "unit", "w1": "unit"}

def covariance(x, y, p):
    D = x.size(0)
    l = p["l"]
    alpha = p["alpha"]
    w0 = p["w0"]
    w1 = p["w1"]
    r = torch.norm(x - y) / (l * math.sqrt(D))
    m52 = (1 + math.sqrt(5) * r + 5 / 3 * r ** 2) * math.exp(-math.sqrt(5) * r)
    weights = torch.softmax(torch.tensor([w0, w1]), dim=0)
    return weights[0] + weights[1] * m52
```"""
    block = extract_function_block(reply)
    assert block.parameters == {"l": "positive", "w0": "unit", "w1": "unit"}
    assert "removed unused reads of alpha" in block.notes
    assert "math.<fn>(tensor) -> torch.<fn>(tensor) x2" in block.notes
    assert "torch.tensor([tensors]) -> torch.stack x1" in block.notes
    src = build_kernel_source(block.parameters, block.source, "Fixed", "k", pairwise=True)
    kernel = load_kernel_class(src, "Fixed")(ard_num_dims=4).double()
    x1, x2 = torch.rand(5, 4, dtype=torch.float64), torch.rand(3, 4, dtype=torch.float64)
    gram = kernel.forward(x1, x2)
    # the same maths written batched by hand
    raw = {n: getattr(kernel, f"raw_{n}") for n in ("l", "w0", "w1")}
    v = {n: getattr(kernel, f"raw_{n}_constraint").transform(t) for n, t in raw.items()}
    r = torch.cdist(x1, x2) / (v["l"] * 2.0)
    m52 = (1 + 5**0.5 * r + 5 / 3 * r**2) * torch.exp(-(5**0.5) * r)
    w = torch.softmax(torch.stack([v["w0"].squeeze(), v["w1"].squeeze()]), dim=0)
    torch.testing.assert_close(gram, w[0] + w[1] * m52)
    gram.sum().backward()
    assert all(t.grad is not None for t in raw.values())  # the gradient reaches w0, w1
    result = validate_kernel_code(src, 6, "Fixed", fit_timeout=60.0)
    assert result.ok, result.reason


def test_formula_label_lines_inside_the_code_block_are_dropped() -> None:
    reply = """```python
# KERNEL: WarpedRBF
PARAMETERS: lengthscale l (one per dimension)
INPUT TRANSFORM: u = tanh(x)

import torch

PARAMETERS = {"lengthscale": "ard"}


def covariance(x, y, p):
    return torch.exp(-0.5 * torch.sum(((torch.tanh(x) - torch.tanh(y)) / p["lengthscale"]) ** 2))
```"""
    block = extract_function_block(reply)
    assert block.parameters == {"lengthscale": "ard"}
    assert "INPUT TRANSFORM" not in block.source and "def covariance(x, y, p)" in block.source


# ------------------------------------------------ GPyTorch's kernel contract


PAIR_RBF_DOT = """def covariance(x, y, p):
    d = (x - y) / p["lengthscale"]
    return torch.exp(-0.5 * (d * d).sum()) * (1.0 + p["c"] * (x * y).sum())
"""

_CODE_PICKLE = (
    "the class exists only in the sandbox loader's namespace, which pickle cannot name; "
    "DiscoveredKernel, the class Ax holds, pickles it by rebuilding from the source "
    "(tests/kernels/test_discovered.py)"
)


class _GeneratedContract:
    """A class written by the template around an LLM's function, loaded by the sandbox."""

    skipped_tests = {"test_kernel_pickle_unpickle": _CODE_PICKLE}
    kernel_class: type

    def create_kernel_no_ard(self, **kwargs: Any) -> Any:
        return self.kernel_class(**kwargs)

    def create_kernel_ard(self, num_dims: int, **kwargs: Any) -> Any:
        return self.kernel_class(ard_num_dims=num_dims, **kwargs)


class TestGeneratedFunctionKernel(_GeneratedContract, KernelContractMixin, unittest.TestCase):
    kernel_class = load_kernel_class(
        build_kernel_source(
            {"lengthscale": "ard", "alpha": "positive", "w": "unit"}, RQ_FN, "FnRQ", "rq"
        ),
        "FnRQ",
    )


class TestGeneratedPairKernel(_GeneratedContract, KernelContractMixin, unittest.TestCase):
    kernel_class = load_kernel_class(
        build_kernel_source(
            {"lengthscale": "ard", "c": "positive"}, PAIR_RBF_DOT, "PairRBFDot", "k", pairwise=True
        ),
        "PairRBFDot",
    )
