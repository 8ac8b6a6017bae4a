"""The command line end to end: solve the bundled world, read the outputs back, validate inputs."""

from __future__ import annotations

import json
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest

from placement.cli import main
from tests.conftest import CATALOG_HEADER, write_scenario

SUMMARY_KEYS = {
    "status",
    "objective_usd_per_h",
    "cost_per_million_goodput_tokens_usd",
    "goodput_tok_s",
    "tokens_per_s_per_mw",
    "sites_open",
    "mw_used",
    "p99_ttft_ms_max",
    "p99_ttft_ms_mean",
    "unserved_share",
    "solver",
    "gap",
    "runtime_s",
}


@pytest.fixture(scope="module")
def world(world_results: Path) -> Path:
    return world_results


@pytest.mark.slow
def test_default_run_writes_every_output(world: Path) -> None:
    for name in ("summary.json", "sites.csv", "assignments.csv", "sites.geojson", "assignments.geojson", "map.png", "report.md"):
        assert (world / name).stat().st_size > 0, name
    summary = json.loads((world / "summary.json").read_text())
    assert SUMMARY_KEYS <= set(summary)
    assert summary["gap"] <= 0.005 + 1e-9
    # The default's answer does not depend on the machine: it ends on its gap, never on the time limit.
    assert summary["stopped_by"] == "gap"
    # The default plan's figures, pinned to what the bundled world gives today. Each tolerance is what
    # the solve may legitimately move, no more, so a real regression fails:
    # - what the inputs alone decide is exact: 74 candidate sites, 810 populations of 33,961 cities,
    #   5,389 feasible pairs (6,662 before issue 22's serving calibration lengthened node-side TTFT,
    #   6,331 before issue 23's p90 round trips became held-out quantiles of measured paths, 5,731 before
    #   issue 45's joint calibration and per-replica prompt queue, 5,389 before every GEMM padded to its tile, 5,379 before NVSwitch's in-network all-reduce);
    # - goodput and the unserved share come from the lexicographic shortfall (serve the most first, an
    #   LP optimum), not from the MILP's gap: rel 1e-5 on goodput, 0.01 point on the share (one more
    #   population out of reach moves it by about 0.1 point, 1/810 of the demand on average);
    # - cost, $/M, nodes and MW are the MILP's answer, which may stop anywhere inside the requested
    #   0.5 % gap (default.yaml solver.gap; today 0.07 % above its bound): rel 0.5 %, the gap itself;
    #   dropping a cost term, a serving model a few per cent off or a wrong PUE or power figure moves
    #   them by more;
    # - sites open: a site's fixed cost ($250/h) is 0.05 % of the objective, so plans inside the gap may
    #   differ by a few sites; the solve stops on its gap and is deterministic (HiGHS, one thread), so
    #   the count is pinned to what it opens today, one more or fewer.
    assert summary["sites_candidate"] == 74
    assert summary["populations"] == 810
    assert summary["cities"] == 33_961
    assert summary["feasible_pairs"] == 5_337  # 5,389 before the export rules bound every plan (the 910C serves no agent)
    assert summary["goodput_tok_s"] == pytest.approx(53_769_131.12, rel=1e-5)
    assert summary["unserved_share"] == pytest.approx(0.175542, abs=1e-4)
    assert summary["cost_per_million_goodput_tokens_usd"] == pytest.approx(4.8204, rel=0.005)
    assert summary["objective_usd_per_h"] == pytest.approx(933_073.3, rel=0.005)
    assert summary["nodes"] == pytest.approx(65_672, rel=0.005)
    assert summary["mw_used"] == pytest.approx(834.6, rel=0.005)
    assert abs(summary["sites_open"] - 31) <= 1


@pytest.mark.slow
def test_default_run_respects_every_constraint(world: Path) -> None:
    summary = json.loads((world / "summary.json").read_text())
    sites = pd.read_csv(world / "sites.csv")
    assignments = pd.read_csv(world / "assignments.csv")
    populations = pd.read_csv(world / "populations.csv")
    # Latency: every assignment inside its objective.
    assert (assignments["ttft_p99_ms"] <= assignments["ttft_objective_ms"] + 1e-6).all()
    components = assignments[
        ["network_ms", "queue_ms", "slot_wait_ms", "retrieval_ms", "prefill_ms", "safety_tokenization_ms", "first_decode_ms"]
    ]
    np.testing.assert_allclose(components.sum(axis=1), assignments["ttft_p99_ms"], rtol=1e-6)
    # Power: nodes x kW x PUE within MW available, zero when closed.
    assert (sites["mw_used"] <= sites["mw_available"] + 1e-9).all()
    assert (sites.loc[~sites["open"], "nodes"] == 0).all()
    # Capacity: goodput per site within nodes x the best per-node goodput of any class (batch, ~7,800 tok/s).
    best_per_node = max(c["goodput_tok_s_per_node"] for c in summary["classes"])
    assert (sites["goodput_tok_s"] <= sites["nodes"] * best_per_node * (1 + 1e-9) + 1e-6).all()
    # Goodput adds up; the cost report sums to the objective.
    assert assignments["goodput_tok_s"].sum() == pytest.approx(summary["goodput_tok_s"])
    assert sites["cost_usd_per_h"].sum() == pytest.approx(summary["objective_usd_per_h"])
    assert populations["served_tok_s"].sum() == pytest.approx(summary["goodput_tok_s"], rel=1e-6)
    served_share = populations["served_tok_s"].sum() / populations["demand_tok_s"].sum()
    assert 1 - served_share == pytest.approx(summary["unserved_share"], abs=1e-9)


