"""The arrangement as a choice the serving model makes per class, and what it is worth against the fixed arrangement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from placement.analyses.arrangement import fixed_arrangement
from placement.cli import main
from placement.profiles.build import class_profiles
from placement.scenario.classes import WorkloadClass
from placement.scenario.load import load_scenario
from placement.scenario.sections import ServingSection
from placement.world.bundled import scenario_file
from tests.conftest import nested_mismatch, script_module


def _class(name: str, **lengths: float) -> WorkloadClass:
    return WorkloadClass(name=name, share=0.5, serving_ttft_budget_ms=lengths.pop("budget"), **lengths)  # type: ignore[arg-type]


def test_disaggregated_auto_splits_the_pools_only_where_they_give_more_goodput() -> None:
    """Long prompts with a tight ITL: chunks of an 8,000-token prompt in every step break the ITL, pools do not."""
    long_prompts = _class("rag", ttft_p99_ms=3000, itl_p99_ms=30, input_tokens=8000, output_tokens=100, budget=2000)
    chat = _class(
        "chat",
        ttft_p99_ms=300,
        itl_p99_ms=50,
        input_tokens=1155,
        input_tokens_max=4142,
        output_tokens=211,
        prefix_cache_hit_rate=0.5,
        budget=170,
    )
    fixed, auto = ServingSection(), ServingSection(disaggregated="auto")
    plain = {p.name: p for p in class_profiles([long_prompts, chat], fixed, source="test")}
    chosen = {p.name: p for p in class_profiles([long_prompts, chat], auto, source="test")}
    assert chosen["rag"].serving_mode == "disaggregated" and plain["rag"].serving_mode == "aggregated"
    assert chosen["rag"].goodput_tok_s_per_node > 2 * plain["rag"].goodput_tok_s_per_node
    assert chosen["chat"].serving_mode == "aggregated"
    assert chosen["chat"].goodput_tok_s_per_node == plain["chat"].goodput_tok_s_per_node


def test_the_options_and_the_fixed_arrangement() -> None:
    loaded = load_scenario(scenario_file("world-arrangement"))
    assert loaded.scenario.serving.arrangement_options() == {
        "speculative": "auto",
        "disaggregated": "auto",
        "kv_cache": "dram",
        "node_ttft_ladder": [0.8, 0.6],
        "pool_nodes": 8,
        "cross_metro_prefill": {"rtt_ms": [10.0, 25.0], "partners": 3, "wan_gbit_s": 400.0, "wan_usd_per_gb": 0.0002},
    }
    fixed = fixed_arrangement(loaded).scenario.serving
    assert fixed.speculative is None and fixed.disaggregated is False and fixed.kv_cache is None
    assert fixed.node_ttft_ladder is None and fixed.pool_nodes == 1 and fixed.cross_metro_prefill is None
    assert fixed.arrangement_options() == {}
    default = load_scenario(scenario_file("default"))
    assert default.scenario.serving.arrangement_options() == {}, "the bundled default keeps the fixed arrangement"


@pytest.mark.slow
def test_the_bundled_world_with_every_option_against_the_fixed_arrangement(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["solve", "world-arrangement", "--out", str(out), "--quiet", "--no-maps"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    arrangement = summary["arrangement"]
    classes = arrangement["classes"]
    assert set(classes) == {"chat", "agent", "batch"}
    chat = classes["chat"]
    # pooled over 8 nodes, prefill and decode pools beat chunked prefill for chat and agent (since NVSwitch's
    # in-network all-reduce made TP8 prefill cheap, by less; with decode attention padded to its tile, agent 4,712
    # tok/s per node with EAGLE-3 against 2,687)
    assert chat["serving_mode"].startswith("disaggregated")
    assert chat["goodput_tok_s_per_node"] > 1.1 * chat["goodput_tok_s_per_node_fixed_arrangement"]
    assert chat["usd_per_million_goodput_tokens"] < chat["usd_per_million_goodput_tokens_fixed_arrangement"]
    steps = chat["waterfall"]
    # the waterfall is read from the tables as cost_waterfall.png draws it: it adds up to the class's $/M
    assert sum(steps["steps"].values()) == pytest.approx(chat["usd_per_million_goodput_tokens"], rel=1e-3)
    assert sum(steps["steps_fixed_arrangement"].values()) == pytest.approx(
        chat["usd_per_million_goodput_tokens_fixed_arrangement"], rel=1e-3
    )
    assert steps["moved_most_usd_per_m"] < 0, "more goodput per node shrinks a step of chat's waterfall"
    agent = classes["agent"]
    assert agent["serving_mode"].startswith("disaggregated"), "agent's 110 ms node TTFT: chunked prefill cannot hold its batch"
    assert agent["goodput_tok_s_per_node"] > 1.6 * agent["goodput_tok_s_per_node_fixed_arrangement"]
    assert classes["batch"]["serving_mode"] == "aggregated+eagle3"
    # why each site serves each class the way it does: the modes the serving model compared, best first
    reasons = arrangement["mode_reasons"]
    assert set(reasons) == set(arrangement["modes_by_site"])
    some_site = next(iter(reasons.values()))
    mode = agent["serving_mode"]
    assert some_site["agent"].startswith(f"most goodput per node of the modes compared: {mode} ")
    assert "aggregated" in some_site["agent"].split(mode, 1)[1], "the mode it beat, with its figure"
    # cross-metro prefill: columns for chat and agent; batch is time-shiftable and served whole anywhere
    cross = arrangement["cross_metro"]
    assert cross["classes"]["chat"]["columns"] > 0 and cross["classes"]["agent"]["columns"] > 0
    assert cross["classes"]["batch"]["columns"] == 0 and "time-shiftable" in cross["classes"]["batch"]["why_none"]
    links = pd.read_csv(out / "cross_metro_links.csv")
    assert links["goodput_tok_s"].sum() == pytest.approx(
        cross["classes"]["chat"]["goodput_tok_s"] + cross["classes"]["agent"]["goodput_tok_s"]
    )
    assert set(cross["classes"]["chat"]["by_site_rtt_ms"]) == {"10", "25"}
    near, far = (cross["classes"]["chat"]["by_site_rtt_ms"][k] for k in ("10", "25"))
    assert near["goodput_tok_s_per_node"] > far["goodput_tok_s_per_node"], "a nearer prefill site leaves the pools more time"
    assert arrangement["usd_per_million_goodput_tokens"] < arrangement["usd_per_million_goodput_tokens_fixed_arrangement"]
    assert summary["cost_per_million_goodput_tokens_usd"] == pytest.approx(arrangement["usd_per_million_goodput_tokens"])
    # modes by site are the classes each open site serves, and sites.csv says the same
    sites = pd.read_csv(out / "sites.csv", keep_default_na=False)
    assignments = pd.read_csv(out / "assignments.csv")
    served = assignments[assignments["goodput_tok_s"] > 0].groupby("site_id")["class"].agg(set).to_dict()
    by_site = arrangement["modes_by_site"]
    assert {s: set(c) for s, c in by_site.items()} == served
    row = sites.set_index("site_id").loc[next(iter(by_site))]
    for name, mode in by_site[next(iter(by_site))].items():
        assert row[f"serving_mode_{name}"] == mode
    assert "What the arrangement is worth" in (out / "report.md").read_text()
    # the cache model: every open site's hit rate per class it serves, at most the class's limit
    hits = arrangement["hit_rates_by_site"]
    assert set(hits) == set(by_site) and arrangement["cache_warmup_nodes_per_site"] >= 1
    own_part = sites["accelerator"] == "h100-sxm"  # the Chinese sites run the Ascend stand-in: its own cache, its own limit
    for name in ("chat", "agent"):
        cache = classes[name]["kv_cache"]
        every = sites[f"prefix_hit_rate_{name}"].replace("", float("nan")).astype(float)
        rates, own = every.dropna(), every[own_part].dropna()
        # (the class's limit is a fixed point of hit rate and goodput, converged to 1e-4)
        assert len(own) and (own <= cache["hit_rate_limit"] + 1e-4).all() and (rates > 0).all()
        assert (rates <= 0.5 + 1e-9).all(), "no site's rate above the class's own prefix_cache_hit_rate"
        # the class's figure is its sites' goodput-weighted mean
        assert rates.min() - 1e-9 <= classes[name]["prefix_hit_rate"] <= rates.max() + 1e-9
    assert classes["chat"]["kv_cache"]["value_usd_per_million_goodput_tokens"] > 0
    # the ladder: far chat pairs run 136 ms (80 % of 170) and the plan leaves less demand unserved
    shares = classes["chat"]["node_ttft_budget_shares"]
    assert set(shares) >= {"170", "136"} and shares["170"] > shares["136"] > 0
    assert sum(shares.values()) == pytest.approx(1.0)
    assert set(assignments["node_ttft_budget_ms"].round(6)) >= {170.0, 136.0}
    assert arrangement["unserved_share"] < arrangement["unserved_share_fixed_arrangement"] - 0.02
    for key in ("arrangement", "cache_rounds", "classes"):  # the keys as the output reference describes them
        assert nested_mismatch(summary, key) == ([], []), key
    _the_models_pages_tables_come_from_the_folder(out, summary)


def _the_models_pages_tables_come_from_the_folder(out: Path, summary: dict[str, Any]) -> None:
    """scripts/arrangement_table.py: docs/models/serving.md's tables, regenerated from the folder's summary.json."""
    script = script_module("arrangement_table")
    classes, options = summary["arrangement"]["classes"], summary["arrangement"]["option_values"]
    first, second, third, fourth = script.tables(summary).rstrip("\n").split("\n\n")
    rows = first.splitlines()[2:]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows] == [*classes, "the plan"]
    for row, figures in zip(rows, classes.values(), strict=False):
        assert f"**{figures['usd_per_million_goodput_tokens']:.3f}**" in row
        assert f"| {figures['usd_per_million_goodput_tokens_fixed_arrangement']:.3f} |" in row
    assert f"{summary['sites_open']} sites" in rows[-1]
    option_rows = second.splitlines()[2:]
    assert [r.split(" | ")[0].lstrip("| ").strip("`") for r in option_rows] == list(options)
    for row, figures in zip(option_rows, options.values(), strict=True):
        assert f"| {figures['usd_per_million_goodput_tokens_without']:.3f} |" in row
    assert [r.split(" | ")[0].lstrip("| ") for r in third.splitlines()[2:]] == list(classes)
    assert "most goodput per node of the modes compared" in third
    cross = summary["arrangement"]["cross_metro"]["classes"]
    assert [r.split(" | ")[0].lstrip("| ") for r in fourth.splitlines()[2:]] == list(cross)
    assert f"| {cross['chat']['whole_nodes_per_1000_tok_s']:.3f} |" in fourth


def test_the_arrangement_table_refuses_a_plan_without_arrangement(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = script_module("arrangement_table")
    (tmp_path / "summary.json").write_text(json.dumps({"scenario": "plain"}))
    assert script.main([str(tmp_path)]) == 2
    assert "no arrangement" in capsys.readouterr().out
    assert script.main([str(tmp_path / "missing")]) == 2


@pytest.mark.slow
def test_compare_shows_the_fixed_arrangement_beside_the_optimum() -> None:
    from placement.analyses.compare import compare_placements

    rows = {r["placement"]: r for r in compare_placements(load_scenario(scenario_file("world-arrangement")))}
    assert list(rows)[:2] == ["optimal", "optimal, fixed arrangement"]
    assert {"nearest-metro", "cheapest-power", "single-region"} <= set(rows)
    mine, fixed = rows["optimal"], rows["optimal, fixed arrangement"]
    assert mine["cost_per_million_goodput_tokens_usd"] < fixed["cost_per_million_goodput_tokens_usd"]
    assert mine["tokens_per_s_per_mw"] > fixed["tokens_per_s_per_mw"], "same silicon, more goodput per MW"


def test_each_option_is_valued_on_its_own_beside_all_of_them(tmp_path: Path) -> None:
    # With speculation, disaggregation and 8-node pools on, `placement solve` solves the world once more per option with
    # that one off (the others on): summary.json's option_values carry each plan's $/M, the same as solving that
    # scenario on its own, and what the option is worth against the plan with all of them.
    import json

    from placement.analyses.arrangement import without_option
    from placement.plan.solve import run
    from tests.conftest import computed_chat, write_scenario

    serving = {
        "model": "llama-3.1-70b",
        "accelerator": "h100-sxm",
        "speculative": "auto",
        "disaggregated": "auto",
        "pool_nodes": 8,
    }
    rag = computed_chat(400.0, name="rag", input_tokens=8000, input_tokens_max=12000, output_tokens=100)
    path = write_scenario(tmp_path, classes=[rag], serving=serving, latency={"model": "great_circle"},
                          policy={"unreachable": "report"})  # fmt: skip
    out = tmp_path / "out"
    assert main(["solve", str(path), "--out", str(out), "--quiet", "--no-maps"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    values = summary["arrangement"]["option_values"]
    assert sorted(values) == ["disaggregated", "pool_nodes", "speculative"]
    total = summary["arrangement"]["usd_per_million_goodput_tokens"]
    alone = run(without_option(load_scenario(path), "disaggregated"))
    assert values["disaggregated"]["usd_per_million_goodput_tokens_without"] == pytest.approx(
        alone.summary.cost_per_million_goodput_tokens_usd, rel=1e-9
    )
    for v in values.values():
        assert v["worth_usd_per_million_goodput_tokens"] == pytest.approx(v["usd_per_million_goodput_tokens_without"] - total)
