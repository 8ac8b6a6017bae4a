"""Every GeoJSON of a results folder, read by an independent reader (GDAL's ogrinfo) and checked
against RFC 7946 in plain Python: FeatureCollection, no ``crs``, [lon, lat] in range with few
decimals, closed rings, counter-clockwise exteriors and clockwise holes, no segment that spans
more than 180 degrees of longitude."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import shapely

from placement.cli import main
from placement.outputs.catchments import catchment_frame, write_catchments
from placement.outputs.network_layer import links_frame, write_network
from placement.plan.record import Plan
from placement.plan.solve import run
from placement.scenario.load import load_scenario
from tests.conftest import write_scenario

MAX_DECIMALS = 7
EXPECTED = {"sites.geojson", "assignments.geojson", "populations.geojson", "catchments.geojson", "network.geojson"}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Plan]:
    folder = tmp_path_factory.mktemp("rfc7946")
    scenario = write_scenario(folder)
    out = folder / "out"
    assert main(["solve", str(scenario), "--out", str(out), "--quiet"]) == 0
    plan = run(load_scenario(scenario))
    if not (out / "catchments.geojson").exists():  # until outputs.py writes them itself
        write_catchments(catchment_frame(plan.results), out)
    if not (out / "network.geojson").exists():
        write_network(links_frame(plan.instance.latency.round_trips), out)
    return out, plan


# ----------------------------------------------------------------------------- the checker


def _decimals(value: Decimal | int) -> int:
    if isinstance(value, int):
        return 0
    exponent = value.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def _ring_area(ring: list[list[Any]]) -> float:
    """Shoelace signed area (positive: counter-clockwise)."""
    xy = np.array([[float(p[0]), float(p[1])] for p in ring])
    return 0.5 * float(np.sum(xy[:-1, 0] * xy[1:, 1] - xy[1:, 0] * xy[:-1, 1]))


def _check_positions(positions: list[list[Any]], where: str, problems: list[str]) -> None:
    for k, position in enumerate(positions):
        if not 2 <= len(position) <= 3:
            problems.append(f"{where}: position {k} has {len(position)} numbers")
            continue
        lon, lat = float(position[0]), float(position[1])
        if not (-180.0 <= lon <= 180.0 and -90.0 <= lat <= 90.0):
            problems.append(f"{where}: position {k} [{lon}, {lat}] is not [lon, lat] in range")
        if max(_decimals(position[0]), _decimals(position[1])) > MAX_DECIMALS:
            problems.append(f"{where}: position {k} has more than {MAX_DECIMALS} decimals")
    for k in range(len(positions) - 1):
        if abs(float(positions[k + 1][0]) - float(positions[k][0])) > 180.0:
            problems.append(f"{where}: segment {k} spans more than 180 degrees of longitude (antimeridian not split)")


def _check_polygon(rings: list[list[list[Any]]], where: str, problems: list[str]) -> None:
    for r, ring in enumerate(rings):
        label = f"{where} ring {r}"
        _check_positions(ring, label, problems)
        if len(ring) < 4 or [float(v) for v in ring[0]] != [float(v) for v in ring[-1]]:
            problems.append(f"{label}: not a closed ring of at least 4 positions")
            continue
        area = _ring_area(ring)
        if r == 0 and area <= 0:
            problems.append(f"{label}: exterior ring is not counter-clockwise")
        if r > 0 and area >= 0:
            problems.append(f"{label}: hole is not clockwise")


def _check_geometry(geometry: dict[str, Any] | None, where: str, problems: list[str]) -> None:
    if geometry is None:
        return
    kind, coords = geometry.get("type"), geometry.get("coordinates")
    if kind == "Point":
        _check_positions([coords], where, problems)
    elif kind in ("LineString", "MultiPoint"):
        _check_positions(coords, where, problems)
    elif kind == "MultiLineString":
        for k, line in enumerate(coords):
            _check_positions(line, f"{where} part {k}", problems)
    elif kind == "Polygon":
        _check_polygon(coords, where, problems)
    elif kind == "MultiPolygon":
        for k, polygon in enumerate(coords):
            _check_polygon(polygon, f"{where} part {k}", problems)
    elif kind == "GeometryCollection":
        for k, part in enumerate(geometry.get("geometries", [])):
            _check_geometry(part, f"{where} member {k}", problems)
    else:
        problems.append(f"{where}: unknown geometry type {kind!r}")


def rfc7946_problems(text: str) -> list[str]:
    """Every RFC 7946 rule a GeoJSON text breaks (empty: none)."""
    data = json.loads(text, parse_float=Decimal)
    problems = []
    if data.get("type") != "FeatureCollection":
        problems.append(f"top-level type is {data.get('type')!r}, not FeatureCollection")
    if "crs" in data:
        problems.append("has a 'crs' member (RFC 7946 removed it: coordinates are WGS84 lon/lat)")
    for k, feature in enumerate(data.get("features", [])):
        if feature.get("type") != "Feature":
            problems.append(f"feature {k}: type is {feature.get('type')!r}")
        _check_geometry(feature.get("geometry"), f"feature {k}", problems)
    return problems


# ----------------------------------------------------------------------------- tests


def test_results_folder_has_the_expected_geojson(results: tuple[Path, Plan]) -> None:
    out, _ = results
    assert EXPECTED <= {p.name for p in out.glob("*.geojson")}


def test_every_geojson_follows_rfc7946(results: tuple[Path, Plan]) -> None:
    out, _ = results
    problems = {p.name: rfc7946_problems(p.read_text(encoding="utf-8")) for p in sorted(out.glob("*.geojson"))}
    assert {name: found[:5] for name, found in problems.items() if found} == {}


def test_ogrinfo_reads_every_geojson(results: tuple[Path, Plan]) -> None:
    if shutil.which("ogrinfo") is None:
        pytest.skip("GDAL's ogrinfo is not on PATH (apt-get install gdal-bin); it is the independent GeoJSON reader")
    out, _ = results
    for path in sorted(out.glob("*.geojson")):
        done = subprocess.run(
            ["ogrinfo", "-ro", "-al", "-so", str(path)], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, f"{path.name}: {done.stderr}"
        assert "ERROR" not in done.stderr, f"{path.name}: {done.stderr}"
        count = re.search(r"Feature Count: (\d+)", done.stdout)
        assert count is not None, done.stdout
        assert int(count.group(1)) == len(json.loads(path.read_text(encoding="utf-8"))["features"]), path.name
        assert "WGS 84" in done.stdout, f"{path.name}: ogrinfo does not read it as WGS 84"


def test_checker_finds_each_broken_rule() -> None:
    clockwise = [[0, 0], [0, 1], [1, 1], [1, 0], [0, 0]]
    open_ring = [[0, 0], [1, 0], [1, 1], [0, 1]]
    cases = {
        "crs": {"type": "FeatureCollection", "crs": {"type": "name"}, "features": []},
        "not FeatureCollection": {"type": "Feature", "geometry": None, "properties": {}},
        "not [lon, lat]": {
            "type": "FeatureCollection",
            "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [45.0, 200.0]}}],
        },
        "decimals": {
            "type": "FeatureCollection",
            "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [1.123456789, 2.0]}}],
        },
        "counter-clockwise": {
            "type": "FeatureCollection",
            "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon", "coordinates": [clockwise]}}],
        },
        "closed ring": {
            "type": "FeatureCollection",
            "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon", "coordinates": [open_ring]}}],
        },
        "180 degrees": {
            "type": "FeatureCollection",
            "features": [
                {
                    "type": "Feature",
                    "properties": {},
                    "geometry": {"type": "LineString", "coordinates": [[179.0, 0.0], [-179.0, 0.0]]},
                }
            ],
        },
    }
    for expected, data in cases.items():
        problems = rfc7946_problems(json.dumps(data))
        assert any(expected in p for p in problems), (expected, problems)
    hole = [[0.2, 0.2], [0.8, 0.2], [0.8, 0.8], [0.2, 0.8], [0.2, 0.2]]  # counter-clockwise: wrong for a hole
    good = [[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]
    data = {
        "type": "FeatureCollection",
        "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon", "coordinates": [good, hole]}}],
    }
    assert any("hole is not clockwise" in p for p in rfc7946_problems(json.dumps(data)))
    data["features"][0]["geometry"]["coordinates"] = [good, hole[::-1]]
    assert rfc7946_problems(json.dumps(data)) == []


def test_catchments_partition_the_served_land(results: tuple[Path, Plan]) -> None:
    out, plan = results
    frame = catchment_frame(plan.results)
    mains = plan.populations["main_site_id"].fillna("")
    assert set(frame["site_id"]) == set(mains[mains != ""])
    assert set(frame["site_id"]) <= set(plan.sites.loc[plan.sites["open"], "site_id"])
    shapes = frame.geometry.to_numpy()
    for i in range(len(shapes)):
        for j in range(i + 1, len(shapes)):
            assert shapely.intersection(shapes[i], shapes[j]).area < 1e-6, (frame["site_id"][i], frame["site_id"][j])
    cities = plan.instance.populations.cities
    site_of_city = mains.to_numpy()[cities["population_index"].to_numpy()]
    by_site = dict(zip(frame["site_id"], shapes, strict=True))
    for lon, lat, site in zip(cities["lon"], cities["lat"], site_of_city, strict=True):
        if site:
            assert by_site[site].distance(shapely.Point(lon, lat)) < 0.1, (site, lon, lat)
    written = json.loads((out / "catchments.geojson").read_text(encoding="utf-8"))
    assert {f["properties"]["site_id"] for f in written["features"]} == set(frame["site_id"])
    for feature in written["features"]:
        properties = feature["properties"]
        assert {"name", "goodput_tok_s", "populations_served", "mw_used"} <= set(properties)
        assert properties["populations_served"] >= 1 and properties["mw_used"] > 0


def test_points_and_lines_written_here_read_back_as_gdal_writes_them(tmp_path: Path) -> None:
    """The column-by-column writer of points and lines and GDAL's writer give the same features."""
    import geopandas as gpd
    import pandas as pd

    from placement.outputs import geojson as geo

    table = pd.DataFrame(
        {
            "pop_lon": [179.5, 10.0, -170.0, 0.1234567],
            "pop_lat": [0.0, 1.0, -5.0, 45.0],
            "site_lon": [-179.5, 11.0, 175.0, 0.7654321],
            "site_lat": [1.0, 2.0, -7.0, 46.0],
            "goodput_tok_s": [1.5, float("nan"), float("inf"), 1e-9],
            "site": ["Zürich", None, 'a "quoted" name', "b"],
            "nodes": [1, 2, 3, 4],
            "open": [True, False, True, False],
        }
    )
    frame = geo.assignments_frame(table)
    ours, theirs = tmp_path / "ours.geojson", tmp_path / "theirs.geojson"
    geo.write_geojson(frame, ours)
    geo.null_nonfinite(frame.assign(goodput_tok_s=frame["goodput_tok_s"].round(6))).to_file(
        theirs, driver="GeoJSON", engine="pyogrio", RFC7946="YES", COORDINATE_PRECISION=5, WRITE_NAME="NO"
    )
    json.loads(ours.read_text(encoding="utf-8"))  # valid JSON
    a, b = gpd.read_file(ours), gpd.read_file(theirs)
    assert list(a.columns) == list(b.columns)
    for column in ("site", "nodes", "open"):
        assert a[column].tolist() == b[column].tolist()
    assert np.array_equal(a["goodput_tok_s"].isna(), b["goodput_tok_s"].isna())
    assert np.allclose(a["goodput_tok_s"].dropna(), b["goodput_tok_s"].dropna())
    assert a.geometry.geom_equals_exact(b.geometry, 1e-9).all()
    assert list(a.geom_type) == ["MultiLineString", "LineString", "MultiLineString", "LineString"]
    assert _problems_in(ours) == []


def _problems_in(path: Path) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    problems = []
    for k, feature in enumerate(data["features"]):
        geometry = feature["geometry"]
        lines = geometry["coordinates"] if geometry["type"] == "MultiLineString" else [geometry["coordinates"]]
        for line in lines:
            for lon, lat in line:
                if not (-180 <= lon <= 180 and -90 <= lat <= 90) or len(repr(lon).split(".")[-1]) > 5:
                    problems.append(f"feature {k}: {lon}, {lat}")
    return problems
