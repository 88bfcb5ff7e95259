"""The cost ledger: one record per LLM call, and totals over a run.

:class:`~ax_kernel_discovery.llm.client.LLMClient` appends a :class:`LedgerRecord` for
every call (live, cached or failed); :func:`ledger_summary` adds them up, overall and
per stage (``discovery``, ``conversion``, ``composition``, ...).

Example:
    >>> records = [LedgerRecord("discovery", "m", prompt_tokens=10, completion_tokens=5,
    ...                         latency_s=2.0)]
    >>> ledger_summary("m", records)["total_tokens"]
    15
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class LedgerRecord:
    """One LLM call as the ledger sees it."""

    stage: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    ok: bool = True
    error: str | None = None
    cached: bool = False
    attempts: int = 0
    key: str = ""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def _totals(records: Sequence[LedgerRecord]) -> dict[str, Any]:
    live = [r for r in records if not r.cached and r.ok]
    return {
        "calls": len(records),
        "ok": sum(r.ok for r in records),
        "failed": sum(not r.ok for r in records),
        "cached": sum(r.cached for r in records),
        "prompt_tokens": sum(r.prompt_tokens for r in records),
        "completion_tokens": sum(r.completion_tokens for r in records),
        "total_tokens": sum(r.total_tokens for r in records),
        "cost_usd": round(sum(r.cost_usd for r in records), 6),
        "latency_s": round(sum(r.latency_s for r in records), 3),
        # mean over calls that reached the model: cached and failed calls took no time
        "mean_latency_s": round(sum(r.latency_s for r in live) / len(live), 3) if live else 0.0,
    }


def ledger_summary(model: str, records: Sequence[LedgerRecord]) -> dict[str, Any]:
    """Totals over ``records``, overall and per stage (``by_stage``)."""
    records = list(records)
    out: dict[str, Any] = {"model": model, **_totals(records)}
    stages = sorted({r.stage for r in records})
    out["by_stage"] = {s: _totals([r for r in records if r.stage == s]) for s in stages}
    return out


__all__ = ["LedgerRecord", "ledger_summary"]
