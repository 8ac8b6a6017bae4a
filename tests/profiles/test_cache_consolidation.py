"""The KV cache in the plan: each site's miss work follows what it serves, inside the solve; RTT can forbid consolidating.

Two sites: Atlanta (cheap power) and Chicago (dear). Nashville reaches both; Chicago's own users reach only Chicago.
A site pays, besides its nodes at a hot cache's goodput, for the shared prefixes it misses: nothing at no load, the
most where its misses peak, less as it gets busier (:meth:`CacheFigures.miss_nodes`). The first round of the solve
charges every open site that peak in whole nodes; the rounds after charge each (site, class) its miss work at the
load it serves, to a fixed point (:mod:`placement.plan.cache_rounds`). Every plan is checked against the miss work
of its own loads, recomputed here from the model's figures.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from placement.analyses.arrangement import hit_rates_by_site
from placement.instance.build import build_instance
from placement.instance.record import Instance
from placement.plan.cache_rounds import without_warmup
from placement.plan.solve import run, solve_instance
from placement.scenario.load import load_scenario
from tests.conftest import CATALOG_HEADER, computed_chat, write_scenario

CATALOG = CATALOG_HEADER + (
    "atlanta,Atlanta,US,North America,33.75,-84.39,50,40,1.3,10000000,{locked}\n"
    "chicago,Chicago,US,North America,41.88,-87.63,50,120,1.3,10000000,{locked}\n"
)
CITIES = (
    "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
    "1,Nashville,US,TN,36.16,-86.78,700000,America/Chicago\n"
    "2,Chicago,US,IL,41.88,-87.63,2700000,America/Chicago\n"
)


def _scenario(folder: Path, *, ttft_ms: float, cache: bool, locked: bool = False, catalog: str = CATALOG) -> Path:
    chat = computed_chat(ttft_ms, prefix_reuse="chat")
    serving = {"model": "llama-3.1-70b", "accelerator": "h100-sxm", "kv_cache": {"tier": "dram"} if cache else None}
    folder.mkdir(parents=True, exist_ok=True)
    return write_scenario(
        folder,
        catalog=catalog.format(locked=str(locked).lower()),
        cities=CITIES,
        classes=[chat],
        serving=serving,
        latency={"model": "great_circle"},
        economics={"site_fixed_cost_usd_per_h": 0},
        policy={"unreachable": "report"},
    )


def _ttft_ms(tmp_path: Path) -> dict[tuple[str, str], float]:
    """Every (city, site) p99 TTFT: the objective of each case is set between them."""
    instance = build_instance(load_scenario(_scenario(tmp_path / "probe", ttft_ms=2000, cache=True)))
    names, sites = instance.populations.table["name"].tolist(), instance.sites["id"].tolist()
    return {(names[c], sites[j]): float(instance.ttft_ms(c, j)) for c in range(len(names)) for j in range(len(sites))}


def _served(sites: pd.DataFrame) -> dict[str, float]:
    """Goodput each site serves, from the plan's site table. [tokens/s]"""
    return {str(s): float(g) for s, g in zip(sites["site_id"], sites["goodput_tok_s"], strict=True)}


@pytest.fixture(scope="module")
def ttft(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], float]:
    return _ttft_ms(tmp_path_factory.mktemp("probe"))


def _own_need(instance: Instance, share: np.ndarray) -> np.ndarray:
    """Each site's nodes by hand: its busiest slice's load at a hot cache's goodput, plus the misses of that load.

    ``instance`` is as built (the first round's): its pairs' nodes per tok/s are the hot cache's, without miss work.
    """
    data = without_warmup(instance)
    profile = instance.profiles[0]
    assert profile.cache is not None
    need = np.zeros(len(instance.sites))
    for j in range(len(instance.sites)):
        at = np.flatnonzero(data.pair_site == j)
        for t in range(len(data.slice_hours)):
            tok_s = share[at] * data.slice_demand_tok_s[data.pair_commodity[at], t]
            hot = float(tok_s @ data.pair_nodes_per_tok_s[at])
            need[j] = max(need[j], hot + float(profile.cache.miss_nodes(tok_s.sum())[0]))
    return need


