"""Reading LLM replies: formula blocks and kernel code, robust to sloppy formatting.

Models wrap answers in prose, forget or add fences, reason in ``<think>`` sections
and label fields in bold. These functions accept all of that and raise
:class:`ParseError` with a reason that says what was missing. The only changes made to
code are formatting repairs: a block without any import gets :data:`DEFAULT_IMPORTS`,
and a block with several Kernel classes is split into one module per class.

Example:
    >>> reply = '''Here you go:
    ... ```formula
    ... KERNEL: Additive
    ... PARAMETERS: lengthscale l (one per dimension)
    ... INPUT TRANSFORM: none
    ... COVARIANCE FUNCTION: k(x, x') = mean_d exp(-(x_d - x'_d)^2 / (2 l_d^2))
    ... PSD GUARANTEE: sum of PSD kernels
    ... ```'''
    >>> [b.name for b in extract_formula_blocks(reply)]
    ['Additive']

Modules, one kind of reply content each:

* :mod:`~ax_kernel_discovery.llm.parsing.errors`: :class:`ParseError`;
* :mod:`~ax_kernel_discovery.llm.parsing.fences`: ``<think>`` sections and fenced blocks;
* :mod:`~ax_kernel_discovery.llm.parsing.formula_blocks`: formula blocks;
* :mod:`~ax_kernel_discovery.llm.parsing.code_blocks`: Kernel classes;
* :mod:`~ax_kernel_discovery.llm.parsing.function_blocks`: ``PARAMETERS`` +
  ``covariance`` replies, repaired by
  :mod:`~ax_kernel_discovery.llm.parsing.function_fixes`.
"""

from __future__ import annotations

from ax_kernel_discovery.llm.parsing.code_blocks import (
    DEFAULT_IMPORTS,
    CodeBlock,
    extract_code_block,
    extract_code_blocks,
    find_kernel_class,
    forward_fingerprint,
)
from ax_kernel_discovery.llm.parsing.errors import ParseError
from ax_kernel_discovery.llm.parsing.fences import strip_thinking
from ax_kernel_discovery.llm.parsing.formula_blocks import FormulaBlock, extract_formula_blocks
from ax_kernel_discovery.llm.parsing.function_blocks import (
    FunctionBlock,
    NamedFunctionReply,
    extract_function_block,
    split_function_replies,
)

__all__ = [
    "DEFAULT_IMPORTS",
    "CodeBlock",
    "FormulaBlock",
    "FunctionBlock",
    "NamedFunctionReply",
    "ParseError",
    "extract_code_block",
    "extract_code_blocks",
    "extract_formula_blocks",
    "extract_function_block",
    "find_kernel_class",
    "forward_fingerprint",
    "split_function_replies",
    "strip_thinking",
]
