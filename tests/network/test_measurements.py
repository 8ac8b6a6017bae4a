"""The planner's own pings: checked row by row, shrunk toward the model, and moving the plan only where they say."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from placement._errors import InputError
from placement.cli import main
from placement.network.measurements import PRIOR_ROWS, calibrate, fit_corrections, load_measurements
from placement.network.paths import Endpoints, PathType, default_round_trips
from placement.network.places import resolve_place
from placement.plan.solve import run
from placement.scenario.load import load_scenario
from tests.conftest import CATALOG_HEADER, scenario_dict, write_scenario

EUROPE = ["Lisbon", "Madrid", "Paris", "Berlin", "Rome", "Warsaw", "Amsterdam", "Vienna", "Stockholm", "Prague"]
NORTH_AMERICA = ["New York City", "Chicago", "Dallas", "Toronto", "Atlanta", "Denver"]
SLOWER = 1.3


def _prior_p50_ms(a: str, b: str) -> float:
    pa, pb = resolve_place(a), resolve_place(b)
    trips = default_round_trips()
    ea, eb = Endpoints.of(pa.lat, pa.lon, pa.country_code, True), Endpoints.of(pb.lat, pb.lon, pb.country_code, True)
    return float(trips.rtt_ms(ea, eb, PathType.INTERNET).p50_ms[0, 0])


def _synthetic_file(folder: Path) -> Path:
    """Every European pair 30 % slower than the model, every North American pair exactly the model."""
    rows = [(a, b, _prior_p50_ms(a, b) * SLOWER) for a, b in itertools.combinations(EUROPE, 2)]
    rows += [(a, b, _prior_p50_ms(a, b)) for a, b in itertools.combinations(NORTH_AMERICA, 2)]
    path = folder / "pings.csv"
    pd.DataFrame(rows, columns=["from", "to", "rtt_ms"]).assign(samples=100).to_csv(path, index=False)
    return path


def test_bad_rows_are_gathered_with_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(
        "from,to,rtt_ms,rtt_p90_ms,path\n"
        "Lisbon,Madrdi,20,,\n"  # unknown city (close match offered)
        "Lisbon,Madrid,30,20,\n"  # p90 below the typical
        "Lisbon,Madrid,abc,,\n"  # not a number
        "Lisbon,Madrid,30,,satellite\n"  # unknown path
        "Lisbon,Lisbon,5,,\n"  # a place to itself
    )
    with pytest.raises(InputError) as error:
        load_measurements(path)
    found = {(p.where.split(" (")[0], p.field) for p in error.value.problems}
    assert found == {("row 1", "to"), ("row 2", "rtt_p90_ms"), ("row 3", "rtt_ms"), ("row 4", "path"), ("row 5", "to")}
    assert any("Madrid" in p.fix for p in error.value.problems if p.field == "to")


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("from,to\nLisbon,Madrid\n")
    with pytest.raises(InputError) as error:
        load_measurements(path)
    assert any(p.field == "rtt_ms" or "rtt_ms" in p.rule for p in error.value.problems)


def test_corrections_shrink_toward_the_model_and_touch_only_the_region_measured(tmp_path: Path) -> None:
    measurements = load_measurements(_synthetic_file(tmp_path))
    corrections = fit_corrections(measurements, default_round_trips())
    factors = dict(corrections.p50_factor)
    n_europe = len(list(itertools.combinations(EUROPE, 2)))
    assert factors["europe|europe"] == pytest.approx(SLOWER ** (n_europe / (n_europe + PRIOR_ROWS)), rel=1e-9)
    assert factors["north_america|north_america"] == pytest.approx(1.0, abs=1e-12)
    assert set(factors) == {"europe|europe", "north_america|north_america"}


def test_the_report_shows_before_and_after_on_held_out_rows(tmp_path: Path) -> None:
    report = calibrate(load_measurements(_synthetic_file(tmp_path)), default_round_trips())
    europe = report.table[(report.table["region_pair"] == "europe|europe")].set_index("split")
    assert europe.loc["held-out", "n"] >= 3
    assert europe.loc["held-out", "before_median_signed_pct"] == pytest.approx(100 * (1 / SLOWER - 1), abs=0.5)
    assert abs(europe.loc["held-out", "after_median_signed_pct"]) < 5.0


def test_rtt_measurements_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _synthetic_file(tmp_path)
    assert main(["rtt", "--measurements", str(path)]) == 0
    out = capsys.readouterr().out
    assert "europe|europe" in out and "held-out" in out
    assert main(["rtt", "--measurements", str(path), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["p50_factor"]["europe|europe"] > 1.2


def _two_region_scenario(folder: Path, budget_ms: float, measurements: Path | None) -> Path:
    catalog = CATALOG_HEADER + (
        "ashburn,Ashburn,US,North America,39.04,-77.49,50,80,1.3,10000000,false\n"
        "chicago,Chicago,US,North America,41.88,-87.63,50,60,1.3,10000000,false\n"
        "frankfurt,Frankfurt,DE,Europe,50.11,8.68,50,40,1.3,10000000,false\n"
        "madrid,Madrid,ES,Europe,40.42,-3.70,50,200,1.3,10000000,false\n"
    )
    cities = (
        "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
        "1,New York,US,NY,40.71,-74.01,8000000,America/New_York\n"
        "2,Chicago,US,IL,41.88,-87.63,2700000,America/Chicago\n"
        "3,Berlin,DE,16,52.52,13.40,3600000,Europe/Berlin\n"
        "4,Lisbon,PT,14,38.72,-9.14,500000,Europe/Lisbon\n"
    )
    latency = {"model": "graph", "quantile": "p90"}
    if measurements is not None:
        latency["measurements"] = str(measurements)
    # The small scenario's given-goodput chat class (190 ms of node-side TTFT, 2 round trips) with room for
    # exactly budget_ms of round trip.
    classes = [{**scenario_dict()["classes"][0], "ttft_p99_ms": 190 + 2 * budget_ms}]
    return write_scenario(folder, catalog=catalog, cities=cities, latency=latency, classes=classes)


def test_paths_measured_slower_in_one_region_move_the_plan_there_and_nowhere_else(tmp_path: Path) -> None:
    pings = _synthetic_file(tmp_path)
    (tmp_path / "prior").mkdir()
    (tmp_path / "measured").mkdir()
    # Lisbon's round trip to cheap Frankfurt fits the budget on the model and not once Europe is 30 % slower;
    # its round trip to dear Madrid fits either way.
    probe = run(load_scenario(_two_region_scenario(tmp_path / "prior", 1000.0, None)))
    cities = probe.instance.populations.cities
    lisbon = int(cities.loc[cities["name"].eq("Lisbon"), "population_index"].iloc[0])
    sites = list(probe.instance.sites["id"])
    to_frankfurt = float(probe.instance.rtt_p90_ms[lisbon, sites.index("frankfurt")])
    to_madrid = float(probe.instance.rtt_p90_ms[lisbon, sites.index("madrid")])
    factor = SLOWER ** (45 / (45 + PRIOR_ROWS))
    budget = 0.5 * (to_frankfurt + to_frankfurt * factor)
    assert to_madrid * factor < budget < to_frankfurt * factor

    prior = run(load_scenario(_two_region_scenario(tmp_path / "prior", budget, None)))
    measured = run(load_scenario(_two_region_scenario(tmp_path / "measured", budget, pings)))
    assert measured.instance.latency.calibration is not None

    def main_site(plan: object) -> dict[str, str]:
        table = plan.assignments  # type: ignore[attr-defined]
        members = plan.instance.populations.cities  # type: ignore[attr-defined]
        ids = plan.instance.populations.table["population_id"].to_numpy()  # type: ignore[attr-defined]
        names = dict(zip(ids[members["population_index"].to_numpy()], members["name"], strict=True))
        top = table.sort_values("goodput_tok_s", ascending=False).drop_duplicates("population_id")
        return {names[p]: s for p, s in zip(top["population_id"], top["site_id"], strict=True)}

    before, after = main_site(prior), main_site(measured)
    assert before["Lisbon"] == "frankfurt" and after["Lisbon"] == "madrid"
    assert before["New York"] == after["New York"] and before["Chicago"] == after["Chicago"]
    # Round trips: scaled by the factor between European points, unchanged elsewhere.
    p_prior, p_measured = prior.instance.rtt_p50_ms, measured.instance.rtt_p50_ms
    europe_rows = [int(cities.loc[cities["name"].eq(n), "population_index"].iloc[0]) for n in ("Berlin", "Lisbon")]
    us_rows = [int(cities.loc[cities["name"].eq(n), "population_index"].iloc[0]) for n in ("New York", "Chicago")]
    eu_sites = [sites.index("frankfurt"), sites.index("madrid")]
    us_sites = [sites.index("ashburn"), sites.index("chicago")]
    np.testing.assert_allclose(p_measured[np.ix_(europe_rows, eu_sites)], p_prior[np.ix_(europe_rows, eu_sites)] * factor)
    np.testing.assert_array_equal(p_measured[np.ix_(us_rows, us_sites)], p_prior[np.ix_(us_rows, us_sites)])
    np.testing.assert_array_equal(p_measured[np.ix_(us_rows, eu_sites)], p_prior[np.ix_(us_rows, eu_sites)])
