"""The prefix cache's miss work at each site as a function of what the site serves: rounds of the solve to a fixed point.

With ``serving.kv_cache`` a class with a ``prefix_reuse`` profile is served at the goodput of a hot cache (its hit
rate's limit), and a site pays besides for the shared prefixes it misses:
:meth:`~placement.serving.prefix_cache.CacheFigures.miss_nodes` of the load it serves, nothing at no load, the
most (``warmup_nodes``) where the misses peak, less again as a busier site keeps its prefixes hot. The first solve
charges every open site that peak for every class (the model of :func:`placement.instance.rows.with_cache_warmup`):
never too little, so its plan is always valid, but the same for a site that serves a class as for one that does
not, and the same at any load.

Each further round charges instead each cache pool (a site, a class and the KV tier its pairs run there) its miss
work per tok/s at the load the round before sent it (:meth:`~placement.serving.prefix_cache.CacheFigures.miss_nodes_per_tok_s`;
where it served none, the figure where the misses peak) on the nodes, energy and caps of every pair that loads the
site with the class, and nothing fixed. A site that consolidates a class so pays less per token than one that
serves a little of it, inside the solve. The round's plan is then checked against the miss work of its own loads,
slice by slice, and a site short of nodes gets the nodes it lacks. Rounds stop when the plan's cost moves less
than :data:`TOLERANCE` with no node added, when a design comes back (a cycle), or after :data:`ROUNDS`; the cheapest
valid plan (within its sites' power and the caps, nodes added) is the answer, the first round's when none is
cheaper.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from placement._types import FloatArray, IntArray
from placement.instance.record import Instance
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.verify import cap_excess_per_h
from placement.progress import Progress
from placement.serving.prefix_cache import CacheFigures

TOLERANCE = 0.002
"""Rounds stop when the plan's cost moves by less than this share from the round before."""

ROUNDS = 4
"""Most rounds after the first (each a whole solve)."""

NODE_TOLERANCE = 0.01
"""A site short of its own loads' miss work by less than this many nodes is taken as covered: the rounds approach
the fixed point from one side, and the solver fills a site's nodes to the last token."""


@dataclass(frozen=True)
class Solved:
    """An instance's answer before it is tabulated: the solution, the plan's status label and its notes."""

    solution: PlacementSolution
    status: str
    notes: list[str]


@dataclass(frozen=True)
class CacheRound:
    """One round: the instance it solved, its answer with the nodes its own miss work needs, the nodes added.

    Parameters
    ----------
    instance : Instance
        The instance solved (the first round's is the plan's own; later ones charge miss work per pair).
    solved : Solved
        Its answer, with any nodes its loads' miss work needs added (``objective_usd_per_h`` with their cost).
    added_nodes : int
        Nodes added where the round's loads miss more than the round charged.
    valid : bool
        Whether the added nodes keep every site within its power and every cap.
    charge : numpy.ndarray or None, optional
        ``(pools,)`` the miss work per tok/s the round charged each pool (None: the first round's warm-up nodes).
    """

    instance: Instance
    solved: Solved
    added_nodes: int
    valid: bool
    charge: FloatArray | None = None

    @property
    def usd_per_h(self) -> float:
        """The round's cost, nodes added included. [USD/h]"""
        return self.solved.solution.objective_usd_per_h


@dataclass(frozen=True)
class CachePools:
    """The caches the pairs fill: one per (site, class, KV tier), and the pool of each pair.

    Parameters
    ----------
    site : numpy.ndarray of int
        ``(n,)`` the site of each pool (the prefill site of a cross-metro pair's prompts).
    pool_class : numpy.ndarray of int
        ``(n,)`` the class of each pool.
    figures : list of CacheFigures
        Each pool's cache model (of its members' options, the one whose misses peak highest).
    pair_pool : numpy.ndarray of int
        ``(pairs,)`` each pair's pool; -1: a class without a cache model.
    """

    site: IntArray
    pool_class: IntArray
    figures: list[CacheFigures]
    pair_pool: IntArray

    def __len__(self) -> int:
        return len(self.figures)


