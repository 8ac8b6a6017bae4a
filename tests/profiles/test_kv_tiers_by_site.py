"""A KV cache tier per site: the catalog's ``kv_tier`` gives each site its own cache, so its own node.

Atlanta keeps prefixes in HBM only; Chicago has host DRAM and NVMe behind it. With the cache model a node's retention,
its hit rate, its hits' load time (in the TTFT) and the cold-cache nodes of a site are its tier's, and so are the
goodput per node each pair is sized with: the plan is checked against each tier's own profile, by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from placement._errors import InputError
from placement.cli import main
from placement.instance.build import build_instance
from placement.plan.solve import solve_instance
from placement.profiles.tiers import ProfileSets
from placement.scenario.load import load_scenario
from placement.serving.prefix_cache import TIER_ORDER
from placement.world.catalog import KV_TIERS
from tests.conftest import CATALOG_HEADER, computed_chat, nested_mismatch, write_scenario

HEADER = CATALOG_HEADER.rstrip("\n") + ",kv_tier\n"
CATALOG = HEADER + (
    "atlanta,Atlanta,US,North America,33.75,-84.39,50,40,1.3,10000000,true,hbm\n"
    "chicago,Chicago,US,North America,41.88,-87.63,50,120,1.3,10000000,true,nvme\n"
)
CITIES = (
    "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
    "1,Atlanta,US,GA,33.75,-84.39,500000,America/New_York\n"
    "2,Chicago,US,IL,41.88,-87.63,2700000,America/Chicago\n"
)


def _scenario(folder: Path, catalog: str = CATALOG, *, ttft_ms: float = 1000) -> Path:
    chat = computed_chat(ttft_ms, prefix_reuse="chat")
    serving = {"model": "llama-3.1-70b", "accelerator": "h100-sxm", "kv_cache": {"tier": "dram"}}
    folder.mkdir(parents=True, exist_ok=True)
    return write_scenario(
        folder,
        catalog=catalog,
        cities=CITIES,
        classes=[chat],
        serving=serving,
        latency={"model": "great_circle"},
        economics={"site_fixed_cost_usd_per_h": 0},
        policy={"unreachable": "report"},
    )


def _local_objective(tmp_path: Path) -> float:
    """An objective each city meets at its own site only (between the local and the cross TTFTs)."""
    probe = build_instance(load_scenario(_scenario(tmp_path / "probe")))
    ttft = np.array([[float(probe.ttft_ms(c, j)) for j in range(2)] for c in range(2)])
    local, cross = max(ttft[0, 0], ttft[1, 1]), min(ttft[0, 1], ttft[1, 0])
    assert local < cross, "the geometry: each city is nearer its own site"
    return float(local + cross) / 2


def test_each_site_serves_with_its_own_tier(tmp_path: Path) -> None:
    instance = build_instance(load_scenario(_scenario(tmp_path / "two", ttft_ms=_local_objective(tmp_path))))
    assert instance.tier_names == ("hbm", "nvme") and instance.site_set is not None
    assert [instance.site_tier(j) for j in range(2)] == ["hbm", "nvme"]
    hbm, nvme = instance.profiles_at(0)[0], instance.profiles_at(1)[0]
    assert hbm.cache is not None and nvme.cache is not None
    assert (hbm.cache.tier, nvme.cache.tier) == ("hbm", "nvme")
    assert nvme.cache.retention_s > 10 * hbm.cache.retention_s, "24 TB of NVMe keeps a prefix far longer than HBM"
    assert nvme.cache.hit_load_ms > hbm.cache.hit_load_ms == 0.0, "an NVMe hit is loaded back; an HBM hit is in place"
    assert hbm.goodput_tok_s_per_node != nvme.goodput_tok_s_per_node
    # every pair is sized with its own site's tier
    data = instance.inputs
    expected = np.where(data.pair_site == 0, hbm.nodes_per_tok_s, nvme.nodes_per_tok_s)
    assert data.pair_nodes_per_tok_s == pytest.approx(expected)
    # each site holds its own tier's cold-cache nodes
    assert instance.cache_warmup_nodes.tolist() == [math.ceil(hbm.warmup_nodes - 1e-9), math.ceil(nvme.warmup_nodes - 1e-9)]
    plan = solve_instance(instance)
    sites = plan.sites.set_index("site_id")
    assert sites["kv_tier"].to_dict() == {"atlanta": "hbm", "chicago": "nvme"}
    # by hand: each site's nodes carry the busiest slice of what it serves at its own tier's goodput per node, and
    # the shared prefixes its own tier's cache misses at that load
    share = plan.solution.pair_share
    caches = [hbm.cache, nvme.cache]
    per_site = []
    for j in range(2):
        at = np.flatnonzero(data.pair_site == j)
        slices = []
        for t in range(len(data.slice_hours)):
            tok_s = share[at] * data.slice_demand_tok_s[data.pair_commodity[at], t]
            slices.append(float(tok_s @ expected[at]) + float(caches[j].miss_nodes(tok_s.sum())[0]))
        per_site.append(max(slices))
    for nodes, need in zip(plan.solution.nodes.tolist(), per_site, strict=True):
        assert math.ceil(need - 0.01) <= nodes <= math.ceil(need - 1e-9)
    served = plan.assignments.groupby("site_id")["goodput_tok_s"].sum()
    assert set(served.index) == {"atlanta", "chicago"}
    a = plan.assignments
    at = a[a["site_id"] == "chicago"]
    assert at["prefill_ms"].to_numpy() == pytest.approx(nvme.prefill_ms), "the NVMe load time is in Chicago's TTFT"
    assert a.loc[a["site_id"] == "atlanta", "prefill_ms"].to_numpy() == pytest.approx(hbm.prefill_ms)
    assert (a["goodput_tok_s_per_node"].to_numpy() > 0).all()


def test_hit_rates_are_each_sites_own(tmp_path: Path) -> None:
    out, objective = tmp_path / "out", _local_objective(tmp_path)
    assert main(["solve", str(_scenario(tmp_path / "cli", ttft_ms=objective)), "--out", str(out), "--quiet", "--no-maps"]) == 0
    arrangement = json.loads((out / "summary.json").read_text())["arrangement"]
    assert arrangement["kv_tiers_by_site"] == {"atlanta": "hbm", "chicago": "nvme"}
    instance = build_instance(load_scenario(_scenario(tmp_path / "again", ttft_ms=objective)))
    sites = pd.read_csv(out / "sites.csv").set_index("site_id")
    for j, site in enumerate(("atlanta", "chicago")):
        profile = instance.profiles_at(j)[0]
        assert profile.cache is not None
        rate = float(sites.loc[site, "goodput_tok_s"]) * profile.cache.requests_per_tok
        assert sites.loc[site, "prefix_hit_rate_chat"] == pytest.approx(float(profile.cache.hit_rate(rate)[0]))
    nodes = {"atlanta": int(instance.cache_warmup_nodes[0]), "chicago": int(instance.cache_warmup_nodes[1])}
    # one figure where every open site's tier holds the same number, else per site
    expected = nodes["atlanta"] if len(set(nodes.values())) == 1 else nodes
    assert arrangement["cache_warmup_nodes_per_site"] == expected


def test_one_tier_everywhere_is_one_set(tmp_path: Path) -> None:
    """Every site on the same tier (whatever the scenario says): one set of profiles, that tier's."""
    same = CATALOG.replace(",hbm\n", ",nvme\n")
    instance = build_instance(load_scenario(_scenario(tmp_path / "same", same)))
    assert instance.tier_names == ("nvme",) and instance.site_set is None and instance.tier_sets == []
    assert instance.profiles[0].cache is not None and instance.profiles[0].cache.tier == "nvme"


