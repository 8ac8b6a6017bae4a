"""Installable: bundled files read through importlib.resources, the wheel's file list, init and scenarios."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from placement.analyses.validate import check_scenario_inputs, validate_file
from placement.cli import main
from placement.scenario.load import load_scenario
from placement.world.bundled import bundled_path, bundled_scenarios, copy_scenario, describe_scenarios, scenario_file

REPO = Path(__file__).resolve().parent.parent

#: Files a wheel must carry for a solve, a report and the maps to work with no checkout.
WHEEL_FILES = {
    "placement/py.typed",
    "placement/data/cities/geonames_cities15000.csv",
    "placement/data/demand/diurnal_profile.csv",
    "placement/data/geo/naturalearth_lowres_countries_110m.geojson",
    "placement/data/latency/azure_interregion_rtt_ms.csv",
    "placement/data/latency/azure_region_coordinates.json",
    "placement/data/network/calibrated.json",
    "placement/data/network/hubs.csv",
    "placement/data/network/links.csv",
    "placement/data/scenarios/default.yaml",
    "placement/data/scenarios/europe-small.yaml",
    "placement/data/scenarios/world_full.yaml",
    "placement/data/serving/accelerators.csv",
    "placement/data/serving/models.csv",
    "placement/data/sites/world_metros.csv",
    "placement/data/sites/world_sites.csv",
    "placement/data/sweeps/example.yaml",
    "placement/data/schema/scenario.schema.json",
    "placement/data/SOURCES.md",
    "placement/vendor/leaflet/leaflet.js",
    "placement/vendor/leaflet/leaflet.css",
    "placement/vendor/leaflet/LICENSE",
    "placement/vendor/leaflet/images/marker-icon.png",
}


def test_no_path_is_built_from_the_source_tree_or_the_working_directory() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in sorted((REPO / "placement").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"__file__|Path\.cwd\(|os\.getcwd\(|Path\(\s*[\"']data/", line)
    ]
    assert offenders == []


@pytest.mark.skipif(importlib.util.find_spec("build") is None, reason="the 'build' package is not installed (dev extra)")
@pytest.mark.slow
def test_wheel_carries_every_bundled_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "WARNING" not in done.stdout + done.stderr, "the wheel build warns: fix pyproject.toml"
    (wheel,) = tmp_path.glob("placement-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert WHEEL_FILES <= names, sorted(WHEEL_FILES - names)
    # Every file of data/ is in the wheel (only the Python marker files are not data).
    data = {f"placement/data/{p.relative_to(REPO / 'data').as_posix()}" for p in (REPO / "data").rglob("*") if p.is_file()}
    data = {name for name in data if "__pycache__" not in name}
    assert data <= names, sorted(data - names)
    # Every module of every subpackage is in the wheel: a package left out (placement.buildout once was) installs
    # a command that fails with ModuleNotFoundError on the scenarios that need it.
    modules = {f"placement/{p.relative_to(REPO / 'placement').as_posix()}" for p in (REPO / "placement").rglob("*.py")}
    assert {name.rsplit("/", 1)[0] for name in modules} >= {"placement/buildout", "placement/optimize", "placement/serving"}
    assert modules <= names, sorted(modules - names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "placement = placement.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.slow
def test_every_bundled_scenario_validates_as_bundled_and_as_copied(tmp_path: Path) -> None:
    scenarios = bundled_scenarios()
    assert {p.stem for p in scenarios} >= {"default", "europe-small"}
    # every input each reads, from where it is bundled and from a copy (each model is built once, by the next test)
    for path in scenarios:
        sites = check_scenario_inputs(load_scenario(path))
        assert len(sites) > 0, path
        written = copy_scenario(tmp_path / path.stem, path.stem)
        copied = load_scenario(written[0])
        assert len(check_scenario_inputs(copied)) == len(sites), path
        data_root = bundled_path().resolve()
        assert not copied.catalog_path.is_relative_to(data_root)
        assert not copied.cities_path.is_relative_to(data_root)


def test_scenarios_lists_name_description_and_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenarios"]) == 0
    out = capsys.readouterr().out
    for scenario in describe_scenarios():
        assert scenario.key in out and scenario.name in out and str(scenario.path) in out
        assert scenario.description and scenario.description[:40] in out


def test_init_copies_a_self_contained_scenario_that_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "plans"
    assert main(["init", str(dest)]) == 0
    out = capsys.readouterr().out
    assert f"placement solve {dest / 'scenario.yaml'}" in out
    text = (dest / "scenario.yaml").read_text()
    assert "catalog: sites/world_metros.csv" in text and "cities: cities/geonames_cities15000.csv" in text
    assert "# The bundled world scenario" in text  # comments kept for the planner
    assert (dest / "sites" / "world_metros.csv").read_bytes() == bundled_path("sites", "world_metros.csv").read_bytes()
    checked = validate_file(dest / "scenario.yaml")
    assert checked.loaded is not None
    assert checked.loaded.catalog_path == (dest / "sites" / "world_metros.csv").resolve()
    assert checked.loaded.cities_path.is_relative_to(dest.resolve())


def test_init_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "plans"
    dest.mkdir()
    (dest / "scenario.yaml").write_text("mine\n")
    assert main(["init", str(dest)]) == 1
    err = capsys.readouterr().err
    assert "refusing to overwrite" in err and "scenario.yaml" in err
    assert (dest / "scenario.yaml").read_text() == "mine\n"
    assert sorted(p.name for p in dest.iterdir()) == ["scenario.yaml"]  # nothing else written
    assert main(["init", str(tmp_path / "x"), "--scenario", "atlantis"]) == 1
    assert "europe-small" in capsys.readouterr().err
    (tmp_path / "a-file").write_text("x\n")
    assert main(["init", str(tmp_path / "a-file" / "plans")]) == 1
    err = capsys.readouterr().err
    assert "which is a file, not a folder" in err and "internal failure" not in err


def test_initialised_small_scenario_solves_from_another_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_scenario(tmp_path / "x", "europe-small")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["solve", "../x/scenario.yaml", "--quiet"]) == 0
    summary = json.loads((elsewhere / "out" / "summary.json").read_text())
    assert summary["sites_open"] >= 1 and summary["unserved_share"] < 0.01
    from placement.sweep.spec import prepare_sweep

    assert len(prepare_sweep(tmp_path / "x" / "sweep.yaml").cases) == 12  # the copied sweep's base is the copy


@pytest.mark.slow  # validates every bundled scenario, the full-resolution world included
def test_every_key_scenarios_lists_is_accepted_by_validate(capsys: pytest.CaptureFixture[str]) -> None:
    # each key names its bundled file; the command validates one end to end (every input, then its model built: the
    # bundled worlds' builds are their own tests', the largest, world_2k, alone 25 s)
    for described in describe_scenarios():
        assert scenario_file(described.key) == described.path, described.key
    assert main(["validate", "europe-small"]) == 0
    assert "ok: scenario europe-small" in capsys.readouterr().out


def test_an_unknown_key_is_refused_with_the_keys_listed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "no-such-scenario", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "no-such-scenario: file not found, and not the key of a bundled scenario" in err
    assert "buildout, default, europe-small" in err
    assert "Traceback" not in err


def test_a_file_wins_over_a_key_of_the_same_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "default").write_text("name: mine\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert scenario_file("default") == Path("default")
    assert scenario_file("europe-small") == bundled_path("scenarios", "europe-small.yaml")


def test_the_package_exports_the_verbs_the_notebooks_use() -> None:
    import placement

    assert sorted(placement.__all__) == sorted(placement._EXPORTS)
    for name in placement.__all__:
        assert callable(getattr(placement, name)), name
    with pytest.raises(AttributeError):
        _ = placement.no_such_verb  # type: ignore[attr-defined]
