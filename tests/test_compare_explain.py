"""Baselines side by side and site explanations, on a small scenario."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement.cli import main

KEYS = {"placement", "cost_per_million_goodput_tokens_usd", "served_share", "tokens_per_s_per_mw", "mw_used"}


def test_compare_json(tmp_path: Path, small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(small_scenario), "--json", "--out", str(tmp_path / "cmp")]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["placement"] for r in rows] == ["optimal", "nearest-metro", "cheapest-power", "single-region"]
    assert all(KEYS <= set(r) for r in rows)
    by_name = {r["placement"]: r for r in rows}
    # Nearest-metro serves the same demand inside SLO, so it is a feasible answer of the same model.
    assert by_name["nearest-metro"]["served_share"] == pytest.approx(by_name["optimal"]["served_share"])
    assert by_name["optimal"]["cost_usd_per_h"] <= by_name["nearest-metro"]["cost_usd_per_h"] * (1 + 1e-6)
    # Frankfurt has the dearest power and Chicago the cheapest: cheapest-power sends Europe to Chicago, out of SLO.
    assert by_name["cheapest-power"]["served_share"] < 1.0
    assert (tmp_path / "cmp" / "compare.png").stat().st_size > 0
    assert (tmp_path / "cmp" / "compare.csv").stat().st_size > 0


def test_explain_writes_json(tmp_path: Path, small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet"]) == 0
    assert main(["explain", str(out), "--quiet"]) == 0
    records = json.loads((out / "explain.json").read_text())
    assert [r["site_id"] for r in records] == ["ashburn", "chicago", "frankfurt"]
    opened = [r for r in records if r["open"]]
    assert opened and all("cost_of_dropping_usd_per_h" in r for r in opened)
    # Europe is reachable only from Frankfurt inside 300 ms: it cannot be dropped.
    frankfurt = next(r for r in records if r["site_id"] == "frankfurt")
    assert frankfurt["open"] and not frankfurt["droppable"]
    assert {"Berlin", "Paris"} <= set(frankfurt["populations_only_it_can_serve"])
    closed = [r for r in records if not r["open"]]
    assert all("why" in r for r in closed)
    assert "OPEN" in capsys.readouterr().out


def test_explain_unknown_site(tmp_path: Path, small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet"]) == 0
    assert main(["explain", str(out), "--site", "atlantis", "--quiet"]) == 1
    assert "unknown site 'atlantis'" in capsys.readouterr().err


def test_explain_needs_a_results_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(tmp_path)]) == 1
    assert "no summary.json" in capsys.readouterr().err


def test_comparison_table_text() -> None:
    from placement.outputs.compare import render_comparison

    rows = [
        {
            "placement": "optimal",
            "cost_per_million_goodput_tokens_usd": 0.8691,
            "served_share": 0.999,
            "tokens_per_s_per_mw": 386_000.4,
            "mw_used": 58.84,
            "sites_open": 16,
        },
        {
            "placement": "single-region",
            "cost_per_million_goodput_tokens_usd": 1.3189,
            "served_share": 0.53,
            "tokens_per_s_per_mw": 250_000.0,
            "mw_used": 80.0,
            "sites_open": 1,
        },
    ]
    lines = render_comparison(rows).splitlines()
    assert lines[0].split() == ["placement", "$/M", "goodput", "served", "tok/s", "per", "MW", "MW", "sites"]
    assert lines[1].split() == ["optimal", "0.869", "99.9%", "386,000", "58.8", "16"]
    assert lines[2].split() == ["single-region", "1.319", "53.0%", "250,000", "80.0", "1"]
