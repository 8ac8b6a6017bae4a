"""``placement diff`` on hand-made results folders whose differences are known."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from placement.analyses.diff import diff_plans, render_diff
from placement.cli import main

SITE_COLUMNS = ["site_id", "name", "lat", "lon", "open", "nodes", "mw_used", "cost_usd_per_h"]
ASSIGNMENT_COLUMNS = [
    "population_id", "population", "country_code", "class", "site_id", "site", "goodput_tok_s",
    "rtt_ms", "ttft_p99_ms", "pop_lat", "pop_lon", "site_lat", "site_lon",
]  # fmt: skip
SITES = {"x": ("X-ville", 50.0, 8.0), "y": ("Y-town", 48.0, 2.0), "z": ("Z-burg", 52.0, 13.0)}
PEOPLE = {"p1": ("Alpha", 51.0, 7.0), "p2": ("Beta", 47.0, 3.0), "p3": ("Gamma", 53.0, 12.0), "p4": ("Delta", 52.5, 14.0)}


def _summary(cost: float, usd_h: float, mw: float, sites_open: int, unserved: float, classes: dict[str, float]) -> dict[str, Any]:
    return {
        "scenario": "hand-made",
        "cost_per_million_goodput_tokens_usd": cost,
        "objective_usd_per_h": usd_h,
        "mw_used": mw,
        "sites_open": sites_open,
        "unserved_share": unserved,
        "classes": [{"class": k, "cost_per_million_goodput_tokens_usd": v} for k, v in classes.items()],
    }


def _assignment(pid: str, cls: str, site: str, goodput: float, rtt: float, ttft: float) -> list[Any]:
    name, lat, lon = PEOPLE[pid]
    site_name, site_lat, site_lon = SITES[site]
    return [pid, name, "DE", cls, site, site_name, goodput, rtt, ttft, lat, lon, site_lat, site_lon]


def _folder(root: Path, name: str, summary: dict[str, Any], sites: list[list[Any]], assignments: list[list[Any]]) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary))
    pd.DataFrame(sites, columns=SITE_COLUMNS).to_csv(folder / "sites.csv", index=False)
    pd.DataFrame(assignments, columns=ASSIGNMENT_COLUMNS).to_csv(folder / "assignments.csv", index=False)
    return folder


def _site(site_id: str, is_open: bool, nodes: int, mw: float, usd_h: float) -> list[Any]:
    name, lat, lon = SITES[site_id]
    return [site_id, name, lat, lon, is_open, nodes, mw, usd_h]


@pytest.fixture
def plans(tmp_path: Path) -> tuple[Path, Path]:
    """A: x (10 nodes) and y open. B: x grows to 12 nodes, y closes, z opens; p2 moves y -> z, p4 is newly served."""
    a = _folder(
        tmp_path,
        "a",
        _summary(1.25, 1000.0, 3.0, 2, 0.10, {"chat": 2.0, "batch": 0.5}),
        [_site("x", True, 10, 2.0, 600.0), _site("y", True, 5, 1.0, 400.0), _site("z", False, 0, 0.0, 0.0)],
        [
            _assignment("p1", "chat", "x", 900.0, 10.0, 210.0),
            _assignment("p1", "chat", "y", 100.0, 20.0, 220.0),
            _assignment("p2", "chat", "y", 500.0, 12.5, 212.5),
            _assignment("p3", "batch", "x", 300.0, 30.0, 1000.0),
        ],
    )
    b = _folder(
        tmp_path,
        "b",
        _summary(1.5, 1200.0, 3.5, 2, 0.0, {"chat": 2.5, "batch": 0.5}),
        [_site("x", True, 12, 2.4, 700.0), _site("y", False, 0, 0.0, 0.0), _site("z", True, 6, 1.1, 500.0)],
        [
            _assignment("p1", "chat", "x", 1000.0, 10.0, 210.0),
            _assignment("p2", "chat", "z", 500.0, 25.25, 225.25),
            _assignment("p3", "batch", "x", 300.0, 30.0, 1000.0),
            _assignment("p4", "chat", "z", 50.0, 5.0, 205.0),
        ],
    )
    return a, b


def test_headline_and_classes(plans: tuple[Path, Path]) -> None:
    diff = diff_plans(*plans)
    cost = diff.headline["cost_per_million_goodput_tokens_usd"]
    assert cost == {"a": 1.25, "b": 1.5, "delta": pytest.approx(0.25)}
    assert diff.headline["objective_usd_per_h"]["delta"] == pytest.approx(200.0)
    assert diff.headline["mw_used"]["delta"] == pytest.approx(0.5)
    assert diff.headline["sites_open"] == {"a": 2.0, "b": 2.0, "delta": 0.0}
    assert diff.headline["unserved_share"]["delta"] == pytest.approx(-0.10)
    assert {c["class"]: c["delta"] for c in diff.classes} == {"chat": pytest.approx(0.5), "batch": 0.0}


def test_sites_changed(plans: tuple[Path, Path]) -> None:
    sites = diff_plans(*plans).sites.set_index("site_id")
    assert dict(sites["change"]) == {"x": "resized", "y": "closed", "z": "opened"}
    assert sites.loc["x", "nodes_delta"] == 2 and sites.loc["x", "mw_used_delta"] == pytest.approx(0.4)
    assert sites.loc["y", "cost_usd_per_h_delta"] == pytest.approx(-400.0)
    assert (sites.loc["z", "nodes_a"], sites.loc["z", "nodes_b"], sites.loc["z", "mw_used_b"]) == (0, 6, 1.1)


def test_populations_moved(plans: tuple[Path, Path]) -> None:
    moved = diff_plans(*plans).moved.set_index(["population_id", "class"])
    # p1 keeps x as its main site (its 10 % at y disappears: not a move); p3's batch stays at x
    assert set(moved.index) == {("p2", "chat"), ("p4", "chat")}
    p2 = moved.loc[("p2", "chat")]
    assert (p2["site_id_a"], p2["site_id_b"]) == ("y", "z")
    assert (p2["rtt_ms_a"], p2["rtt_ms_b"], p2["ttft_p99_ms_a"], p2["ttft_p99_ms_b"]) == (12.5, 25.25, 212.5, 225.25)
    p4 = moved.loc[("p4", "chat")]
    assert pd.isna(p4["site_id_a"]) and p4["site_id_b"] == "z"


def test_repriced_site(tmp_path: Path) -> None:
    summary = _summary(1.0, 100.0, 1.0, 1, 0.0, {"chat": 1.0})
    row = [_assignment("p1", "chat", "x", 10.0, 10.0, 210.0)]
    a = _folder(tmp_path, "a", summary, [_site("x", True, 4, 1.0, 100.0)], row)
    b = _folder(tmp_path, "b", summary, [_site("x", True, 4, 1.0, 130.0)], row)
    diff = diff_plans(a, b)
    assert diff.sites[["site_id", "change"]].to_numpy().tolist() == [["x", "repriced"]]
    assert diff.moved.empty


def test_table_formatting(plans: tuple[Path, Path]) -> None:
    text = render_diff(diff_plans(*plans))
    assert "$/M goodput tokens" in text and "1.250" in text and "1.500" in text and "+0.250" in text
    assert "MW 2.0 -> 2.4, nodes 10 -> 12" in text
    assert "Beta (DE), chat: Y-town -> Z-burg; RTT 12.5 -> 25.2 ms, p99 TTFT 212.5 -> 225.2 ms" in text
    assert "Delta (DE), chat: unserved -> Z-burg" in text


def test_cli_json_and_files(plans: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "d"
    assert main(["diff", str(plans[0]), str(plans[1]), "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert {"headline", "sites", "populations_moved"} <= set(printed)
    assert set(printed["headline"]) == {
        "cost_per_million_goodput_tokens_usd", "objective_usd_per_h", "mw_used", "sites_open", "unserved_share",
        "tco2e_per_year", "gco2e_per_million_goodput_tokens", "water_m3_per_year", "water_l_per_million_goodput_tokens",
    }  # fmt: skip
    # the fixture's folders predate the carbon figures: compared as n/a, not refused
    assert printed["headline"]["tco2e_per_year"] == {"a": None, "b": None, "delta": None}
    assert all(set(v) == {"a", "b", "delta"} for v in printed["headline"].values())
    assert sorted(s["site_id"] for s in printed["sites"]) == ["x", "y", "z"]
    assert json.loads((out / "diff.json").read_text()) == printed
    features = json.loads((out / "diff.geojson").read_text())["features"]
    kinds = sorted(f["properties"]["kind"] for f in features)
    # three changed sites, p2's line to A's site, p2's and p4's lines to B's sites
    assert kinds.count("site") == 3 and len(features) == 6
    assert (out / "diff.png").stat().st_size > 0
    assert main(["diff", str(plans[0]), str(plans[1]), "--out", str(out)]) == 0  # an earlier diff folder is replaced
    assert "sites changed: 3 (1 opened, 1 closed, 1 resized)" in capsys.readouterr().out


def test_not_a_results_folder(plans: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["diff", str(plans[0]), str(empty), "--out", str(tmp_path / "d")]) == 1
    err = capsys.readouterr().err
    assert "not a results folder: summary.json, sites.csv, assignments.csv missing" in err
    assert "Traceback" not in err and not (tmp_path / "d").exists()


def test_out_may_not_be_a_plan(plans: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """--out pointing at plan B (a results folder, so otherwise replaceable) is refused and B is kept."""
    assert main(["diff", str(plans[0]), str(plans[1]), "--out", str(plans[1])]) == 1
    assert "one of the plans compared" in capsys.readouterr().err
    assert (plans[1] / "summary.json").is_file() and not (plans[1] / "diff.json").exists()
    assert main(["diff", str(plans[0]), str(plans[1]), "--out", str(plans[0].parent)]) == 1