def has_miss_work(instance: Instance) -> bool:
    """Whether some class's cache misses cost a site work (``serving.kv_cache`` and a ``prefix_reuse`` profile)."""
    return bool(np.any(instance.cache_warmup_nodes > 0))


def cache_pools(instance: Instance) -> CachePools:
    """Each pair's cache: its option's, at the site that prefills its prompts.

    A pool is a (site, class, KV tier): the option's tier is its site's; a cross-metro pair's prompts are prefilled
    at its prefill site, on that site's node.
    """
    data = instance.inputs
    row_class = instance.commodity_class[instance.modelled]
    klass = row_class[data.pair_commodity]
    options = instance.options
    option = instance.option_at(instance.modelled[data.pair_commodity], data.pair_site)
    pair_cache: list[CacheFigures | None] = [options[o].cache for o in option.tolist()]
    site = data.pair_site.copy()
    if data.pair_remote_site is not None:
        for p in np.flatnonzero(data.pair_remote_site >= 0).tolist():
            site[p] = data.pair_remote_site[p]
            pair_cache[p] = instance.profiles_at(int(site[p]))[int(klass[p])].cache
    keys: dict[tuple[int, int, str], int] = {}
    figures: list[CacheFigures] = []
    pool_site: list[int] = []
    pool_class: list[int] = []
    pair_pool = np.full(len(site), -1, dtype=np.int64)
    for p, cache in enumerate(pair_cache):
        if cache is None:
            continue
        key = (int(site[p]), int(klass[p]), cache.tier)
        if key not in keys:
            keys[key] = len(figures)
            figures.append(cache)
            pool_site.append(key[0])
            pool_class.append(key[1])
        elif cache.warmup_nodes > figures[keys[key]].warmup_nodes:
            figures[keys[key]] = cache
        pair_pool[p] = keys[key]
    return CachePools(np.array(pool_site, dtype=np.int64), np.array(pool_class, dtype=np.int64), figures, pair_pool)


def pool_slice_load(pools: CachePools, data: PlacementInput, shares: FloatArray) -> FloatArray:
    """``(pools, T)`` tok/s whose prompts each cache pool sees, in each slice."""
    used = np.flatnonzero((shares > 1e-12) & (pools.pair_pool >= 0))
    load = np.zeros((len(pools), len(data.slice_hours)))
    np.add.at(load, pools.pair_pool[used], shares[used, None] * data.slice_demand_tok_s[data.pair_commodity[used]])
    return load


def miss_nodes(pools: CachePools, load_tok_s: FloatArray, n_sites: int) -> FloatArray:
    """``(m, T)`` node-equivalents each site spends on the shared prefixes its pools miss, at ``(pools, T)`` loads."""
    out = np.zeros((n_sites, load_tok_s.shape[1]))
    for q, cache in enumerate(pools.figures):
        if load_tok_s[q].any():
            out[pools.site[q]] += cache.miss_nodes(load_tok_s[q])
    return out


def per_token_charge(pools: CachePools, load_tok_s: FloatArray) -> FloatArray:
    """``(pools,)`` each pool's miss work per tok/s at its busiest slice's load (at no load: where misses peak)."""
    peak = load_tok_s.max(axis=1)
    return np.array([float(cache.miss_nodes_per_tok_s(peak[q])[0]) for q, cache in enumerate(pools.figures)])


def charged_inputs(instance: Instance, pools: CachePools, charge: FloatArray) -> PlacementInput:
    """The instance's arrays with each pool's miss work per tok/s on its pairs instead of the fixed warm-up nodes.

    A pair's nodes per tok/s at the site that prefills it grow by its pool's charge; its energy and its caps' load
    grow in proportion to the nodes it loads there (the energy of a cross-metro pair's prefill site is left as it
    was: its miss work is a small share of a long prompt's prefill).
    """
    data = without_warmup(instance)
    added = np.where(pools.pair_pool >= 0, np.append(charge, 0.0)[pools.pair_pool], 0.0)
    nodes = data.pair_nodes_per_tok_s.copy()
    remote = None if data.pair_remote_nodes_per_tok_s is None else data.pair_remote_nodes_per_tok_s.copy()
    far = np.zeros(len(nodes), dtype=bool) if data.pair_remote_site is None else data.pair_remote_site >= 0
    local = np.flatnonzero(~far)
    nodes[local] += added[local]
    if remote is not None and far.any():
        remote[far] += added[far]
    scale = np.ones(len(nodes))
    scale[local] = nodes[local] / data.pair_nodes_per_tok_s[local]
    caps = tuple(replace(cap, pair_per_h=cap.pair_per_h * scale) for cap in data.caps)
    return replace(
        data,
        pair_nodes_per_tok_s=nodes,
        pair_remote_nodes_per_tok_s=remote,
        pair_cost_usd_per_h=data.pair_cost_usd_per_h * scale,
        caps=caps,
    )


