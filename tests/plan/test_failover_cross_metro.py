"""N+1 with cross-metro prefill, end to end: a prefill site's loss is a loss, written down and re-routed in full.

Frankfurt's users (8 M people, one long-prompt class under cold connections) reach two dear sites near them,
Frankfurt and Offenbach, served whole, and a cheap Amsterdam site only as a prefill pool (a round trip between the
sites of at most 10 ms, two partners a decode site). With ``fault_tolerance: {n_plus_one: true}`` the plan prefills
part of the demand in Amsterdam; its loss takes those rows away and they move to the other cross-metro columns
or to the pairs served whole, inside their objective and within the nodes, as the outside check confirms. Solved
by the exact N+1 MILP and by the large-model path (the plan without N+1, its spare sized one loss at a time).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from placement.cli import main
from placement.optimize import failover, protect
from tests.conftest import CATALOG_HEADER, write_scenario
from tests.instance.test_cross_metro import CITIES, CROSS
from tests.plan.test_failover import _checker

CATALOG = CATALOG_HEADER + (
    "frankfurt,Frankfurt,DE,Europe,50.11,8.68,50,900,1.3,90000000,false\n"
    "offenbach,Offenbach,DE,Europe,50.10,8.76,50,900,1.3,90000000,false\n"
    "amsterdam,Amsterdam,NL,Europe,52.37,4.90,50,30,1.3,8000000,false\n"
)

RAG = {
    "name": "rag", "share": 1.0, "ttft_p99_ms": 640, "itl_p99_ms": 30, "connection": "cold",
    "serving_ttft_budget_ms": 600, "retrieval_ms": 0, "safety_tokenization_ms": 0, "input_tokens": 8000,
    "output_tokens": 100,
}  # fmt: skip


def _solve(folder: Path) -> Path:
    serving = {
        "model": "llama-3.1-70b", "accelerator": "h100-sxm", "disaggregated": True, "pool_nodes": 8,
        "cross_metro_prefill": {**CROSS, "partners": 2},
    }  # fmt: skip
    scenario = write_scenario(
        folder, catalog=CATALOG, cities=CITIES.replace(",800000,", ",8000000,"), classes=[RAG], serving=serving,
        latency={"model": "great_circle"}, economics={"site_fixed_cost_usd_per_h": 0}, policy={"unreachable": "report"},
        fault_tolerance={"n_plus_one": True},
    )  # fmt: skip
    assert main(["solve", str(scenario), "--out", str(folder / "out"), "--quiet"]) == 0
    return folder / "out"


@pytest.fixture(scope="module", params=["exact", "one loss at a time"])
def folder(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Solved by the exact N+1 MILP, and by the large-model path (the plan without N+1, then protected)."""
    with pytest.MonkeyPatch.context() as patch:
        if request.param != "exact":
            patch.setattr(failover, "FULL_FAILOVER_MAX_VARIABLES", 0)
            patch.setattr(protect, "MILP_MAX_COLUMNS", 0)
        return _solve(tmp_path_factory.mktemp("n1_cross_metro"))


def test_the_loss_of_the_prefill_site_moves_what_it_prefilled(folder: Path) -> None:
    assignments = pd.read_csv(folder / "assignments.csv", keep_default_na=False)
    prefilled = float(assignments.loc[assignments["prefill_site_id"] == "amsterdam", "goodput_tok_s"].sum())
    total = float(assignments["goodput_tok_s"].sum())
    assert prefilled > 0.01 * total, "the plan prefills part of the demand in Amsterdam"
    assert (assignments["site_id"] != "amsterdam").all(), "Amsterdam is out of reach served whole"
    scenarios = pd.read_csv(folder / "failover_scenarios.csv", keep_default_na=False).set_index("failed")
    assert "amsterdam" in scenarios.index
    assert scenarios.loc["amsterdam", "served_tok_s"] == pytest.approx(prefilled, rel=1e-6)
    assert scenarios.loc["amsterdam", "moved_tok_s"] == pytest.approx(prefilled, rel=1e-6)
    assert scenarios.loc["amsterdam", "unprotected_tok_s"] == pytest.approx(0.0, abs=1e-6 * total)
    # every site's loss counts what it serves and what it prefills for another
    for site in scenarios.index:
        lost = (assignments["site_id"] == site) | (assignments["prefill_site_id"] == site)
        assert scenarios.loc[site, "served_tok_s"] == pytest.approx(assignments.loc[lost, "goodput_tok_s"].sum(), rel=1e-6)
        assert scenarios.loc[site, "unprotected_tok_s"] == pytest.approx(0.0, abs=1e-6 * total)
    rows = pd.read_csv(folder / "failover.csv", keep_default_na=False)
    after = rows[rows["failed"] == "amsterdam"]
    assert len(after) and not (after["prefill_site_id"] == "amsterdam").any()
    assert after["moved_tok_s"].sum() == pytest.approx(2 * prefilled, rel=1e-6), "nodes carry the peak: twice the mean"
    totals = after.groupby(["population_id", "class", "slice"]).agg(g=("goodput_tok_s", "sum"), d=("demand_tok_s", "first"))
    assert (totals["g"] - totals["d"]).abs().max() < 1e-6 * totals["d"].max()
    assert (after["ttft_p99_ms"] <= after["ttft_objective_ms"] + 1e-9).all()
    assert _checker().check(folder) == []


def test_the_outside_check_catches_a_move_through_the_failed_prefill_site(folder: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    rows = pd.read_csv(broken / "failover.csv", keep_default_na=False)
    moved = (rows["failed"] == "amsterdam") & (rows["moved_tok_s"] > 0)
    assert moved.any()
    rows.loc[moved, "prefill_site_id"] = "amsterdam"
    rows.to_csv(broken / "failover.csv", index=False)
    assert any("served by a site that failed" in p for p in _checker().check(broken))
    scenarios = pd.read_csv(broken / "failover_scenarios.csv", keep_default_na=False)
    scenarios.loc[scenarios["failed"] == "amsterdam", "unprotected_tok_s"] = 0.0
    lost = pd.read_csv(broken / "failover.csv", keep_default_na=False)
    lost = lost[lost["failed"] != "amsterdam"]  # as if the loss of the prefill site moved nothing
    lost.to_csv(broken / "failover.csv", index=False)
    assert any("loss of amsterdam: unprotected 0.0 tok/s, not re-routed" in p for p in _checker().check(broken))
