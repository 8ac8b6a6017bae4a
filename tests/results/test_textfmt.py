"""Figures in text outputs: ms to 0.1, $/M to 3 decimals, MW to 0.1 (three significant digits below 1 MW)."""

from __future__ import annotations

from placement.results.textfmt import ms_text, mw_text, usd_per_m_text


def test_formats() -> None:
    assert ms_text(41.3884) == "41.4" and ms_text(3_000_320.0) == "3,000,320.0"
    assert usd_per_m_text(14.584099789) == "14.584" and usd_per_m_text(0.6283553) == "0.628"
    assert mw_text(2774.31432) == "2,774.3" and mw_text(29.99412) == "30.0" and mw_text(0.0) == "0.0"
    assert mw_text(0.315) == "0.315" and mw_text(0.05) == "0.05"  # a test-sized site does not read as 0.0
