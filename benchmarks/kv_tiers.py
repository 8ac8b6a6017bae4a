"""What the KV cache tier does on the bundled world, and how steep each class's goodput is in its hit rate.

Usage: .venv/bin/python benchmarks/kv_tiers.py

Solves ``world-arrangement`` once per tier of ``data/serving/kv_tiers.csv`` (``serving.kv_cache.tier``; the plan
only, without the fixed-arrangement comparison) and prints, per tier, chat's cache retention and hit load time, its
goodput per node and hit rate, the plan's $/M, open sites and unserved share, and each open site's hit rates (min,
median). Then the serving model's goodput per node of chat and agent at fixed hit rates, the figure the reuse
profiles (estimates) decide. About 1.5 min; machines here are noisy, so compare rows of one run.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from placement.analyses.arrangement import hit_rates_by_site  # noqa: E402
from placement.plan.solve import run  # noqa: E402
from placement.profiles.build import serving_request  # noqa: E402
from placement.scenario.load import LoadedScenario, load_scenario  # noqa: E402
from placement.scenario.sections import KvCacheSection  # noqa: E402
from placement.serving.request import serve  # noqa: E402
from placement.world.bundled import scenario_file  # noqa: E402

HIT_RATES = (0.3, 0.45, 0.5, 0.55, 0.6)


def with_tier(loaded: LoadedScenario, tier: str) -> LoadedScenario:
    """The scenario with ``serving.kv_cache.tier`` set (paths still resolved from its own file)."""
    serving = loaded.scenario.serving.model_copy(update={"kv_cache": KvCacheSection(tier=tier)})
    return LoadedScenario(scenario=loaded.scenario.model_copy(update={"serving": serving}), path=loaded.path)


def tier_rows(loaded: LoadedScenario) -> pd.DataFrame:
    """One row per tier: the plan's figures and chat's cache."""
    rows = []
    for tier in ("hbm", "dram", "nvme"):
        start = time.perf_counter()
        plan = run(with_tier(loaded, tier))
        chat = next(p for p in plan.instance.profiles if p.name == "chat")
        assert chat.cache is not None
        by_site = pd.DataFrame(hit_rates_by_site(plan)).T
        rows.append(
            {
                "tier": tier,
                "chat retention [s]": round(chat.cache.retention_s),
                "hit load [ms]": round(chat.cache.hit_load_ms, 1),
                "chat tok/s/node": round(chat.goodput_tok_s_per_node),
                "chat hit limit": round(chat.cache_hit_rate, 3),
                "chat hits, sites min/median": f"{by_site['chat'].min():.3f} / {by_site['chat'].median():.3f}",
                "agent hits, sites min/median": f"{by_site['agent'].min():.3f} / {by_site['agent'].median():.3f}",
                "cold-cache nodes/site": int(plan.instance.cache_warmup_nodes.max()),
                "plan $/M": round(plan.summary.cost_per_million_goodput_tokens_usd or float("nan"), 3),
                "sites": plan.summary.sites_open,
                "unserved": f"{plan.summary.unserved_share:.2%}",
                "wall [s]": round(time.perf_counter() - start, 1),
            }
        )
    return pd.DataFrame(rows)


def sensitivity(loaded: LoadedScenario) -> pd.DataFrame:
    """Goodput per node of chat and agent at fixed hit rates (no cache model; colocated, speculation where it pays)."""
    serving = loaded.scenario.serving.model_copy(update={"kv_cache": None})
    out = {}
    for workload in loaded.scenario.classes:
        if workload.name not in ("chat", "agent"):
            continue
        request = serving_request(serving, workload)
        out[workload.name] = [round(serve(replace(request, prefix_cache_hit_rate=h)).goodput_tok_s) for h in HIT_RATES]
    return pd.DataFrame(out, index=pd.Index(HIT_RATES, name="hit rate"))


def markdown(table: pd.DataFrame) -> str:
    """A markdown table of a frame (its index not shown)."""
    lines = ["| " + " | ".join(map(str, table.columns)) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def main() -> None:
    loaded = load_scenario(scenario_file("world-arrangement"))
    print(markdown(tier_rows(loaded)))
    print()
    print("goodput per node [tok/s] at a fixed hit rate (colocated, speculation where it pays):")
    print(markdown(sensitivity(loaded).reset_index()))


if __name__ == "__main__":
    main()
