"""Each site's KV cache tier as the plan's decision (``serving.kv_cache.tier: auto``): rounds of the solve.

A tier sets how long a node keeps prompt prefixes and how fast a hit's KV comes back: the node's goodput, its node
TTFT (the hits' load time), the misses its cache leaves, and what it adds to a node's hourly cost
(``data/serving/kv_tiers.csv``). Which is cheapest depends on what a site serves and how far its users are: a
longer retention hits more, a slower tier leaves less of the TTFT budget. The plan starts every free site (a blank
catalog ``kv_tier``) on the tier with the most goodput over the classes (:func:`placement.profiles.tiers.best_tier`).
After each solve, each open free site is priced on every tier for what it serves: its pairs' loads at that tier's
option that fits each pair's objective (none fits: not that tier), the misses of its own loads, in whole nodes at
its node cost with the tier's, and their energy. Where another tier serves the same load for less, the site moves
to it; the model is rebuilt with those tiers and solved again, and its plan is kept when it costs less than the one
before. Rounds stop when no site moves, when a round does not pay, or after :data:`TIER_ROUNDS`. Sites serving
cross-metro prefill keep their tier (their load is two sites'). A local search over the sites, one move each at a
time: the tiers it settles on are the best for the loads the plan gives them, not proven over every combination.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from placement._process import take_pairs
from placement.instance.record import Instance, rung_index
from placement.plan.record import Plan
from placement.profiles.build import ClassProfile
from placement.profiles.tiers import profile_sets, tier_usd_per_node_h
from placement.progress import Progress
from placement.serving.prefix_cache import TIER_ORDER

TIER_ROUNDS = 3
"""Most rounds after the first solve (each a whole solve, with the cache's rounds inside)."""


@dataclass(frozen=True)
class TierRound:
    """One round: the plan solved on its sites' tiers, and the moves that led to it (site id -> tier)."""

    plan: Plan
    moves: dict[str, str]


def chooses_tiers(instance: Instance) -> bool:
    """Whether some site's tier is the plan's choice (``kv_cache.tier: auto`` and a blank catalog ``kv_tier``)."""
    return instance.tier_choice is not None and bool(instance.tier_choice.free.any())


class _Rungs:
    """Each class's options on a part's node at a tier, computed once per (tier, part)."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.known: dict[tuple[str, str], list[list[ClassProfile]]] = {}

    def __call__(self, tier: str, part: str) -> list[list[ClassProfile]]:
        key = (tier, part)
        if key not in self.known:
            instance = self.instance
            row = pd.DataFrame({"id": ["probe"], "kv_tier": [tier]})
            parts = None if part == instance.facts.serving.accelerator else [part]
            sets = profile_sets(instance.classes, instance.facts.serving, row, source=str(instance.facts.path), parts=parts)
            self.known[key] = sets.sets[0]
        return self.known[key]


def site_cost_usd_per_h(plan: Plan, site: int, rungs: list[list[ClassProfile]], tier: str) -> float:
    """What a site's served load costs on a tier's node: its nodes (busy, and the misses of its loads) and energy.

    ``inf`` where some pair it serves fits no option of the tier inside its objective. [USD/h]
    """
    instance, solution = plan.instance, plan.solution
    data = instance.inputs
    share = solution.pair_share
    pairs = np.flatnonzero((data.pair_site == site) & (share > 1e-12))
    if not len(pairs):
        return 0.0
    rows = data.pair_commodity[pairs]
    commodity = instance.modelled[rows]
    klass = instance.commodity_class[commodity]
    rtt = take_pairs(instance.rtt_ms, instance.commodity_population[commodity], np.full(len(commodity), site))
    extra = instance.retrieval_extra_ms[klass, site]
    chosen = rung_index(rungs, klass, rtt, extra)
    profiles = [rungs[int(k)][int(r)] for k, r in zip(klass, chosen, strict=True)]
    network = np.array([p.round_trips for p in profiles]) * rtt + extra
    fits = network + np.array([p.fixed_ttft_ms for p in profiles]) <= np.array([p.ttft_objective_ms for p in profiles]) + 1e-9
    if not fits.all():
        return float("inf")
    nodes_per_tok_s = np.array([p.nodes_per_tok_s for p in profiles])
    load = share[pairs, None] * data.slice_demand_tok_s[rows]
    busy = (load * nodes_per_tok_s[:, None]).sum(axis=0)
    for k in np.unique(klass).tolist():
        cache = max((p for p in rungs[k]), key=lambda p: p.warmup_nodes).cache
        if cache is not None:
            busy = busy + cache.miss_nodes(load[klass == k].sum(axis=0))
    nodes = float(np.ceil(busy.max() - 1e-9))
    now = instance.site_tier(site)
    node_usd = float(instance.node_cost.total_usd_per_h[site]) - tier_usd_per_node_h(now) + tier_usd_per_node_h(tier)
    energy_per_node = data.pair_cost_usd_per_h[pairs] / data.pair_nodes_per_tok_s[pairs]
    return nodes * node_usd + float((share[pairs] * energy_per_node * nodes_per_tok_s).sum())


def cheaper_tiers(plan: Plan, rungs: _Rungs) -> dict[str, str]:
    """Open free sites whose served load costs less on another tier: site id -> that tier."""
    instance = plan.instance
    choice = instance.tier_choice
    assert choice is not None
    data = instance.inputs
    touched = np.zeros(data.n_sites, dtype=bool)
    if data.pair_remote_site is not None:  # a cross-metro pair's two sites keep their tiers
        far = np.flatnonzero((data.pair_remote_site >= 0) & (plan.solution.pair_share > 1e-12))
        touched[data.pair_site[far]] = touched[data.pair_remote_site[far]] = True
    parts = instance.site_accelerator()
    moves = {}
    for j in np.flatnonzero(plan.solution.open & choice.free & ~touched).tolist():
        if not parts[j]:
            continue
        now = instance.site_tier(j)
        costs = {t: site_cost_usd_per_h(plan, j, rungs(t, parts[j]), t) for t in TIER_ORDER}
        best = min(TIER_ORDER, key=lambda t: (costs[t], t != now))
        if best != now and costs[best] < costs[now] * (1 - 1e-6):
            moves[str(instance.sites["id"].iat[j])] = best
    return moves


def tier_rounds(
    instance: Instance,
    solve: Callable[[Instance], Plan],
    rebuild: Callable[[Instance, dict[str, str]], Instance],
    *,
    progress: Progress,
) -> tuple[Plan, list[TierRound]]:
    """Solve, then move free sites to the tier that serves their load cheapest and solve again, while it pays.

    Parameters
    ----------
    instance : Instance
        With free sites (:func:`chooses_tiers`), each on the start tier.
    solve : callable
        Solves an instance into a verified plan.
    rebuild : callable
        The instance again with the tiers chosen (site id -> tier, every choice so far).
    progress : callable
        Receives one line per round.

    Returns
    -------
    tuple
        The plan kept (the cheapest) and every round in order.
    """
    plan = solve(instance)
    rounds = [TierRound(plan, {})]
    rungs = _Rungs(instance)
    for r in range(2, TIER_ROUNDS + 2):
        choice = plan.instance.tier_choice
        if choice is None or not plan.solution.report.status.has_solution:
            break
        moves = cheaper_tiers(plan, rungs)
        if not moves:
            progress(f"KV tiers, round {r}: every open free site is on the tier that serves its load cheapest")
            break
        listed = ", ".join(f"{site} {tier}" for site, tier in sorted(moves.items()))
        progress(f"KV tiers, round {r}: moving {len(moves)} sites ({listed}) and solving again")
        other = solve(rebuild(plan.instance, {**choice.chosen, **moves}))
        rounds.append(TierRound(other, moves))
        if not other.solution.objective_usd_per_h < plan.solution.objective_usd_per_h * (1 - 1e-9):
            progress(f"KV tiers, round {r}: ${other.solution.objective_usd_per_h:,.0f}/h does not pay; the plan before stands")
            break
        plan = other
    return plan, rounds


def round_figures(kept: Plan, rounds: list[TierRound]) -> dict[str, object]:
    """``summary.json`` ``kv_tier_rounds``: each round's $/h and moves, the round kept, and each open site's tier."""
    instance = kept.instance
    ids = instance.sites["id"].astype(str).tolist()
    opened = np.flatnonzero(kept.solution.open).tolist()
    return {
        "rounds": [{"usd_per_h": r.plan.solution.objective_usd_per_h, "moves": r.moves} for r in rounds],
        "kept": next(k for k, r in enumerate(rounds) if r.plan is kept) + 1,
        "most_rounds": TIER_ROUNDS + 1,
        "tiers_by_site": {ids[j]: instance.site_tier(j) for j in opened},
        "chosen_by_plan": sorted(ids[j] for j in opened if instance.tier_choice is not None and instance.tier_choice.free[j]),
    }
