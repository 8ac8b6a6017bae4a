"""Cross-metro prefill in the plan: two metros, a decode pool near the users and a prefill pool where power is cheap.

Frankfurt's users reach a Frankfurt site (dear: $300/MWh, $40 M per MW of facility) and an Amsterdam one 364 km away
(cheap: $30/MWh, $8 M per MW). Their connections are cold (three round trips before the first token), so Amsterdam
is out of their TTFT objective served whole, but one round trip Frankfurt -> Amsterdam for the prompt and its KV
fits: the decode pool in Frankfurt, the prefill pool in Amsterdam. The class is long prompts (8,000 tokens) under a
30 ms ITL, served as prefill and decode pools: nearly all of a node's work is the prefill. (Left to the plan,
``disaggregated: auto``, aggregated nodes reach Amsterdam whole at a quarter of the goodput: the last test.)
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from placement.analyses.exposure import failover_exposure
from placement.analyses.modes import cross_metro_links, mode_reasons, modes_by_site
from placement.cli import main
from placement.instance.build import build_instance
from placement.instance.cross_metro import EnergyPrices, build_cross_metro
from placement.plan.solve import run, solve_instance
from placement.scenario.load import load_scenario
from tests.conftest import CATALOG_HEADER, write_scenario

CITIES = (
    "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
    "1,Frankfurt,DE,05,50.11,8.68,800000,Europe/Berlin\n"
)


def _catalog(partner: tuple[str, float, float] = ("amsterdam", 52.37, 4.90)) -> str:
    name, lat, lon = partner
    return CATALOG_HEADER + (
        f"frankfurt,Frankfurt,DE,Europe,50.11,8.68,50,300,1.3,40000000,false\n"
        f"{name},{name.title()},NL,Europe,{lat},{lon},50,30,1.3,8000000,false\n"
    )


def _scenario(
    folder: Path,
    *,
    cross_metro: dict[str, Any] | None,
    catalog: str | None = None,
    ttft_ms: float = 640,
    disaggregated: bool | str = True,
) -> Path:
    rag = {
        "name": "rag",
        "share": 1.0,
        "ttft_p99_ms": ttft_ms,
        "itl_p99_ms": 30,
        "connection": "cold",  # three round trips to the users' site before the first token
        "serving_ttft_budget_ms": 600,
        "retrieval_ms": 0,
        "safety_tokenization_ms": 0,
        "input_tokens": 8000,
        "output_tokens": 100,
    }
    serving = {"model": "llama-3.1-70b", "accelerator": "h100-sxm", "disaggregated": disaggregated, "pool_nodes": 8}
    if cross_metro is not None:
        serving["cross_metro_prefill"] = cross_metro
    folder.mkdir(parents=True, exist_ok=True)
    return write_scenario(
        folder,
        catalog=catalog or _catalog(),
        cities=CITIES,
        classes=[rag],
        serving=serving,
        latency={"model": "great_circle"},
        economics={"site_fixed_cost_usd_per_h": 0},
        policy={"unreachable": "report"},
    )


CROSS = {"rtt_ms": [10, 25], "partners": 1, "wan_gbit_s": 400, "wan_usd_per_gb": 0.0002}


def _best_split_usd_per_h(
    d: float, mean: float, whole: float, decode: float, prefill: float, cost: tuple[float, float], wan: float
) -> float:
    """Least $/h serving a peak of ``d`` tok/s (daily mean ``mean``) with a share x split, by hand.

    ``whole``, ``decode`` and ``prefill`` are node-equivalents per tok/s; ``cost`` the node $/h at Frankfurt and
    Amsterdam; ``wan`` the WAN $/h per mean tok/s moved. Frankfurt carries ``d (whole (1 - x) + decode x)`` nodes
    and Amsterdam ``d prefill x``: every integer node count at each, with x at an end of the range it allows.
    """
    best = math.inf
    for k_p in range(math.ceil(d * prefill - 1e-9) + 1):
        x_high = min(1.0, k_p / (d * prefill))
        for k_d in range(math.ceil(d * decode - 1e-9), math.ceil(d * whole - 1e-9) + 1):
            x_low = max(0.0, (whole - k_d / d) / (whole - decode))
            if x_low > x_high + 1e-12:
                continue
            for x in (x_low, x_high):
                best = min(best, k_d * cost[0] + k_p * cost[1] + wan * mean * x)
    return best


def test_cross_metro_prefill_is_cheapest_inside_the_objective(tmp_path: Path) -> None:
    instance = build_instance(load_scenario(_scenario(tmp_path / "on", cross_metro=CROSS)))
    cross = instance.cross_metro
    assert cross is not None
    # the geometry: Amsterdam is out of reach served whole, in reach as the prefill site of Frankfurt
    rtt = instance.rtt_ms[0]
    whole = instance.profiles[0]
    assert whole.serving_mode == "disaggregated" and whole.round_trips == 3
    assert 3 * rtt[0] + whole.fixed_ttft_ms <= 640 < 3 * rtt[1] + whole.fixed_ttft_ms
    assert instance.allowed.row(0).tolist() == [True, False]
    site_rtt = float(cross.site_rtt_ms[0, 1])
    assert site_rtt <= 10, "a 10 ms allowance covers Frankfurt-Amsterdam"
    step = cross.steps(0)[0]
    assert step.allowance_ms == 10
    assert 3 * rtt[0] + step.profile.fixed_ttft_ms + site_rtt <= 640
    # the split: the decode pool in Frankfurt needs a small part of the nodes of serving the class whole there
    # (a tenth with the calibration in force)
    assert step.decode_nodes_per_tok_s < 0.12 * whole.nodes_per_tok_s
    assert len(cross.pairs) == 1 and cross.pairs.prefill_site.tolist() == [1]

    plan = solve_instance(instance)
    node_cost = instance.node_cost.total_usd_per_h
    assert node_cost[0] > node_cost[1] + 5, "Frankfurt's nodes are dearer: its facility and its power"
    d, mean = float(instance.inputs.slice_demand_tok_s[0, 0]), float(instance.inputs.mean_demand_tok_s[0])
    assert d == pytest.approx(2 * mean), "one peak slice: nodes carry the peak, the WAN moves the daily mean"
    wan_per_tok_s = step.kv_gb_per_tok * 3600.0 * CROSS["wan_usd_per_gb"]
    expected = _best_split_usd_per_h(
        d,
        mean,
        whole.nodes_per_tok_s,
        step.decode_nodes_per_tok_s,
        step.prefill_nodes_per_tok_s,
        (node_cost[0], node_cost[1]),
        wan_per_tok_s,
    )
    served_whole_usd_per_h = math.ceil(d * whole.nodes_per_tok_s - 1e-9) * node_cost[0]
    assert expected < served_whole_usd_per_h, "by hand: splitting is cheaper than serving the class whole in Frankfurt"
    assert plan.solution.objective_usd_per_h == pytest.approx(expected, rel=1e-6)
    assert plan.summary.objective_usd_per_h == pytest.approx(expected, rel=1e-6)
    # the plan's tables: the assignment names its prefill site, its TTFT carries the sites' round trip and fits
    a = plan.assignments
    far = a[a["prefill_site_id"] == "amsterdam"]
    assert far["goodput_tok_s"].sum() > 0.5 * a["goodput_tok_s"].sum()
    assert (far["site_id"] == "frankfurt").all() and (far["serving_mode"] == "cross-metro").all()
    assert far["ttft_p99_ms"].max() <= 640 + 1e-9
    parts = ["network_ms", "queue_ms", "slot_wait_ms", "retrieval_ms", "prefill_ms", "safety_tokenization_ms", "first_decode_ms"]
    assert far[parts].sum(axis=1).to_numpy() == pytest.approx(far["ttft_p99_ms"].to_numpy())
    assert far["network_ms"].to_numpy() == pytest.approx(3 * rtt[0] + site_rtt)
    # the cost adds up: sites (nodes, energy and the WAN bought by the decode site) to the objective
    sites = plan.sites.set_index("site_id")
    assert sites.loc["amsterdam", "nodes"] > sites.loc["frankfurt", "nodes"] > 0
    wan = float(far["kv_wan_gb_per_h"].sum()) * CROSS["wan_usd_per_gb"]
    assert sites.loc["frankfurt", "wan_usd_per_h"] == pytest.approx(wan)
    assert plan.summary.cost_breakdown_usd_per_h.wan_transport_usd_per_h == pytest.approx(wan)
    assert modes_by_site(plan) == {"frankfurt": {"rag": "cross-metro"}, "amsterdam": {"rag": "prefill-pool"}}
    links = cross_metro_links(plan)
    assert links[["decode_site_id", "prefill_site_id"]].to_numpy().tolist() == [["frankfurt", "amsterdam"]]
    assert links["why"].iat[0].startswith("cheaper per token")

    # without the option the same world serves the class whole in Frankfurt, at more cost per token
    off = run(load_scenario(_scenario(tmp_path / "off", cross_metro=None)))
    assert off.solution.objective_usd_per_h == pytest.approx(served_whole_usd_per_h, rel=1e-6)
    assert off.summary.goodput_tok_s == pytest.approx(plan.summary.goodput_tok_s)
    assert plan.summary.cost_per_million_goodput_tokens_usd < off.summary.cost_per_million_goodput_tokens_usd


def test_a_kv_transfer_that_does_not_fit_the_budget_is_not_chosen(tmp_path: Path) -> None:
    """At 10 Gbit/s the p99 prompt's KV (8,000 tokens x 160 KiB, 1.3 GB) takes a second: more than the node's 600 ms."""
    slow = {**CROSS, "wan_gbit_s": 10}
    plan = run(load_scenario(_scenario(tmp_path / "slow", cross_metro=slow)))
    cross = plan.instance.cross_metro
    assert cross is not None and cross.steps(0) == []
    assert "leaves no time to prefill" in cross.why_none(0) and "1048.6 ms at 10 Gbit/s" in cross.why_none(0)
    assert len(cross.pairs) == 0 and not plan.instance.inputs.has_remote
    assert (plan.assignments["prefill_site_id"] == "").all()
    off = run(load_scenario(_scenario(tmp_path / "off", cross_metro=None)))
    assert plan.solution.objective_usd_per_h == pytest.approx(off.solution.objective_usd_per_h, rel=1e-9)
    reasons = json.dumps(mode_reasons(plan))
    assert "no cross-metro prefill" in reasons and "leaves no time to prefill" in reasons


def test_a_partner_farther_than_the_largest_round_trip_is_none(tmp_path: Path) -> None:
    """Lisbon is ~1,860 km from Frankfurt: its round trip is over 25 ms, so Frankfurt has no prefill site."""
    catalog = _catalog(("lisbon", 38.72, -9.14))
    instance = build_instance(load_scenario(_scenario(tmp_path / "far", cross_metro=CROSS, catalog=catalog)))
    cross = instance.cross_metro
    assert cross is not None and cross.site_rtt_ms[0, 1] > 25
    assert len(cross.pairs) == 0 and cross.reach[0].no_partner == cross.reach[0].local_pairs == 1
    assert cross.why_none(0) == "no site with power within 25 ms of a decode site"


def test_the_cli_writes_the_links_and_takes_n_plus_one(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path / "cli", cross_metro=CROSS)
    out = tmp_path / "out"
    assert main(["solve", str(scenario), "--out", str(out), "--quiet", "--no-maps"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    xm = summary["arrangement"]["cross_metro"]
    assert xm["classes"]["rag"]["share_of_class"] > 0.5
    assert xm["links"][0]["decode_site_id"] == "frankfurt" and xm["links"][0]["prefill_site_id"] == "amsterdam"
    assert summary["arrangement"]["modes_by_site"]["amsterdam"] == {"rag": "prefill-pool"}
    assert summary["cost_breakdown_usd_per_h"]["wan_transport"] == pytest.approx(xm["wan_usd_per_h"])
    links = pd.read_csv(out / "cross_metro_links.csv")
    assert links["kv_gb_per_h"].sum() == pytest.approx(xm["kv_gb_per_h"])
    sites = pd.read_csv(out / "sites.csv", keep_default_na=False).set_index("site_id")
    assert (
        sites.loc["frankfurt", "serving_mode_rag"] == "cross-metro"
        and sites.loc["amsterdam", "serving_mode_rag"] == "prefill-pool"
    )
    report = (out / "report.md").read_text()
    assert "WAN transport" in report and "rag: cross-metro prefill carries" in report
    # Losing the prefill site loses what it prefilled (before: the exposure read only the decode site, and said 0).
    assignments = pd.read_csv(out / "assignments.csv", keep_default_na=False)
    prefilled = assignments.loc[assignments["prefill_site_id"] == "amsterdam", "goodput_tok_s"].sum()
    assert prefilled > 0
    lost = failover_exposure(out, site_ids=["amsterdam"])
    rag = lost.commodities.set_index("class").loc["rag"]
    assert rag["served_there_tok_s"] == pytest.approx(prefilled, rel=1e-6)
    assert rag["rerouted_tok_s"] + rag["unserved_tok_s"] == pytest.approx(prefilled, rel=1e-6)
    # what moves is served whole at Frankfurt on the nodes its decode pool no longer needs: no more than they hold
    whole = build_instance(load_scenario(scenario)).profiles[0]
    spare = sites.loc["frankfurt", "nodes"] / whole.nodes_per_tok_s
    assert 0 < rag["rerouted_tok_s"] <= spare * (1 + 1e-6)
    # and losing the decode site loses the same goodput (the cross-metro rows are served there)
    decode = failover_exposure(out, site_ids=["frankfurt"]).commodities.set_index("class").loc["rag"]
    assert decode["served_there_tok_s"] == pytest.approx(assignments["goodput_tok_s"].sum(), rel=1e-6)
    text = (tmp_path / "cli" / "scenario.yaml").read_text() + "fault_tolerance: {n_plus_one: true}\n"
    (tmp_path / "cli" / "scenario.yaml").write_text(text)
    # N+1 is taken with it (tests/plan/test_failover_cross_metro.py); here Frankfurt is the one site the users reach
    # served whole, so the class has no second site: served, unprotectable, and said so
    assert main(["solve", str(scenario), "--out", str(tmp_path / "n1"), "--quiet", "--no-maps"]) == 0
    protected = json.loads((tmp_path / "n1" / "summary.json").read_text())
    assert protected["n_plus_one"] and protected["unprotectable_share"] == pytest.approx(1.0)
    assert protected["objective_usd_per_h"] == pytest.approx(summary["objective_usd_per_h"])


def test_a_decode_pool_no_lighter_than_the_whole_node_makes_no_column(tmp_path: Path) -> None:
    """Where serving the class whole at the decode site uses no more node-equivalents than the decode pool alone, the
    column would load that site as much and the prefill site besides: it is not made, and the plan says so."""
    instance = build_instance(load_scenario(_scenario(tmp_path / "dom", cross_metro=CROSS)))
    cross = instance.cross_metro
    assert cross is not None and len(cross.pairs) == 1
    first = cross.pairs.first
    lighter = replace(
        instance.inputs,
        **{
            name: getattr(instance.inputs, name)[:first]
            for name in ("pair_commodity", "pair_site", "pair_rtt_ms", "pair_cost_usd_per_h")
        },
        pair_nodes_per_tok_s=np.full(first, cross.steps(0)[0].decode_nodes_per_tok_s),
        pair_remote_site=None,
        pair_remote_nodes_per_tok_s=None,
    )
    again = build_cross_metro(
        lighter,
        spec=cross.spec,
        profiles=cross.profiles,
        class_profiles=instance.profiles,
        site_rtt_ms=cross.site_rtt_ms,
        row_class=instance.commodity_class[instance.modelled],
        row_rtt_ms=instance.rtt_ms[instance.commodity_population[instance.modelled]],
        row_permitted=np.ones((len(instance.modelled), len(instance.sites)), dtype=bool),
        retrieval_extra_ms=instance.retrieval_extra_ms,
        node_usd_per_h=instance.node_cost.total_usd_per_h,
        energy=EnergyPrices(lighter.slice_demand_tok_s, np.ones(1), np.ones((2, 1)), 0.0),
    )
    assert len(again.pairs) == 0 and again.reach[0].dominated == again.reach[0].local_pairs == 1
    assert again.why_none(0).startswith("dominated: its decode pool alone needs")


def test_the_mode_is_each_pairs_own_where_the_scenario_leaves_it_open(tmp_path: Path) -> None:
    """``disaggregated: auto``: pools where they fit, aggregated nodes (a quarter of the goodput, no KV transfer, less
    node TTFT) where the pools do not. Frankfurt has power for half the demand: with pools alone the rest is unserved
    (Amsterdam is out of reach served whole); left to the plan, Amsterdam serves it on aggregated nodes."""
    small = _catalog().replace("50.11,8.68,50,300", "50.11,8.68,0.05,300")
    fixed = build_instance(load_scenario(_scenario(tmp_path / "pools", cross_metro=None, catalog=small)))
    auto = build_instance(load_scenario(_scenario(tmp_path / "auto", cross_metro=None, catalog=small, disaggregated="auto")))
    pools, *others = auto.rungs[0]
    assert pools.goodput_tok_s_per_node == fixed.profiles[0].goodput_tok_s_per_node
    assert [p.serving_mode for p in others] == ["aggregated"]
    aggregated = others[0]
    assert aggregated.goodput_tok_s_per_node < pools.goodput_tok_s_per_node
    rtt = auto.rtt_ms[0]
    assert 3 * rtt[1] + pools.fixed_ttft_ms > 640 >= 3 * rtt[1] + aggregated.fixed_ttft_ms, "the geometry of the test"
    assert fixed.allowed.row(0).tolist() == [True, False] and auto.allowed.row(0).tolist() == [True, True]
    # each pair runs its own mode: Frankfurt's the pools, Amsterdam's the aggregated node, at its goodput
    first = auto.inputs.pair_site.tolist().index(1)
    assert auto.inputs.pair_nodes_per_tok_s[first] == pytest.approx(aggregated.nodes_per_tok_s)
    plan_fixed, plan_auto = solve_instance(fixed), solve_instance(auto)
    unserved = [float(p.populations["unserved_tok_s"].sum()) for p in (plan_fixed, plan_auto)]
    assert unserved[0] > 0 and unserved[1] == pytest.approx(0.0, abs=1e-6)
    served = plan_auto.assignments[plan_auto.assignments["goodput_tok_s"] > 0]
    assert dict(zip(served["site_id"], served["serving_mode"], strict=True)) == {
        "frankfurt": "disaggregated",
        "amsterdam": "aggregated",
    }
    assert modes_by_site(plan_auto) == {"frankfurt": {"rag": "disaggregated"}, "amsterdam": {"rag": "aggregated"}}
    assert mode_reasons(plan_auto)["amsterdam"]["rag"].startswith("aggregated: most of its users here are too far")
