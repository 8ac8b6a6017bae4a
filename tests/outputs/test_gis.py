"""``plan.gpkg`` and ``plan.qgz`` for GIS teams: the layers and their styles, read back; and a real QGIS round trip."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pyogrio
import pytest

from placement.cli import main
from tests.conftest import REPO

QGIS_PYTHON = "/usr/bin/python3"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gis") / "out"
    assert main(["solve", str(REPO / "data" / "scenarios" / "europe-small.yaml"), "--out", str(out), "--quiet"]) == 0
    return out


def _layers(folder: Path) -> dict[str, str | None]:
    return {str(name): geometry for name, geometry in pyogrio.list_layers(folder / "plan.gpkg")}


def test_the_geopackage_holds_every_layer_of_the_plan(results: Path) -> None:
    layers = _layers(results)
    assert list(layers) == ["countries", "catchments", "network", "assignments", "populations", "sites", "layer_styles"]
    assert layers["sites"] == "Point" and layers["assignments"] == "LineString" and layers["layer_styles"] is None
    sites = pyogrio.read_dataframe(results / "plan.gpkg", layer="sites")
    written = pyogrio.read_dataframe(results / "sites.geojson")
    assert len(sites) == len(written) and set(sites["site_id"]) == set(written["site_id"])
    assert sites.crs.to_epsg() == 4326
    assert (sites.geometry.x.round(4) == written.geometry.x.round(4)).all()
    for name, csv_name in (("assignments", "assignments.csv"), ("populations", "populations.csv")):
        rows = len((results / csv_name).read_text(encoding="utf-8").splitlines()) - 1
        assert len(pyogrio.read_dataframe(results / "plan.gpkg", layer=name, read_geometry=False)) == rows


def test_each_layer_has_its_qgis_style_in_layer_styles(results: Path) -> None:
    with sqlite3.connect(results / "plan.gpkg") as db:
        styles = dict(db.execute("SELECT f_table_name, styleQML FROM layer_styles WHERE useAsDefault").fetchall())
        registered = db.execute("SELECT data_type FROM gpkg_contents WHERE table_name = 'layer_styles'").fetchone()
    assert registered == ("attributes",)
    assert set(styles) == set(_layers(results)) - {"layer_styles"}
    for name, qml in styles.items():
        root = ET.fromstring(qml.split(">", 1)[1])  # past the DOCTYPE
        renderer = root.find("renderer-v2")
        assert renderer is not None and renderer.get("type") == "RuleRenderer", name
        rules = renderer.findall("rules/rule")
        symbols = renderer.findall("symbols/symbol")
        assert rules and len(rules) == len(symbols), name
        assert all(rule.get("label") for rule in rules)
    sites = ET.fromstring(styles["sites"].split(">", 1)[1])
    labels = [rule.get("label") for rule in sites.findall("renderer-v2/rules/rule")]
    assert labels[0] == "candidate site, not opened" and sum("per million goodput tokens" in str(x) for x in labels) == 6
    # map.png's colour scale: viridis reversed, cheapest (lowest $/M) class in yellow-green, dearest in purple
    colours = [s.find("layer/prop[@k='color']").get("v") for s in sites.findall("renderer-v2/symbols/symbol")[1:7]]  # type: ignore[union-attr]
    first, last = (tuple(int(c) for c in str(colour).split(",")[:3]) for colour in (colours[0], colours[-1]))
    assert first[1] > first[2] and last[2] > last[1]  # green over blue, then blue over green
    # what map.png leaves off its world map starts unticked: the deadline class's lines and the network's links
    lines = ET.fromstring(styles["assignments"].split(">", 1)[1]).findall("renderer-v2/rules/rule")
    unticked = [rule.get("label") for rule in lines if rule.get("checkstate") == "0"]
    assert unticked == ["population -> site, class batch (deadline in hours)"]
    links = ET.fromstring(styles["network"].split(">", 1)[1]).findall("renderer-v2/rules/rule")
    assert all(rule.get("checkstate") == "0" for rule in links)


def test_the_qgis_project_opens_the_geopackage_layers_by_relative_path(results: Path) -> None:
    with zipfile.ZipFile(results / "plan.qgz") as archive:
        assert archive.namelist() == ["plan.qgs"]
        text = archive.read("plan.qgs").decode("utf-8")
    root = ET.fromstring(text.split(">", 1)[1])
    sources = [e.text for e in root.findall("projectlayers/maplayer/datasource")]
    assert sources == [f"./plan.gpkg|layername={name}" for name in list(_layers(results))[:-1]]
    tree = [e.get("name") for e in root.findall("layer-tree-group/layer-tree-layer")]
    assert tree[0] == "sites" and tree[-1] == "countries"  # drawn top first, as map.png stacks them
    assert root.find("properties/Paths/Absolute").text == "false"  # type: ignore[union-attr]


def _qgis_available() -> str | None:
    """Why the QGIS round trip cannot run here (None: it can)."""
    if not Path(QGIS_PYTHON).exists():
        return f"{QGIS_PYTHON} is missing"
    probe = subprocess.run([QGIS_PYTHON, "-c", "import qgis.core, osgeo.ogr"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return "QGIS's Python bindings are not installed (apt-get install python3-qgis qgis-providers; .ci/run does)"
    return None


@pytest.mark.slow
def test_a_real_qgis_opens_the_project_styled_and_renders_it(results: Path, tmp_path: Path) -> None:
    why = _qgis_available()
    if why is not None:
        pytest.skip(why)
    png = tmp_path / "render.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_RUNTIME_DIR": str(tmp_path)}
    run = subprocess.run(
        [QGIS_PYTHON, str(REPO / "scripts" / "qgis_check.py"), str(results), "--png", str(png)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    found = json.loads(run.stdout)
    assert found["project_read"]
    names = [layer["name"] for layer in found["layers"]]
    assert names == ["sites", "populations", "assignments", "network", "catchments", "countries"]
    for layer in found["layers"]:
        assert layer["valid"] and layer["features"] > 0, layer
        assert layer["renderer"] == "RuleRenderer" and layer["gpkg_style_renderer"] == "RuleRenderer", layer
    sites = next(layer for layer in found["layers"] if layer["name"] == "sites")
    assert "candidate site, not opened" in sites["legend"] and len(sites["legend"]) == 8
    assert set(found["gdal_layers"]) == set(_layers(results))
    assert found["png_drawn_share"] > 0.05 and png.stat().st_size > 20_000
    if shutil.which("file"):
        assert "PNG image" in subprocess.run(["file", str(png)], capture_output=True, text=True, check=False).stdout