def without_warmup(instance: Instance) -> PlacementInput:
    """The instance's arrays without the warm-up nodes of :func:`~placement.instance.rows.with_cache_warmup`."""
    data, nodes = instance.inputs, instance.cache_warmup_nodes
    raw_mw = instance.sites["mw_available"].to_numpy(float)
    return replace(
        data,
        site_fixed_usd_per_h=data.site_fixed_usd_per_h - nodes * instance.node_cost.total_usd_per_h,
        site_mw_available=np.minimum(data.site_mw_available + nodes * data.site_node_mw, raw_mw),
        caps=tuple(replace(cap, site_fixed_per_h=cap.site_fixed_per_h - nodes * cap.site_node_per_h) for cap in data.caps),
    )


def with_own_miss_work(
    instance: Instance, pools: CachePools, solution: PlacementSolution, charge: FloatArray
) -> tuple[PlacementSolution, int, bool]:
    """A round's solution with the nodes its own loads' miss work needs beyond what the round charged.

    Returns the solution (nodes and cost updated), the nodes added, and whether every site stays within its power
    and every cap holds with them.
    """
    data = instance.inputs
    load = pool_slice_load(pools, data, solution.pair_share)
    true = miss_nodes(pools, load, data.n_sites)
    charged = np.zeros_like(true)
    np.add.at(charged, pools.site, load * charge[:, None])
    used = data.site_slice_load(solution.pair_share)
    need = np.ceil(np.max(used + np.maximum(true - charged - NODE_TOLERANCE, 0.0), axis=1) - 1e-6).astype(np.int64)
    added = np.where(solution.open, np.maximum(need - solution.nodes, 0), 0)
    if not added.any():
        return solution, 0, True
    nodes = solution.nodes + added
    cost = solution.objective_usd_per_h + float(added @ data.site_node_usd_per_h)
    power = bool(np.all(nodes * data.site_node_mw <= data.site_mw_available * solution.open + 1e-9))
    caps = bool(np.all(cap_excess_per_h(data, solution.open, nodes, solution.pair_share) <= 0))
    return replace(solution, nodes=nodes, objective_usd_per_h=cost), int(added.sum()), power and caps


def cache_rounds(
    instance: Instance, solve: Callable[[Instance], Solved], *, progress: Progress
) -> tuple[CacheRound, list[CacheRound]]:
    """Solve the instance, then again with each (site, class) charged the miss work of its load, to a fixed point.

    Parameters
    ----------
    instance : Instance
        With cache miss work (:func:`has_miss_work`).
    solve : callable
        Solves an instance (its inputs as they stand): the verified solution, status and notes.
    progress : callable
        Receives one line per round.

    Returns
    -------
    tuple
        The round kept (the cheapest valid one) and every round in order.
    """
    first = solve(instance)
    rounds = [CacheRound(instance, first, 0, True)]
    if not first.solution.report.status.has_solution:
        return rounds[0], rounds
    progress(f"prefix cache, round 1 (each open site charged the peak of its misses): ${rounds[0].usd_per_h:,.0f}/h")
    seen = [first.solution]  # each round's answer as solved, before nodes were added
    zeros = np.zeros_like(instance.cache_warmup_nodes)
    pools = cache_pools(instance)
    for r in range(2, ROUNDS + 2):
        charge = per_token_charge(pools, pool_slice_load(pools, instance.inputs, seen[-1].pair_share))
        again = replace(instance, inputs=charged_inputs(instance, pools, charge), cache_warmup_nodes=zeros)
        solved = solve(again)
        if not solved.solution.report.status.has_solution:
            progress(f"prefix cache, round {r}: no solution ({solved.solution.report.message}); the rounds before stand")
            break
        fixed, added, valid = with_own_miss_work(again, pools, solved.solution, charge)
        rounds.append(CacheRound(again, replace(solved, solution=fixed), added, valid, charge))
        progress(
            f"prefix cache, round {r} (miss work per (site, class, tier) at the loads of the round before): "
            f"${fixed.objective_usd_per_h:,.0f}/h, {added} nodes added for its own loads' misses"
            + ("" if valid else " (over a site's power or a cap: not kept)")
        )
        moved = abs(rounds[-1].usd_per_h - rounds[-2].usd_per_h) / max(rounds[-2].usd_per_h, 1e-9)
        repeats = any(_same_routing(solved.solution, earlier) for earlier in seen[1:])
        seen.append(solved.solution)
        if (moved < TOLERANCE and added == 0) or repeats:
            break  # a fixed point, or a cycle between designs (the cheapest of them is kept)
    return min((r for r in rounds if r.valid), key=lambda r: r.usd_per_h), rounds