def test_a_bad_tier_is_named_by_row_and_field(tmp_path: Path) -> None:
    bad = CATALOG.replace(",hbm\n", ",ssd\n")
    with pytest.raises(InputError) as err:
        build_instance(load_scenario(_scenario(tmp_path / "bad", bad)))
    assert "kv_tier" in str(err.value) and "row 1" in str(err.value) and "'ssd'" in str(err.value)
    assert KV_TIERS == TIER_ORDER, "the catalog's tiers are the tier table's"


def test_a_tiers_cost_is_in_the_node_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kv_tiers.csv's usd_per_node_h (0 in the bundled table: in the DGX's price) is a node's, stacked up its tiers."""
    from dataclasses import replace

    from placement.profiles import tiers as tier_sets
    from placement.serving.prefix_cache import load_tiers

    plain = build_instance(load_scenario(_scenario(tmp_path / "plain")))
    adds = {"hbm": 0.0, "dram": 1.5, "nvme": 2.0}
    priced = {name: replace(t, usd_per_node_h=adds[name]) for name, t in load_tiers().items()}
    monkeypatch.setattr(tier_sets, "load_tiers", lambda: priced)
    assert ProfileSets(("hbm", "nvme"), [[], []], np.array([0, 1])).tier_usd_per_node_h(2).tolist() == [0.0, 3.5]
    dearer = build_instance(load_scenario(_scenario(tmp_path / "priced")))
    assert dearer.node_cost.node_capex_usd_per_h - plain.node_cost.node_capex_usd_per_h == pytest.approx([0.0, 3.5])
    assert dearer.inputs.site_node_usd_per_h - plain.inputs.site_node_usd_per_h == pytest.approx([0.0, 3.5])


