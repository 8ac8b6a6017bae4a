"""Water of a plan and the caps on carbon and water (:mod:`placement.rules.resources`): by hand, per region and per site."""

from __future__ import annotations

import csv
import runpy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from placement._errors import InfeasibleError, InputError
from placement.cli import main
from placement.plan.record import Plan
from placement.plan.solve import run
from placement.rules.resources import grid_water_l_per_kwh, region_sites, site_water, site_water_stress
from placement.scenario.load import load_scenario
from tests.conftest import CATALOG_HEADER, REPO, nested_mismatch, write_scenario
from tests.economics.test_footprint import DYNAMIC_POWER, SHIFT_CATALOG

# Macknick et al. 2012 medians (data/energy/generation_water.csv), L/kWh, and the US mix of 2023
# (data/energy/grid_mix_by_country.csv): coal 15.89 %, gas 42.41 %, oil 0.78 %, nuclear 18.25 %, bio 1.12 %, solar 5.60 %.
US_GRID_L_PER_KWH = 0.1589 * 2.600 + 0.4241 * 0.749 + 0.0078 * 2.600 + 0.1825 * 2.544 + 0.0112 * 2.093 + 0.0560 * 0.004


def test_grid_water_by_hand() -> None:
    np.testing.assert_allclose(grid_water_l_per_kwh(["US"]), [US_GRID_L_PER_KWH], rtol=1e-12)
    assert np.isnan(grid_water_l_per_kwh(["XX"])[0])  # a country the mix table lacks: unknown, not zero


def test_site_water_by_hand() -> None:
    # On site: WUE per kWh of IT energy over PUE per kWh drawn (evaporative cooling: 1.8 L/kWh hot-dry, 0.45
    # temperate; closed loop 0.05 anywhere); a site's own WUE wins; no climate and no WUE: unknown.
    sites = pd.DataFrame({
        "id": ["a", "b", "c", "d"], "country_code": ["US", "US", "US", "US"], "pue": [1.3, 1.2, 1.5, 1.3],
        "climate": ["hot-dry", "temperate", "hot-dry", ""], "wue_l_per_kwh": [np.nan, np.nan, 0.3, np.nan],
    })  # fmt: skip
    water = site_water(sites, "evaporative")
    np.testing.assert_allclose(water.on_site_m3_per_mwh[:3], [1.8 / 1.3, 0.45 / 1.2, 0.3 / 1.5])
    assert np.isnan(water.on_site_m3_per_mwh[3])
    np.testing.assert_allclose(water.grid_m3_per_mwh, US_GRID_L_PER_KWH, rtol=1e-12)
    np.testing.assert_allclose(site_water(sites, "closed-loop").on_site_m3_per_mwh[:2], [0.05 / 1.3, 0.05 / 1.2])


def test_water_stress_and_regions() -> None:
    sites = pd.DataFrame({
        "id": ["mumbai", "phoenix", "paris"], "country_code": ["IN", "US", "FR"], "continent": ["Asia", "North America", "Europe"],
        "grid_region": ["IN-west", "US-WECC", "FR-national"], "water_stress": ["", "extremely-high", ""],
    })  # fmt: skip
    # India is on WRI Aqueduct 4.0's extremely-high list; Phoenix by its own (basin) class; France is not classed.
    assert site_water_stress(sites).tolist() == ["extremely-high", "extremely-high", ""]
    assert region_sites(sites, "europe").tolist() == [False, False, True]
    assert region_sites(sites, "US").tolist() == [False, True, False]
    assert region_sites(sites, "IN-west").tolist() == [True, False, False]
    assert not region_sites(sites, "Oceania").any()


# Ashburn and Chicago alike but for power and cooling: Chicago's power is $20/MWh cheaper, and Chicago is hot-dry
# with evaporative cooling (1.8 L/kWh of IT) where Ashburn is cool (0.2). Both draw from the US grid, so each MWh
# drawn at Chicago instead of Ashburn consumes (1.8 - 0.2) / 1.3 = 1.2308 m3 more: above $20 / 1.2308 = $16.25/m3
# Ashburn is the cheaper place to draw it (PUE and node power the same at both: idle power and load alike).
WATER_CATALOG = CATALOG_HEADER.replace(",locked\n", ",locked,carbon_intensity_g_per_kwh,climate\n") + (
    "ashburn,Ashburn,US,North America,39.04,-77.49,200,80,1.3,10000000,false,380,cool\n"
    "chicago,Chicago,US,North America,41.88,-87.63,200,60,1.3,10000000,false,380,hot-dry\n"
    "frankfurt,Frankfurt,DE,Europe,50.11,8.68,200,120,1.3,10000000,false,350,temperate\n"
)
EXTRA_M3_PER_MWH = (1.8 - 0.2) / 1.3
BREAK_EVEN_USD_PER_M3 = 20.0 / EXTRA_M3_PER_MWH


