"""The 263-site catalog and the full-resolution world: sound rows, sources, places and an instance that builds."""

from __future__ import annotations

import csv
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import yaml
from shapely.geometry import Point

from placement.analyses.validate import check_scenario_inputs, validate_file
from placement.scenario.load import load_scenario
from placement.world.catalog import load_catalog
from tests.conftest import REPO

SITES = REPO / "data" / "sites"
WORLD_SITES = SITES / "world_sites.csv"
WORLD_FULL = REPO / "data" / "scenarios" / "world_full.yaml"
KINDS = {"cloud-metro", "cloud-region", "colo", "greenfield"}

# Natural Earth 110m spells these countries differently from the catalog.
NE_NAMES = {
    "United States": "United States of America",
    "Ivory Coast": "Côte d'Ivoire",
    "DR Congo": "Dem. Rep. Congo",
    "Dominican Republic": "Dominican Rep.",
}


@pytest.fixture(scope="module")
def sites() -> pd.DataFrame:
    return load_catalog(WORLD_SITES)


def kind_of(source: str) -> str:
    return source.split(";")[0].removeprefix("kind: ")


def test_catalog_loads_with_unique_ids_and_enough_sites(sites: pd.DataFrame) -> None:
    assert len(sites) >= 250
    assert sites["id"].is_unique
    assert set(sites["country_code"].str.len()) == {2}


def test_every_row_says_its_kind_and_where_each_figure_comes_from(sites: pd.DataFrame) -> None:
    for row in sites.itertuples():
        assert kind_of(row.source) in KINDS, row.id
        for part in ("price: ", "mw: ", "pue: estimate climate ", "capex: "):
            assert part in row.source, (row.id, part)
        # the country's figure, or in the US the state's (EPA eGRID2023)
        carbon = "carbon: EPA eGRID2023 " if row.country_code == "US" else "carbon: codecarbon "
        assert carbon in row.source, (row.id, carbon)
    kinds = sites["source"].map(kind_of).value_counts()
    assert kinds["cloud-metro"] == 74 and kinds["colo"] >= 100 and kinds["greenfield"] >= 20


def test_the_default_catalog_is_the_metro_rows_unchanged(sites: pd.DataFrame) -> None:
    metros = load_catalog(SITES / "world_metros.csv").set_index("id")
    same = sites.set_index("id").loc[metros.index]
    for column in metros.columns:
        if column != "source":
            pd.testing.assert_series_equal(same[column], metros[column], check_names=False)
    assert (same["source"] == "kind: cloud-metro; " + metros["source"]).all()


def test_cited_megawatts_are_the_announced_figures(sites: pd.DataFrame) -> None:
    by_id = sites.set_index("id")
    announced = {"abilene": 1200, "new-carlisle": 2200, "narvik": 230, "visakhapatnam": 1000, "olkaria": 100}
    for site, mw in announced.items():
        assert by_id.loc[site, "mw_available"] == mw
        assert "mw: estimate" not in by_id.loc[site, "source"]


def nearest_city(cities: pd.DataFrame, lat: float, lon: float) -> tuple[str, float]:
    a, b = np.radians(lat), np.radians(lon)
    la, lo = np.radians(cities["latitude"].to_numpy()), np.radians(cities["longitude"].to_numpy())
    h = np.sin((la - a) / 2) ** 2 + np.cos(a) * np.cos(la) * np.sin((lo - b) / 2) ** 2
    km = 2 * 6371.0 * np.arcsin(np.sqrt(h))
    k = int(np.argmin(km))
    return str(cities["countrycode"].iloc[k]), float(km[k])


def test_every_site_lies_in_its_country(sites: pd.DataFrame) -> None:
    cities = pd.read_csv(REPO / "data" / "cities" / "geonames_cities15000.csv", keep_default_na=False)
    countries = gpd.read_file(REPO / "data" / "geo" / "naturalearth_lowres_countries_110m.geojson").set_index("name")
    wrong = []
    for row in sites.itertuples():
        code, km = nearest_city(cities, row.lat, row.lon)
        if code != row.country_code or km > 100:
            wrong.append(f"{row.id}: nearest city is in {code}, {km:.0f} km")
        name = NE_NAMES.get(row.country, row.country)
        # 110m coastlines drop small islands (Batam, Funen): one degree of slack.
        if name in countries.index and not countries.loc[name, "geometry"].buffer(1.0).contains(Point(row.lon, row.lat)):
            wrong.append(f"{row.id}: outside {name}")
    assert wrong == []


