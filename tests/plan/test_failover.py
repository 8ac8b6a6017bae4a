"""Failover written down: the tables of an N+1 plan, its summary figures, and the outside check of the files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from placement.cli import main
from tests.conftest import nested_mismatch, script_module, write_scenario

ROOT = Path(__file__).resolve().parents[2]


def _checker() -> ModuleType:
    return script_module("check_failover")


@pytest.fixture(scope="module")
def n_plus_one_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # New York and Chicago reach Ashburn and Chicago; Berlin and Paris reach Frankfurt only (unprotectable).
    folder = tmp_path_factory.mktemp("n1")
    scenario = write_scenario(folder, policy={"unreachable": "report"}, fault_tolerance={"n_plus_one": True})
    assert main(["solve", str(scenario), "--out", str(folder / "out"), "--quiet"]) == 0
    return folder / "out"


def test_every_loss_is_rerouted_in_full_and_the_outside_check_agrees(n_plus_one_folder: Path) -> None:
    scenarios = pd.read_csv(n_plus_one_folder / "failover_scenarios.csv", keep_default_na=False).set_index("failed")
    # The cheapest protected plan serves New York and Chicago from Chicago and keeps Ashburn as its standby:
    # Ashburn serves nothing, so only the losses of Chicago and Frankfurt move anything.
    assert sorted(scenarios.index) == ["chicago", "frankfurt"]
    # Frankfurt serves only Berlin and Paris, which have no second site: its loss moves nothing.
    assert scenarios.loc["frankfurt", "moved_tok_s"] == 0
    assert scenarios.loc["frankfurt", "unprotected_tok_s"] == pytest.approx(scenarios.loc["frankfurt", "served_tok_s"])
    for site in ("chicago",):
        assert scenarios.loc[site, "unprotected_tok_s"] == pytest.approx(0.0, abs=1e-6)
        assert scenarios.loc[site, "moved_tok_s"] == pytest.approx(scenarios.loc[site, "served_tok_s"])
    rows = pd.read_csv(n_plus_one_folder / "failover.csv", keep_default_na=False)
    assert set(rows["population"]) <= {"New York", "Chicago"}
    assert (rows["serving_site_id"] != rows["failed"]).all()
    totals = rows.groupby(["failed", "population_id", "class", "slice"]).agg(
        g=("goodput_tok_s", "sum"), d=("demand_tok_s", "first")
    )
    assert (totals["g"] - totals["d"]).abs().max() < 1e-6 * totals["d"].max()
    sites = pd.read_csv(n_plus_one_folder / "failover_sites.csv")
    assert set(sites["site_id"]) == {"ashburn"}
    assert (sites["nodes_needed"] <= sites["nodes"]).all() and (sites["nodes_needed"] > 0).any()
    assert _checker().check(n_plus_one_folder) == []


def test_the_outside_check_catches_a_site_without_the_nodes_it_needs(n_plus_one_folder: Path, tmp_path: Path) -> None:
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(n_plus_one_folder, broken)
    sites = pd.read_csv(broken / "failover_sites.csv")
    sites.loc[0, "nodes"] = sites.loc[0, "nodes_needed"] - 1
    sites.to_csv(broken / "failover_sites.csv", index=False)
    rows = pd.read_csv(broken / "failover.csv")
    rows.loc[0, "goodput_tok_s"] = rows.loc[0, "goodput_tok_s"] * 0.5 + 1.0
    rows.to_csv(broken / "failover.csv", index=False)
    problems = _checker().check(broken)
    assert any("need more nodes than the site has" in p for p in problems)
    assert any("not re-routed in full" in p for p in problems)


def test_summary_carries_the_protected_share_and_the_cost_of_24x7(n_plus_one_folder: Path) -> None:
    summary = json.loads((n_plus_one_folder / "summary.json").read_text())
    assignments = pd.read_csv(n_plus_one_folder / "assignments.csv", keep_default_na=False)
    served = assignments["goodput_tok_s"].sum()
    single = assignments[assignments["population"].isin(["Berlin", "Paris"])]["goodput_tok_s"].sum()
    assert summary["unprotectable_share"] == pytest.approx(single / served)
    assert summary["n_plus_one_protected_share"] == pytest.approx(1 - single / served)
    assert summary["n_plus_one_unprotected_share"] == pytest.approx(0.0, abs=1e-9)
    cost = summary["n_plus_one_cost"]
    assert cost["usd_per_h_with"] == pytest.approx(summary["objective_usd_per_h"])
    assert cost["usd_per_h_with"] > cost["usd_per_h_without"]
    assert cost["extra_nodes"] > 0 and cost["extra_mw"] > 0
    assert set(cost["classes"]) == {c["class"] for c in summary["classes"]}
    for figures in cost["classes"].values():
        if figures["usd_per_m_with"] is not None:
            assert figures["usd_per_m_with"] >= figures["usd_per_m_without"] - 1e-9


def test_a_plan_without_n_plus_one_writes_no_failover_files(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, policy={"unreachable": "report"})
    assert main(["solve", str(scenario), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    assert not list((tmp_path / "out").glob("failover*.csv"))
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["n_plus_one_protected_share"] is None and summary["n_plus_one_cost"] is None


@pytest.mark.slow
def test_world_24x7_is_protected_costs_more_than_the_default_and_checks_from_its_files(
    world_results: Path, tmp_path: Path
) -> None:
    out = tmp_path / "w24"
    assert main(["solve", str(ROOT / "data" / "scenarios" / "world-24x7.yaml"), "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    default = json.loads((world_results / "summary.json").read_text())
    assert summary["n_plus_one_applied"] is True
    assert summary["objective_usd_per_h"] > default["objective_usd_per_h"]
    assert (out / "sites.csv").read_bytes() != (world_results / "sites.csv").read_bytes()
    assert summary["n_plus_one_protected_share"] > 0.9
    assert summary["n_plus_one_protected_share"] + summary["unprotectable_share"] == pytest.approx(1.0, abs=1e-6)
    assert _checker().check(out) == []
    # GIS teams get the failover as a layer of plan.gpkg: each site that takes load when another fails
    import pyogrio

    layers = dict(pyogrio.list_layers(out / "plan.gpkg"))
    assert layers["failover_sites"] == "Point"
    taken = pyogrio.read_dataframe(out / "plan.gpkg", layer="failover_sites")
    failover_sites = pd.read_csv(out / "failover_sites.csv")
    assert set(taken["site_id"]) == set(failover_sites["site_id"].astype(str))
    assert taken["moved_in_tok_s_max"].max() == pytest.approx(failover_sites["moved_in_tok_s"].max())


def test_the_guides_n_plus_one_table_is_regenerated_from_the_folder(n_plus_one_folder: Path, tmp_path: Path) -> None:
    """scripts/n_plus_one_table.py: one row per N+1 folder, its figures from summary.json; a plain plan refused."""
    script = script_module("n_plus_one_table")
    summary = json.loads((n_plus_one_folder / "summary.json").read_text())
    cost = summary["n_plus_one_cost"]
    lines = script.table([n_plus_one_folder]).splitlines()
    assert len(lines) == 3, "the header, its rule and the folder's row"
    row = lines[2]
    assert f"${cost['usd_per_m_without']:.3f}/M | ${cost['usd_per_m_with']:.3f}/M: {summary['sites_open']} sites" in row
    assert f"+{(cost['usd_per_m_with'] / cost['usd_per_m_without'] - 1) * 100:.1f} % $/M" in row
    assert row.endswith(f"| {summary['n_plus_one_protected_share'] * 100:.1f} % |")
    plain = tmp_path / "plain"
    assert main(["solve", str(write_scenario(tmp_path)), "--out", str(plain), "--quiet", "--no-maps"]) == 0
    assert script.main([str(plain)]) == 2, "a plan without N+1 has no such row"


def test_the_guides_adequacy_table_is_regenerated_from_the_folder(n_plus_one_folder: Path, tmp_path: Path) -> None:
    """scripts/adequacy_table.py: a row per folder with ``placement adequacy``'s figures at both thresholds."""
    script = script_module("adequacy_table")
    folder = shutil.copytree(n_plus_one_folder, tmp_path / "plan")  # adequacy adds its figures to the folder
    lines = script.table([folder]).splitlines()
    assert len(lines) == 3
    figures = [script.adequacy(folder, t) for t in script.THRESHOLDS]
    assert lines[2] == script.row(Path(json.loads((folder / "summary.json").read_text())["scenario_path"]).stem, figures)
    assert f"{figures[0]['expected_unserved_share'] * 100:.4f} %" in lines[2]
    assert figures[1]["p_year_loss_above_threshold"] >= figures[0]["p_year_loss_above_threshold"], (
        "the same years: a lower threshold is passed at least as often"
    )
    assert script.main([str(tmp_path)]) == 2, "a folder that is not a plan's results is refused with the usage"


def test_n_plus_one_costs_keys_are_described(n_plus_one_folder: Path) -> None:
    """summary.json's n_plus_one_cost holds the keys the output reference lists, each class's with and without."""
    summary = json.loads((n_plus_one_folder / "summary.json").read_text())
    assert nested_mismatch(summary, "n_plus_one_cost") == ([], [])
    for figures in summary["n_plus_one_cost"]["classes"].values():
        assert set(figures) == {"usd_per_m_with", "usd_per_m_without"}
