"""Baselines side by side and site explanations, on a small scenario."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from placement.cli import main
from tests.conftest import script_module

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
    # scripts/compare_table.py: the commands guide's table, a row per placement of compare.csv, in order
    table = script_module("compare_table").table(tmp_path / "cmp").splitlines()[2:]
    assert [line.split(" | ")[0].removeprefix("| ") for line in table] == [r["placement"] for r in rows]
    for line, r in zip(table, rows, strict=True):
        assert f"| ${r['cost_per_million_goodput_tokens_usd']:.3f} | {r['served_share'] * 100:.1f} % |" in line


def test_explain_writes_json(tmp_path: Path, small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet"]) == 0
    assert main(["explain", str(out), "--quiet"]) == 0
    document = json.loads((out / "explain.json").read_text())
    assert set(document) == {"sites", "what_would_pay", "rules", "caps", "phases_s"}
    assert document["caps"] == []  # no carbon or water cap in this scenario
    assert document["rules"] == [], "the small scenario has no residency rule"
    assert set(document["what_would_pay"]) == {"more_power", "nearest_to_entering", "short_of_power", "out_of_reach"}
    records = document["sites"]
    assert [r["site_id"] for r in records] == ["ashburn", "chicago", "frankfurt"]
    opened = [r for r in records if r["open"]]
    assert opened and all("cost_of_dropping_usd_per_h" in r for r in opened)
    # Europe is reachable only from Frankfurt inside 300 ms: it cannot be dropped.
    frankfurt = next(r for r in records if r["site_id"] == "frankfurt")
    assert frankfurt["open"] and not frankfurt["droppable"]
    assert {"Berlin", "Paris"} <= set(frankfurt["populations_only_it_can_serve"])
    closed = [r for r in records if not r["open"]]
    assert all("why" in r for r in closed)
    assert all(r["mw_used"] <= r["mw_available"] + 1e-9 for r in opened)
    printed = capsys.readouterr().out
    assert "OPEN" in printed and "What would pay" in printed


def test_explain_unknown_site(tmp_path: Path, small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet"]) == 0
    assert main(["explain", str(out), "--site", "atlantis", "--quiet"]) == 1
    assert "unknown site 'atlantis'" in capsys.readouterr().err


def test_explain_needs_a_results_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(tmp_path)]) == 1
    assert "not a results folder: summary.json missing" in capsys.readouterr().err


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


def _small_plan(tmp_path: Path, scenario: Path) -> tuple[Any, Any]:
    """The small scenario solved, and its explanation inputs (instance, site table)."""
    from placement.analyses.explain import rebuild_plan

    out = tmp_path / "out"
    assert main(["solve", str(scenario), "--out", str(out), "--quiet"]) == 0
    results = rebuild_plan(out)
    return results.instance, results.sites


def test_array_lp_matches_pulp(tmp_path: Path, small_scenario: Path) -> None:
    """The array LP and the PuLP fixed-design LP give the same costs, MW values and what-ifs."""
    from placement.analyses.explain import _default_options
    from placement.optimize.ranging import FixedDesignLP
    from placement.optimize.shortfall import shortfall_penalty_usd_per_tok_s
    from placement.optimize.whatif import PulpWhatIfs

    instance, sites = _small_plan(tmp_path, small_scenario)
    data, is_open = instance.inputs, sites["open"].to_numpy(bool)
    fast = FixedDesignLP(data, is_open, shortfall_penalty_usd_per_tok_s(data))
    slow = PulpWhatIfs(data, is_open, _default_options(instance))
    assert fast.cost_usd_per_h() == pytest.approx(slow.cost_usd_per_h(), rel=1e-7)
    assert fast.mw_value_usd_per_h() == pytest.approx(slow.mw_value_usd_per_h(), rel=1e-6, abs=1e-6)
    for j in range(data.n_sites):
        assert fast.resolve_toggled(j).cost_usd_per_h == pytest.approx(slow.resolve_toggled(j).cost_usd_per_h, rel=1e-7)
        if is_open[j]:
            assert fast.resolve_more_power(j, 5.0) == pytest.approx(slow.resolve_more_power(j, 5.0), rel=1e-7)
    # the what-ifs leave the LP as it was
    assert fast.resolve_toggled(0).cost_usd_per_h == pytest.approx(slow.resolve_toggled(0).cost_usd_per_h, rel=1e-7)


@pytest.mark.slow
def test_entry_power_price_is_where_opening_pays(world_results: Path) -> None:
    """Just below the entry price, forcing a closed site open lowers the cost; just above, it does not."""
    from placement.analyses.explain import (
        _context,
        _cost_at_price,
        _default_options,
        entry_power_price_usd_per_mwh,
        rebuild_plan,
    )
    from placement.optimize.whatif import fixed_design_lp

    results = rebuild_plan(world_results)
    instance, sites = results.instance, results.sites
    is_open = sites["open"].to_numpy(bool)
    lp = fixed_design_lp(instance.inputs, is_open, _default_options(instance))
    ctx = _context(instance, sites, lp, is_open)
    prices = instance.sites["power_price_usd_per_mwh"].to_numpy(float)
    checked = 0
    for j in list(map(int, (~is_open).nonzero()[0]))[:4]:
        entry = entry_power_price_usd_per_mwh(ctx, lp, j)
        if entry is None:
            assert _cost_at_price(ctx, lp, j, 0.0).cost_usd_per_h >= ctx.base_cost_usd_per_h
            continue
        factor = entry / prices[j]
        assert 0 < factor < 1
        assert _cost_at_price(ctx, lp, j, factor * 0.98).cost_usd_per_h < ctx.base_cost_usd_per_h
        assert _cost_at_price(ctx, lp, j, min(factor * 1.02, 1.0)).cost_usd_per_h >= ctx.base_cost_usd_per_h - 1e-6
        checked += 1
    assert checked


def test_explain_n_plus_one_plan_uses_the_pulp_models(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A plan with N+1 rows is explained through PuLP models that carry them (the array LP has none)."""
    from placement.optimize.ranging import supports
    from tests.conftest import write_scenario

    scenario = write_scenario(tmp_path, policy={"unreachable": "report"}, fault_tolerance={"n_plus_one": True})
    out = tmp_path / "out"
    assert main(["solve", str(scenario), "--out", str(out), "--quiet"]) == 0
    from placement.analyses.explain import rebuild_plan

    assert not supports(rebuild_plan(out).instance.inputs)
    assert main(["explain", str(out), "--quiet"]) == 0
    document = json.loads((out / "explain.json").read_text())
    opened = [r for r in document["sites"] if r["open"]]
    assert len(opened) >= 2  # N+1 keeps a second site
    assert all(r["mw_used"] <= r["mw_available"] + 1e-9 for r in opened)
    assert "What would pay" in capsys.readouterr().out
