"""``placement discover``: greenfield sites proposed where unserved demand has none in reach, solved and ranked."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyogrio
import pytest

from placement.analyses.discover import candidate_cities, entry_price_usd_per_mwh
from placement.cli import main
from placement.outputs.columns import output_file
from placement.scenario.load import load_scenario
from placement.scenario.sections import DiscoverSection
from tests.conftest import SMALL_CATALOG, write_scenario

# The small world (Ashburn, Chicago, Frankfurt) and two cities far from them: Sydney and Lagos have no site inside
# their objective, so they are unserved (policy: report); Melbourne is near Sydney but smaller, Ibadan near Lagos.
FAR_CITIES = (
    "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
    "1,New York,US,NY,40.71,-74.01,8000000,America/New_York\n"
    "3,Berlin,DE,16,52.52,13.40,3600000,Europe/Berlin\n"
    "2147714,Sydney,AU,02,-33.87,151.21,4600000,Australia/Sydney\n"
    "2158177,Melbourne,AU,07,-37.81,144.96,4200000,Australia/Melbourne\n"
    "2332459,Lagos,NG,05,6.45,3.39,9000000,Africa/Lagos\n"
    "2339354,Ibadan,NG,32,7.38,3.90,3500000,Africa/Lagos\n"
)


def _scenario(tmp_path: Path) -> Path:
    return write_scenario(tmp_path, catalog=SMALL_CATALOG, cities=FAR_CITIES, policy={"unreachable": "report"})


def test_candidates_are_near_unserved_demand_spaced_and_ordered_by_it() -> None:
    cities = pd.DataFrame({
        "city_id": [1, 2, 3, 4, 5], "name": ["Big Far", "Near A", "Near B", "Small", "Sanctioned"],
        "country_code": ["XX", "NG", "NG", "NG", "IR"], "lat": [60.0, 6.45, 7.38, 6.6, 6.5],
        "lon": [100.0, 3.39, 3.90, 3.5, 3.4], "population": [9_000_000, 500_000, 3_000_000, 100_000, 9_000_000],
    })  # fmt: skip
    sites = pd.DataFrame({"lat": [39.0], "lon": [-77.5]})
    targets = pd.DataFrame({"lat": [6.45], "lon": [3.39], "unserved_tok_s": [1000.0]})
    spec = DiscoverSection(min_population=300_000, spacing_km=50, near_km=500)
    chosen = candidate_cities(cities, sites, targets, spec=spec, reach_km=2000)
    # Big Far is out of reach, Small under the population floor, Sanctioned in a sanctioned country; Near A and Near B
    # both have the target within 500 km (then the larger first) and are 118 km apart: both kept.
    assert chosen["name"].tolist() == ["Near B", "Near A"]
    spaced = candidate_cities(cities, sites, targets, spec=spec.model_copy(update={"spacing_km": 200}), reach_km=2000)
    assert spaced["name"].tolist() == ["Near B"]  # the other is within 200 km of it


def test_entry_price_by_hand() -> None:
    # A site serving 1e6 tok/s (3,600 M tokens an hour) at $40,000/h, drawing 100 MWh an hour at $50/MWh: at a going
    # rate of $12/M its tokens are worth $43,200/h, so power could cost $32 more a MWh: $82/MWh.
    sites = pd.DataFrame({
        "goodput_tok_s": [1e6, 0.0], "energy_mwh_per_year": [100 * 8760, 0.0], "cost_usd_per_h": [40_000.0, 10.0],
        "power_price_usd_per_mwh": [50.0, 50.0],
    })  # fmt: skip
    entry = entry_price_usd_per_mwh(sites, 12.0)
    assert entry.iloc[0] == pytest.approx(82.0) and pd.isna(entry.iloc[1])


@pytest.fixture(scope="module")
def discovered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("discover")
    out = folder / "out"
    assert main(["discover", str(_scenario(folder)), "--out", str(out), "--quiet", "--no-maps"]) == 0
    return out


def test_discovery_serves_the_out_of_reach_cities_and_ranks_the_sites(discovered: Path) -> None:
    head = json.loads((discovered / "discover.json").read_text())
    assert head["unserved_share_before"] > 0.3 and head["unserved_share_after"] < 1e-6
    ranked = pd.read_csv(discovered / "discovered_sites.csv")
    assert list(ranked.columns[:9]) == [
        "site_id", "name", "country_code", "lat", "lon", "mw_built", "goodput_tok_s", "unserved_taken_tok_s",
        "entry_usd_per_mwh",
    ]  # fmt: skip
    assert set(ranked["country_code"]) == {"AU", "NG"} and (ranked["mw_built"] > 0).all()
    before = pd.read_csv(discovered / "baseline" / "populations.csv").set_index("name")
    # the proposals take exactly what was unserved: Sydney, Melbourne, Lagos and Ibadan in full
    assert ranked["unserved_taken_tok_s"].sum() == pytest.approx(before["unserved_tok_s"].sum(), rel=1e-6)
    assert ranked["unserved_taken_tok_s"].is_monotonic_decreasing
    after = pd.read_csv(discovered / "plan" / "populations.csv")
    assert after["unserved_tok_s"].sum() == pytest.approx(0.0, abs=1e-6)
    proposals = pd.read_csv(discovered / "proposals.csv")
    assert proposals["opened"].sum() == len(ranked) and "estimate" in proposals["source"].iloc[0]


def test_the_plan_folder_is_an_ordinary_results_folder_with_a_discovered_layer(discovered: Path) -> None:
    plan = discovered / "plan"
    sites = pd.read_csv(plan / "sites.csv")
    assert sites["discovered"].sum() >= 2 and (sites.loc[sites["discovered"], "site_id"].str.startswith("disc-")).all()
    layers = [str(name) for name, _ in pyogrio.list_layers(plan / "plan.gpkg")]
    assert "discovered_sites" in layers
    # the copied scenario names the catalog with the proposals where it now is: the folder rebuilds
    loaded = load_scenario(plan / "scenario.yaml")
    assert loaded.catalog_path == (discovered / "sites_discovered.csv").resolve()
    assert main(["explain", str(plan), "--quiet"]) == 0


def test_proposals_that_take_too_long_to_energise_are_left_out(tmp_path: Path) -> None:
    # data/sites/discovery_figures.csv: 3 years in Africa and Oceania; a 2-year horizon leaves no proposal, so the
    # plan is the baseline's
    from placement.analyses.discover import discover

    loaded = load_scenario(_scenario(tmp_path))
    spec = DiscoverSection(max_years_to_energise=2)
    found = discover(loaded, work=tmp_path / "w", final_folder=tmp_path / "out", spec=spec)
    assert found.proposals.empty and found.ranked.empty
    assert found.plan.summary.unserved_share == pytest.approx(found.baseline.summary.unserved_share)
    three = discover(loaded, work=tmp_path / "w3", final_folder=tmp_path / "out3", spec=DiscoverSection(max_years_to_energise=3))
    assert (three.proposals["years_to_energise"] <= 3).all() and len(three.ranked) >= 2


def test_a_plain_solve_with_discover_settings_says_it_uses_the_catalog(tmp_path: Path) -> None:
    from placement.plan.solve import run

    path = write_scenario(tmp_path, catalog=SMALL_CATALOG, cities=FAR_CITIES, policy={"unreachable": "report"},
                          sites={"catalog": "catalog.csv", "discover": {"min_population": 1_000_000}})  # fmt: skip
    plan = run(load_scenario(path))
    assert any("sites.discover is set" in note for note in plan.notes)
    assert "discovered" not in plan.sites.columns


def test_a_folder_that_is_not_a_results_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    assert main(["discover", str(_scenario(tmp_path)), "--out", str(taken), "--quiet"]) == 1
    assert (taken / "notes.txt").read_text() == "mine"
    assert "error" in capsys.readouterr().err


def test_discover_json_holds_the_described_keys_in_order(discovered: Path) -> None:
    """The output reference lists discover.json's keys: each one written, and no other."""
    written = list(json.loads((discovered / "discover.json").read_text(encoding="utf-8")))
    assert written == [c.name for c in output_file("discover.json", "discover").columns]
