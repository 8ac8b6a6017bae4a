"""Greenfield candidates from the cities table: deterministic, spaced, priced like their nearest catalog site."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from placement.analyses.candidates import EARTH_RADIUS_KM, LEFT_OUT, greenfield_candidates, with_candidates
from placement.world.catalog import load_catalog
from placement.world.cities import load_cities
from placement.world.geodesy import unit_vectors
from tests.conftest import REPO, script_module

CATALOG = REPO / "data" / "sites" / "world_sites.csv"
CITIES = REPO / "data" / "cities" / "geonames_cities15000.csv"


def _km(a: pd.DataFrame, b: pd.DataFrame) -> np.ndarray:
    dots = (
        unit_vectors(a["lat"].to_numpy(float), a["lon"].to_numpy(float))
        @ unit_vectors(b["lat"].to_numpy(float), b["lon"].to_numpy(float)).T
    )
    return np.arccos(np.clip(dots, -1.0, 1.0)) * EARTH_RADIUS_KM


def test_candidates_are_the_largest_cities_spaced_apart_and_priced_like_their_neighbour() -> None:
    sites, cities = load_catalog(CATALOG), load_cities(CITIES)
    extra = greenfield_candidates(cities, sites, count=300, spacing_km=50.0, mw=30.0)
    assert len(extra) == 300 and extra["id"].is_unique and not extra["id"].isin(sites["id"]).any()
    # spaced: every candidate at least 50 km from every catalog site and every other candidate (a rounding's worth)
    assert _km(extra, sites).min() >= 50.0 - 0.05
    apart = _km(extra, extra)
    np.fill_diagonal(apart, np.inf)
    assert apart.min() >= 50.0 - 0.05
    # the largest such cities, in order of population
    population = cities.set_index("city_id")["population"]
    sizes = population.loc[extra["id"].str.removeprefix("gf-")].to_numpy()
    assert (np.diff(sizes) <= 0).all()
    # none in a sanctioned country; a larger city left out is within 50 km of a site or of a larger candidate
    assert not extra["country_code"].isin(LEFT_OUT).any()
    left = cities[
        (cities["population"] > sizes.min())
        & ~cities["country_code"].isin(LEFT_OUT)
        & ~cities["city_id"].isin(population.loc[extra["id"].str.removeprefix("gf-")].index)
    ]
    near = np.minimum(_km(left, sites).min(axis=1), _km(left, extra).min(axis=1))
    assert (near < 50.0 + 0.05).all()
    # each takes its nearest catalog site's prices, and says so in its source
    nearest = sites.iloc[np.argmin(_km(extra, sites), axis=1)]
    for column in ("power_price_usd_per_mwh", "pue", "capex_usd_per_mw"):
        assert (extra[column].to_numpy() == nearest[column].to_numpy()).all()
    assert (extra["mw_available"] == 30.0).all() and (extra["network"] == "transit").all()
    assert all(f"nearest catalog site {s}" in src for s, src in zip(nearest["id"], extra["source"], strict=True))
    # the same inputs give the same candidates
    assert greenfield_candidates(cities, sites, count=300).equals(extra)


def test_with_candidates_keeps_the_catalog_and_reads_back(tmp_path: Path) -> None:
    sites, cities = load_catalog(CATALOG), load_cities(CITIES)
    grown = with_candidates(cities, sites, total=len(sites) + 20)
    assert len(grown) == len(sites) + 20 and grown.iloc[: len(sites)]["id"].tolist() == sites["id"].tolist()
    assert with_candidates(cities, sites, total=10).equals(sites), "a catalog as large as asked is kept whole"


def test_the_bundled_2k_catalog_is_what_the_script_writes() -> None:
    """data/sites/world_sites_2k.csv is scripts/build_candidate_sites.py's output (the catalog rows as written)."""
    module = script_module("build_candidate_sites")
    built = module.build(2000)
    bundled = pd.read_csv(REPO / "data" / "sites" / "world_sites_2k.csv", dtype=str, keep_default_na=False)
    assert built.to_csv(index=False, lineterminator="\n") == bundled.to_csv(index=False, lineterminator="\n")
    catalog = load_catalog(REPO / "data" / "sites" / "world_sites_2k.csv")
    assert len(catalog) == 2000 and catalog["id"].is_unique
