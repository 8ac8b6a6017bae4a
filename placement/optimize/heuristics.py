"""Heuristics around the MILP: greedy warm start, routing to the nearest open capacity, node repair."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize import rows
from placement.optimize.model import PlacementModel, placement_blocks, to_placement_model
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.rows import group_by
from placement.optimize.solver import SolverOptions, SolverReport, SolveStatus, relative_gap, solve_problem


def route_to_nearest(
    data: PlacementInput, solution: PlacementSolution, options: SolverOptions, *, optional: bool
) -> tuple[PlacementModel, SolverReport]:
    """With open sites and nodes fixed, send each share to the nearest capacity (an LP on the full model).

    Unserved shares, where allowed, keep their values; load-dependent costs keep their total.
    """
    b = placement_blocks(data, unserved_penalty_usd_per_tok_s=0.0 if optional else None)
    b.open.fix(solution.open.astype(float))
    b.nodes.fix(solution.nodes.astype(float))
    if b.unserved is not None:
        b.unserved.fix(np.clip(solution.unserved_share, 0.0, 1.0))
    if np.any(data.pair_cost_usd_per_h):
        current = float(solution.pair_share @ data.pair_cost_usd_per_h)
        rows.load_cost_budget_row(b.model, b.shares.cols, data.pair_cost_usd_per_h, current)
    for block in (b.open, b.nodes, b.unserved):
        if block is not None:
            block.cost = np.zeros(block.size)
    b.shares.cost = data.pair_rtt_ms * data.mean_demand_tok_s[data.pair_commodity]
    model = to_placement_model(b)
    quiet = SolverOptions(name=options.name, time_limit_s=options.time_limit_s, gap=1e-9, threads=options.threads, msg=False)
    return model, solve_problem(model.problem, quiet)


def greedy_design(data: PlacementInput) -> tuple[BoolArray, IntArray, FloatArray] | None:
    """A quick feasible design for a warm start: cheapest reachable site first.

    Commodities with the fewest options go first; each goes whole to the open site with the
    lowest node cost that reaches it and has power left, opening sites as needed. Pairs that load a second
    site (cross-metro prefill) are left to the solver.

    Parameters
    ----------
    data : PlacementInput
        The arrays.

    Returns
    -------
    tuple or None
        ``(open, nodes, shares)``, or None when the greedy rule finds no feasible design
        (N+1 and site-count bounds are not attempted).
    """
    if data.fault_tolerant or data.min_sites_open is not None or data.max_sites_open is not None:
        return None
    load = data.pair_slice_load()
    single = np.flatnonzero(data.pair_remote_site < 0) if data.pair_remote_site is not None else np.arange(len(load))
    by_commodity = [single[g] for g in group_by(data.pair_commodity[single], data.n_commodities)]  # one site a pair
    site_load = np.zeros((data.n_sites, load.shape[1]))
    is_open = data.site_locked.copy()
    shares = np.zeros(len(data.pair_site))
    order = sorted(range(data.n_commodities), key=lambda c: len(by_commodity[c]))
    for c in order:
        options = by_commodity[c]
        if len(options) == 0:
            return None
        ranked = sorted(
            options.tolist(), key=lambda p: (not is_open[data.pair_site[p]], data.site_node_usd_per_h[data.pair_site[p]])
        )
        for p in ranked:
            j = int(data.pair_site[p])
            if np.ceil((site_load[j] + load[p]).max() - 1e-9) <= data.site_max_nodes[j]:
                site_load[j] += load[p]
                shares[p] = 1.0
                is_open[j] = True
                break
        else:
            return None
    nodes = np.ceil(site_load.max(axis=1) - 1e-9).astype(np.int64)
    return is_open, np.maximum(nodes, 0), shares


def _second_sites(data: PlacementInput, is_open: BoolArray, by_commodity: list[IntArray]) -> BoolArray:
    """Open, for every protected commodity with one open site in reach, its cheapest other site."""
    is_open = is_open.copy()
    for c in np.flatnonzero(data.protected).tolist():
        sites = data.pair_site[by_commodity[c]]
        if is_open[sites].sum() >= 2:
            continue
        closed = sites[~is_open[sites] & (data.site_max_nodes[sites] > 0)]
        if len(closed) == 0:
            continue
        is_open[closed[np.argmin(data.site_node_usd_per_h[closed] + data.site_fixed_usd_per_h[closed])]] = True
    return is_open


def _reroute_greedily(
    data: PlacementInput, is_open: BoolArray, shares: FloatArray, by_commodity: list[IntArray]
) -> dict[int, FloatArray] | None:
    """For every site f, move each protected share at f whole to the commodity's cheapest other open site.

    None when a protected commodity has no other open site.
    """
    failover: dict[int, FloatArray] = {}
    protected = data.protected
    for f in range(data.n_sites):
        carried = np.flatnonzero((data.pair_site == f) & (shares > 0) & protected[data.pair_commodity])
        if len(carried) == 0:
            continue
        moved = np.zeros(len(data.pair_site))
        for p in carried.tolist():
            options = by_commodity[int(data.pair_commodity[p])]
            options = options[(data.pair_site[options] != f) & is_open[data.pair_site[options]]]
            if len(options) == 0:
                return None
            moved[options[np.argmin(data.site_node_usd_per_h[data.pair_site[options]])]] += shares[p]
        failover[f] = moved
    return failover


def greedy_failover_design(
    data: PlacementInput,
) -> tuple[tuple[BoolArray, IntArray, FloatArray], dict[int, FloatArray]] | None:
    """A quick N+1 design for a warm start: the greedy design, second sites, and whole re-routes.

    Every protected commodity gets a second open site (its cheapest), each failure moves every
    protected share at the failed site whole to the commodity's cheapest other open site, and
    each site gets the nodes of its worst case (normal slices, or any single failure at peak).

    Parameters
    ----------
    data : PlacementInput
        The arrays (``fault_tolerant``).

    Returns
    -------
    tuple or None
        ``((open, nodes, shares), failover)`` with ``failover[f]`` the ``(p,)`` shares moved when
        f fails, or None when the rule finds no design within the sites' power.
    """
    start = greedy_design(replace(data, fault_tolerant=False))
    if start is None:
        return None
    is_open, _, shares = start
    single = np.flatnonzero(data.pair_remote_site < 0) if data.pair_remote_site is not None else np.arange(len(shares))
    by_commodity = [single[g] for g in group_by(data.pair_commodity[single], data.n_commodities)]  # no cross-metro backup
    is_open = _second_sites(data, is_open, by_commodity)
    failover = _reroute_greedily(data, is_open, shares, by_commodity)
    if failover is None:
        return None
    peak_load = data.peak_demand_tok_s[data.pair_commodity] * data.pair_nodes_per_tok_s
    normal = np.bincount(data.pair_site, weights=shares * peak_load, minlength=data.n_sites)
    need = data.site_slice_load(shares).max(axis=1)
    for f, moved in failover.items():
        after = normal + np.bincount(data.pair_site, weights=moved * peak_load, minlength=data.n_sites)
        after[f] = 0.0
        need = np.maximum(need, after)
    nodes = np.ceil(need - 1e-9).astype(np.int64)
    sites_open = np.bincount(data.pair_commodity[single], weights=is_open[data.pair_site[single]], minlength=data.n_commodities)
    if (nodes > data.site_max_nodes).any() or (data.protected & (sites_open < 2)).any():
        return None
    return (is_open, np.maximum(nodes, 0), shares), failover


def repair_nodes(data: PlacementInput, solution: PlacementSolution, report: SolverReport) -> PlacementSolution | None:
    """Raise node counts so every slice fits; None if a site's power does not allow it."""
    load = data.site_slice_load(solution.pair_share).max(axis=1)
    nodes = np.maximum(solution.nodes, np.ceil(load - 1e-9).astype(np.int64))
    if (nodes > data.site_max_nodes).any():
        return None
    cost = data.cost_usd_per_h(solution.open, nodes, solution.pair_share)
    repaired = replace(
        report,
        status=SolveStatus.FEASIBLE,
        objective=cost,
        gap=relative_gap(cost, report.best_bound),
        message=f"{report.message}; node counts raised to carry every slice",
    )
    return replace(solution, nodes=nodes, objective_usd_per_h=cost, report=repaired)
