"""Independent checks of a solution against every constraint, run after each solve.

Nothing here trusts the solver: the arrays are re-read and every row is re-evaluated, so an
answer that violates a constraint is never reported as optimal (spopt issue #314).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from placement._types import FloatArray
from placement.optimize.problem import PlacementInput, PlacementSolution

ABS_TOL = 1e-6
REL_TOL = 1e-6


def _tolerance(scale: FloatArray | float) -> FloatArray:
    return np.asarray(ABS_TOL + REL_TOL * np.abs(scale))


def cap_excess_per_h(
    data: PlacementInput, is_open: NDArray[np.bool_], nodes: NDArray[np.int64], shares: FloatArray
) -> FloatArray:
    """``(k,)`` how far a design is over each carbon or water cap beyond the checks' tolerance (0: within it). [unit/h]"""
    used = np.array([c.used_per_h(is_open, nodes, shares, data.pair_site) for c in data.caps])
    limit = np.array([c.limit_per_h for c in data.caps])
    return np.where(used > limit + _tolerance(limit), used - limit, 0.0)


def check_flows(
    flow: FloatArray,
    demand: FloatArray,
    allowed: NDArray[np.bool_],
    is_open: NDArray[np.bool_],
    *,
    served_in_full: NDArray[np.bool_] | None = None,
) -> list[str]:
    """Check non-negativity, demand balance, allowed pairs and closed sites.

    Parameters
    ----------
    flow : numpy.ndarray
        ``(n, m)`` flow from population i to site j.
    demand : numpy.ndarray
        ``(n,)`` demand.
    allowed : numpy.ndarray of bool
        ``(n, m)`` pairs that may carry flow.
    is_open : numpy.ndarray of bool
        ``(m,)`` open sites.
    served_in_full : numpy.ndarray of bool, optional
        Populations that must be served in full (default: all).

    Returns
    -------
    list of str
        One message per violated rule (empty when all hold).
    """
    problems: list[str] = []
    tol = _tolerance(demand)
    if (flow < -ABS_TOL).any():
        problems.append(f"negative flow on {int((flow < -ABS_TOL).sum())} pairs")
    served = flow.sum(axis=1)
    must = np.ones(len(demand), dtype=bool) if served_in_full is None else served_in_full
    short = must & (np.abs(served - demand) > tol)
    if short.any():
        i = int(np.flatnonzero(short)[0])
        problems.append(
            f"demand balance broken for {int(short.sum())} populations (first: {i}: served {served[i]:.6g} of {demand[i]:.6g})"
        )
    over = ~must & (served > demand + tol)
    if over.any():
        problems.append(f"{int(over.sum())} populations served more than their demand")
    forbidden = ~allowed & (flow > ABS_TOL)
    if forbidden.any():
        problems.append(f"flow on {int(forbidden.sum())} pairs that are not allowed (over the latency objective)")
    closed = ~is_open[None, :] & (flow > ABS_TOL)
    if closed.any():
        problems.append(f"flow to closed sites on {int(closed.sum())} pairs")
    return problems


def check_capacity(used: FloatArray, capacity: FloatArray, *, what: str) -> list[str]:
    """Check ``used <= capacity`` site by site.

    Parameters
    ----------
    used : numpy.ndarray
        Capacity used per site.
    capacity : numpy.ndarray
        Capacity available per site.
    what : str
        Name of the resource, for the message.

    Returns
    -------
    list of str
        One message if any site is over (empty otherwise).
    """
    over = used > capacity + _tolerance(capacity)
    if not over.any():
        return []
    j = int(np.flatnonzero(over)[0])
    return [f"{what} exceeded at {int(over.sum())} sites (first: site {j}: {used[j]:.6g} > {capacity[j]:.6g})"]


def check_objective(claimed: float, recomputed: float, *, what: str = "objective") -> list[str]:
    """Check that the cost the solver claims equals the cost recomputed from the solution.

    Parameters
    ----------
    claimed : float
        Objective reported by the solver.
    recomputed : float
        The same objective evaluated from the solution arrays.
    what : str, optional
        Name for the message.

    Returns
    -------
    list of str
        One message if they differ beyond tolerance.
    """
    if abs(claimed - recomputed) <= 1e-6 * max(1.0, abs(recomputed)):
        return []
    return [f"{what} claimed {claimed:.9g} but the solution costs {recomputed:.9g}"]


