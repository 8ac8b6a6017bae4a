"""Path types, own-country access legs, regional corridors, the firewall and p90s of the shared round-trip function."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from placement._errors import InputError
from placement.network.countries import country_of_points
from placement.network.graph import crosses_firewall
from placement.network.load import (
    LINKS_CSV,
    corridor_countries,
    default_network,
    global_network,
    load_network,
    regional_links,
)
from placement.network.paths import BAND_EDGES_KM, Endpoints, PathExtras, PathType, RoundTrips, band_index, default_round_trips
from placement.world.catalog import load_catalog
from placement.world.cities import load_cities
from placement.world.geodesy import pairwise_km
from tests.conftest import REPO

MOSCOW = Endpoints.of(55.7558, 37.6173, "RU")
BEIJING = Endpoints.of(39.9042, 116.4074, "CN")
ALMATY = Endpoints.of(43.2389, 76.8897, "KZ")
ZHONGWEI = Endpoints.of(37.5149, 105.1875, "CN")
FRANKFURT = Endpoints.of(50.1155, 8.6842, "DE")
TOKYO = Endpoints.of(35.6895, 139.6917, "JP")


def test_country_of_points_city_states_polygons_and_the_sea() -> None:
    lat = [48.85, 1.35, 22.3, 26.2, 43.22, 37.3, -23.5, 45.5]
    lon = [2.35, 103.8, 114.18, 50.6, 76.85, 106.15, -46.8, -73.6]
    assert country_of_points(lat, lon).tolist() == ["FR", "SG", "HK", "BH", "KZ", "CN", "BR", "CA"]
    assert country_of_points([47.0], [-30.0]).tolist() != [""]  # mid-Atlantic: its nearest city's country


def test_access_legs_enter_at_own_country_hubs(world_sites: pd.DataFrame) -> None:
    trips = default_round_trips()
    cities = load_cities(REPO / "data" / "cities" / "geonames_cities15000.csv", min_population=200_000)
    points = Endpoints.of(cities["lat"], cities["lon"], cities["country_code"])
    entries = trips.entries(points)
    hub_country = default_network().hubs["country_code"].to_numpy(str)
    with_hubs = np.isin(points.country_code, hub_country)
    used = np.isfinite(entries.leg_ms)
    own = hub_country[entries.hub] == points.country_code[:, None]
    assert (own | ~used)[with_hubs].all()  # never a foreign hub when the country has one
    assert used[:, 0].all()
    almaty = trips.entries(ALMATY)
    assert set(hub_country[almaty.hub[0][np.isfinite(almaty.leg_ms[0])]]) == {"KZ"}


def test_a_country_without_hubs_pays_the_border_penalty() -> None:
    trips = default_round_trips()
    luxembourg = Endpoints.of(49.6116, 6.1319, "LU")
    assert "LU" not in set(default_network().hubs["country_code"])
    harsher = replace(trips, extras=replace(trips.extras, border_ms=trips.extras.border_ms + 7.0))
    before = trips.rtt_ms(luxembourg, FRANKFURT, PathType.INTERNET).p50_ms[0, 0]
    after = harsher.rtt_ms(luxembourg, FRANKFURT, PathType.INTERNET).p50_ms[0, 0]
    assert after == pytest.approx(before + 7.0)


def test_regional_corridors_carry_their_own_countries_only() -> None:
    trips, network = default_round_trips(), default_network()
    assert regional_links(network).sum() == 5
    assert {"RU", "KZ", "CN"} <= corridor_countries(network)
    moscow_beijing = trips.pair(MOSCOW, BEIJING, PathType.INTERNET)
    assert "Irkutsk" in moscow_beijing.path and 100.0 <= moscow_beijing.rtt_ms <= 160.0  # real paths ~110-150 ms
    frankfurt_tokyo = trips.pair(FRANKFURT, TOKYO, PathType.INTERNET)
    assert "Irkutsk" not in frankfurt_tokyo.path and "Novosibirsk" not in frankfurt_tokyo.path
    backbone = trips.pair(MOSCOW, BEIJING, PathType.BACKBONE)
    assert "Irkutsk" not in backbone.path  # a provider's backbone takes no regional corridor
    assert len(global_network(network).links) == len(network.links) - 5


def test_the_firewall_is_paid_on_links_into_china() -> None:
    trips = default_round_trips()
    assert trips.internet.firewall_ms > 0 and trips.backbone.firewall_ms == 0
    network = default_network()
    crossing = crosses_firewall(network)
    links = network.links[crossing]
    assert {"hong-kong", "urumqi"} <= set(links["a"]) | set(links["b"])
    open_door = replace(trips, internet=replace(trips.internet, firewall_ms=0.0))
    with_wall = trips.rtt_ms(ALMATY, ZHONGWEI, PathType.INTERNET).p50_ms[0, 0]
    without = open_door.rtt_ms(ALMATY, ZHONGWEI, PathType.INTERNET).p50_ms[0, 0]
    assert with_wall == pytest.approx(without + trips.internet.firewall_ms)
    inside = trips.rtt_ms(BEIJING, ZHONGWEI, PathType.INTERNET).p50_ms[0, 0]
    inside_open = open_door.rtt_ms(BEIJING, ZHONGWEI, PathType.INTERNET).p50_ms[0, 0]
    assert inside == pytest.approx(inside_open)  # a path inside China crosses no wall


def test_access_adds_only_the_user_countrys_last_mile() -> None:
    trips = default_round_trips()
    last_mile = dict(trips.extras.last_mile_by_country)
    internet = trips.rtt_ms(ALMATY, ZHONGWEI, PathType.INTERNET).p50_ms[0, 0]
    access = trips.rtt_ms(ALMATY, ZHONGWEI, PathType.ACCESS).p50_ms[0, 0]
    assert access == pytest.approx(internet + last_mile["KZ"])
    override = replace(trips, last_mile_override_ms=3.0)
    assert override.rtt_ms(ALMATY, ZHONGWEI, PathType.ACCESS).p50_ms[0, 0] == pytest.approx(internet + 3.0)


def test_p90_is_the_band_ratio_times_the_median() -> None:
    extras = PathExtras(p90_ratio_by_band=(1.5, 1.4, 1.3, 1.2, 1.1, 1.05))
    assert extras.p90_ratio([100.0, 499.0, 500.0, 5000.0, 20000.0]).tolist() == [1.5, 1.5, 1.4, 1.2, 1.05]
    assert len(default_round_trips().extras.p90_ratio_by_band) == len(BAND_EDGES_KM) + 1
    trips = default_round_trips()
    quantiles = trips.rtt_ms(FRANKFURT, TOKYO, PathType.INTERNET)
    assert quantiles.p90_ms[0, 0] > quantiles.p50_ms[0, 0]


@pytest.fixture(scope="module")
def world_sites() -> pd.DataFrame:
    return load_catalog(REPO / "data" / "sites" / "world_metros.csv")


@pytest.mark.parametrize("path", list(PathType))
def test_every_path_type_respects_the_physics_bound(world_sites: pd.DataFrame, path: PathType) -> None:
    cities = load_cities(REPO / "data" / "cities" / "geonames_cities15000.csv", min_population=100_000)
    users = Endpoints.of(cities["lat"], cities["lon"], cities["country_code"])
    sites = Endpoints.of(world_sites["lat"], world_sites["lon"], world_sites["country_code"])
    quantiles = default_round_trips().rtt_ms(users, sites, path)
    bound = 2 * pairwise_km(cities["lat"], cities["lon"], world_sites["lat"], world_sites["lon"]) / (299_792.458 / 1.468)
    assert np.isfinite(quantiles.p50_ms).all()
    assert (quantiles.p50_ms >= bound - 1e-9).all() and (quantiles.p90_ms >= quantiles.p50_ms).all()


def test_a_bad_link_scope_is_named(tmp_path: Path) -> None:
    links = pd.read_csv(LINKS_CSV, dtype=str, keep_default_na=False)
    links.loc[3, "scope"] = "local"
    links.to_csv(tmp_path / "links.csv", index=False)
    with pytest.raises(InputError, match=r"row 4 \(line 5\), field 'scope'"):
        load_network(REPO / "data" / "network" / "hubs.csv", tmp_path / "links.csv")


def test_roundtrips_built_by_hand_match_the_bundled_factory() -> None:
    bundled = default_round_trips()
    by_hand = RoundTrips(bundled.network, bundled.backbone, bundled.internet, bundled.extras)
    a = by_hand.rtt_ms(FRANKFURT, TOKYO, PathType.ACCESS).p50_ms
    assert a[0, 0] == pytest.approx(bundled.rtt_ms(FRANKFURT, TOKYO, PathType.ACCESS).p50_ms[0, 0])


def test_band_index_counts_the_edges_a_distance_reaches() -> None:
    km = np.array([0.0, 499.9, 500.0, 1499.0, 1500.0, 3999.0, 4000.0, 8000.0, 11999.9, 12000.0, 20000.0])
    band = band_index(km)
    assert band.tolist() == np.searchsorted(np.asarray(BAND_EDGES_KM), km, side="right").tolist()
    assert band.tolist() == [0, 0, 1, 1, 2, 2, 3, 4, 4, 5, 5]


def test_a_table_with_some_ends_on_a_corridor_is_each_pair_on_its_own(world_sites: pd.DataFrame) -> None:
    """Only the pairs with an end on a regional corridor take the regional links: a mixed table equals pair by pair."""
    trips = default_round_trips()
    users = Endpoints.of(
        np.array([55.7558, 43.2389, 50.1155, 35.6895, 39.9042]),
        np.array([37.6173, 76.8897, 8.6842, 139.6917, 116.4074]),
        np.array(["RU", "KZ", "DE", "JP", "CN"]),
    )
    sites = world_sites.iloc[::7]
    points = Endpoints.of(sites["lat"].to_numpy(float), sites["lon"].to_numpy(float), sites["country_code"].to_numpy(str))
    on = trips._on_corridor(users)[:, None] | trips._on_corridor(points)[None, :]
    assert on.any() and not on.all()  # the mixed case
    table = trips.rtt_ms(users, points, PathType.ACCESS)
    for i in range(len(users)):
        for j in range(0, len(sites), 5):
            user = Endpoints.of(users.lat_deg[i], users.lon_deg[i], users.country_code[i])
            site = Endpoints.of(points.lat_deg[j], points.lon_deg[j], points.country_code[j])
            one = trips.rtt_ms(user, site, PathType.ACCESS)
            assert table.p50_ms[i, j] == one.p50_ms[0, 0] and table.p90_ms[i, j] == one.p90_ms[0, 0]
