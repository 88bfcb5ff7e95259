"""Parsing of formula blocks and kernel code from sloppy LLM replies."""

from __future__ import annotations

import pytest

from ax_kernel_discovery.llm.parsing import (
    FormulaBlock,
    ParseError,
    extract_code_block,
    extract_code_blocks,
    extract_formula_blocks,
    find_kernel_class,
    strip_thinking,
)

BLOCK = """```formula
KERNEL: AdditiveRBF
PARAMETERS: lengthscale l (one per dimension, positive)
INPUT TRANSFORM: none
COVARIANCE FUNCTION: k(x, x') = (1/D) sum_d exp(-(x_d - x'_d)^2 / (2 l_d^2))
PSD GUARANTEE: a sum of PSD kernels is PSD.
```"""

CODE = '''import torch
import gpytorch


class AdditiveRBF(gpytorch.kernels.Kernel):
    """k(x, x') = (1/D) sum_d exp(-(x_d - x'_d)^2 / (2 l_d^2))"""

    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        a = x1.div(self.lengthscale)
        b = x2.div(self.lengthscale)
        if diag:
            return torch.exp(-0.5 * (a - b).pow(2)).mean(-1)
        return torch.exp(-0.5 * (a.unsqueeze(-2) - b.unsqueeze(-3)).pow(2)).mean(-1)
'''


def test_formula_block_fields() -> None:
    (block,) = extract_formula_blocks("Sure! Here it is:\n\n" + BLOCK + "\nHope this helps.")
    assert block.name == "AdditiveRBF"
    assert block.formula.startswith("k(x, x') = (1/D) sum_d")
    assert block.parameters.startswith("lengthscale l")
    assert block.input_transform == ""  # "none"
    assert block.psd_guarantee == "a sum of PSD kernels is PSD."
    assert "COVARIANCE FUNCTION" in block.raw


def test_several_blocks_bold_labels_and_numbering() -> None:
    reply = """1. **First**
   ```formula
   **KERNEL:** Warped
   **PARAMETERS:** a (one per dimension)
   **INPUT TRANSFORM:** u_d = x_d ** a_d
   **COVARIANCE FUNCTION:** k(x, x') = exp(-||u - u'||^2 / D)
   ```
2. Second
```formula
- KERNEL: Periodic
- COVARIANCE FUNCTION: k(x, x') = exp(-2 sin^2(pi ||x - x'|| / p))
```"""
    blocks = extract_formula_blocks(reply)
    assert [b.name for b in blocks] == ["Warped", "Periodic"]
    assert blocks[0].input_transform == "u_d = x_d ** a_d"
    assert blocks[0].formula == "k(x, x') = exp(-||u - u'||^2 / D)"


def test_missing_fences_and_unclosed_fence() -> None:
    unfenced = (
        "KERNEL: A\nCOVARIANCE FUNCTION: k(x, x') = 1 + x^T x'\n\nKERNEL: B\nFORMULA: k = exp(-r)"
    )
    assert [b.name for b in extract_formula_blocks(unfenced)] == ["A", "B"]
    unclosed = (
        "```formula\nKERNEL: C\nCOVARIANCE FUNCTION: k(x, x') = exp(-r)\nPSD GUARANTEE: Bochner"
    )
    (block,) = extract_formula_blocks(unclosed)
    assert block.name == "C" and block.psd_guarantee == "Bochner"


def test_multiline_formula_and_multiple_kernels_in_one_fence() -> None:
    reply = """```
KERNEL: Long
COVARIANCE FUNCTION: k(x, x') = exp(-r^2)
    * (1 + x^T x')
KERNEL: Other
COVARIANCE FUNCTION: k(x, x') = (x^T x' + 1)^2
```"""
    blocks = extract_formula_blocks(reply)
    assert [b.name for b in blocks] == ["Long", "Other"]
    assert blocks[0].formula == "k(x, x') = exp(-r^2) * (1 + x^T x')"


def test_composition_fields() -> None:
    reply = """```formula
KERNEL: RBFTimesSL
PARENTS: RBF, SL
COMBINATION: Product.
COVARIANCE FUNCTION: k(x, x') = k_RBF(x, x') * k_SL(x, x')
```"""
    (block,) = extract_formula_blocks(reply)
    assert block.parents == ("RBF", "SL") and block.combination == "product"