def verify_solution(data: PlacementInput, solution: PlacementSolution, *, optional: bool = False) -> list[str]:
    """Check a placement against every constraint of the model.

    Parameters
    ----------
    data : PlacementInput
        The arrays the model was built from.
    solution : PlacementSolution
        The solution.
    optional : bool, optional
        Whether demand was allowed to go unserved.

    Returns
    -------
    list of str
        One message per violated rule (empty when all hold).
    """
    problems: list[str] = []
    share = solution.pair_share
    if (share < -ABS_TOL).any() or (share > 1 + ABS_TOL).any():
        problems.append("a share outside [0, 1]")
    served = np.bincount(data.pair_commodity, weights=share, minlength=data.n_commodities)
    balance = served + (solution.unserved_share if optional else 0.0)
    off = np.abs(balance - 1.0) > 1e-6
    if off.any():
        problems.append(f"demand balance broken for {int(off.sum())} commodities")
    closed = ~data.pairs_open(solution.open) & (share > ABS_TOL)  # a cross-metro pair's second site too
    if closed.any():
        problems.append(f"demand sent to closed sites on {int(closed.sum())} pairs")
    if (solution.nodes < 0).any() or (solution.nodes > data.site_max_nodes).any():
        problems.append("node count outside [0, max nodes]")
    if not solution.open[data.site_locked].all():
        problems.append("a locked site is closed")
    n_open = int(solution.open.sum())
    if data.min_sites_open is not None and n_open < data.min_sites_open:
        problems.append(f"{n_open} sites open, fewer than the minimum {data.min_sites_open}")
    if data.max_sites_open is not None and n_open > data.max_sites_open:
        problems.append(f"{n_open} sites open, more than the maximum {data.max_sites_open}")
    problems += check_capacity(data.site_slice_load(share).max(axis=1), solution.nodes.astype(float), what="node capacity")
    problems += check_capacity(
        solution.nodes.astype(float) * data.site_node_mw, data.site_mw_available * solution.open, what="site power"
    )
    for cap, over in zip(data.caps, cap_excess_per_h(data, solution.open, solution.nodes, share), strict=True):
        if over > 0:
            used = (cap.limit_per_h + over) * 8760
            problems.append(f"{cap.name} cap exceeded: {used:,.6g} {cap.unit} a year > {cap.limit_per_h * 8760:,.6g}")
    if data.fault_tolerant:
        problems += _verify_failover(data, solution, optional=optional)
    if not optional and not solution.iterations:
        cost = data.cost_usd_per_h(solution.open, solution.nodes, share)
        problems += check_objective(solution.report.objective, cost, what="objective ($/h)")
    return problems


def _open_sites_in_reach(data: PlacementInput, is_open: NDArray[np.bool_]) -> FloatArray:
    """``(c,)`` distinct open sites each commodity is served at (a cross-metro pair's decode site counts once)."""
    key = np.unique(data.pair_commodity * data.n_sites + data.pair_site)
    commodity, site = key // data.n_sites, key % data.n_sites
    return np.asarray(np.bincount(commodity, weights=is_open[site].astype(float), minlength=data.n_commodities))


def _verify_failover(data: PlacementInput, solution: PlacementSolution, *, optional: bool) -> list[str]:
    """Every loss of :meth:`PlacementInput.failure_scenarios` re-routed in full (or declared unprotected), in every slice.

    A loss takes every pair that loads a failed site, a cross-metro pair's prefill site too: its share must move onto
    pairs whose every site is open and survives, and each site must carry what it keeps plus what moves in.
    """
    problems: list[str] = []
    protected = data.protected
    declared = solution.unprotected_share
    coverage = _open_sites_in_reach(data, solution.open)
    if declared:
        # Protected after a shortfall: a commodity served and never declared unprotected keeps a second site.
        exposed = np.any([share > ABS_TOL for share in declared.values()], axis=0)
        served = np.bincount(data.pair_commodity, weights=solution.pair_share, minlength=data.n_commodities)
        thin = (coverage < 2.0 - 1e-6) & protected & (served > ABS_TOL) & ~exposed
    else:
        required = 2.0 - 2.0 * solution.unserved_share if optional else np.full(data.n_commodities, 2.0)
        thin = (coverage < required - 1e-6) & protected
    if thin.any():
        problems.append(f"{int(thin.sum())} protected commodities have fewer than two open sites inside their budget")
    nodes = solution.nodes.astype(float)[:, None]
    usable = data.pairs_open(solution.open)
    for key, failed_sites in data.failure_scenarios():
        what = f"failure of site {key}" if key < data.n_sites else f"failure of domain {key - data.n_sites}"
        inside = data.pairs_touching(failed_sites)  # lost with any site they load
        outside = np.bincount(data.pair_commodity, weights=(~inside).astype(float), minlength=data.n_commodities) > 0
        at_failed = inside & (protected & outside)[data.pair_commodity]  # nothing in reach outside: exposed, exempt
        lost = np.bincount(data.pair_commodity[at_failed], weights=solution.pair_share[at_failed], minlength=data.n_commodities)
        if lost.max(initial=0.0) <= ABS_TOL:
            continue
        moved = solution.failover_share.get(key, np.zeros(len(data.pair_site)))
        to_closed = (moved > ABS_TOL) & (~usable | inside)
        if to_closed.any():
            problems.append(f"{what} re-routes demand to closed or failed sites")
        # what the surviving pairs keep, plus what moves in, at every site each loads
        after = data.site_slice_load(np.where(inside, 0.0, solution.pair_share)) + data.site_slice_load(moved)
        after[failed_sites] = 0.0
        over = (after > nodes + 1e-6 * np.maximum(1.0, nodes)).any(axis=1)
        if over.any():
            problems.append(f"{what} overloads {int(over.sum())} sites")
        moved_by_commodity = np.bincount(data.pair_commodity, weights=moved, minlength=data.n_commodities)
        left = declared.get(key, np.zeros(data.n_commodities))
        if (left < -ABS_TOL).any() or np.abs(moved_by_commodity + left - lost).max() > 1e-6:
            problems.append(f"{what} leaves demand without a backup")
    return problems
