"""The result JSON of a run: its format, phases, best-so-far values and atomic writes."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "PHASES",
    "RESULT_VERSION",
    "atomic_write_json",
    "best_so_far",
    "load_result",
]


RESULT_VERSION = 1


PHASES: tuple[str, ...] = ("fit", "propose", "validate", "acquisition", "evaluate", "overhead")
"""Timed phases of a round: GP fit and kernel selection, proposal (LLM or operator),
validation of proposals, acquisition optimization, oracle evaluation, and the rest
(Ax bookkeeping, checkpointing)."""


def atomic_write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file (numpy scalars as numbers),
    so that a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, default=_json_default)
    os.replace(tmp, path)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    return repr(obj)


def load_result(path: str | Path) -> dict[str, Any] | None:
    """A result JSON, or ``None`` when it is missing or unreadable."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return None


def finished_result(path: str | Path, budget: int) -> dict[str, Any] | None:
    """The result at ``path`` if its run is complete with at least ``budget`` evaluations."""
    previous = load_result(path)
    if (
        previous
        and previous.get("status") == "complete"
        and previous.get("n_evaluations", 0) >= budget
    ):
        return previous
    return None


def best_so_far(values: Sequence[float | None], minimize: bool) -> list[float | None]:
    """Running best in the problem's direction (``None`` until a value exists)."""
    out: list[float | None] = []
    best: float | None = None
    for v in values:
        if v is not None and (best is None or (v < best if minimize else v > best)):
            best = v
        out.append(best)
    return out
