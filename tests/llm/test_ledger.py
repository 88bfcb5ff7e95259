"""The cost ledger's totals, overall and per stage."""

from __future__ import annotations

import pytest

from ax_kernel_discovery.llm.ledger import LedgerRecord, ledger_summary


def test_totals_and_mean_latency_count_only_calls_that_reached_the_model() -> None:
    records = [
        LedgerRecord(
            "discovery", "m", prompt_tokens=100, completion_tokens=20, latency_s=4.0, cost_usd=0.01
        ),
        LedgerRecord("discovery", "m", prompt_tokens=100, completion_tokens=30, cached=True),
        LedgerRecord("conversion", "m", prompt_tokens=50, completion_tokens=10, latency_s=2.0),
        LedgerRecord("conversion", "m", latency_s=9.0, ok=False, error="Timeout"),
    ]
    out = ledger_summary("m", records)
    assert out["model"] == "m"
    assert (out["calls"], out["ok"], out["failed"], out["cached"]) == (4, 3, 1, 1)
    assert out["total_tokens"] == 310 and records[0].total_tokens == 120
    assert out["latency_s"] == pytest.approx(15.0)
    assert out["mean_latency_s"] == pytest.approx(3.0)  # (4 + 2) / 2: cached and failed left out
    assert out["cost_usd"] == pytest.approx(0.01)
    assert set(out["by_stage"]) == {"conversion", "discovery"}
    assert out["by_stage"]["discovery"]["mean_latency_s"] == pytest.approx(4.0)
    assert out["by_stage"]["conversion"]["failed"] == 1


def test_an_empty_ledger_has_zero_totals() -> None:
    out = ledger_summary("m", [])
    assert out["calls"] == 0 and out["mean_latency_s"] == 0.0 and out["by_stage"] == {}
