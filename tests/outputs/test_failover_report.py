"""The 24x7 section of the report and the web map's "If lost" line, from hand-made failover tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from placement.outputs.failover_report import (
    NOT_PROTECTED,
    if_lost_texts,
    protection_blocks,
    rise,
    scenario_table,
    top_destinations,
)
from placement.outputs.report_html import _blocks
from placement.outputs.report_md import blocks_markdown
from placement.outputs.webmap import _sites
from placement.results.record import FailoverTables


def _scenarios() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "failed": ["ashburn", "red-sea", "dublin", "tokyo"],
            "failed_kind": ["site", "domain", "site", "site"],
            "site_ids": ["ashburn", "jeddah;djibouti", "dublin", "tokyo"],
            "served_tok_s": [1000.0, 5000.0, 300.0, 2000.0],
            "moved_tok_s": [900.0, 4000.0, 300.0, 1500.0],
            "unprotected_tok_s": [100.0, 1000.0, 0.0, 500.0],
            "populations_moved": [12, 40, 3, 7],
            "to_sites": ["columbus:500;boydton:300;quebec:60;toronto:40", "madrid:4000", "london:300", "osaka:1500"],
        }
    )


def _tables() -> FailoverTables:
    return FailoverTables(sites=pd.DataFrame(), scenarios=_scenarios(), row_chunks=lambda: iter(()))


COST = {
    "usd_per_h_with": 1200.0,
    "usd_per_h_without": 1000.0,
    "usd_per_m_with": 15.0,
    "usd_per_m_without": 12.0,
    "extra_nodes": 2500,
    "extra_mw": 33.25,
    "classes": {
        "chat": {"usd_per_m_with": 11.0, "usd_per_m_without": 10.0},
        "batch": {"usd_per_m_with": 4.0, "usd_per_m_without": 4.0},
    },
}


def _markdown(**options: object) -> str:
    blocks = protection_blocks(
        _tables(),
        protected_share=0.9,
        unprotectable_share=0.025,
        fault_domains={"grouping": "corridor", "domains": {"red-sea": ["jeddah", "djibouti"], "atlantic": ["dublin"]}},
        n_plus_one_cost=COST,
        **options,  # type: ignore[arg-type]
    )
    return "\n".join(blocks_markdown(blocks))


def test_scenarios_are_listed_by_goodput_at_risk_with_top_three_destinations() -> None:
    text = _markdown()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "failed" not in line]
    assert [row.split(" | ")[0] for row in rows[:4]] == ["| red-sea", "| tokyo", "| ashburn", "| dublin"]
    assert "| ashburn | site | 1,000 | 900 | 100 | 12 | columbus (500), boydton (300), quebec (60) |" in text
    assert "toronto" not in text  # the fourth destination is left off
    assert "90.0% of served goodput" in text and "unprotectable (no second site in reach): 2.5%" in text
    assert "2 fault domains grouped by `corridor` (largest: red-sea (2 sites), atlantic (1 site))" in text
    assert "... and" not in text


def test_the_scenario_table_is_capped_and_says_how_many_more() -> None:
    text = _markdown(limit=2)
    assert "... and 2 more failure scenarios" in text
    assert "| ashburn |" not in text and "| red-sea |" in text and "| tokyo |" in text
    table, more = scenario_table(_scenarios(), limit=3)
    assert list(table["failed"]) == ["red-sea", "tokyo", "ashburn"] and more == 1


def test_the_cost_of_24x7_with_and_without_and_per_class_rise() -> None:
    text = _markdown()
    assert "## The cost of 24x7" in text
    assert "$1,200/h and $15.000 per million" in text and "$1,000/h and $12.000/M (+25.0%)" in text
    assert "2,500 extra nodes and 33.2 extra MW" in text
    assert "| chat | $11.000 | $10.000 | +10.0% |" in text
    assert "| batch | $4.000 | $4.000 | +0.0% |" in text
    assert text.index("| batch |") < text.index("| chat |")  # classes sorted by name
    assert rise(11.0, 10.0) == pytest.approx(0.1)
    assert rise(1.0, 0.0) is None and rise(None, 1.0) is None


def test_a_plan_without_n_plus_one_gets_one_line() -> None:
    blocks = protection_blocks(None, n_plus_one_cost=COST)
    assert len(blocks) == 1 and blocks[0].text == NOT_PROTECTED
    assert "fault_tolerance.n_plus_one" in NOT_PROTECTED and "placement failover RESULTS --site ID" in NOT_PROTECTED
    assert "<code>fault_tolerance.n_plus_one: true</code>" in _blocks(blocks)[0]


def test_html_renders_the_same_facts() -> None:
    blocks = protection_blocks(_tables(), protected_share=0.9, n_plus_one_cost=COST)
    page = "\n".join(_blocks(blocks))
    assert "<h2>24x7: what each loss moves where</h2>" in page and "<h2>The cost of 24x7</h2>" in page
    assert "columbus (500), boydton (300), quebec (60)" in page and "+10.0%" in page
    assert page.index("red-sea") < page.index("tokyo") < page.index("ashburn")


def test_if_lost_text_is_per_single_site_and_reaches_open_site_popups_only() -> None:
    texts = if_lost_texts(_scenarios())
    assert set(texts) == {"ashburn", "dublin", "tokyo"}  # the domain is not a site
    assert texts["ashburn"] == "If lost: 900 tok/s move to columbus (500), boydton (300), quebec (60); 100 tok/s unprotected"
    assert top_destinations("") == "none" and top_destinations("b:1;a:5") == "a (5), b (1)"
    sites = pd.DataFrame(
        {
            "site_id": ["ashburn", "tokyo"],
            "name": ["Ashburn", "Tokyo"],
            "country_code": ["US", "JP"],
            "lat": [39.0, 35.7],
            "lon": [-77.5, 139.7],
            "open": [True, False],
            "mw_used": [10.0, 0.0],
            "mw_available": [50.0, 50.0],
            "nodes": [100, 0],
            "cost_usd_per_h": [1.0, 0.0],
            "cost_per_million_goodput_tokens_usd": [1.0, float("nan")],
            "goodput_tok_s": [1000.0, 0.0],
            "goodput_share": [1.0, 0.0],
            "tokens_per_s_per_mw": [100.0, 0.0],
            "power_price_usd_per_mwh": [50.0, 60.0],
            "reason": ["open", "not needed"],
        }
    )
    drawn = _sites(sites, if_lost=texts)
    assert drawn[0]["if_lost"] == texts["ashburn"] and "if_lost" not in drawn[1]
    assert all("if_lost" not in row for row in _sites(sites))


def test_a_rebuilt_report_reads_the_folders_failover_scenarios(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from placement.outputs.failover_report import summary_protection

    summary = SimpleNamespace(n_plus_one_protected_share=0.5, unprotectable_share=None, fault_domains=None, n_plus_one_cost=COST)
    assert [b.text for b in summary_protection(summary, tmp_path)] == [NOT_PROTECTED]  # type: ignore[arg-type]
    _scenarios().to_csv(tmp_path / "failover_scenarios.csv", index=False)
    text = "\n".join(blocks_markdown(summary_protection(summary, tmp_path)))  # type: ignore[arg-type]
    assert "50.0% of served goodput" in text and "| red-sea | domain | 5,000 | 4,000 | 1,000 | 40 | madrid (4,000) |" in text
    assert "| chat | $11.000 | $10.000 | +10.0% |" in text
