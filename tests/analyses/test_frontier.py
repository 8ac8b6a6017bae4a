"""The cost-carbon frontier (``placement frontier``): points, their caps, the files, and an outside check of each cap."""

from __future__ import annotations

import csv
import itertools
import json
import runpy
from pathlib import Path

import numpy as np
import pytest

from placement.analyses.frontier import frontier_caps
from placement.cli import main
from tests.conftest import REPO, script_module, write_scenario
from tests.economics.test_footprint import DYNAMIC_POWER, SHIFT_CATALOG


def test_caps_run_evenly_to_half_or_to_the_least() -> None:
    np.testing.assert_allclose(frontier_caps(1000.0, 100.0, 6), [900, 800, 700, 600, 500])
    np.testing.assert_allclose(frontier_caps(1000.0, 700.0, 4), [900, 800, 700])  # no plan emits less than 700
    with pytest.raises(ValueError, match="takes 2 to"):
        frontier_caps(1000.0, 0.0, 1)


def test_a_buildout_scenario_is_refused_by_the_frontier_of_single_year_plans() -> None:
    from placement.analyses.frontier import frontier_start
    from placement.scenario.load import load_scenario

    loaded = load_scenario(REPO / "tests" / "data" / "buildout_small.yaml")
    with pytest.raises(ValueError, match=r"drawn for a single-year plan.*holds in every year and demand scenario"):
        frontier_start(loaded)


