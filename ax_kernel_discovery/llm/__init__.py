"""LLM access for kernel discovery: the litellm client, prompts, reply parsing, local model.

* :mod:`~ax_kernel_discovery.llm.client`: :class:`LLMClient` (retries, cost ledger,
  response cache with record/replay);
* :mod:`~ax_kernel_discovery.llm.factory`: :func:`make_client` (``"local"`` included);
* :mod:`~ax_kernel_discovery.llm.cache` and :mod:`~ax_kernel_discovery.llm.ledger`: the
  client's response cache (keys, files) and cost ledger (records, totals);
* :mod:`~ax_kernel_discovery.llm.templates`: the stage prompts built from
  ``llm/prompts/*.txt``;
* :mod:`~ax_kernel_discovery.llm.parsing`: formula blocks and kernel code from replies;
* :mod:`~ax_kernel_discovery.llm.local_model`: a GGUF model served by llama.cpp on
  loopback (needs ``xllamacpp``).

litellm itself is imported on the first call only (it is slow to import).
"""

from __future__ import annotations

from ax_kernel_discovery.llm.client import (
    LLMClient,
    LLMError,
    LLMRequest,
)
from ax_kernel_discovery.llm.factory import make_client
from ax_kernel_discovery.llm.ledger import LedgerRecord
from ax_kernel_discovery.llm.parsing import (
    CodeBlock,
    FormulaBlock,
    ParseError,
    extract_code_block,
    extract_formula_blocks,
)
from ax_kernel_discovery.llm.templates import PromptOptions

__all__ = [
    "CodeBlock",
    "FormulaBlock",
    "LLMClient",
    "LLMError",
    "LLMRequest",
    "LedgerRecord",
    "ParseError",
    "PromptOptions",
    "extract_code_block",
    "extract_formula_blocks",
    "make_client",
]