def _with_tier(path: Path, tier: str) -> Path:
    import yaml

    scenario = yaml.safe_load(path.read_text())
    scenario["serving"]["kv_cache"] = {"tier": tier}
    path.write_text(yaml.safe_dump(scenario))
    return path


def test_auto_chooses_each_free_sites_tier_as_brute_force_over_every_combination(tmp_path: Path) -> None:
    """``kv_cache.tier: auto`` on two free sites: the plan's tiers cost what the best of the nine fixed pairs does."""
    import itertools

    from placement.analyses.explain import rebuild_plan

    objective = _local_objective(tmp_path)
    free = CATALOG.replace(",hbm\n", ",\n").replace(",nvme\n", ",\n")
    costs = {}
    for atlanta, chicago in itertools.product(TIER_ORDER, TIER_ORDER):
        fixed = CATALOG.replace(",hbm\n", ",{a}\n").replace(",nvme\n", ",{c}\n").format(a=atlanta, c=chicago)
        path = _scenario(tmp_path / f"{atlanta}-{chicago}", fixed, ttft_ms=objective)
        costs[(atlanta, chicago)] = solve_instance(build_instance(load_scenario(path))).solution.objective_usd_per_h
    out = tmp_path / "out"
    path = _with_tier(_scenario(tmp_path / "auto", free, ttft_ms=objective), "auto")
    assert main(["solve", str(path), "--out", str(out), "--quiet", "--no-maps"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    rounds = summary["kv_tier_rounds"]
    assert nested_mismatch(summary, "kv_tier_rounds") == ([], [])  # its keys as the output reference describes them
    best = min(costs.values())
    assert summary["objective_usd_per_h"] == pytest.approx(best, rel=1e-6)
    assert len(rounds["rounds"]) >= 2 and rounds["chosen_by_plan"] == ["atlanta", "chicago"]
    tiers = rounds["tiers_by_site"]
    assert costs[(tiers["atlanta"], tiers["chicago"])] == pytest.approx(best, rel=1e-6)
    sites = pd.read_csv(out / "sites.csv").set_index("site_id")
    assert sites["kv_tier"].to_dict() == tiers
    # read back (explain, failover): the model on the tiers the plan chose, not the start's
    rebuilt = rebuild_plan(out).instance
    assert [rebuilt.site_tier(j) for j in range(2)] == [tiers["atlanta"], tiers["chicago"]]


def test_auto_leaves_a_catalog_tier_alone(tmp_path: Path) -> None:
    """A site whose catalog names its tier (its hardware) keeps it; only the blank one is the plan's to choose."""
    objective = _local_objective(tmp_path)
    partly = CATALOG.replace(",nvme\n", ",\n")  # Atlanta's HBM is its hardware; Chicago's tier is free
    plan = solve_instance(build_instance(load_scenario(_with_tier(_scenario(tmp_path / "p", partly, ttft_ms=objective), "auto"))))
    assert plan.instance.tier_choice is not None and plan.instance.tier_choice.free.tolist() == [False, True]
    assert plan.instance.site_tier(0) == "hbm"
    assert plan.summary.kv_tier_rounds is not None and plan.summary.kv_tier_rounds["chosen_by_plan"] == ["chicago"]