def test_a_sites_miss_work_rises_peaks_and_falls_with_its_load(tmp_path: Path) -> None:
    instance = build_instance(load_scenario(_scenario(tmp_path / "w", ttft_ms=1000, cache=True)))
    cache = instance.profiles[0].cache
    assert cache is not None and cache.warmup_nodes > 0
    load = np.geomspace(1.0, 1e9, 400)
    work = cache.miss_nodes(load)
    assert float(cache.miss_nodes(0.0)[0]) == 0.0
    peak = int(np.argmax(work))
    assert 0 < peak < len(load) - 1, "the misses peak at a load between none and every prefix hot"
    assert work[peak] == pytest.approx(cache.warmup_nodes, rel=1e-3), "the peak is the warm-up nodes the first round charges"
    assert work[-1] < 0.01 * work[peak], "a site that sees the whole class keeps every shared prefix hot"
    per_token = cache.miss_nodes_per_tok_s(load)
    assert (np.diff(per_token) <= 1e-15).all(), "per token, the misses only fall with the load: consolidation pays"


def test_the_plan_charges_each_sites_own_miss_work(tmp_path: Path, ttft: dict[tuple[str, str], float]) -> None:
    reach_both = max(ttft[("Nashville", "chicago")], ttft[("Chicago", "chicago")], ttft[("Nashville", "atlanta")])
    assert reach_both < ttft[("Chicago", "atlanta")], "the geometry of the test: Chicago's users cannot reach Atlanta"
    objective = (reach_both + ttft[("Chicago", "atlanta")]) / 2
    scenario = load_scenario(_scenario(tmp_path / "on", ttft_ms=objective, cache=True))
    instance = build_instance(scenario)
    assert instance.cache_warmup_nodes.tolist() == [1, 1], "the first round: one cold-cache node at each open site"
    plan = solve_instance(instance)
    rounds = plan.summary.cache_rounds
    assert rounds is not None and len(rounds["rounds"]) >= 2
    first_usd = rounds["rounds"][0]["usd_per_h"]
    assert plan.solution.objective_usd_per_h <= first_usd + 1e-6, "the kept round is never dearer than the first"
    assert rounds["kept"] > 1 and plan.solution.objective_usd_per_h < first_usd, "charging the peak over-counts here"
    # the nodes cover each site's own loads' miss work, by hand, and no more than a node beyond it
    need = _own_need(instance, plan.solution.pair_share)
    opened = plan.solution.open
    assert (plan.solution.nodes[opened] >= np.ceil(need[opened] - 0.01 - 1e-9)).all()
    assert (plan.solution.nodes[opened] <= np.ceil(need[opened] - 1e-9) + 1e-9).all()
    # the summary's miss work per open site is the same figure
    by_site = rounds["miss_nodes_by_site"]
    assert set(by_site) == {str(s) for s in plan.sites.loc[plan.sites["open"], "site_id"]}
    assert all(0 < v < instance.cache_warmup_nodes.max() for v in by_site.values())


def test_the_kept_round_is_the_cheaper_design(tmp_path: Path, ttft: dict[tuple[str, str], float]) -> None:
    """Brute force over the two designs: Chicago alone (Atlanta without power) and both sites open (locked)."""
    reach_both = max(ttft[("Nashville", "chicago")], ttft[("Chicago", "chicago")], ttft[("Nashville", "atlanta")])
    objective = (reach_both + ttft[("Chicago", "atlanta")]) / 2
    plan = run(load_scenario(_scenario(tmp_path / "free", ttft_ms=objective, cache=True)))
    both = run(load_scenario(_scenario(tmp_path / "both", ttft_ms=objective, cache=True, locked=True)))
    alone_catalog = CATALOG.replace("33.75,-84.39,50,40", "33.75,-84.39,0,40")
    alone = run(load_scenario(_scenario(tmp_path / "alone", ttft_ms=objective, cache=True, catalog=alone_catalog)))
    assert _served(alone.sites)["atlanta"] == 0
    best = min(both.solution.objective_usd_per_h, alone.solution.objective_usd_per_h)
    assert plan.solution.objective_usd_per_h == pytest.approx(best, rel=1e-6)
    assert plan.summary.goodput_tok_s == pytest.approx(alone.summary.goodput_tok_s)


