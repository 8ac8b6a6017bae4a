"""The latency model never beats light in fiber, and lands near the seed's facts."""

from __future__ import annotations

import numpy as np
import pytest

from placement.network.great_circle import (
    FIBER_KM_PER_MS,
    LatencyParams,
    path_rtt_ms,
    physics_bound_rtt_ms,
    population_site_rtt_ms,
)
from placement.world.catalog import load_catalog
from placement.world.cities import load_cities
from placement.world.geodesy import great_circle_km, pairwise_km
from tests.conftest import REPO

CHICAGO, ASHBURN, FRANKFURT = (41.88, -87.63), (39.04, -77.49), (50.11, 8.68)


def test_fiber_speed() -> None:
    assert FIBER_KM_PER_MS == pytest.approx(204.2, abs=0.05)  # c / 1.468
    # About 1 ms of round trip per 100 km.
    assert float(physics_bound_rtt_ms(100.0)) == pytest.approx(0.98, abs=0.01)


def test_great_circle_known_distance() -> None:
    # Chicago to Frankfurt is about 6,970 km.
    assert float(great_circle_km(*CHICAGO, *FRANKFURT)) == pytest.approx(6970, rel=0.01)
    assert float(great_circle_km(0, 179.5, 0, -179.5)) == pytest.approx(111.2, rel=0.01)


def test_every_rtt_respects_the_physics_bound() -> None:
    sites = load_catalog(REPO / "data" / "sites" / "world_metros.csv")
    cities = load_cities(REPO / "data" / "cities" / "geonames_cities15000.csv", min_population=100_000)
    params = LatencyParams(route_factor=1.0, fixed_ms=0.0, access_ms=0.0)
    rtt = population_site_rtt_ms(cities["lat"], cities["lon"], sites["lat"], sites["lon"], params)
    bound = 2 * pairwise_km(cities["lat"], cities["lon"], sites["lat"], sites["lon"]) / (299_792.458 / 1.468) * 1000
    assert (rtt >= bound - 1e-9).all()


def test_seed_facts_first_version() -> None:
    params = LatencyParams()
    chicago_ashburn = float(path_rtt_ms(great_circle_km(*CHICAGO, *ASHBURN), params))
    chicago_frankfurt = float(path_rtt_ms(great_circle_km(*CHICAGO, *FRANKFURT), params))
    assert 10 <= chicago_ashburn <= 25  # seed: about 20 ms
    assert 85 <= chicago_frankfurt <= 110  # seed: 90 to 100 ms


def test_route_factor_below_one_cannot_beat_light() -> None:
    d = np.array([10.0, 1000.0, 10000.0])
    assert (path_rtt_ms(d, LatencyParams(route_factor=0.5, fixed_ms=0.0)) >= physics_bound_rtt_ms(d)).all()