def test_known_places_are_where_they_are(sites: pd.DataFrame) -> None:
    by_id = sites.set_index("id")
    for site, lat, lon in [
        ("lagos", 6.45, 3.39),
        ("bogota", 4.61, -74.08),
        ("qingyang", 35.71, 107.64),
        ("narvik", 68.44, 17.43),
    ]:
        assert by_id.loc[site, ["lat", "lon"]].tolist() == pytest.approx([lat, lon], abs=0.02)


def test_additions_and_prices_are_consistent() -> None:
    with (SITES / "power_prices.csv").open(encoding="utf-8") as fh:
        prices = {r["area"]: r for r in csv.DictReader(fh)}
    with (SITES / "site_additions.csv").open(encoding="utf-8") as fh:
        additions = list(csv.DictReader(fh))
    assert all(r["source"] for r in prices.values())
    assert {a["price_area"] for a in additions} <= set(prices)
    assert all(a["mw_source"] for a in additions if a["mw"].isdigit())


def test_china_has_the_national_computing_hubs(sites: pd.DataFrame) -> None:
    chinese = set(sites.loc[sites["country_code"] == "CN", "id"])
    assert {"zhangjiakou", "hohhot", "guian", "qingyang", "shaoguan", "wuhu", "chengdu", "chongqing", "ningxia"} <= chinese


@pytest.mark.slow
def test_world_full_is_the_default_at_full_resolution_on_the_larger_catalog() -> None:
    full = yaml.safe_load(WORLD_FULL.read_text(encoding="utf-8"))
    default = yaml.safe_load((REPO / "data" / "scenarios" / "default.yaml").read_text(encoding="utf-8"))
    assert full["demand"]["clusters"] is None
    assert full["sites"]["catalog"] == "../sites/world_sites.csv"
    assert full["time"]["slices"] == 24 and len(full["classes"]) == 3
    for key in ("classes", "serving", "latency", "economics", "residency", "time", "policy"):
        assert full[key] == default[key], key
    # the solver section differs only in the gap it certifies: the 1 % against the full model
    assert {**full["solver"], "gap": default["solver"]["gap"]} == default["solver"] and full["solver"]["gap"] == 0.01
    assert {k: v for k, v in full["demand"].items() if k != "clusters"} == {
        k: v for k, v in default["demand"].items() if k != "clusters"
    }
    sites = check_scenario_inputs(load_scenario(WORLD_FULL))  # every input; building it is the next test's
    assert len(sites) >= 250


@pytest.mark.slow
def test_world_full_builds(tmp_path: Path) -> None:
    """Validate, which builds it as solve does (about 6 s and 0.5 GB on 2 cores); solving it is not a unit test."""
    checked = validate_file(WORLD_FULL)
    instance = checked.instance
    assert instance is not None
    assert len(instance.populations.table) >= 30_000 and len(instance.sites) >= 250
    allowed = instance.allowed.dense()
    assert allowed.sum() > 100_000
    chinese_site = instance.sites["country_code"].to_numpy(str) == "CN"
    chinese_commodity = instance.populations.table["country_code"].to_numpy(str)[instance.commodity_population] == "CN"
    assert not allowed[chinese_commodity][:, ~chinese_site].any()
    assert not allowed[~chinese_commodity][:, chinese_site].any()
    # China's sites run the Ascend 910C under the export rules: every class it serves is in reach, agent (25 ms ITL) not
    assert instance.part_serves is not None
    served_there = instance.part_serves[:, chinese_site].any(axis=1)[instance.commodity_class]
    assert allowed[chinese_commodity & served_there].any(axis=1).mean() > 0.99
    assert not allowed[chinese_commodity & ~served_there].any() and (chinese_commodity & ~served_there).any()


def test_us_sites_carry_their_state_grid_not_the_national_mean(sites: pd.DataFrame) -> None:
    # eGRID2023 by state (lb/MWh x 0.45359): Illinois' nuclear-heavy grid is far below the US mean of 369.5 g/kWh
    # (codecarbon), Wyoming's coal-heavy one far above; Texas sites share ERCOT's state figure.
    us = sites[sites["country_code"] == "US"].set_index("id")["carbon_intensity_g_per_kwh"]
    assert us["chicago"] < 250 < 369.5 < 700 < us["cheyenne"]
    assert us["dallas"] == us["houston"] == us["abilene"]
    assert us.nunique() > 15