def _plan(tmp_path: Path, name: str, catalog: str = WATER_CATALOG, **objective: object) -> Plan:
    folder = tmp_path / name
    folder.mkdir()
    return run(load_scenario(write_scenario(folder, catalog=catalog, serving=DYNAMIC_POWER, objective=objective)))


def _energy(plan: Plan) -> dict[str, float]:
    sites = plan.sites.set_index("site_id")
    return {site: float(sites.loc[site, "energy_mwh_per_year"]) for site in ("ashburn", "chicago", "frankfurt")}


def test_plan_water_is_energy_times_water_per_kwh(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "free")
    sites, summary = plan.sites.set_index("site_id"), plan.summary
    us = US_GRID_L_PER_KWH
    per_kwh = {"ashburn": 0.2 / 1.3 + us, "chicago": 1.8 / 1.3 + us}
    for site, litres in per_kwh.items():
        assert sites.loc[site, "water_l_per_kwh"] == pytest.approx(litres, rel=1e-9)
        assert sites.loc[site, "water_m3_per_year"] == pytest.approx(sites.loc[site, "energy_mwh_per_year"] * litres, rel=1e-9)
    assert summary.water_m3_per_year == pytest.approx(float(sites["water_m3_per_year"].sum()), rel=1e-12)
    assert summary.water_on_site_m3_per_year == pytest.approx(float(sites["water_on_site_m3_per_year"].sum()), rel=1e-12)
    assert 0 < summary.water_on_site_m3_per_year < summary.water_m3_per_year
    tokens_m = summary.goodput_tok_s * 365 * 24 * 3600 / 1e6
    assert summary.water_l_per_million_goodput_tokens == pytest.approx(summary.water_m3_per_year * 1e3 / tokens_m)
    assert summary.water_charge_usd_per_h is None


def test_a_water_price_above_the_break_even_moves_the_load_to_the_drier_site(tmp_path: Path) -> None:
    below = _energy(_plan(tmp_path, "below", water_usd_per_m3=0.95 * BREAK_EVEN_USD_PER_M3))
    above = _energy(_plan(tmp_path, "above", water_usd_per_m3=1.05 * BREAK_EVEN_USD_PER_M3))
    assert below["ashburn"] == 0 and below["chicago"] > 0  # the cheap power wins below $16.25/m3
    assert above["chicago"] == 0 and above["ashburn"] > 0  # the dry cooling above it
    assert above["ashburn"] == pytest.approx(below["chicago"], rel=1e-6)  # the same work, moved


def test_a_water_price_adds_its_charge_to_the_cost_of_a_design(tmp_path: Path) -> None:
    plain = _plan(tmp_path, "plain")
    priced = _plan(tmp_path, "priced", water_usd_per_m3=2.0)
    solution, data = plain.solution, priced.instance.inputs
    dearer = data.cost_usd_per_h(solution.open, solution.nodes, solution.pair_share) - plain.summary.objective_usd_per_h
    assert plain.summary.water_m3_per_year is not None
    assert dearer == pytest.approx(2.0 * plain.summary.water_m3_per_year / 8760, rel=1e-9)
    assert priced.summary.water_charge_usd_per_h == pytest.approx(2.0 * priced.summary.water_m3_per_year / 8760, rel=1e-9)