def test_the_frontier_of_two_us_sites_by_hand(tmp_path: Path) -> None:
    # Uncapped, the US load runs at Chicago; the least any plan emits has all of it at Ashburn (0.4 t less a MWh,
    # $20 more); half the uncapped emissions is below that least, so the caps run from the uncapped plan to the least.
    # Every capped point moves the whole load ($250/h to open a second site outweighs any split): $50 per tonne.
    path = write_scenario(tmp_path, catalog=SHIFT_CATALOG, serving=DYNAMIC_POWER)
    out = tmp_path / "frontier"
    assert main(["frontier", str(path), "--out", str(out), "--points", "3", "--no-maps", "--quiet"]) == 0
    with (out / "frontier.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["point"] for r in rows] == ["0", "1", "2"] and rows[0]["cap"] == ""
    uncapped, least = float(rows[0]["tco2e_per_year"]), float(rows[2]["tco2e_per_year"])
    assert float(rows[1]["tco2e_per_year"]) == pytest.approx(least)  # the whole move already at the first cap
    assert float(rows[2]["cap"]) == pytest.approx(least, rel=1e-6) and least > 0.5 * uncapped
    assert (rows[1]["sites_opened"], rows[1]["sites_closed"]) == ("ashburn", "chicago")
    assert float(rows[1]["usd_per_t_avoided"]) == pytest.approx(50.0, rel=1e-6)
    assert (out / "frontier.png").stat().st_size > 10_000
    for row in rows:
        assert (out / row["plan"] / "summary.json").exists()
    checked = runpy.run_path(str(REPO / "scripts" / "check_frontier.py"))["check"](out)
    assert len(checked) == 3 and all(line.endswith(": ok") for line in checked)


def test_a_frontier_with_optional_serving_holds_each_cap_at_equal_service(tmp_path: Path) -> None:
    # The least $/M search holds the cap rows, so the frontier runs on it: each point's plan meets its cap, recomputed
    # from its own files by the outside check. At equal service each point serves what the plan without a cap serves
    # (policy.min_served_share held at it); free to serve less (--allow-unserved), the first cap is met by serving less.
    catalog = SHIFT_CATALOG.replace("50.11,8.68,200,120", "50.11,8.68,0.05,120").replace(",false,380\n", ",false,600\n")
    policy = {"unreachable": "report", "serving": "optional"}
    path = write_scenario(tmp_path, catalog=catalog, serving=DYNAMIC_POWER, policy=policy)
    served = {}
    for name, extra in (("equal", []), ("all", ["--allow-unserved"])):
        out = tmp_path / name
        assert main(["frontier", str(path), "--out", str(out), "--points", "3", "--no-maps", "--quiet", *extra]) == 0
        checked = runpy.run_path(str(REPO / "scripts" / "check_frontier.py"))["check"](out)
        assert len(checked) == 3 and all(line.endswith(": ok") for line in checked)
        with (out / "frontier.csv").open(encoding="utf-8", newline="") as handle:
            served[name] = [float(r["goodput_tok_s"]) for r in csv.DictReader(handle)]
    assert min(served["equal"]) >= served["equal"][0] * (1 - 1e-3)
    assert served["all"][1] < served["all"][0] * (1 - 1e-3), "the geometry of the test: free, the cap is met by serving less"
    _the_guides_table_comes_from_the_two_folders(tmp_path / "equal", tmp_path / "all")


def _the_guides_table_comes_from_the_two_folders(equal: Path, free: Path) -> None:
    """scripts/frontier_table.py: the carbon-and-water guide's table, a row per point, its cells from frontier.csv."""
    script = script_module("frontier_table")
    rows = {name: script.read(folder) for name, folder in (("equal", equal), ("all", free))}
    lines = script.table(rows["equal"], rows["all"]).splitlines()
    assert lines[0].startswith("| point | cap (tCO2e) | $/M at equal service") and "unserved at $60" in lines[0]
    body = [line.strip("| ").split(" | ") for line in lines[2:]]
    assert [cells[0] for cells in body] == [str(k) for k in range(max(len(rows["equal"]), len(rows["all"])))]
    for cells, a, b in zip(body, rows["equal"], rows["all"], strict=False):
        assert cells[2] == f"{float(a['usd_per_million_goodput_tokens']):,.3f}"
        assert cells[5] == f"{float(b['usd_per_million_goodput_tokens']):,.3f}"
        assert cells[6] == f"{float(b['unserved_share']) * 100:.2f} %"
    assert body[0][1] == body[0][4] == "none", "point 0 is the plan without a cap"
    assert script.main([str(equal)]) == 2  # two folders, or a usage line


@pytest.mark.slow
def test_the_frontier_on_dask_is_the_frontier_solved_in_turn(tmp_path: Path) -> None:
    # The capped points as tasks on a local cluster (each builds its own instance and sends its folder back): the
    # same points, caps, figures and site changes as solved one after another on one instance.
    path = write_scenario(tmp_path, catalog=SHIFT_CATALOG, serving=DYNAMIC_POWER)
    tables = {}
    for name, extra in (("turn", []), ("dask", ["--workers", "2"])):
        out = tmp_path / name
        assert main(["frontier", str(path), "--out", str(out), "--points", "4", "--no-maps", "--quiet", *extra]) == 0
        with (out / "frontier.csv").open(encoding="utf-8", newline="") as handle:
            tables[name] = list(csv.DictReader(handle))
        checked = runpy.run_path(str(REPO / "scripts" / "check_frontier.py"))["check"](out)
        assert len(checked) == 4 and all(line.endswith(": ok") for line in checked)
        assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["point_00", "point_01", "point_02", "point_03"]
    for turn, dask in zip(tables["turn"], tables["dask"], strict=True):
        assert {k: turn[k] for k in ("point", "plan", "sites_opened", "sites_closed", "sites_open")} == {
            k: dask[k] for k in ("point", "plan", "sites_opened", "sites_closed", "sites_open")
        }
        for key in ("cap", "tco2e_per_year", "usd_per_million_goodput_tokens", "usd_per_h"):
            assert float(dask[key] or 0) == pytest.approx(float(turn[key] or 0), rel=1e-9)


def test_the_frontier_at_equal_service_runs_its_caps_to_the_least_use_of_a_plan_serving_as_much(tmp_path: Path) -> None:
    # The US load may move from Chicago (780 g a kWh) to Ashburn (600 g), serving as much; Europe's load has only a
    # Frankfurt site of 50 kW, too small for it, so no plan serves all demand. At equal service the caps run down to
    # the least a plan serving as much emits (the US load at Ashburn, Frankfurt full), every point serving that much
    # at a $/M that never falls. --allow-unserved runs them to half the uncapped emissions, which is met only by
    # leaving demand unserved; its cost with each unserved token valued at objective.unserved_usd_per_million is
    # checked by hand.
    catalog = SHIFT_CATALOG.replace("50.11,8.68,200,120", "50.11,8.68,0.05,120").replace(",false,380\n", ",false,600\n")
    path = write_scenario(tmp_path, catalog=catalog, serving=DYNAMIC_POWER, policy={"unreachable": "report"})
    tables = {}
    for name, extra in (("equal", []), ("all", ["--allow-unserved"])):
        out = tmp_path / name
        assert main(["frontier", str(path), "--out", str(out), "--points", "6", "--no-maps", "--quiet", *extra]) == 0
        with (out / "frontier.csv").open(encoding="utf-8", newline="") as handle:
            tables[name] = list(csv.DictReader(handle))
        checked = runpy.run_path(str(REPO / "scripts" / "check_frontier.py"))["check"](out)
        assert all(line.endswith(": ok") for line in checked)
    every, equal = tables["all"], tables["equal"]
    assert len(equal) == 6 and all(r["at_equal_service"] == "True" for r in equal)
    served = [float(r["goodput_tok_s"]) for r in equal]
    assert max(served) - min(served) <= 1e-3 * served[0], "equal service: goodput within 0.1 %"
    cost = [float(r["usd_per_million_goodput_tokens"]) for r in equal]
    assert all(b >= a - 1e-9 for a, b in itertools.pairwise(cost)), "$/M never falls as the cap tightens"
    uncapped = float(equal[0]["tco2e_per_year"])
    least = float(equal[-1]["tco2e_per_year"])
    assert float(equal[-1]["cap"]) == pytest.approx(least, rel=1e-6) and 0.5 * uncapped < least < uncapped
    assert [r["sites_opened"] for r in equal[1:]] == ["ashburn", "", "", "", ""], "the US load moves at the first cap"

    assert len(every) == 6 and float(every[-1]["cap"]) == pytest.approx(0.5 * uncapped, rel=1e-6)
    assert every[-1]["at_equal_service"] == "False" and float(every[-1]["goodput_tok_s"]) < served[0] * (1 - 1e-3)
    valued = [float(r["usd_per_million_with_unserved_value"]) for r in every]
    assert all(b >= a - 1e-9 for a, b in itertools.pairwise(valued)), "the valued cost never falls"
    row = every[-1]  # the valued cost by hand: the plan's $/h plus each unserved mean tok/s at $60 per million
    summary = json.loads((tmp_path / "all" / row["plan"] / "summary.json").read_text(encoding="utf-8"))
    unserved = summary["demand_tok_s"] - summary["goodput_tok_s"]
    by_hand = (summary["objective_usd_per_h"] + unserved * 3600 / 1e6 * 60.0) / (summary["demand_tok_s"] * 3600 / 1e6)
    assert float(row["unserved_usd_per_million"]) == 60.0 and valued[-1] == pytest.approx(by_hand, rel=1e-9)
    first = json.loads((tmp_path / "all" / every[0]["plan"] / "summary.json").read_text(encoding="utf-8"))
    saved = (first["objective_usd_per_h"] - summary["objective_usd_per_h"]) * 1e6 / 3600
    assert float(row["usd_per_million_dropped"]) == pytest.approx(saved / (first["goodput_tok_s"] - summary["goodput_tok_s"]))
    assert every[0]["usd_per_million_dropped"] == "" and all(r["usd_per_million_dropped"] == "" for r in equal)
