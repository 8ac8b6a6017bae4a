"""Inputs that cannot work are refused before anything is solved, with the path or key, the rule and the fix."""

from __future__ import annotations

import importlib
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from placement._errors import InfeasibleError, InputError
from placement.cli import main
from placement.instance.build import build_instance
from placement.outputs.writer import check_output_folder
from placement.plan.solve import solve_instance
from placement.scenario.load import load_scenario
from tests.conftest import CATALOG_HEADER, scenario_dict, write_scenario


def _never(*_: Any, **__: Any) -> Any:
    raise AssertionError("solved although the output folder cannot be written")


@pytest.fixture
def no_solving(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any solve fails the test: the check must come first."""
    # Modules that bind ``run`` by name are imported first: imported under the patch, they would keep ``_never``
    # and fail every later test that solves through them.
    importlib.import_module("placement.analyses.compare")
    importlib.import_module("placement.analyses.rule_price")
    importlib.import_module("placement.analyses.arrangement")
    monkeypatch.setattr("placement.plan.solve.run", _never)
    monkeypatch.setattr("placement.plan.solve.solve_instance", _never)
    monkeypatch.setattr("placement.sweep.run.run_sweep", _never)


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "internal failure" not in err and "Traceback" not in err
    return err


# ----------------------------------------------------------------------------- the output folder


@pytest.mark.parametrize("command", ["solve", "compare", "sweep"])
@pytest.mark.usefixtures("no_solving")
def test_out_below_a_regular_file_is_refused_before_solving(
    tmp_path: Path, small_scenario: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file, not a folder")
    out = blocker / "results"
    given = str(tmp_path / "sweep.yaml") if command == "sweep" else str(small_scenario)
    assert main([command, given, "--out", str(out), "--quiet"]) == 1
    err = _error(capsys)
    assert f"output folder {out}" in err
    assert f"it would be inside {blocker}, which is a file, not a folder" in err
    assert "Fix: choose another --out" in err
    assert blocker.read_text() == "a file, not a folder"


@pytest.mark.usefixtures("no_solving")
def test_out_that_is_a_file_is_refused_before_solving(
    tmp_path: Path, small_scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.write_text("precious")
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet"]) == 1
    err = _error(capsys)
    assert f"output folder {out}" in err and "it is a file, not a folder" in err and "Fix:" in err
    assert out.read_text() == "precious"


@pytest.mark.usefixtures("no_solving")
def test_foreign_folder_is_refused_before_solving(
    tmp_path: Path, small_scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.txt").write_text("keep me")
    assert main(["compare", str(small_scenario), "--out", str(out), "--quiet"]) == 1
    err = _error(capsys)
    assert (
        "is not a placement results folder (no summary.json or compare.csv or diff.json or failover_exposure.json or "
        "frontier.csv or discover.json or alternatives.csv)"
        in err
        and "Fix:" in err
    )
    assert (out / "thesis.txt").read_text() == "keep me"


def _unwritable_folder() -> Path:
    """A folder even root cannot create entries in (sysfs), or skip."""
    candidate = Path("/sys")
    try:
        Path(tempfile.mkdtemp(dir=candidate)).rmdir()
    except OSError:
        return candidate
    pytest.skip("no folder here refuses new entries to this user (needs Linux /sys); a read-only bind mount is not available")


@pytest.mark.usefixtures("no_solving")
def test_out_in_a_folder_that_cannot_be_written_is_refused_before_solving(
    small_scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _unwritable_folder()
    out = base / "placement-results"
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet"]) == 1
    err = _error(capsys)
    assert f"output folder {out}" in err and f"{base} cannot be written to" in err and "Fix: choose another --out" in err
    assert not out.exists()


def test_check_accepts_new_nested_and_old_results_folders(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b" / "out"
    assert check_output_folder(nested) == nested.resolve()
    assert not (tmp_path / "a").exists()  # checking creates nothing
    old = tmp_path / "old"
    old.mkdir()
    (old / "summary.json").write_text("{}")
    assert check_output_folder(old) == old.resolve()
    assert list(tmp_path.iterdir()) == [old]  # the probe leaves nothing behind
    assert [p.name for p in old.iterdir()] == ["summary.json"]
    with pytest.raises(InputError):
        check_output_folder(tmp_path)  # holds 'old': not a results folder itself
    assert check_output_folder(tmp_path, results_markers=None) == tmp_path.resolve()


# ----------------------------------------------------------------------------- demand filters


def test_countries_filter_matching_no_city_names_the_filter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_scenario(tmp_path, demand={"countries": ["XX"]})
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    err = _error(capsys)
    assert f"{path}, demand.countries: no city of cities.csv is in ['XX']" in err
    assert "Fix: use codes the cities file has (e.g. US, DE, FR), or null for all" in err


def test_min_population_above_every_city_names_the_filter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_scenario(tmp_path, demand={"min_population": 1_000_000_000})
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    err = _error(capsys)
    assert f"{path}, demand.min_population: no city has at least 1,000,000,000 people (the largest has 8,000,000)" in err
    assert "Fix: lower demand.min_population to 8,000,000 or less" in err


def test_both_filters_name_the_one_that_empties_the_set(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, demand={"countries": ["DE"], "min_population": 5_000_000})
    with pytest.raises(InputError) as caught:
        build_instance(load_scenario(path))
    [problem] = caught.value.problems
    assert problem.where == "demand.min_population" and "in ['DE']" in problem.rule and "3,600,000" in problem.rule


# ----------------------------------------------------------------------------- power


@pytest.mark.parametrize("policy", ["stop", "report"])
def test_zero_power_everywhere_is_diagnosed_as_power(tmp_path: Path, policy: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_scenario(tmp_path, sites={"catalog": "catalog.csv", "mw_multiplier": 0}, policy={"unreachable": policy})
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    err = _error(capsys)
    # 16.4 M people x 5 % x 10,000 tok/day / 86,400 s x peak 2 / (10,000 tok/s x 0.8) = 23.7 nodes of 10.2 kW at PUE 1.3
    assert "no power: the 3 candidate sites hold 0.0 MW in total (sites.mw_multiplier: 0)" in err
    assert "needs at least 0.315 MW (23.7 nodes of 10.2 kW at PUE 1.3" in err
    assert "Fix: raise sites.mw_multiplier" in err
    assert "objective" not in err
    assert not (tmp_path / "out").exists()


def test_zero_power_raises_before_any_latency_diagnosis(tmp_path: Path) -> None:
    instance = build_instance(load_scenario(write_scenario(tmp_path, sites={"catalog": "catalog.csv", "mw_multiplier": 0})))
    assert not instance.allowed.any_by_row().any()  # every pair barred: without the power check this read as latency
    with pytest.raises(InfeasibleError, match="no power"):
        solve_instance(instance)


def test_short_power_quotes_the_totals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_scenario(tmp_path, sites={"catalog": "catalog.csv", "mw_multiplier": 0.001})
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    err = _error(capsys)
    assert "(all sites hold 0.15 MW; the demand needs at least 0.315 MW)" in err and "New York" in err


# ----------------------------------------------------------------------------- non-finite numbers


def test_infinite_objective_is_refused_by_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_scenario(tmp_path)
    raw = scenario_dict()
    raw["classes"][0]["ttft_p99_ms"] = float("inf")
    path.write_text(yaml.safe_dump(raw))
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    err = _error(capsys)
    assert f"{path}, classes[0].ttft_p99_ms: Input should be a finite number (got inf)" in err
    assert "Fix: write a finite number (not .inf or .nan)" in err


def test_validate_reports_an_empty_demand_filter_and_a_broken_network(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "hubs.csv").write_text("hub_id,name,country_code,lat,lon,kind\nxx,X,US,95,0,metro\n")
    (tmp_path / "links.csv").write_text("a,b,kind,length_km,cables,source\n")
    path = write_scenario(tmp_path, demand={"countries": ["XX"]}, latency={"hubs": "hubs.csv", "links": "links.csv"})
    assert main(["validate", str(path)]) == 1
    err = _error(capsys)
    assert "demand.countries: no city of cities.csv is in ['XX']" in err
    assert f"{tmp_path / 'hubs.csv'}" in err and "'lat'" in err


def test_population_whose_only_sites_have_no_power_is_told_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = CATALOG_HEADER + (
        "ashburn,Ashburn,US,North America,39.04,-77.49,50,80,1.3,10000000,false\n"
        "chicago,Chicago,US,North America,41.88,-87.63,50,60,1.3,10000000,false\n"
        "frankfurt,Frankfurt,DE,Europe,50.11,8.68,0,120,1.3,10000000,false\n"
    )
    path = write_scenario(tmp_path, catalog=catalog)
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    err = _error(capsys)
    assert "Berlin (DE), class chat: the sites inside its budget (Frankfurt) have no power (0 MW available)" in err
    assert "Paris (FR), class chat: the sites inside its budget (Frankfurt) have no power" in err