def test_a_binding_water_cap_moves_the_load_to_the_drier_site_by_hand(tmp_path: Path) -> None:
    # Uncapped the US load runs at Chicago; a cap half way to "all at Ashburn" needs the whole move (a second site
    # costs $250/h more than any split saves): the optimum then costs $20 more per MWh moved and uses 1.2308 m3 less.
    free = _plan(tmp_path, "free")
    moved_mwh = _energy(free)["chicago"]
    assert free.summary.water_m3_per_year is not None and moved_mwh > 0
    cap = free.summary.water_m3_per_year - 0.5 * EXTRA_M3_PER_MWH * moved_mwh
    capped = _plan(tmp_path, "capped", water_cap_m3_per_year=cap)
    energy = _energy(capped)
    assert energy["chicago"] == 0 and energy["ashburn"] == pytest.approx(moved_mwh, rel=1e-9)
    assert capped.summary.water_m3_per_year == pytest.approx(free.summary.water_m3_per_year - EXTRA_M3_PER_MWH * moved_mwh)
    assert capped.summary.water_m3_per_year <= cap
    extra = capped.summary.objective_usd_per_h - free.summary.objective_usd_per_h
    assert extra == pytest.approx(20.0 * moved_mwh / 8760, rel=1e-6)


def test_a_regional_cap_counts_only_its_region(tmp_path: Path) -> None:
    # SHIFT_CATALOG: Chicago is 400 g/kWh dirtier than Ashburn. A carbon cap on the US alone, a hair above what the
    # US sites emit with all their load at Ashburn, moves the US load and leaves Frankfurt alone; a whole-plan cap at
    # the same figure counts Frankfurt too and cannot be met.
    free = _plan(tmp_path, "free", catalog=SHIFT_CATALOG)
    sites = free.sites.set_index("site_id")
    us_t = float(sites.loc[["ashburn", "chicago"], "tco2e_per_year"].sum())
    moved_mwh = float(sites.loc["chicago", "energy_mwh_per_year"])
    cap = (us_t - 0.4 * moved_mwh) * (1 + 1e-4)
    capped = _plan(tmp_path, "us", catalog=SHIFT_CATALOG, regional_caps=[{"region": "US", "carbon_t_per_year": cap}])
    after = capped.sites.set_index("site_id")
    assert after.loc["chicago", "energy_mwh_per_year"] == 0
    assert float(after.loc[["ashburn", "chicago"], "tco2e_per_year"].sum()) <= cap * (1 + 1e-9)
    assert after.loc["frankfurt", "energy_mwh_per_year"] == pytest.approx(sites.loc["frankfurt", "energy_mwh_per_year"])
    assert capped.summary.tco2e_per_year is not None and capped.summary.tco2e_per_year > cap  # Frankfurt is not counted
    with pytest.raises(InfeasibleError, match="the carbon cap of"):
        _plan(tmp_path, "whole", catalog=SHIFT_CATALOG, carbon_cap_t_per_year=cap)


def test_a_stressed_site_keeps_within_its_water_permit(tmp_path: Path) -> None:
    # Chicago written as extremely water-stressed: its on-site water is held to the permit (half of what it used), the
    # rest of its load goes to Ashburn (all of it, here: the $250/h of a second open site outweighs a split).
    # Ashburn, not stressed, has no limit.
    catalog = WATER_CATALOG.replace(",climate\n", ",climate,water_stress\n")
    catalog = catalog.replace(",cool\n", ",cool,\n").replace(",hot-dry\n", ",hot-dry,extremely-high\n")
    catalog = catalog.replace(",temperate\n", ",temperate,\n")
    free = _plan(tmp_path, "free", catalog=catalog)
    on_site = float(free.sites.set_index("site_id").loc["chicago", "water_on_site_m3_per_year"])
    assert on_site > 0 and free.sites.set_index("site_id").loc["chicago", "water_stress"] == "extremely-high"
    permit = 0.5 * on_site
    held = _plan(tmp_path, "held", catalog=catalog, stressed_site_water_m3_per_year=permit).sites.set_index("site_id")
    assert held.loc["chicago", "water_on_site_m3_per_year"] <= permit * (1 + 1e-9)
    assert held.loc["ashburn", "energy_mwh_per_year"] > 0
    assert held["goodput_tok_s"].sum() == pytest.approx(free.sites["goodput_tok_s"].sum(), rel=1e-9)


