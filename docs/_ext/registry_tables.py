"""The docs' lists that have a registry in the package, as Markdown tables made from it.

``{kd-registry} NAME`` in a page of ``docs/`` (the ``kd_docs`` extension) renders
``TABLES[NAME]()``; ``tests/test_docs.py`` checks that every registry name is in its
table and that no page types such a list by hand. Importable without Sphinx.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial
from typing import Any


def _first_line(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().split("\n\n", 1)[0].replace("\n", " ")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def leaves() -> str:
    """The leaves of the expression grammar (``ax_kernel_discovery.kernels.LEAVES``)."""
    from ax_kernel_discovery.kernels import LEAVES

    rows = [
        (
            f"`{leaf.name}`",
            leaf.tier,
            "yes" if leaf.isotropic is not None else "no",
            f"`{leaf.formula}`",
        )
        for leaf in LEAVES.values()
    ]
    return _table(("leaf", "tier", "isotropic form (`~iso`)", "formula"), rows)


def warps() -> str:
    """The input warps and feature maps of a leaf (``ax_kernel_discovery.expression.WARPS``)."""
    from ax_kernel_discovery.expression import CLASSIC_WARPS, WARPS

    rows = [
        (
            f"`{name}`",
            "warp" if name in CLASSIC_WARPS else "feature map",
            "`x`" if name == "identity" else f"`{formula}`",
        )
        for name, formula in WARPS.items()
    ]
    return _table(("warp", "kind", "input the leaf sees"), rows)


def proposers() -> str:
    """The values of ``config.proposer`` (``ax_kernel_discovery.proposers.PROPOSERS``)."""
    from ax_kernel_discovery.proposers.from_config import PROPOSERS

    rows = [
        (
            f"`{name}`",
            "yes" if entry.calls_llm else "no",
            "yes" if entry.proposes else "no",
            f"`{entry.build.__module__}.{entry.build.__name__}`",
        )
        for name, entry in PROPOSERS.items()
    ]
    return _table(("proposer", "calls an LLM", "proposes", "built by"), rows)


def criteria() -> str:
    """The values of ``config.criterion``
    (``ax_kernel_discovery.selection_rules.SELECTION_RULES``)."""
    from ax_kernel_discovery.selection_rules import SELECTION_RULES

    return _table(
        ("criterion", "what it scores", "rule"),
        [
            (f"`{name}`", rule.summary, f"`{rule.__module__}.{rule.__name__}`")
            for name, rule in SELECTION_RULES.items()
        ],
    )


def problems() -> str:
    """The benchmark problems (``ax_kernel_discovery.benchmarks.PROBLEMS``)."""
    from ax_kernel_discovery.benchmarks import PROBLEMS

    rows = []
    for name, factory in PROBLEMS.items():
        cls, kwargs = (
            (factory.func, factory.keywords) if isinstance(factory, partial) else (factory, {})
        )
        call = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        rows.append((f"`{name}`", f"`{cls.__name__}({call})`", _first_line(cls)))
    return _table(("problem", "built as", "what"), rows)


def methods() -> str:
    """The benchmark methods (``ax_kernel_discovery.baselines.methods.METHODS``)."""
    from ax_kernel_discovery.baselines.methods import METHODS

    return _table(
        ("method", "what"), [(f"`{name}`", info.description) for name, info in METHODS.items()]
    )


TABLES: dict[str, Callable[[], str]] = {
    "leaves": leaves,
    "warps": warps,
    "proposers": proposers,
    "criteria": criteria,
    "problems": problems,
    "methods": methods,
}
"""Each table by the name the directive takes."""


def registries() -> dict[str, tuple[str, ...]]:
    """Each table's registry names, for the tests."""
    from ax_kernel_discovery.baselines.methods import METHODS
    from ax_kernel_discovery.benchmarks import PROBLEMS
    from ax_kernel_discovery.expression import WARPS
    from ax_kernel_discovery.kernels import LEAVES
    from ax_kernel_discovery.proposers.from_config import PROPOSERS
    from ax_kernel_discovery.selection_rules import SELECTION_RULES

    return {
        "leaves": tuple(LEAVES),
        "warps": tuple(WARPS),
        "proposers": tuple(PROPOSERS),
        "criteria": tuple(SELECTION_RULES),
        "problems": tuple(PROBLEMS),
        "methods": tuple(METHODS),
    }
