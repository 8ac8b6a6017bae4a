"""What pooled prefill and cross-metro prefill do on the bundled world: a table for docs/models/serving.md, in one run.

Usage: .venv/bin/python benchmarks/cross_metro.py

``world-arrangement`` solved with its pools spanning 1, 2 and 8 nodes (``serving.pool_nodes``), and with 8 and the
sites' power cut (``sites.mw_multiplier``) so that power binds: where cross-metro prefill (decode near the users,
prefill at a partner within 25 ms) is taken, how much of chat it carries and what its WAN costs. Each row is one
plan (no fixed-arrangement comparison); about 1 to 2 minutes on two cores.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from placement.analyses.modes import cross_metro_links  # noqa: E402
from placement.plan.solve import run  # noqa: E402
from placement.scenario.load import LoadedScenario, load_scenario  # noqa: E402
from placement.world.bundled import scenario_file  # noqa: E402


def variant(loaded: LoadedScenario, *, pool_nodes: int, mw_multiplier: float) -> LoadedScenario:
    """The scenario with its pools over ``pool_nodes`` nodes and its sites' MW scaled."""
    scenario = loaded.scenario
    serving = scenario.serving.model_copy(update={"pool_nodes": pool_nodes})
    sites = scenario.sites.model_copy(update={"mw_multiplier": mw_multiplier})
    return LoadedScenario(scenario=scenario.model_copy(update={"serving": serving, "sites": sites}), path=loaded.path)


def main() -> None:
    loaded = load_scenario(scenario_file("world-arrangement"))
    print("| pool_nodes | MW x | chat, agent mode | chat, agent tok/s per node | $/M | unserved | sites | MW used | "
          "power binds at | chat by cross-metro prefill | links | WAN $/h | wall [s] |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for pool, mw in ((1, 1.0), (2, 1.0), (8, 1.0), (8, 0.15)):
        start = time.perf_counter()
        plan = run(variant(loaded, pool_nodes=pool, mw_multiplier=mw))
        wall = time.perf_counter() - start
        s, sites = plan.summary, plan.sites
        by = {c.name: c for c in s.classes}
        profiles = {p.name: p for p in plan.instance.profiles}
        links = cross_metro_links(plan)
        chat_far = float(links.loc[links["class"] == "chat", "goodput_tok_s"].sum())
        node_mw = plan.instance.inputs.site_node_mw
        binds = int(((sites["mw_available"] - sites["mw_used"] < node_mw) & sites["open"]).sum())
        print(
            f"| {pool} | {mw:g} | {profiles['chat'].serving_mode}, {profiles['agent'].serving_mode} | "
            f"{by['chat'].goodput_tok_s_per_node:,.0f}, {by['agent'].goodput_tok_s_per_node:,.0f} | "
            f"{s.cost_per_million_goodput_tokens_usd:.3f} | {s.unserved_share:.2%} | {s.sites_open} | {s.mw_used:,.0f} | "
            f"{binds} | {chat_far / max(by['chat'].goodput_tok_s, 1e-9):.1%} | {len(links)} | "
            f"{float(links['wan_usd_per_h'].sum()):,.0f} | {wall:.1f} |"
        )


if __name__ == "__main__":
    main()
