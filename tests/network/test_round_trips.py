"""One round trip: ``placement rtt --access`` prints exactly what a solved plan budgets for each member city."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from placement.cli import main
from placement.instance import latency as instance_latency
from placement.instance.latency import worst_member_rtt_ms
from placement.network.paths import Endpoints, PathType, default_round_trips
from placement.network.places import Place, place_endpoints, resolve_place, rtt_report
from placement.plan.record import Plan
from placement.plan.solve import run
from placement.scenario.load import load_scenario
from tests.conftest import write_scenario


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    folder = tmp_path_factory.mktemp("consistency")
    demand = {"clusters": 2}  # clustered: a population takes its worst member's round trip
    return run(load_scenario(write_scenario(folder, demand=demand)))


def _members(plan: Plan) -> pd.DataFrame:
    cities = plan.instance.populations.cities
    ids = plan.populations["population_id"].to_numpy()[cities["population_index"].to_numpy()]
    return cities.assign(population_id=ids)


def _site_place(plan: Plan, site_id: str) -> Place:
    site = plan.instance.sites.set_index("id").loc[site_id]
    return Place(str(site["name"]), str(site["country_code"]), float(site["lat"]), float(site["lon"]))


def test_rtt_access_equals_every_assignment_for_every_member_city(plan: Plan) -> None:
    members, trips = _members(plan), default_round_trips()
    assert len(plan.assignments) > 0
    assert members.groupby("population_id").size().max() > 1  # the worst-member rule is exercised
    for row in plan.assignments.itertuples(index=False):
        group = members[members["population_id"] == row.population_id]
        on_transit = plan.instance.sites.set_index("id").loc[row.site_id, "network"] == "transit"
        site = place_endpoints(_site_place(plan, row.site_id), bool(on_transit))
        per_member = [
            trips.pair(Endpoints.of(m.lat, m.lon, m.country_code), site, PathType.ACCESS) for m in group.itertuples(index=False)
        ]
        p50 = np.array([p.rtt_ms for p in per_member])
        p90 = np.array([p.rtt_p90_ms for p in per_member])
        assert row.rtt_ms == pytest.approx(p50.max(), abs=1e-9)
        assert row.rtt_p90_ms == pytest.approx(p90.max(), abs=1e-9)
        assert row.rtt_budget_ms == pytest.approx(row.rtt_p90_ms, abs=1e-9)  # latency.quantile defaults to p90
        assert (p50 <= row.rtt_ms + 1e-9).all()


def test_one_cli_invocation_prints_the_plans_round_trip(plan: Plan, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    members = _members(plan)
    row = plan.assignments.iloc[0]
    group = members[members["population_id"] == row["population_id"]]
    site = plan.instance.sites.set_index("id").loc[row["site_id"]]
    worst = None
    for m in group.itertuples(index=False):
        place_args = [f"{m.lat},{m.lon}", f"{site['lat']},{site['lon']}", "--site-network", site["network"]]
        assert main(["rtt", *place_args, "--access", "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["from"]["country_code"] == m.country_code and report["to"]["country_code"] == site["country_code"]
        worst = report["rtt_ms"] if worst is None else max(worst, report["rtt_ms"])
    assert worst == pytest.approx(row["rtt_ms"], abs=0.01)  # the CLI rounds to 0.01 ms


def test_rtt_report_by_name_is_the_same_function(plan: Plan) -> None:
    report = rtt_report("Frankfurt am Main", "Paris", path=PathType.ACCESS, round_trips=default_round_trips())
    a, b = resolve_place("Frankfurt am Main"), resolve_place("Paris")
    direct = default_round_trips().pair(place_endpoints(a), place_endpoints(b, True), PathType.ACCESS)
    assert report["site_network"] == "transit"  # rtt's default: a colocation or hosting site
    assert report["rtt_ms"] == pytest.approx(direct.rtt_ms, abs=0.01)
    backbone = rtt_report(
        "Frankfurt am Main", "Paris", path=PathType.ACCESS, site_network="backbone", round_trips=default_round_trips()
    )
    assert backbone["rtt_ms"] == pytest.approx(
        default_round_trips().pair(place_endpoints(a), place_endpoints(b), PathType.ACCESS).rtt_ms, abs=0.01
    )
    assert backbone["rtt_ms"] < report["rtt_ms"]  # transit is the longer path


def test_the_round_trip_table_does_not_depend_on_its_chunks_or_threads(plan: Plan, monkeypatch: pytest.MonkeyPatch) -> None:
    """Member cities go through the latency model a chunk at a time on two threads; one chunk gives the same table."""
    cities, sites, latency = plan.instance.populations.cities, plan.instance.sites, plan.instance.latency
    whole = worst_member_rtt_ms(cities, sites, latency)
    monkeypatch.setattr(instance_latency, "RTT_CHUNK_CITIES", 1)
    chunked = worst_member_rtt_ms(cities, sites, latency)
    assert np.array_equal(whole.p50_ms, chunked.p50_ms) and np.array_equal(whole.p90_ms, chunked.p90_ms)
    assert np.array_equal(whole.p90_ms, plan.instance.rtt_p90_ms)
    assert (
        cities["population_index"].nunique() >= 2 and len(cities) > cities["population_index"].nunique()
    )  # chunks of whole populations
