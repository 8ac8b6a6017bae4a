"""The plan's summary: typed, written with the same keys as always, its cost breakdown adding up to the
objective (default world, N+1, Dinkelbach), the reports printing that breakdown, every JSON file strict."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from placement._errors import PlacementError
from placement.outputs.report_html import rerender_report
from placement.plan.record import Plan
from placement.plan.solve import run
from placement.results import jsonio
from placement.results.cost_breakdown import CostBreakdown, cost_breakdown_of_site_table
from placement.results.folder import read_results_folder
from placement.results.summary import PlanSummary
from placement.scenario.load import load_scenario
from tests.conftest import SMALL_CATALOG, nested_mismatch, write_scenario

SUMMARY_JSON_KEYS = {
    "scenario",
    "status",
    "objective_usd_per_h",
    "cost_breakdown_usd_per_h",
    "cost_per_million_goodput_tokens_usd",
    "goodput_tok_s",
    "peak_goodput_tok_s",
    "demand_tok_s",
    "tokens_per_s_per_mw",
    "energy_mwh_per_year",
    "tco2e_per_year",
    "gco2e_per_million_goodput_tokens",
    "carbon_charge_usd_per_h",
    "embodied_tco2e_per_year",
    "water_m3_per_year",
    "water_on_site_m3_per_year",
    "water_l_per_million_goodput_tokens",
    "water_charge_usd_per_h",
    "cap_cost",
    "cache_rounds",
    "kv_tier_rounds",
    "sites_open",
    "sites_candidate",
    "nodes",
    "mw_used",
    "p99_ttft_ms_max",
    "p99_ttft_ms_mean",
    "p99_itl_ms",
    "cache_hit_rate",
    "node_kw",
    "fault_domain_coverage",
    "n_plus_one",
    "n_plus_one_applied",
    "n_plus_one_protected_share",
    "unprotectable_share",
    "n_plus_one_unprotected_share",
    "fault_domains",
    "n_plus_one_cost",
    "adequacy",
    "unserved_share",
    "time_slices",
    "rtt_quantile",
    "populations",
    "cities",
    "feasible_pairs",
    "classes",
    "dinkelbach_iterations",
    "solver",
    "solver_status",
    "solver_message",
    "best_bound_usd_per_h",
    "gap",
    "gap_basis",
    "ratio_bound_usd_per_million_tokens",
    "stopped_by",
    "runtime_s",
    "build_s",
    "notes",
    "scenario_path",
}
"""``summary.json``'s keys: a contract with users and external checks. Add, never rename or drop."""
CLASS_KEYS = {
    "class",
    "gco2e_per_million_goodput_tokens",
    "water_l_per_million_goodput_tokens",
    "goodput_tok_s",
    "cost_usd_per_h",
    "cost_per_million_goodput_tokens_usd",
    "ttft_objective_ms",
    "p99_ttft_ms_max",
    "itl_objective_ms",
    "p99_itl_ms",
    "goodput_tok_s_per_node",
    "utilisation_cap",
    "node_ttft_ms",
    "cache_hit_rate",
    "goodput_from",
    "serving_load_share",
    "speculative",
}
BREAKDOWN_KEYS = ["node_capex", "facility_capex", "idle_power", "load_energy", "opex", "site_fixed", "total"]
BREAKDOWN_LABELS = {
    "node capex": "node_capex",
    "facility capex": "facility_capex",
    "idle power": "idle_power",
    "load energy": "load_energy",
    "opex": "opex",
    "site fixed": "site_fixed",
    "total": "total",
}
DYNAMIC_POWER = {"node_kw": 10.2, "headroom": 0.2, "idle_power_share": 0.4}
"""Small scenarios with 60 % of node power following the load, so the load-energy term is not zero."""


