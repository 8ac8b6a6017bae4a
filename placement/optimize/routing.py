"""Routing shares to the nearest open capacity with the design fixed, as one LP in HiGHS.

The same LP as :func:`placement.optimize.heuristics.route_to_nearest` (least demand-weighted round trip, every
commodity keeping its served share, every site and slice within its nodes, load-dependent cost not above the
design's), built from the placement rows (:mod:`placement.optimize.rows`) on the pairs at open sites and
written straight into HiGHS: at full resolution the PuLP form of it costs seconds and ~150 MB.
"""

from __future__ import annotations

import numpy as np

from placement._types import FloatArray, IntArray
from placement.optimize import rows
from placement.optimize.linear import LinearModel, solve_by_pricing, to_highspy
from placement.optimize.problem import PlacementInput, load_entries_of

NEAREST_PER_COMMODITY = 8
"""Open sites per commodity the routing LP may move its share to, nearest first (besides those it uses): a share goes to
the nearest open capacity, so farther ones rarely take any, and on a 1,000-site world the LP is a fraction of the one
over every open pair (and of its time)."""


PRICED_FROM_COLUMNS = 50_000
"""Routing LPs with more columns than this are solved by pricing (:func:`placement.optimize.linear.solve_by_pricing`)
from the pairs the design uses and each commodity's nearest open site: the same optimum, and on a 2,000-site world
about 5 s where the LP over every column takes 12 s (most pairs never enter a basis)."""


def _nearest(data: PlacementInput, pairs: IntArray, count: int) -> IntArray:
    """Positions in ``pairs`` of each commodity's ``count`` nearest (least round trip) of them."""
    order = np.lexsort((data.pair_rtt_ms[pairs], data.pair_commodity[pairs]))
    commodity = data.pair_commodity[pairs[order]]
    first = np.searchsorted(commodity, commodity, side="left")
    return np.asarray(order[(np.arange(len(order)) - first) < count])


def nearest_pairs(data: PlacementInput, open_pairs: IntArray, shares: FloatArray) -> IntArray:
    """The routing LP's pairs: of the pairs at open sites (ascending), each commodity's nearest few and those it uses now."""
    if len(open_pairs) <= NEAREST_PER_COMMODITY * data.n_commodities:
        return open_pairs
    keep = shares[open_pairs] > 0
    keep[_nearest(data, open_pairs, NEAREST_PER_COMMODITY)] = True
    return np.asarray(open_pairs[keep])


ALL_SLICE_ROWS = 5000
"""Site x slice capacity rows the routing LP writes whole; above, only each open site's undominated slices (the same
LP, smaller: on a 1,000-site world 24,000 rows, most empty or implied)."""


def routing_model(data: PlacementInput, is_open: np.ndarray, nodes: IntArray, shares: FloatArray) -> tuple[LinearModel, IntArray]:
    """The routing LP of a fixed design: columns are the shares of the pairs at open sites.

    Rows: demand (every commodity keeps its served share), capacity (every site and slice, site-major, within
    its fixed nodes), and the load-dependent cost budget.

    Parameters
    ----------
    data : PlacementInput
        The arrays (without N+1).
    is_open : numpy.ndarray of bool
        ``(m,)`` open sites.
    nodes : numpy.ndarray of int
        ``(m,)`` node counts.
    shares : numpy.ndarray
        ``(p,)`` the design's shares.

    Returns
    -------
    tuple
        The model and the pair of each of its columns.
    """
    pairs = nearest_pairs(data, np.flatnonzero(data.pairs_open(is_open)), shares)
    m, slices = data.n_sites, len(data.slice_hours)
    commodity, site = data.pair_commodity[pairs], data.pair_site[pairs]
    served = np.asarray(np.bincount(data.pair_commodity, weights=shares, minlength=data.n_commodities), dtype=float)
    lm = LinearModel("route_nearest")
    block = rows.share_columns(lm, commodity, site, cost=data.pair_rtt_ms[pairs] * data.mean_demand_tok_s[commodity])
    block.upper = np.ones(len(pairs))
    rows.demand_rows(lm, block.cols, commodity, served)
    entry, entry_site, entry_nodes = load_entries_of(data, pairs)
    load = data.slice_demand_tok_s[commodity[entry]] * entry_nodes[:, None]  # (e, T)
    if len(data.slice_hours) * m <= ALL_SLICE_ROWS:
        sites, slice_index = np.repeat(np.arange(m), slices), np.tile(np.arange(slices), m)
    else:  # only the slices that can bind at an open site: a slice no heavier than another for every pair is implied
        sites, slice_index = rows.capacity_slices(entry_site, load, m)
        keep = is_open[sites]
        sites, slice_index = sites[keep], slice_index[keep]
    rows.capacity_rows(lm, block.cols[entry], entry_site, load, None, nodes.astype(float), sites, slice_index)
    rows.load_cost_budget_row(lm, block.cols, data.pair_cost_usd_per_h[pairs], float(shares @ data.pair_cost_usd_per_h))
    return lm, pairs


def route_nearest_arrays(
    data: PlacementInput,
    is_open: np.ndarray,
    nodes: IntArray,
    shares: FloatArray,
    *,
    threads: int = 1,
    time_limit_s: float | None = None,
) -> FloatArray | None:
    """Shares with the least demand-weighted round trip for a fixed design.

    Parameters
    ----------
    data : PlacementInput
        The arrays (without N+1).
    is_open : numpy.ndarray of bool
        ``(m,)`` open sites.
    nodes : numpy.ndarray of int
        ``(m,)`` node counts.
    shares : numpy.ndarray
        ``(p,)`` the design's shares: each commodity keeps its served total, and the load-dependent cost
        may not rise.
    threads : int, optional
        HiGHS threads.
    time_limit_s : float, optional
        Wall-clock limit of the LP (None: none); stopped by it, the design's own shares stand.

    Returns
    -------
    numpy.ndarray or None
        ``(p,)`` routed shares, or None when HiGHS does not report an optimum.
    """
    lm, pairs = routing_model(data, is_open, nodes, shares)
    if lm.n_cols > PRICED_FROM_COLUMNS:
        status, values = solve_by_pricing(lm, _first_columns(data, pairs, shares), threads=threads, time_limit_s=time_limit_s)
    else:
        h = to_highspy(lm, threads=threads)
        if time_limit_s is not None:
            h.setOptionValue("time_limit", float(time_limit_s))
        h.run()
        status, values = h.modelStatusToString(h.getModelStatus()), np.asarray(h.getSolution().col_value, dtype=float)
    if status != "Optimal":
        return None
    routed = np.zeros(len(data.pair_site))
    routed[pairs] = np.clip(values, 0.0, 1.0)
    return routed


def _first_columns(data: PlacementInput, pairs: IntArray, shares: FloatArray) -> np.ndarray:
    """``(len(pairs),)`` the priced routing LP's first columns: the pairs in use (a feasible point), each commodity's nearest."""
    first = shares[pairs] > 0
    first[_nearest(data, pairs, 1)] = True
    return np.asarray(first)
