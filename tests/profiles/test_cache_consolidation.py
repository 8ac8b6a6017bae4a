"""The KV cache in the plan: consolidating a class onto fewer sites raises its hit rate and lowers $/M; RTT can forbid it.

Two sites: Atlanta (cheap power) and Chicago (dear). Nashville reaches both; Chicago's own users reach only Chicago.
Without the cache model Nashville goes to Atlanta for its power price. With it every open site holds a node for the
shared prefixes its cold cache misses, which costs more than Atlanta's cheaper power saves Nashville's few nodes, so
the plan serves both cities from Chicago, whose cache then sees all of the class. Where Nashville cannot reach
Chicago inside its objective the split stays, and each site's cache is colder.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from placement.analyses.arrangement import hit_rates_by_site
from placement.instance.build import build_instance
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


def test_consolidating_raises_the_hit_rate_and_lowers_the_cost(tmp_path: Path, ttft: dict[tuple[str, str], float]) -> None:
    reach_both = max(ttft[("Nashville", "chicago")], ttft[("Chicago", "chicago")], ttft[("Nashville", "atlanta")])
    assert reach_both < ttft[("Chicago", "atlanta")], "the geometry of the test: Chicago's users cannot reach Atlanta"
    objective = (reach_both + ttft[("Chicago", "atlanta")]) / 2

    without = run(load_scenario(_scenario(tmp_path / "off", ttft_ms=objective, cache=False)))
    assert _served(without.sites)["atlanta"] > 0, "without the cache model Nashville goes where power is cheap"

    plan = run(load_scenario(_scenario(tmp_path / "on", ttft_ms=objective, cache=True)))
    assert plan.instance.cache_warmup_nodes.tolist() == [1, 1], "one cold-cache node at each site"
    served = _served(plan.sites)
    assert served["atlanta"] == 0 and served["chicago"] > 0, "with it both cities are served from Chicago"
    # brute force over the designs: both sites open (locked) costs more; Chicago alone is the optimum
    both = run(load_scenario(_scenario(tmp_path / "both", ttft_ms=objective, cache=True, locked=True)))
    assert both.solution.objective_usd_per_h > plan.solution.objective_usd_per_h
    # the split costs Atlanta's cold-cache node and saves Nashville's power: the difference, by hand
    node_cost = plan.instance.node_cost.total_usd_per_h
    atlanta = 0
    saved_energy = both.sites["load_energy_usd_per_h"].sum() - plan.sites["load_energy_usd_per_h"].sum()
    extra_nodes_usd = float((both.solution.nodes * node_cost).sum() - (plan.solution.nodes * node_cost).sum())
    assert both.solution.objective_usd_per_h - plan.solution.objective_usd_per_h == pytest.approx(
        node_cost[atlanta] + extra_nodes_usd + saved_energy, rel=1e-6
    )
    assert node_cost[atlanta] > -(extra_nodes_usd + saved_energy) > 0, "Atlanta's power saves less than its cold cache costs"

    # the consolidated site's cache is hotter than either site's in the split, and the plan is cheaper per token
    hits, split_hits = hit_rates_by_site(plan), hit_rates_by_site(both)
    assert set(hits) == {"chicago"} and set(split_hits) == {"atlanta", "chicago"}
    assert hits["chicago"]["chat"] > max(split_hits["chicago"]["chat"], split_hits["atlanta"]["chat"])
    mine, split = plan.summary.cost_per_million_goodput_tokens_usd, both.summary.cost_per_million_goodput_tokens_usd
    assert mine is not None and split is not None and mine < split
    assert plan.summary.goodput_tok_s == pytest.approx(both.summary.goodput_tok_s)


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


def test_solve_instance_is_the_plan(tmp_path: Path, ttft: dict[tuple[str, str], float]) -> None:
    """The cold-cache node is in the arrays the MILP reads (fixed cost and power), not added after the solve."""
    instance = build_instance(load_scenario(_scenario(tmp_path / "arrays", ttft_ms=1000, cache=True)))
    plain = build_instance(load_scenario(_scenario(tmp_path / "plain", ttft_ms=1000, cache=False)))
    node = instance.node_cost.total_usd_per_h
    assert instance.inputs.site_fixed_usd_per_h == pytest.approx(plain.inputs.site_fixed_usd_per_h + node)
    assert instance.inputs.site_mw_available == pytest.approx(plain.inputs.site_mw_available - instance.inputs.site_node_mw)
    plan = solve_instance(instance)
    opened = plan.sites[plan.sites["open"]]
    assert (opened["cache_warmup_nodes"] == 1).all()
    assert opened["mw_used"].to_numpy() == pytest.approx(
        ((opened["nodes"] + 1) * instance.inputs.site_node_mw[opened.index]).to_numpy()
    )