def _strict_json(text: str) -> Any:
    def refuse(token: str) -> None:
        raise ValueError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _assert_breakdown_sums_to_objective(plan: Plan) -> CostBreakdown:
    summary = plan.summary
    breakdown = summary.cost_breakdown_usd_per_h
    assert breakdown is not None
    objective = summary.objective_usd_per_h
    assert breakdown.total_usd_per_h == pytest.approx(objective, rel=1e-6)
    # The objective is the MILP's cost terms evaluated at the answer (no penalty or ratio term).
    data, solution = plan.instance.inputs, plan.solution
    assert objective == pytest.approx(data.cost_usd_per_h(solution.open, solution.nodes, solution.pair_share), rel=1e-9)
    assert breakdown.load_energy_usd_per_h == pytest.approx(float(plan.sites["load_energy_usd_per_h"].sum()), rel=1e-9)
    from_table = cost_breakdown_of_site_table(plan.sites).to_json_dict()
    assert breakdown.to_json_dict() == pytest.approx(from_table, rel=1e-9)
    written = breakdown.to_json_dict()
    assert list(written) == BREAKDOWN_KEYS
    assert written["total"] == pytest.approx(sum(v for k, v in written.items() if k != "total"), rel=1e-12)
    return breakdown


# ----------------------------------------------------------------------------- the default world


