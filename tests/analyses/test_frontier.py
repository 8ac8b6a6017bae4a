"""The cost-carbon frontier (``placement frontier``): points, their caps, the files, and an outside check of each cap."""

from __future__ import annotations

import csv
import itertools
import runpy
from pathlib import Path

import numpy as np
import pytest

from placement.analyses.frontier import frontier_caps
from placement.cli import main
from tests.conftest import REPO, write_scenario
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


def test_a_frontier_with_optional_serving_holds_each_cap(tmp_path: Path) -> None:
    # The least $/M search holds the cap rows, so the frontier runs on it: each point's plan meets its cap, recomputed
    # from its own files by the outside check.
    path = write_scenario(
        tmp_path, catalog=SHIFT_CATALOG, serving=DYNAMIC_POWER, policy={"unreachable": "report", "serving": "optional"}
    )
    out = tmp_path / "f"
    assert main(["frontier", str(path), "--out", str(out), "--points", "3", "--no-maps", "--quiet"]) == 0
    checked = runpy.run_path(str(REPO / "scripts" / "check_frontier.py"))["check"](out)
    assert len(checked) == 3 and all(line.endswith(": ok") for line in checked)


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


def test_the_frontier_is_drawn_at_equal_service_and_ends_where_a_cap_needs_less(tmp_path: Path) -> None:
    # The US load may move from Chicago (780 g a kWh) to Ashburn (600 g), serving as much; Europe's load has only a
    # Frankfurt site of 50 kW, too small for it, so no plan serves all demand and the caps run to half the uncapped
    # emissions. Past the US move a cap is met only by serving less: the frontier at equal service ends there, and
    # --allow-unserved keeps the points past it, the same up to it.
    catalog = SHIFT_CATALOG.replace("50.11,8.68,200,120", "50.11,8.68,0.05,120").replace(",false,380\n", ",false,600\n")
    path = write_scenario(tmp_path, catalog=catalog, serving=DYNAMIC_POWER, policy={"unreachable": "report"})
    tables = {}
    for name, extra in (("equal", []), ("all", ["--allow-unserved"])):
        out = tmp_path / name
        assert main(["frontier", str(path), "--out", str(out), "--points", "6", "--no-maps", "--quiet", *extra]) == 0
        with (out / "frontier.csv").open(encoding="utf-8", newline="") as handle:
            tables[name] = list(csv.DictReader(handle))
    every, equal = tables["all"], tables["equal"]
    assert len(every) == 6 and any(r["at_equal_service"] == "False" for r in every), "the geometry of the test"
    first_less = next(k for k, r in enumerate(every) if r["at_equal_service"] == "False")
    assert len(equal) == first_less + 1 and equal[-1]["at_equal_service"] == "False"
    for mine, theirs in zip(equal, every, strict=False):  # the same points up to the end
        assert mine["point"] == theirs["point"] and float(mine["usd_per_h"]) == pytest.approx(float(theirs["usd_per_h"]))
    served = [float(r["goodput_tok_s"]) for r in equal[:-1]]
    assert max(served) - min(served) <= 1e-3 * served[0], "equal service: goodput within 0.1 %"
    cost = [float(r["usd_per_million_goodput_tokens"]) for r in equal[:-1]]
    assert all(b >= a - 1e-9 for a, b in itertools.pairwise(cost)), "$/M never falls as the cap tightens"
    assert float(equal[-1]["goodput_tok_s"]) < served[0] * (1 - 1e-3)
    assert first_less < len(every) - 1, "the geometry of the test: caps past the end"
    for row in every[first_less + 1 :]:
        assert not (tmp_path / "equal" / row["plan"]).exists(), "no point past the end is solved or written"
