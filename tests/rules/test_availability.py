"""Which accelerators may go where: the bundled export-control table, its checks, and a build-out that obeys it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from placement._errors import InputError
from placement.buildout.fleet import build_fleet
from placement.cli import main
from placement.plan.solve import run
from placement.rules.availability import barred_mask, load_availability, rules_at
from placement.scenario.load import load_scenario
from placement.serving.hardware import load_accelerators
from tests.conftest import CATALOG_HEADER, write_scenario

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "data" / "buildout_small.yaml"
FOREIGN = [a for a in load_accelerators() if a != "ascend-910c"]
HEADER = "rule_id,name,effect,accelerators,countries,except_countries,from_date,until_date,simplification,source\n"


def test_the_bundled_table_bars_every_foreign_part_from_china_and_the_stand_in_elsewhere() -> None:
    rules = load_availability()
    codes = ["CN", "HK", "MO", "RU", "US", "JP", "IN", "DE"]
    parts = [*FOREIGN, "ascend-910c"]
    barred = barred_mask(rules, codes, parts, [2021, 2027, 2031])
    foreign = slice(0, len(FOREIGN))
    assert barred[:4, foreign, 1:].all(), "every NVIDIA/AMD part of the catalog is barred in China, Hong Kong, Macau, Russia"
    assert not barred[4:, foreign, :].any(), "nothing barred in the US, Japan, India, Germany"
    assert not barred[:, :, 0].any(), "no rule was in force in 2021"
    stand_in = parts.index("ascend-910c")
    assert not barred[:3, stand_in, 1:].any() and barred[3:, stand_in, 1:].all()
    # The diffusion rule's Tier 2 needed a licence in 2025 only (rescinded in May): India yes, Germany (Tier 1) no.
    assert [r.rule_id for r in rules_at(rules, "IN", "b200", 2025, "licence")] == ["us-bis-2025-ai-diffusion-tier2"]
    assert rules_at(rules, "IN", "b200", 2026, "licence") == [] and rules_at(rules, "DE", "b200", 2025, "licence") == []


def test_a_rule_is_in_force_in_every_year_it_overlaps(tmp_path: Path) -> None:
    path = tmp_path / "rules.csv"
    path.write_text(HEADER + "r,R,barred,b200,FR,,2027-07-01,2029-01-01,s,src\n")
    barred = barred_mask(load_availability(path), ["FR", "DE"], ["b200", "h200"], [2026, 2027, 2028, 2029])
    assert barred[0, 0].tolist() == [False, True, True, False]  # until 1 Jan 2029: not in force in 2029
    assert not barred[1].any() and not barred[:, 1].any()


def test_bad_rules_are_gathered_with_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "rules.csv"
    path.write_text(
        HEADER
        + "a,A,barred,b999,CN,,2024-01-01,,s,src\n"  # unknown part
        + "b,B,forbidden,b200,XX,,2024-01-01,,s,src\n"  # unknown effect and country
        + "c,C,barred,b200,CN,US,2024-13-01,,s,src\n"  # exceptions without *, a bad date
        + "a,D,barred,b200,*,CN,2025-01-01,2024-01-01,s,src\n"  # repeated id, until before from
    )
    with pytest.raises(InputError) as caught:
        load_availability(path)
    found = {(p.where, p.field) for p in caught.value.problems}
    expected = {
        ("row 1 (line 2)", "accelerators"),
        ("row 2 (line 3)", "effect"),
        ("row 2 (line 3)", "countries"),
        ("row 3 (line 4)", "except_countries"),
        ("row 3 (line 4)", "from_date"),
        ("row 4 (line 5)", "rule_id"),
        ("row 4 (line 5)", "until_date"),
    }
    assert expected <= found, found


def _asia(tmp_path: Path, enforce: bool) -> Path:
    """One year of China, Hong Kong, Japan and Korea with H100 or the Ascend stand-in on offer."""
    raw = yaml.safe_load(SMALL.read_text())
    raw["demand"]["countries"] = ["CN", "HK", "JP", "KR"]
    raw["demand"]["clusters"] = 12
    raw["time"]["slices"] = 1
    raw["time"]["profile"] = None
    raw["residency"] = {"rules": [{"populations": ["CN"], "sites": ["CN"]}], "domestic_only_sites": ["CN"]}
    raw["availability"] = {"enforce": enforce}
    raw["horizon"] = {
        "years": [2027],
        "regret": False,
        "clusters": 12,
        "time_slices": 1,
        "accelerators": [
            {"id": "h100-sxm", "node_capex_usd": 220000},
            {"id": "ascend-910c", "node_capex_usd": 250000, "precision": "bf16"},
        ],
        "demand_scenarios": [{"name": "base", "probability": 1.0}],
    }
    for key, field in (("sites", "catalog"), ("demand", "cities")):
        raw[key][field] = str((SMALL.parent / raw[key][field]).resolve())
    folder = tmp_path / ("rules" if enforce else "free")
    folder.mkdir()
    path = folder / "asia.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.slow
def test_the_buildout_buys_only_what_may_go_there_and_says_which_rule_barred_what(tmp_path: Path) -> None:
    runs = {}
    for enforce in (True, False):
        out = tmp_path / f"out-{enforce}"
        assert main(["solve", str(_asia(tmp_path, enforce)), "--out", str(out), "--quiet", "--no-maps"]) == 0
        runs[enforce] = out
    summary = json.loads((runs[True] / "summary.json").read_text())
    bought = summary["nodes_bought_by_country"]
    assert set(bought["CN"]) == {"ascend-910c"}, bought  # China serves China (residency) on the stand-in only
    assert all(set(parts) == {"h100-sxm"} for code, parts in bought.items() if code in ("JP", "KR")), bought
    assert "HK" not in bought or set(bought["HK"]) <= {"ascend-910c"}
    rules = {r["rule_id"]: r for r in summary["availability_rules"]}
    assert "CN" in rules["us-bis-2023-advanced-computing"]["countries"]
    assert rules["us-bis-2023-advanced-computing"]["nodes_bought"] == 0.0
    assert {"JP", "KR"} <= set(rules["us-bis-2025-ascend-guidance"]["countries"])
    table = pd.read_csv(runs[True] / "availability_rules.csv", keep_default_na=False)
    assert set(table.loc[table["rule_id"].eq("us-bis-2023-advanced-computing"), "country_code"]) >= {"CN", "HK"}
    assert "Rules that shaped the fleet" in (runs[True] / "report.md").read_text()
    # Without the rules China buys the H100 (more goodput per dollar) and the plan is cheaper: the rule binds.
    free = json.loads((runs[False] / "summary.json").read_text())
    assert "h100-sxm" in free["nodes_bought_by_country"]["CN"]
    assert free["availability_rules"] == []
    assert free["expected_cost_usd"] < summary["expected_cost_usd"]


def test_a_part_that_cannot_serve_a_class_gets_no_goodput_and_no_say_in_its_pairs() -> None:
    loaded = load_scenario(ROOT / "data" / "scenarios" / "buildout.yaml")
    scenario = loaded.scenario
    assert scenario.horizon is not None
    fleet = build_fleet(scenario.classes, scenario.serving, scenario.horizon, list(scenario.horizon.years), source="test")
    a = fleet.ids.index("ascend-910c")
    names = [c.name for c in scenario.classes]
    agent, batch = names.index("agent"), names.index("batch")
    assert fleet.goodput_tok_s[agent, a] == 0.0 and fleet.goodput_tok_s[batch, a] > 0.0
    assert any(line.startswith("ascend-910c cannot serve agent") for line in fleet.cannot_serve)
    with_stand_in = np.ones(len(fleet.ids), dtype=bool)
    without = with_stand_in.copy()
    without[a] = False
    assert fleet.worst_profiles(with_stand_in)[agent] == fleet.worst_profiles(without)[agent]
    only = ~without
    assert fleet.worst_profiles(only)[agent].fixed_ttft_ms == float("inf"), "a site with only the stand-in allows no agent pair"
    assert fleet.worst_profiles(only)[batch].goodput_tok_s_per_node > 0


def test_a_one_accelerator_plan_at_a_barred_site_says_so(tmp_path: Path) -> None:
    catalog = CATALOG_HEADER + (
        "shanghai,Shanghai,CN,Asia,31.23,121.47,50,80,1.3,10000000,true\n"  # locked: open whatever it costs
        "tokyo,Tokyo,JP,Asia,35.68,139.69,50,120,1.3,10000000,false\n"
    )
    cities = (
        "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
        "1,Shanghai,CN,23,31.23,121.47,20000000,Asia/Shanghai\n"
        "2,Tokyo,JP,40,35.68,139.69,9000000,Asia/Tokyo\n"
    )
    plan = run(load_scenario(write_scenario(tmp_path, catalog=catalog, cities=cities)))
    notes = " ".join(plan.notes)
    assert "availability: us-bis-2023-advanced-computing bars h100-sxm in CN, where 1 open site (shanghai)" in notes, notes
    free = tmp_path / "free"
    free.mkdir()
    plan = run(load_scenario(write_scenario(free, catalog=catalog, cities=cities, availability={"enforce": False})))
    assert "availability:" not in " ".join(plan.notes)