def test_think_sections_removed() -> None:
    reply = "<think>KERNEL: Wrong\nCOVARIANCE FUNCTION: nope</think>\n" + BLOCK
    assert [b.name for b in extract_formula_blocks(reply)] == ["AdditiveRBF"]
    assert strip_thinking("reasoning without opening tag</think>answer") == "answer"
    assert strip_thinking("<think>cut off while thinking") == ""


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty reply"),
        ("I cannot help with that.", "no formula block"),
        ("```formula\nKERNEL: X\nPARAMETERS: none\n```", "no COVARIANCE FUNCTION"),
        ("<think>KERNEL: A\nCOVARIANCE FUNCTION: k=1</think>", "empty reply"),
    ],
)
def test_formula_parse_errors(reply: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        extract_formula_blocks(reply)


def test_as_block_roundtrip() -> None:
    (block,) = extract_formula_blocks(BLOCK)
    (again,) = extract_formula_blocks(block.as_block())
    assert again == block
    assert FormulaBlock(name="A", formula="k = 1", input_transform="u = x^2").describe() == (
        "k = 1; input transform: u = x^2"
    )


def test_code_block_with_prose_and_example_block() -> None:
    reply = (
        "Here is the class:\n```python\n" + CODE + "```\n\nUsage:\n```python\n"
        "k = AdditiveRBF(ard_num_dims=3)\n```\n"
    )
    block = extract_code_block(reply)
    assert block.class_name == "AdditiveRBF" and block.code == CODE
    assert block.docstring.startswith("k(x, x')")


def test_code_block_without_fences_trims_prose() -> None:
    reply = "Sure, the code:\n\n" + CODE + "\nThis kernel is additive.\n"
    block = extract_code_block(reply)
    assert block.class_name == "AdditiveRBF"
    assert "This kernel is additive" not in block.code and "def forward" in block.code


def test_code_block_unclosed_fence_and_py_label() -> None:
    block = extract_code_block("```py\n" + CODE)
    assert block.class_name == "AdditiveRBF"


def test_code_imports_from_earlier_block() -> None:
    reply = (
        "```python\nimport torch\nimport gpytorch\n```\n```python\n"
        + CODE.split("\n\n\n", 1)[1]
        + "```"
    )
    block = extract_code_block(reply)
    assert block.code.startswith("import torch")


def test_code_picks_kernel_subclass_among_blocks() -> None:
    reply = "```python\ndef helper(x):\n    return x\n```\n```python\n" + CODE + "```"
    assert extract_code_block(reply).class_name == "AdditiveRBF"
    assert find_kernel_class("class K(Kernel):\n    pass\n") == ("K", "")
    assert find_kernel_class("class K(Kernel:\n  broken") is None
    assert find_kernel_class("class K(Kernel):\n  def f(:\n") == ("K", "")  # regex fallback
    assert find_kernel_class("class Helper(object):\n    pass\n") is None


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty reply"),
        ("No code today.", "no Python code"),
        ("```python\nprint('hi')\n```", "none defines a gpytorch Kernel subclass"),
    ],
)
def test_code_parse_errors(reply: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        extract_code_block(reply)


def test_extract_code_blocks_several() -> None:
    second = CODE.replace("AdditiveRBF", "Other")
    blocks = extract_code_blocks(f"```python\n{CODE}```\ntext\n```python\n{second}```")
    assert [b.class_name for b in blocks] == ["AdditiveRBF", "Other"]


def test_missing_imports_get_the_default_header() -> None:
    body = CODE.split("\n\n\n", 1)[1]
    block = extract_code_block(f"```python\n{body}```")
    assert block.code.startswith("import math") and "import gpytorch" in block.code
    assert extract_code_block(f"```python\n{CODE}```").code == CODE  # has its own imports


def test_forward_fingerprint_ignores_names_and_number_spelling() -> None:
    from ax_kernel_discovery.llm.parsing import forward_fingerprint

    renamed = CODE.replace("AdditiveRBF", "Other").replace("-0.5", "-0.50")
    assert forward_fingerprint(CODE) == forward_fingerprint(renamed)
    assert forward_fingerprint(CODE) != forward_fingerprint(CODE.replace("-0.5", "-2"))
    assert forward_fingerprint("def f(:") is None and forward_fingerprint("x = 1") is None


def test_extract_code_blocks_splits_a_block_with_several_classes() -> None:
    second = CODE.split("\n\n\n", 1)[1].replace("AdditiveRBF", "Second")
    helper = "\n\ndef helper(x):\n    return x\n"
    blocks = extract_code_blocks(f"```python\n{CODE}{helper}\n\n{second}```")
    assert [b.class_name for b in blocks] == ["AdditiveRBF", "Second"]
    assert all(b.code.startswith("import torch") and "def helper" in b.code for b in blocks)
    assert "class AdditiveRBF" not in blocks[1].code


def test_formula_on_the_kernel_line() -> None:
    reply = """```formula
KERNEL: M1 (not scored yet): k(x, x') = exp(-r) + (1 + r^2)^(-1), r = ||x - x'|| / l
PARAMETERS: l > 0
```"""
    (block,) = extract_formula_blocks(reply)
    assert block.name == "M1" and block.parameters == "l > 0"
    assert block.formula == "k(x, x') = exp(-r) + (1 + r^2)^(-1), r = ||x - x'|| / l"


def test_several_pair_kernels_in_one_block_are_split() -> None:
    from ax_kernel_discovery.llm.parsing import extract_function_block, split_function_replies

    reply = """```python
# KERNEL: First
# k(x, x') = b + (1 - b) <x, x'> / D
import torch

PARAMETERS = {"b": "unit"}


def covariance(x, y, p):
    return p["b"] + (1.0 - p["b"]) * torch.dot(x, y) / x.size(0)


# KERNEL: Second
import torch


def covariance(x, y, p):
    r2 = torch.sum(((x - y) / p["lengthscale"]) ** 2)
    return torch.exp(-0.5 * r2)
```"""
    first, second = split_function_replies(reply)
    assert (first.name, second.name) == ("First", "Second")
    assert first.formula == "k(x, x') = b + (1 - b) <x, x'> / D" and second.formula == ""
    assert extract_function_block(first.text).parameters == {"b": "unit"}
    inferred = extract_function_block(second.text)  # no PARAMETERS: read from p[...]
    assert inferred.parameters == {"lengthscale": "ard"}
    assert "no PARAMETERS dict: inferred from the names read from p" in inferred.notes