def test_cap_input_errors_name_the_file_the_row_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        _plan(tmp_path, "region", regional_caps=[{"region": "Atlantis", "water_m3_per_year": 1}])
    assert "objective.regional_caps[0]" in str(caught.value) and "'Atlantis' names no site" in str(caught.value)
    with pytest.raises(InputError) as caught:  # a water cap over sites whose water is unknown (no climate)
        _plan(tmp_path, "noclimate", catalog=SHIFT_CATALOG, water_cap_m3_per_year=1e9)
    text = str(caught.value)
    assert "catalog.csv" in text and "site 'ashburn'" in text and "site 'frankfurt'" in text and "climate" in text
    with pytest.raises(InputError, match="water price"):
        _plan(tmp_path, "noprice", catalog=SHIFT_CATALOG, water_usd_per_m3=1.0)
    with pytest.raises(InputError, match="give carbon_t_per_year, water_m3_per_year or both"):
        _plan(tmp_path, "empty", regional_caps=[{"region": "US"}])
    bad = WATER_CATALOG.replace(",hot-dry\n", ",desert\n")
    with pytest.raises(InputError, match=r"climate.*must be one of cool, temperate, hot-humid, hot-dry"):
        _plan(tmp_path, "badclimate", catalog=bad)


def test_the_water_frontier_of_two_us_sites(tmp_path: Path) -> None:
    # As the carbon frontier by hand, on water: every capped point moves the whole US load to Ashburn, at
    # $20 per MWh over 1.2308 m3 per MWh saved = $16.25 per m3 avoided; the outside check recomputes each point.
    folder = tmp_path / "s"
    folder.mkdir()
    path = write_scenario(folder, catalog=WATER_CATALOG, serving=DYNAMIC_POWER)
    out = tmp_path / "frontier"
    assert main(["frontier", str(path), "--axis", "water", "--out", str(out), "--points", "3", "--no-maps", "--quiet"]) == 0
    with (out / "frontier.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["axis"] for r in rows] == ["water"] * 3 and rows[0]["cap"] == ""
    assert (rows[1]["sites_opened"], rows[1]["sites_closed"]) == ("ashburn", "chicago")
    assert float(rows[1]["usd_per_m3_avoided"]) == pytest.approx(BREAK_EVEN_USD_PER_M3, rel=1e-6)
    assert float(rows[2]["cap"]) == pytest.approx(float(rows[2]["water_m3_per_year"]), rel=1e-6)  # the least any plan uses
    checked = runpy.run_path(str(REPO / "scripts" / "check_frontier.py"))["check"](out)
    assert len(checked) == 3 and all(line.endswith(": ok") for line in checked)


def test_embodied_carbon_by_hand(tmp_path: Path) -> None:
    # 2,500 kg a server and 150 kg a GPU (data/energy/embodied_carbon.csv): an 8-GPU node is 3.7 t, over the default
    # node life of 4 years 0.925 t a year, for every node installed; not part of the grid emissions.
    plan = _plan(tmp_path, "free")
    nodes = plan.sites["nodes"].to_numpy(float)
    np.testing.assert_allclose(plan.sites["embodied_tco2e_per_year"], nodes * 3.7 / 4.0)
    assert plan.summary.embodied_tco2e_per_year == pytest.approx(nodes.sum() * 0.925)
    assert plan.summary.tco2e_per_year == pytest.approx(float(plan.sites["tco2e_per_year"].sum()))


def test_a_capped_plan_says_what_its_caps_cost(tmp_path: Path) -> None:
    # The water cap of the hand-worked test: the plan solved without it too, and the report's price per m3 avoided
    # is the $20/MWh over 1.2308 m3/MWh of the whole move, $16.25.
    free = _plan(tmp_path, "free")
    moved_mwh = _energy(free)["chicago"]
    assert free.summary.water_m3_per_year is not None and free.summary.cap_cost is None
    cap = free.summary.water_m3_per_year - 0.5 * EXTRA_M3_PER_MWH * moved_mwh
    capped = _plan(tmp_path, "capped", water_cap_m3_per_year=cap)
    cost = capped.summary.cap_cost
    assert cost is not None
    assert nested_mismatch(capped.summary.to_json_dict(), "cap_cost") == ([], [])  # as the output reference says
    assert cost["uncapped_objective_usd_per_h"] == pytest.approx(free.summary.objective_usd_per_h, rel=1e-9)
    assert cost["uncapped_water_m3_per_year"] == pytest.approx(free.summary.water_m3_per_year, rel=1e-9)
    assert cost["usd_per_m3_avoided"] == pytest.approx(BREAK_EVEN_USD_PER_M3, rel=1e-6)
    assert cost["usd_per_t_avoided"] is None  # both sites draw the same grid: no tonne avoided
    from placement.outputs.report_md import _cap_cost_lines

    line = _cap_cost_lines(capped.summary)[0]
    assert "m3 of water a year avoided at $16.25 each" in line
