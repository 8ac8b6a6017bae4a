"""Pricing out pairs: the Lagrangian bound of the full placement model and every pair's reduced cost.

Under the duals of a round of the restricted LP (:mod:`placement.optimize.restricted_lp`), clipped to their
valid signs (rows left out have dual 0), the minimum of the Lagrangian over a box that holds every feasible
point is a lower bound of the *full* model, every pair and slice, MILP included; a pair left out of the
restricted LP prices out (is worth adding) when its reduced cost is negative.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from placement._types import FloatArray, IntArray
from placement.optimize.restricted_lp import RestrictedLP

PRICE_CHUNK_PAIRS = 65_536
"""Pairs priced at a time: each block gathers its pairs' demand and slice-dual rows, two ``(block, T)`` tables of 12 MB
on a 24-slice world, not the whole ``(pairs, T)`` (0.4 GB each on a 2,000-site world's 2.2 million pairs)."""


def _slice_prices(demand: FloatArray, slice_dual: FloatArray, commodity: IntArray, site: IntArray) -> FloatArray:
    """``(k,)`` a tok/s of each (commodity, site) priced by the site's slice duals: ``demand[c] @ slice_dual[j]``.

    Only the pairs' own products are formed: a dense ``demand @ slice_dual.T`` holds every (commodity, site), a
    hundred times the pairs of a catalog world (a 2,000-site world's pricing spent 6 of its 48 s there).

    Parameters
    ----------
    demand : numpy.ndarray
        ``(c, T)`` demand of each commodity by slice. [tokens/s]
    slice_dual : numpy.ndarray
        ``(m, T)`` dual of each site's node-capacity row by slice (0 where the row is not in the LP).
    commodity, site : numpy.ndarray
        ``(k,)`` the pairs.

    Returns
    -------
    numpy.ndarray
        ``(k,)`` the prices, by blocks of :data:`PRICE_CHUNK_PAIRS` pairs.
    """
    out = np.empty(len(commodity))
    for first in range(0, len(commodity), PRICE_CHUNK_PAIRS):
        block = slice(first, first + PRICE_CHUNK_PAIRS)
        out[block] = np.einsum("kt,kt->k", demand[commodity[block]], slice_dual[site[block]])
    return out


def _link_duals(link_row: NDArray[np.int32], dual: FloatArray) -> FloatArray:
    """``(p,)`` each pair's linking-row dual, clipped to at most 0 (0 where it has no row); no per-pair temporaries."""
    out = np.zeros(len(link_row))
    linked = np.flatnonzero(link_row >= 0)
    out[linked] = np.minimum(dual[link_row[linked]], 0.0)
    return out


def lagrangian_bound(lp: RestrictedLP, dual: FloatArray) -> tuple[float, FloatArray]:
    """The Lagrangian bound of the full model under these duals, and every pair's reduced cost.

    Duals are clipped to the signs that keep the bound valid (``<=`` rows: at most 0, ``>=`` rows: at
    least 0); rows not in the model have dual 0. Each commodity's shares and unserved share lie on the
    simplex ``sum = 1`` (its demand row), opens and nodes in their bounds.

    Parameters
    ----------
    lp : RestrictedLP
        The restricted LP, its objective set.
    dual : numpy.ndarray
        Dual of each of its rows, from its last solve.

    Returns
    -------
    tuple
        The bound (in the unit of the objective), and ``(p,)`` the reduced cost of every pair.
    """
    data, m, c = lp.data, lp.m, lp.c
    pi = dual[lp.demand.rows]
    power = np.minimum(dual[lp.power.rows], 0.0)
    slice_dual = np.where(lp.slice_row >= 0, np.minimum(dual[np.maximum(lp.slice_row, 0)], 0.0), 0.0)
    link = _link_duals(lp.link_row, dual)
    remote_link = _link_duals(lp.remote_link_row, dual)
    count_value = 0.0
    count_dual = 0.0
    for row, rhs, is_lower in lp.count_rows:
        d = max(dual[row], 0.0) if is_lower else min(dual[row], 0.0)
        count_value += rhs * d
        count_dual += d
    sigma = min(dual[lp.cap_row], 0.0) if lp.cap_row >= 0 else 0.0
    tau = [min(dual[row.start], 0.0) for row in lp.caps]  # each carbon or water cap row's dual
    fixed, node = lp.objective[:m], lp.objective[m : 2 * m]
    link_by_site = np.bincount(data.pair_site, weights=link, minlength=m)
    far = data.remote_pairs
    if len(far):
        assert data.pair_remote_site is not None
        link_by_site = link_by_site + np.bincount(data.pair_remote_site[far], weights=remote_link[far], minlength=m)
    rc_open = fixed + link_by_site + data.site_mw_available * power - count_dual
    rc_nodes = node + slice_dual.sum(axis=1) - data.site_node_mw * power
    for t, cap in zip(tau, data.caps, strict=True):
        if t:
            fixed_per_h, node_per_h = cap.site_weights()
            rc_open = rc_open - t * fixed_per_h
            rc_nodes = rc_nodes - t * node_per_h
    rc_unserved = lp.objective[2 * m :] - pi - sigma * data.mean_demand_tok_s
    slice_price = _slice_prices(data.slice_demand_tok_s, slice_dual, data.pair_commodity, data.pair_site)
    # rc = cost - pi[commodity] - nodes * slice price - link, in place: one per-pair array, not four
    rc_pair = pi[data.pair_commodity]
    np.subtract(lp.pair_cost, rc_pair, out=rc_pair)
    slice_price *= data.pair_nodes_per_tok_s
    rc_pair -= slice_price
    rc_pair -= link
    for t, cap in zip(tau, data.caps, strict=True):
        if t:
            rc_pair -= t * cap.pair_weights(data.pair_site)
    if len(far):  # a cross-metro pair's load and link at its second site
        assert data.pair_remote_site is not None and data.pair_remote_nodes_per_tok_s is not None
        remote_price = _slice_prices(data.slice_demand_tok_s, slice_dual, data.pair_commodity[far], data.pair_remote_site[far])
        rc_pair[far] -= data.pair_remote_nodes_per_tok_s[far] * remote_price + remote_link[far]
    best = np.full(c, np.inf)
    np.minimum.at(best, data.pair_commodity, rc_pair)
    if lp.unserved_in_model:
        best = np.minimum(best, rc_unserved)
    lower_open = data.site_locked.astype(float)
    bound = (
        float(pi.sum())
        + count_value
        + sigma * lp.cap_rhs
        + sum(t * cap.lp_limit_per_h for t, cap in zip(tau, data.caps, strict=True))  # the LP's rows (see solve_priced)
        + float(np.minimum(rc_open * lower_open, rc_open).sum())
        + float(np.minimum(0.0, rc_nodes * data.site_max_nodes).sum())
        + float(best.sum())
    )
    return bound, rc_pair