def test_rtt_forbids_consolidating(tmp_path: Path, ttft: dict[tuple[str, str], float]) -> None:
    """Nashville cannot reach Chicago inside its objective: both sites stay open, each with a colder cache."""
    low, high = ttft[("Nashville", "atlanta")], ttft[("Nashville", "chicago")]
    assert ttft[("Chicago", "chicago")] < high and low < high
    objective = (max(low, ttft[("Chicago", "chicago")]) + high) / 2
    plan = run(load_scenario(_scenario(tmp_path / "near", ttft_ms=objective, cache=True)))
    served = _served(plan.sites)
    assert served["atlanta"] > 0 and served["chicago"] > 0
    hits = {site: by_class["chat"] for site, by_class in hit_rates_by_site(plan).items()}
    # each hits less than one site serving both would (the hit rate rises with the requests a site sees)
    profile = plan.instance.profiles[0]
    assert profile.cache is not None
    together = float(profile.cache.hit_rate(sum(served.values()) * profile.cache.requests_per_tok)[0])
    assert max(hits["atlanta"], hits["chicago"]) < together
    assert min(hits.values()) > 0


def test_the_first_rounds_arrays_hold_the_cold_cache(tmp_path: Path) -> None:
    """The first round's cold-cache node is in the arrays the MILP reads (fixed cost and power), not added after."""
    instance = build_instance(load_scenario(_scenario(tmp_path / "arrays", ttft_ms=1000, cache=True)))
    plain = build_instance(load_scenario(_scenario(tmp_path / "plain", ttft_ms=1000, cache=False)))
    node = instance.node_cost.total_usd_per_h
    assert instance.inputs.site_fixed_usd_per_h == pytest.approx(plain.inputs.site_fixed_usd_per_h + node)
    assert instance.inputs.site_mw_available == pytest.approx(plain.inputs.site_mw_available - instance.inputs.site_node_mw)
    bare = without_warmup(instance)
    assert bare.site_fixed_usd_per_h == pytest.approx(plain.inputs.site_fixed_usd_per_h)
    assert bare.site_mw_available == pytest.approx(plain.inputs.site_mw_available)


def test_a_plan_read_back_is_the_model_its_kept_round_solved(tmp_path: Path, ttft: dict[tuple[str, str], float]) -> None:
    """``explain`` and ``failover`` rebuild a plan's model from its folder: the kept round's charges, not the first's."""
    from placement.analyses.explain import rebuild_plan
    from placement.cli import main

    reach_both = max(ttft[("Nashville", "chicago")], ttft[("Chicago", "chicago")], ttft[("Nashville", "atlanta")])
    objective = (reach_both + ttft[("Chicago", "atlanta")]) / 2
    scenario, out = _scenario(tmp_path / "cli", ttft_ms=objective, cache=True), tmp_path / "out"
    assert main(["solve", str(scenario), "--out", str(out), "--quiet", "--no-maps"]) == 0
    kept = solve_instance(build_instance(load_scenario(scenario)))
    assert kept.summary.cache_rounds is not None and kept.summary.cache_rounds["kept"] > 1
    rebuilt = rebuild_plan(out).instance
    assert rebuilt.cache_warmup_nodes.tolist() == [0, 0]
    assert rebuilt.inputs.pair_nodes_per_tok_s == pytest.approx(kept.instance.inputs.pair_nodes_per_tok_s)
    assert rebuilt.inputs.site_fixed_usd_per_h == pytest.approx(kept.instance.inputs.site_fixed_usd_per_h)
    assert rebuilt.inputs.pair_cost_usd_per_h == pytest.approx(kept.instance.inputs.pair_cost_usd_per_h)
    assert main(["explain", str(out), "--quiet"]) == 0