@pytest.mark.slow
def test_geojson_reads_back_and_follows_rfc7946(world: Path) -> None:
    sites = gpd.read_file(world / "sites.geojson")
    assert len(sites) == len(pd.read_csv(world / "sites.csv"))
    assert set(sites.geom_type) == {"Point"}
    assignments = gpd.read_file(world / "assignments.geojson")
    assert set(assignments.geom_type) <= {"LineString", "MultiLineString"}
    for name in ("sites.geojson", "assignments.geojson", "populations.geojson"):
        doc = json.loads((world / name).read_text())
        assert doc["type"] == "FeatureCollection" and "crs" not in doc
        coords = np.array([c for f in doc["features"] for c in _points(f["geometry"])])
        assert (np.abs(coords[:, 0]) <= 180).all() and (np.abs(coords[:, 1]) <= 90).all()


def _points(geometry: dict) -> list[list[float]]:
    if geometry["type"] == "Point":
        return [geometry["coordinates"]]
    if geometry["type"] == "LineString":
        return geometry["coordinates"]
    return [p for line in geometry["coordinates"] for p in line]


def test_existing_non_results_folder_is_refused(tmp_path: Path, small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "thesis.txt").write_text("keep me")
    assert main(["solve", str(small_scenario), "--out", str(precious), "--quiet"]) == 1
    assert (precious / "thesis.txt").read_text() == "keep me"
    assert "not a placement results folder" in capsys.readouterr().err


def test_rerun_replaces_results_whole(tmp_path: Path, small_scenario: Path) -> None:
    out = tmp_path / "out"
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet"]) == 0
    (out / "stale.txt").write_text("from an older run")
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet", "--solver", "cbc"]) == 0
    assert not (out / "stale.txt").exists()
    assert json.loads((out / "summary.json").read_text())["solver"] == "cbc"


def test_unreachable_population_is_diagnosed_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cities = "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
    cities += "1,New York,US,NY,40.71,-74.01,8000000,America/New_York\n9,Honolulu,US,HI,21.31,-157.86,350000,Pacific/Honolulu\n"
    path = write_scenario(tmp_path, cities=cities)
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "Honolulu" in err and "nearest site Chicago" in err and "300 ms objective" in err
    assert not (tmp_path / "out").exists()


def test_unreachable_population_reported_when_policy_says_so(tmp_path: Path) -> None:
    cities = "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
    cities += "1,New York,US,NY,40.71,-74.01,8000000,America/New_York\n9,Honolulu,US,HI,21.31,-157.86,350000,Pacific/Honolulu\n"
    path = write_scenario(tmp_path, cities=cities, policy={"unreachable": "report"})
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["status"] == "partial"
    assert summary["unserved_share"] == pytest.approx(350_000 / 8_350_000)
    assert any("Honolulu" in note for note in summary["notes"])


def test_power_shortfall_is_diagnosed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # New York needs about 0.24 MW of facility power; its sites within 55 ms RTT hold 0.05 MW each.
    catalog = (
        CATALOG_HEADER
        + "ashburn,Ashburn,US,NA,39.04,-77.49,0.05,80,1.3,1e7,false\nchicago,Chicago,US,NA,41.88,-87.63,0.05,60,1.3,1e7,false\n"
    )
    cities = "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n1,New York,US,NY,40.71,-74.01,8000000,America/New_York\n"
    path = write_scenario(tmp_path, catalog=catalog, cities=cities)
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "New York" in err and "cannot be served" in err and "Ashburn" in err


def test_validate_exit_codes(tmp_path: Path, small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(small_scenario)]) == 0
    bad = tmp_path / "bad.csv"
    bad.write_text(CATALOG_HEADER + "a,A,US,NA,95,0,1,1,1.2,1,false\n")
    assert main(["validate", str(bad)]) == 1
    assert "row 1 (line 2), field 'lat'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["validate"])
    assert usage.value.code == 2


def test_validate_checks_what_a_solve_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chat = {
        "name": "chat",
        "share": 1.0,
        "ttft_p99_ms": 300,
        "itl_p99_ms": 50,
        "serving_ttft_budget_ms": 170,
        "retrieval_store_site": "atlantis",
    }
    path = write_scenario(
        tmp_path, classes=[chat], serving={"accelerator": "h900"}, sites={"catalog": "catalog.csv", "exclude": ["nowhere"]}
    )
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert "3 problems" in err
    assert "serving.accelerator" in err and "did you mean 'h200'" in err
    assert "sites.exclude" in err and "nowhere" in err
    assert "retrieval_store_site" in err and "atlantis" in err
