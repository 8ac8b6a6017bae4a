"""Every bad catalog row gives a message naming the row and the field; the bundled catalog is sound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement._errors import InputError
from placement.world.catalog import load_catalog
from tests.conftest import CATALOG_HEADER, REPO, SMALL_CATALOG

GOOD_ROW = "ok,Ok,US,North America,10,10,5,50,1.2,1e7,false\n"


def problems_of(path: Path) -> list[str]:
    with pytest.raises(InputError) as info:
        load_catalog(path)
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize(
    ("row", "field", "rule"),
    [
        ("neg,Neg,US,North America,10,10,-5,50,1.2,1e7,false\n", "mw_available", ">= 0"),
        ("lat,Lat,US,North America,95,10,5,50,1.2,1e7,false\n", "lat", "between -90 and 90"),
        ("lon,Lon,US,North America,10,200,5,50,1.2,1e7,false\n", "lon", "between -180 and 180"),
        ("nan,Nan,US,North America,10,10,5,NaN,1.2,1e7,false\n", "power_price_usd_per_mwh", "missing"),
        ("txt,Txt,US,North America,10,10,5,cheap,1.2,1e7,false\n", "power_price_usd_per_mwh", "finite number"),
        ("inf,Inf,US,North America,10,10,inf,50,1.2,1e7,false\n", "mw_available", "finite number, got 'inf'"),
        ("ninf,Ninf,US,North America,10,10,5,50,1.2,-inf,false\n", "capex_usd_per_mw", "finite number, got '-inf'"),
        ("pue,Pue,US,North America,10,10,5,50,0.8,1e7,false\n", "pue", "between 1 and 3"),
        ("lck,Lck,US,North America,10,10,5,50,1.2,1e7,maybe\n", "locked", "true or false"),
        (",NoId,US,North America,10,10,5,50,1.2,1e7,false\n", "id", "empty"),
    ],
)
def test_bad_row_names_row_and_field(tmp_path: Path, row: str, field: str, rule: str) -> None:
    path = tmp_path / "sites.csv"
    path.write_text(CATALOG_HEADER + GOOD_ROW + row)
    problems = problems_of(path)
    assert len(problems) == 1, problems
    assert "row 2 (line 3)" in problems[0]
    assert f"field '{field}'" in problems[0]
    assert rule in problems[0]
    assert "Fix:" in problems[0]


def test_duplicate_id_names_both_rows(tmp_path: Path) -> None:
    path = tmp_path / "sites.csv"
    path.write_text(CATALOG_HEADER + GOOD_ROW + GOOD_ROW)
    (problem,) = problems_of(path)
    assert "row 2 (line 3)" in problem and "field 'id'" in problem and "first at row 1" in problem


def test_missing_column_is_named(tmp_path: Path) -> None:
    path = tmp_path / "sites.csv"
    path.write_text("id,name,lat,lon,power_price_usd_per_mwh,pue,capex_usd_per_mw\na,A,1,1,50,1.2,1e7\n")
    (problem,) = problems_of(path)
    assert "field 'mw_available'" in problem and "missing" in problem


@pytest.mark.parametrize("text", ["", "id,name,lat,lon,mw_available,power_price_usd_per_mwh,pue,capex_usd_per_mw\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "sites.csv"
    path.write_text(text)
    (problem,) = problems_of(path)
    assert "empty" in problem or "no sites" in problem


def test_all_problems_are_gathered(tmp_path: Path) -> None:
    path = tmp_path / "sites.csv"
    path.write_text(CATALOG_HEADER + "a,A,US,X,95,10,-1,NaN,1.2,1e7,false\nb,B,US,X,10,999,5,50,9,1e7,false\n")
    problems = problems_of(path)
    assert len(problems) == 5
    assert sum("row 1" in p for p in problems) == 3 and sum("row 2" in p for p in problems) == 2


def test_geojson_catalog_reads_like_csv(tmp_path: Path) -> None:
    csv_path = tmp_path / "sites.csv"
    csv_path.write_text(SMALL_CATALOG)
    table = load_catalog(csv_path)
    features = [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [row.lon, row.lat]},
            "properties": {
                k: getattr(row, k) for k in ("id", "name", "mw_available", "power_price_usd_per_mwh", "pue", "capex_usd_per_mw")
            },
        }
        for row in table.itertuples()
    ]
    path = tmp_path / "sites.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    from_geojson = load_catalog(path)
    assert from_geojson["id"].tolist() == table["id"].tolist()
    assert from_geojson["lat"].tolist() == table["lat"].tolist()


def test_geojson_feature_without_point(tmp_path: Path) -> None:
    path = tmp_path / "sites.geojson"
    feature = {"type": "Feature", "geometry": None, "properties": {"id": "a", "name": "A"}}
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [feature]}))
    problems = problems_of(path)
    assert any("feature 1" in p and "geometry" in p for p in problems)


def test_bundled_catalog_covers_every_inhabited_continent() -> None:
    sites = load_catalog(REPO / "data" / "sites" / "world_metros.csv")
    assert len(sites) >= 60
    assert set(sites["continent"]) >= {"North America", "South America", "Europe", "Africa", "Asia", "Oceania"}
    assert sites["source"].str.len().gt(0).all()


def test_byte_order_mark_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "sites.csv"
    path.write_bytes(("\ufeff" + SMALL_CATALOG).encode("utf-8"))
    assert load_catalog(path)["id"].tolist() == ["ashburn", "chicago", "frankfurt"]


@pytest.mark.parametrize("payload", [b"\x00\xff\xfe garbage \x81\x82", b'{"type": "Feature"}', b'id,name\n"unclosed'])
def test_hostile_files_give_input_errors(tmp_path: Path, payload: bytes) -> None:
    for suffix in (".csv", ".geojson"):
        path = tmp_path / f"sites{suffix}"
        path.write_bytes(payload)
        with pytest.raises(InputError):
            load_catalog(path)


def test_cli_never_shows_a_traceback_for_bad_cities(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from placement.cli import main
    from tests.conftest import write_scenario

    path = write_scenario(tmp_path, cities="\x00\x01 not a csv \x02")
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "cities.csv" in err
