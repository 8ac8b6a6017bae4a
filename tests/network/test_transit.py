"""Who carries the packets: transit sites pay the fitted inflation, backbone sites do not, and the p90 is a quantile."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from placement._errors import InputError
from placement.network.load import CALIBRATED_JSON
from placement.network.paths import BAND_EDGES_KM, Endpoints, PathType, default_round_trips
from placement.network.places import rtt_report
from placement.network.transit import TransitParams
from placement.network.world_regions import WORLD_REGIONS, region_index, world_region
from placement.world.catalog import load_catalog
from placement.world.geodesy import great_circle_km

FRANKFURT = (50.11, 8.68, "DE")
MADRID = (40.42, -3.70, "ES")
TOKYO = (35.68, 139.69, "JP")
LAGOS = (6.45, 3.39, "NG")
JOHANNESBURG = (-26.20, 28.05, "ZA")


def _point(where: tuple[float, float, str], on_transit: bool) -> Endpoints:
    return Endpoints.of(where[0], where[1], where[2], on_transit)


def test_the_bundled_inflation_is_physical() -> None:
    """Never below 1, never rising with distance, regions only adding (transit is never faster than the backbone)."""
    transit = default_round_trips().transit
    g = np.asarray(transit.log_inflation)
    assert (g >= 0).all()
    assert (np.diff(g) <= 1e-12).all()
    assert (np.asarray(transit.region_log_factor) >= 0).all()
    assert g.max() > 0.0, "the fit found no inflation at all: transit would equal the backbone"
    km = np.geomspace(50, 20000, 60)
    factor = transit.inflation(km, np.zeros(60, dtype=int), np.zeros(60, dtype=int))
    assert (factor >= 1.0).all() and (np.diff(factor) <= 1e-12).all()


@pytest.mark.parametrize(("a", "b"), [(FRANKFURT, MADRID), (FRANKFURT, TOKYO), (LAGOS, JOHANNESBURG)])
def test_a_transit_path_is_the_backbone_path_times_its_inflation(
    a: tuple[float, float, str], b: tuple[float, float, str]
) -> None:
    trips = default_round_trips()
    backbone = trips.rtt_ms(_point(a, False), _point(b, False), PathType.INTERNET)
    transit = trips.rtt_ms(_point(a, True), _point(b, True), PathType.INTERNET)
    one_end = trips.rtt_ms(_point(a, False), _point(b, True), PathType.INTERNET)
    km = great_circle_km(a[0], a[1], b[0], b[1])
    factor = trips.transit.inflation(km, region_index(a[0], a[1]), region_index(b[0], b[1]))[0]
    assert transit.p50_ms[0, 0] == pytest.approx(max(backbone.p50_ms[0, 0] * factor, 2 * km / 204.19))
    assert one_end.p50_ms[0, 0] == pytest.approx(transit.p50_ms[0, 0]), "one end on transit puts the path on transit"
    assert transit.p50_ms[0, 0] >= backbone.p50_ms[0, 0]
    band = int(np.searchsorted(BAND_EDGES_KM, km, side="right"))
    spread = np.asarray(trips.transit.region_log_spread)
    log_spread = (
        spread[region_index(a[0], a[1])[0]] + spread[region_index(b[0], b[1])[0]] if km >= trips.transit.spread_from_km else 0.0
    )
    ratio = max(trips.transit.p90_ratio_by_band[band] * np.exp(log_spread), trips.extras.p90_ratio_by_band[band])
    assert transit.p90_ms[0, 0] == pytest.approx(transit.p50_ms[0, 0] * ratio)


def test_users_reach_a_transit_site_over_the_public_internet() -> None:
    trips = default_round_trips()
    users = Endpoints.of(*LAGOS)
    backbone_site, transit_site = _point(JOHANNESBURG, False), _point(JOHANNESBURG, True)
    to_backbone = trips.rtt_ms(users, backbone_site, PathType.ACCESS).p50_ms[0, 0]
    to_transit = trips.rtt_ms(users, transit_site, PathType.ACCESS).p50_ms[0, 0]
    last_mile = trips.extras.last_mile_ms(np.array(["NG"]))[0]
    internet = trips.rtt_ms(_point(LAGOS, False), backbone_site, PathType.INTERNET).p50_ms[0, 0]
    assert to_backbone == pytest.approx(internet + last_mile)
    assert to_transit - last_mile > internet, "Africa's transit is inflated over the backbone"


@pytest.mark.parametrize("site", [LAGOS, JOHANNESBURG])
def test_only_the_network_part_of_an_access_path_takes_the_transit_spread(site: tuple[float, float, str]) -> None:
    """The transit p90 ratio was measured between probes whose access it already holds; the last mile keeps its own."""
    trips = default_round_trips()
    users = Endpoints.of(*LAGOS)
    access = trips.rtt_ms(users, _point(site, True), PathType.ACCESS)
    network = trips.rtt_ms(_point(LAGOS, True), _point(site, True), PathType.INTERNET)
    last_mile = trips.extras.last_mile_ms(np.array(["NG"]))[0]
    km = great_circle_km(LAGOS[0], LAGOS[1], site[0], site[1])
    backbone_ratio = trips.extras.p90_ratio(np.array([km]))[0]
    assert access.p50_ms[0, 0] == pytest.approx(network.p50_ms[0, 0] + last_mile)
    assert access.p90_ms[0, 0] == pytest.approx(network.p90_ms[0, 0] + last_mile * backbone_ratio)
    assert access.p90_ms[0, 0] < access.p50_ms[0, 0] * network.p90_ms[0, 0] / network.p50_ms[0, 0]


def test_the_site_network_column_defaults_by_kind_and_checks_its_values(tmp_path: Path) -> None:
    header = "id,name,lat,lon,mw_available,power_price_usd_per_mwh,pue,capex_usd_per_mw,providers,network\n"
    good = tmp_path / "good.csv"
    good.write_text(
        header
        + "cloud,Cloud,50,8,10,80,1.3,1e7,aws:eu-central-1,\n"
        + "colo,Colo,50,8,10,80,1.3,1e7,,\n"
        + "owned,Owned,50,8,10,80,1.3,1e7,aws:eu-central-1,Transit\n"
    )
    assert load_catalog(good)["network"].tolist() == ["backbone", "transit", "transit"]
    bad = tmp_path / "bad.csv"
    bad.write_text(header + "x,X,50,8,10,80,1.3,1e7,,fibre\n")
    with pytest.raises(InputError) as error:
        load_catalog(bad)
    (problem,) = error.value.problems
    assert problem.field == "network" and "row 1" in problem.where and "backbone or transit" in problem.rule


def test_the_bundled_catalogs_say_who_carries_their_packets() -> None:
    repo = Path(__file__).resolve().parents[2]
    world = load_catalog(repo / "data" / "sites" / "world_sites.csv")
    kind = world["source"].str.extract(r"kind: ([a-z-]+)")[0]
    expected = np.where(kind.isin(["cloud-metro", "cloud-region"]), "backbone", "transit")
    assert (world["network"].to_numpy() == expected).all()
    assert (world["network"] == "transit").sum() == 175
    assert (load_catalog(repo / "data" / "sites" / "world_metros.csv")["network"] == "backbone").all()


def test_rtt_reports_the_site_network() -> None:
    trips = default_round_trips()
    transit = rtt_report("Frankfurt am Main", "Madrid", round_trips=trips)
    backbone = rtt_report("Frankfurt am Main", "Madrid", site_network="backbone", round_trips=trips)
    assert transit["site_network"] == "transit" and backbone["site_network"] == "backbone"
    assert transit["rtt_ms"] > backbone["rtt_ms"]


def test_the_p90_ratios_are_held_out_quantiles_that_cover() -> None:
    """calibrated.json records held-out coverage per band; the transit p90 covers most RIPE pairs it was not fitted on."""
    record = json.loads(CALIBRATED_JSON.read_text())
    coverage = {(r["source"], r["model"], r["band"]): r["covered_pct"] for r in record["metrics"]["coverage"]}
    assert coverage[("ripe", "new transit", "all")] >= 80.0
    assert coverage[("public (cloud)", "new internet", "all")] >= 80.0
    assert coverage[("ripe", "new transit", "all")] > coverage[("ripe", "old internet", "all")]
    transit, backbone = record["transit"]["p90_ratio_by_band"], record["extras"]["p90_ratio_by_band"]
    assert all(t >= b for t, b in zip(transit, backbone, strict=True)), "a transit path is no less spread than a backbone one"


def test_the_transit_p90_covers_every_region_alike() -> None:
    """The region spreads bring each region's held-out coverage near 90 %, where a ratio per band alone left 84-95 %."""
    record = json.loads(CALIBRATED_JSON.read_text())
    rows = record["metrics"]["coverage_by_region"]
    band_only = {r["region"]: r["covered_pct"] for r in rows if r["model"] == "ripe, band only"}
    regional = {r["region"]: r["covered_pct"] for r in rows if r["model"] == "ripe, band and region"}
    assert set(regional) == set(WORLD_REGIONS)
    assert min(regional.values()) >= 87.0
    assert min(regional.values()) > min(band_only.values()), "the worst-covered region gained"
    spread = record["transit"]["region_log_spread"]
    assert spread["europe"] < 0 < spread["asia"], "Europe's dense exchanges spread less than Asia's paths"


def test_a_region_spread_applies_from_its_distance() -> None:
    transit = TransitParams(region_log_spread=(0.1, 0.0, -0.1, 0.0, 0.2, 0.0), spread_from_km=1500.0)
    europe, asia = WORLD_REGIONS.index("europe"), WORLD_REGIONS.index("asia")
    ratio = transit.p90_ratio(
        np.array([2.0, 1.5, 1.2]), np.array([800.0, 9000.0, 9000.0]), europe, np.array([europe, asia, europe])
    )
    assert ratio.tolist() == pytest.approx([2.0, 1.5 * np.exp(0.1), 1.0]), "short paths take the band's; never below 1"


def test_world_regions_cover_the_map() -> None:
    names = world_region([40.7, -23.5, 48.9, 6.5, 35.7, -33.9], [-74.0, -46.6, 2.35, 3.4, 139.7, 151.2])
    assert names.tolist() == list(WORLD_REGIONS)


def test_transit_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match="one inflation figure per knot"):
        TransitParams(log_inflation=(0.1,))