@pytest.fixture(scope="module")
def world_summary(world_results: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = _strict_json((world_results / "summary.json").read_text(encoding="utf-8"))
    return loaded


@pytest.mark.slow
def test_summary_json_keys_are_pinned(world_summary: dict[str, Any]) -> None:
    assert set(world_summary) == SUMMARY_JSON_KEYS
    for klass in world_summary["classes"]:
        assert set(klass) == CLASS_KEYS
        assert set(klass["node_ttft_ms"]) == {"queue", "slot_wait", "prefill", "first_decode"}
    assert list(world_summary["cost_breakdown_usd_per_h"]) == BREAKDOWN_KEYS


@pytest.mark.slow
def test_default_world_carbon_adds_up_from_its_sites(world_results: Path, world_summary: dict[str, Any]) -> None:
    # An outside check on the written files: each open site's energy times the intensity of what it draws, summed;
    # that intensity is the catalog's yearly figure, shaped by the hour (solar by day) and weighted by the draw.
    sites = pd.read_csv(world_results / "sites.csv")
    tonnes = (sites["energy_mwh_per_year"] * sites["gco2e_per_kwh"] / 1e3).sum()
    drawing = sites[sites["energy_mwh_per_year"] > 1.0]
    ratio = drawing["gco2e_per_kwh"] / drawing["carbon_intensity_g_per_kwh"]
    assert ratio.between(0.8, 1.25).all() and (abs(ratio - 1) > 1e-3).any()
    assert world_summary["tco2e_per_year"] == pytest.approx(tonnes, rel=1e-6)
    assert world_summary["energy_mwh_per_year"] == pytest.approx(sites["energy_mwh_per_year"].sum(), rel=1e-9)
    grams_per_million = world_summary["tco2e_per_year"] * 1e6 / (world_summary["goodput_tok_s"] * 8760 * 3600 / 1e6)
    assert world_summary["gco2e_per_million_goodput_tokens"] == pytest.approx(grams_per_million, rel=1e-9)
    # water likewise: energy times each site's litres per kWh drawn (on site over PUE, plus the grid's)
    assert world_summary["water_m3_per_year"] == pytest.approx((sites["energy_mwh_per_year"] * sites["water_l_per_kwh"]).sum())
    assert 0 < world_summary["water_on_site_m3_per_year"] < world_summary["water_m3_per_year"]
    litres_per_million = world_summary["water_m3_per_year"] * 1e3 / (world_summary["goodput_tok_s"] * 8760 * 3600 / 1e6)
    assert world_summary["water_l_per_million_goodput_tokens"] == pytest.approx(litres_per_million, rel=1e-9)
    # per class: the classes' shares add up to the plan's (grams and litres per million, weighted by their goodput)
    classes = world_summary["classes"]
    served = sum(c["goodput_tok_s"] for c in classes)
    for key in ("gco2e_per_million_goodput_tokens", "water_l_per_million_goodput_tokens"):
        weighted = sum(c[key] * c["goodput_tok_s"] for c in classes) / served
        assert weighted == pytest.approx(world_summary[key], rel=1e-9)
    # per site: its own tonnes and cubic metres over its own goodput
    opened = sites[sites["goodput_tok_s"] > 0]
    per_site = opened["tco2e_per_year"] * 1e6 / (opened["goodput_tok_s"] * 8760 * 3600 / 1e6)
    assert opened["gco2e_per_million_goodput_tokens"].to_numpy() == pytest.approx(per_site.to_numpy(), rel=1e-6)
    # every open site draws at least its nodes' idle share all year, and no more than their full power
    opened = sites[sites["open"]]
    assert (opened["energy_mwh_per_year"] <= opened["mw_used"] * 8760 * (1 + 1e-9) + 1e-6).all()
    assert (opened.loc[opened["nodes"] > 0, "energy_mwh_per_year"] > 0).all()


@pytest.mark.slow
def test_summary_json_reads_back_to_the_same_values(world_summary: dict[str, Any]) -> None:
    summary = PlanSummary.from_json_dict(world_summary)
    again = summary.to_json_dict()
    figures = {k: v for k, v in world_summary.items() if k not in ("notes", "scenario_path")}
    assert again == figures
    assert summary.class_named("chat").name == "chat"


@pytest.mark.slow
def test_default_world_cost_breakdown_sums_to_objective(world_summary: dict[str, Any]) -> None:
    breakdown = world_summary["cost_breakdown_usd_per_h"]
    objective = world_summary["objective_usd_per_h"]
    assert breakdown["total"] == pytest.approx(objective, rel=1e-6)
    assert sum(breakdown[k] for k in BREAKDOWN_KEYS[:-1]) == pytest.approx(objective, rel=1e-6)
    assert breakdown["load_energy"] > 0  # the bundled world charges part of the power per token served
    assert all(breakdown[k] >= 0 for k in BREAKDOWN_KEYS)


def _md_breakdown(text: str) -> dict[str, float]:
    section = text.split("## Cost breakdown", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| \**([a-z ]+?)\** \| \**([\d,]+)\** \|", section, flags=re.MULTILINE)
    return {BREAKDOWN_LABELS[label]: float(value.replace(",", "")) for label, value in rows}


def _html_breakdown(text: str) -> dict[str, float]:
    section = text.split("<h2>Cost breakdown</h2>", 1)[1].split("<h2>", 1)[0]
    rows = re.findall(r"<t[dh]>([a-z ]+)</t[dh]><t[dh] class='num'>([\d,]+)</t[dh]>", section)
    return {BREAKDOWN_LABELS[label]: float(value.replace(",", "")) for label, value in rows}


@pytest.mark.slow
def test_reports_print_the_summary_breakdown(world_results: Path, world_summary: dict[str, Any]) -> None:
    expected = world_summary["cost_breakdown_usd_per_h"]
    for read in (
        _md_breakdown((world_results / "report.md").read_text(encoding="utf-8")),
        _html_breakdown((world_results / "report.html").read_text(encoding="utf-8")),
    ):
        assert list(read) == BREAKDOWN_KEYS
        for key in BREAKDOWN_KEYS:
            assert abs(read[key] - expected[key]) <= 0.5, key  # printed to the dollar
    headline = f"${world_summary['objective_usd_per_h']:,.0f}/h"
    assert headline in (world_results / "report.md").read_text(encoding="utf-8")
    assert f"**{expected['total']:,.0f}**" in (world_results / "report.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_every_json_file_of_a_results_folder_is_strict(world_results: Path) -> None:
    for path in sorted(world_results.glob("*.json")) + sorted(world_results.glob("*.geojson")):
        _strict_json(path.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_report_rebuilds_from_a_folder_written_before_the_breakdown(world_results: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    old.mkdir()
    for name in ("sites.csv", "assignments.csv", "populations.csv"):
        shutil.copyfile(world_results / name, old / name)
    document = json.loads((world_results / "summary.json").read_text(encoding="utf-8"))
    newer = (
        "cost_breakdown_usd_per_h",
        "peak_goodput_tok_s",
        "cache_hit_rate",
        "node_kw",
        "n_plus_one",
        "n_plus_one_applied",
        "time_slices",
        "rtt_quantile",
    )
    for key in (*newer, "dinkelbach_iterations"):
        document.pop(key)
    for klass in document["classes"]:
        for key in ("cost_usd_per_h", "itl_objective_ms", "utilisation_cap", "node_ttft_ms", "cache_hit_rate", "goodput_from"):
            klass.pop(key)
    (old / "summary.json").write_text(json.dumps(document), encoding="utf-8")
    results = read_results_folder(old)
    summary = results.plan_summary()
    assert summary.cost_breakdown_usd_per_h is None and summary.cache_hit_rate is None
    assert results.notes == document["notes"]
    rerender_report(old)
    rebuilt = _md_breakdown((old / "report.md").read_text(encoding="utf-8"))
    # sites.csv holds every component, so the rebuilt breakdown is the same to the dollar.
    current = json.loads((world_results / "summary.json").read_text(encoding="utf-8"))["cost_breakdown_usd_per_h"]
    assert rebuilt == {k: float(f"{current[k]:.0f}") for k in BREAKDOWN_KEYS}
    assert "not modelled" in (old / "report.md").read_text(encoding="utf-8")
    document.pop("objective_usd_per_h")
    (old / "summary.json").write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(PlacementError, match="objective_usd_per_h"):
        rerender_report(old)


# ----------------------------------------------------------------------------- small plans


def test_n_plus_one_cost_breakdown_sums_to_objective(tmp_path: Path) -> None:
    catalog = SMALL_CATALOG + "amsterdam,Amsterdam,NL,Europe,52.37,4.90,50,120,1.3,10000000,false\n"
    path = write_scenario(tmp_path, catalog=catalog, fault_tolerance={"n_plus_one": True}, serving=DYNAMIC_POWER)
    plan = run(load_scenario(path))
    assert plan.summary.n_plus_one and plan.summary.sites_open >= 3
    breakdown = _assert_breakdown_sums_to_objective(plan)
    assert breakdown.load_energy_usd_per_h > 0
    assert breakdown.site_fixed_usd_per_h == pytest.approx(250.0 * plan.summary.sites_open)


def test_dinkelbach_cost_breakdown_sums_to_objective(tmp_path: Path) -> None:
    policy = {"unreachable": "stop", "serving": "optional", "min_served_share": 0.6}
    plan = run(load_scenario(write_scenario(tmp_path, policy=policy, serving=DYNAMIC_POWER)))
    summary = plan.summary
    assert summary.unserved_share > 0.05 and len(summary.dinkelbach_iterations) >= 2
    breakdown = _assert_breakdown_sums_to_objective(plan)
    assert breakdown.load_energy_usd_per_h > 0
    # The ratio reported is the last Dinkelbach step's design: cost / goodput at lambda with value 0.
    last = summary.dinkelbach_iterations[-1]
    assert abs(last.value_usd_per_h) <= 1e-6 * last.cost_usd_per_h
    assert summary.objective_usd_per_h / summary.goodput_tok_s == pytest.approx(last.lambda_usd_per_tok_s, rel=1e-6)
    assert [s.to_json_dict() for s in summary.dinkelbach_iterations] == plan.solution.iterations
    assert nested_mismatch(summary.to_json_dict(), "dinkelbach_iterations") == ([], [])  # as the reference says


# ----------------------------------------------------------------------------- the one encoder


def test_json_encoder_writes_non_finite_numbers_as_null() -> None:
    value = {"a": math.nan, "b": [math.inf, -math.inf, 1.5], "c": np.float64("nan"), "d": np.arange(2), "e": (np.int64(3),)}
    text = jsonio.dumps(value)
    assert _strict_json(text) == {"a": None, "b": [None, None, 1.5], "c": None, "d": [0, 1], "e": [3]}
    assert jsonio.dumps({"x": 1, "y": "</"}, compact=True) == '{"x":1,"y":"</"}'
    with pytest.raises(TypeError):
        jsonio.dumps({"path": Path("/")})


def test_summary_names_the_round_trip_quantile_the_budget_used(tmp_path: Path) -> None:
    from placement.plan.solve import run
    from placement.scenario.load import load_scenario
    from tests.conftest import write_scenario

    assert run(load_scenario(write_scenario(tmp_path))).summary.rtt_quantile == "p90"
    median = tmp_path / "median"
    median.mkdir()
    plan = run(load_scenario(write_scenario(median, latency={"quantile": "p50"})))
    assert plan.summary.to_json_dict()["rtt_quantile"] == "p50"