def _same_routing(a: PlacementSolution, b: PlacementSolution) -> bool:
    """Whether two answers open the same sites and route the same shares."""
    return bool(np.array_equal(a.open, b.open) and np.allclose(a.pair_share, b.pair_share, atol=1e-6))


def round_figures(kept: CacheRound, rounds: list[CacheRound]) -> dict[str, object]:
    """``summary.json`` ``cache_rounds``: each round's cost and nodes added, which was kept, the stopping rule.

    And the node-equivalents each open site of the kept plan spends on its misses in its busiest slice.
    """
    instance, solution = kept.instance, kept.solved.solution
    pools = cache_pools(instance)
    ids = instance.sites["id"].astype(str).tolist()
    charges: dict[str, dict[str, dict[str, float]]] = {}
    if kept.charge is not None:  # what rebuilding the plan's model applies again (:func:`with_charges`)
        names = [w.name for w in instance.classes]
        for q, (j, cache) in enumerate(zip(pools.site.tolist(), pools.figures, strict=True)):
            klass = names[int(pools.pool_class[q])]
            charges.setdefault(ids[j], {}).setdefault(klass, {})[cache.tier] = float(kept.charge[q])
    misses = miss_nodes(pools, pool_slice_load(pools, instance.inputs, solution.pair_share), instance.inputs.n_sites)
    misses = misses.max(axis=1)
    return {
        "charges_nodes_per_tok_s": charges,
        "miss_nodes_by_site": {ids[j]: round(float(misses[j]), 3) for j in np.flatnonzero(solution.open).tolist()},
        "rounds": [
            {"usd_per_h": r.usd_per_h, "nodes_added": r.added_nodes, "valid": r.valid, "per_pair_miss_work": k > 0}
            for k, r in enumerate(rounds)
        ],
        "kept": next(k for k, r in enumerate(rounds) if r is kept) + 1,
        "tolerance": TOLERANCE,
        "most_rounds": ROUNDS + 1,
    }


def with_charges(instance: Instance, charges: dict[str, dict[str, dict[str, float]]]) -> Instance:
    """The model a plan's kept round solved, from the charges its ``summary.json`` ``cache_rounds`` wrote.

    Rebuilding a plan from its folder (``explain``, ``failover``) gives the first round's arrays; the kept round charged
    each pool (site id, class, tier) its miss work per tok/s instead of the warm-up nodes. No charges: ``instance``.
    """
    if not charges:
        return instance
    pools = cache_pools(instance)
    ids = instance.sites["id"].astype(str).tolist()
    names = [w.name for w in instance.classes]
    charge = np.array(
        [
            float(charges.get(ids[j], {}).get(names[k], {}).get(cache.tier, 0.0))
            for j, k, cache in zip(pools.site.tolist(), pools.pool_class.tolist(), pools.figures, strict=True)
        ]
    )
    zeros = np.zeros_like(instance.cache_warmup_nodes)
    return replace(instance, inputs=charged_inputs(instance, pools, charge), cache_warmup_nodes=zeros)
