"""Which accelerators may go where: the bundled export-control table, its checks, and a build-out that obeys it."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from placement._errors import InputError
from placement.analyses.rule_binds import rule_mask, scenario_rules
from placement.analyses.tail import check_tail
from placement.buildout.fleet import build_fleet
from placement.cli import main
from placement.economics.cost import amortised_usd_per_h
from placement.instance.build import build_instance
from placement.plan.solve import run
from placement.profiles.build import part_node, serving_request
from placement.profiles.tiers import cheapest_part
from placement.rules.availability import barred_mask, barring_rule, load_availability, rules_at, site_parts
from placement.scenario.load import load_scenario
from placement.serving.hardware import load_accelerators
from placement.serving.request import serve
from tests.conftest import CATALOG_HEADER, computed_chat, write_scenario

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


def test_a_site_runs_its_own_part_unless_a_standing_rule_bars_it_then_the_one_part_permitted() -> None:
    rules = load_availability()

    def never(candidates: list[str]) -> str:
        raise AssertionError(f"no choice to make among the bundled rules' permitted parts, got {candidates}")

    parts = site_parts(rules, "h100-sxm", ["US", "CN", "HK", "RU", ""], choose=never)
    assert parts.part == ("h100-sxm", "ascend-910c", "ascend-910c", "", "h100-sxm")
    bar = "us-bis-2023-advanced-computing"
    assert parts.barred_by == ("", bar, bar, bar, "") and parts.moved and parts.runs_nothing() == [3]
    assert not site_parts(rules, "ascend-910c", ["CN"], choose=never).moved, "the stand-in runs in China"
    outside = site_parts(rules, "ascend-910c", ["JP"], choose=lambda candidates: candidates[0])
    assert outside.part == ("h100-sxm",) and outside.barred_by == ("us-bis-2025-ascend-guidance",), "outside China: a choice"
    # The 2022 rule has ended: it moves nothing today, though it was in force in 2022.
    assert not site_parts([r for r in rules if r.rule_id != bar], "h100-sxm", ["CN"], choose=never).moved


def test_several_permitted_parts_are_chosen_between_once_per_country(tmp_path: Path) -> None:
    path = tmp_path / "rules.csv"
    path.write_text(HEADER + "jp-h100,no H100 in Japan,barred,h100-sxm,JP,,2024-01-01,,a test,a test\n")
    asked: list[list[str]] = []

    def first(candidates: list[str]) -> str:
        asked.append(candidates)
        return candidates[-1]

    parts = site_parts(load_availability(path), "h100-sxm", ["JP", "US", "JP"], choose=first)
    assert asked == [[a for a in load_accelerators() if a != "h100-sxm"]]
    assert parts.part == (asked[0][-1], "h100-sxm", asked[0][-1]) and parts.barred_by == ("jp-h100", "", "jp-h100")


def test_the_cheapest_permitted_part_serves_the_most_demand_first() -> None:
    scenario = load_scenario(ROOT / "data" / "scenarios" / "default.yaml").scenario
    params = scenario.economics.params(0.0)
    choose = partial(cheapest_part, classes=scenario.classes, serving=scenario.serving, params=params,
                     price_usd_per_mwh=80.0, pue=1.3, source="test")  # fmt: skip
    # The stand-in serves no agent inside its 25 ms ITL: a part that does wins whatever it costs.
    assert choose(["ascend-910c", "h200"]) == "h200" == choose(["h200", "ascend-910c"])
    assert choose(["ascend-910c"]) == "ascend-910c"


def _barred_world(folder: Path, **overrides: object) -> Path:
    catalog = CATALOG_HEADER + (
        "shanghai,Shanghai,CN,Asia,31.23,121.47,50,80,1.3,10000000,true\n"  # locked: open whatever it costs
        "tokyo,Tokyo,JP,Asia,35.68,139.69,50,120,1.3,10000000,false\n"
        "moscow,Moscow,RU,Europe,55.75,37.62,50,60,1.3,10000000,false\n"
    )
    cities = (
        "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
        "1,Shanghai,CN,23,31.23,121.47,20000000,Asia/Shanghai\n"
        "2,Tokyo,JP,40,35.68,139.69,9000000,Asia/Tokyo\n"
        "3,Moscow,RU,48,55.75,37.62,12000000,Europe/Moscow\n"
    )
    chat = computed_chat(300.0, share=0.75)
    agent = computed_chat(250.0, name="agent", share=0.25, itl_p99_ms=25, serving_ttft_budget_ms=110)
    options = {"classes": [chat, agent], "serving": {"node_kw": None}, "policy": {"unreachable": "report"}, **overrides}
    return write_scenario(folder, catalog=catalog, cities=cities, **options)


def test_a_plan_runs_the_permitted_part_where_its_own_is_barred_or_nothing(tmp_path: Path) -> None:
    plan = run(load_scenario(_barred_world(tmp_path)))
    sites = plan.sites.set_index("site_id")
    assert sites["accelerator"].to_dict() == {"shanghai": "ascend-910c", "tokyo": "h100-sxm", "moscow": ""}
    assert (
        not sites.loc["moscow", "open"] and sites.loc["moscow", "reason"] == "the availability rules permit no accelerator here"
    )
    # Shanghai's nodes are the stand-in's: its catalog price (the scenario's 400k is the H100's), its power.
    stand_in = load_accelerators()["ascend-910c"]
    assert sites.loc["shanghai", "node_capex_usd_per_h"] == pytest.approx(
        float(amortised_usd_per_h(stand_in.node_capex_usd, 0.08, 4.0))
    )
    assert sites.loc["tokyo", "node_capex_usd_per_h"] == pytest.approx(float(amortised_usd_per_h(400_000.0, 0.08, 4.0)))
    node_mw = plan.instance.inputs.site_node_mw
    assert node_mw[0] == pytest.approx(stand_in.node_kw * 1.3 / 1000) and node_mw[1] == pytest.approx(10.2 * 1.3 / 1000)
    assert sites.loc["shanghai", "open"] and sites.loc["shanghai", "mw_used"] == pytest.approx(
        sites.loc["shanghai", "nodes"] * node_mw[0]
    )
    # The stand-in serves chat, not agent (25 ms ITL): no agent goodput at Shanghai, and the note says so.
    served = plan.assignments.groupby(["site_id", "class"])["goodput_tok_s"].sum()
    assert served.get(("shanghai", "chat"), 0.0) > 0 and served.get(("shanghai", "agent"), 0.0) == 0.0
    notes = " ".join(plan.notes)
    assert "us-bis-2023-advanced-computing bars h100-sxm in CN: 1 site there run ascend-910c instead" in notes, notes
    assert "ascend-910c serves no agent inside its objectives there" in notes
    assert "the rules permit no catalog part there: 1 site (moscow) serve nothing" in notes
    # The tail check simulates Shanghai's node as the stand-in it is, not the scenario's H100.
    tail = check_tail(plan, requests=400).set_index(["site_id", "class"])
    stand_in_chat = serve(serving_request(part_node(plan.serving, "ascend-910c"), plan.classes[0]))
    assert tail.loc[("shanghai", "chat"), "analytic_itl_ms"] == pytest.approx(stand_in_chat.itl_ms)
    assert tail.loc[("shanghai", "chat"), "analytic_node_ttft_ms"] == pytest.approx(plan.instance.profiles_at(0)[0].node_ttft_ms)
    assert tail.loc[("tokyo", "chat"), "analytic_itl_ms"] == pytest.approx(
        serve(serving_request(plan.serving, plan.classes[0])).itl_ms
    )
    rules = {rule.rule_id: rule for rule in scenario_rules(plan.instance)}
    bar = rules["us-bis-2023-advanced-computing"]
    assert bar.kind == "availability" and "runs ascend-910c" in bar.text and "nothing" in bar.text
    permits = rule_mask(plan.instance, bar)
    agent = plan.instance.commodity_class == 1
    assert not permits[agent][:, 0].any() and not permits[:, 2].any() and permits[:, 1].all()
    # Without the rules, or with the rule waived: the scenario's part everywhere, nothing said.
    for folder, availability in (("free", {"enforce": False}), ("waived", {"waive": ["us-bis-2023-advanced-computing"]})):
        (tmp_path / folder).mkdir()
        free = run(load_scenario(_barred_world(tmp_path / folder, availability=availability)))
        assert set(free.sites["accelerator"]) == {"h100-sxm"} and free.instance.site_parts is None
        assert "availability:" not in " ".join(free.notes)
        assert (
            free.summary.objective_usd_per_h <= plan.summary.objective_usd_per_h + 1e-6
            or free.summary.goodput_tok_s > plan.summary.goodput_tok_s
        )


def test_a_world_where_every_site_is_moved_runs_the_permitted_part_everywhere(tmp_path: Path) -> None:
    catalog = CATALOG_HEADER + "shanghai,Shanghai,CN,Asia,31.23,121.47,50,80,1.3,10000000,false\n"
    cities = (
        "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
        "1,Shanghai,CN,23,31.23,121.47,20000000,Asia/Shanghai\n"
    )
    chat = computed_chat(300.0)
    path = write_scenario(tmp_path, catalog=catalog, cities=cities, classes=[chat], serving={"node_kw": None})
    instance = build_instance(load_scenario(path))
    stand_in = load_accelerators()["ascend-910c"]
    assert instance.site_accelerator() == ["ascend-910c"]
    assert instance.inputs.site_node_mw[0] == pytest.approx(stand_in.node_kw * 1.3 / 1000), "its power, not the H100's"
    assert instance.node_cost.node_capex_usd_per_h[0] == pytest.approx(
        float(amortised_usd_per_h(stand_in.node_capex_usd, 0.08, 4.0))
    )


def test_an_unknown_waived_rule_is_named_with_its_key(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        run(load_scenario(_barred_world(tmp_path, availability={"waive": ["us-bis-2099"]})))
    assert "availability.waive[0]" in str(caught.value) and "us-bis-2023-advanced-computing" in str(caught.value)


@pytest.mark.slow  # the bundled world, solved (world_results)
def test_the_bundled_world_plans_no_barred_part_at_a_barred_site(world_results: Path) -> None:
    rules = load_availability()
    sites = pd.read_csv(world_results / "sites.csv", keep_default_na=False)
    for row in sites.itertuples():
        if row.accelerator:
            assert barring_rule(rules, row.accelerator, row.country_code) == "", (row.site_id, row.accelerator)
        else:
            assert not row.open, row.site_id
    china = sites[sites["country_code"].isin(["CN", "HK"])]
    assert len(china) and set(china["accelerator"]) == {"ascend-910c"}
    assert set(sites.loc[~sites["country_code"].isin(["CN", "HK", "MO"]), "accelerator"]) == {"h100-sxm"}
