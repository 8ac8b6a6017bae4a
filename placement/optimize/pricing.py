"""The LP relaxation of the full placement model by pair pricing and slice cuts, with a valid bound at every round.

At full resolution most (commodity, site) pairs can never pay: a commodity is served from one or two of the
dozens of sites in its reach. So the LP relaxation (strong linking rows ``share[p] <= open[j]`` included) is
solved on a few pairs per commodity and a few time slices per site, and grows:

- *pricing*: a pair left out is added when its reduced cost under the current duals is negative;
- *slice cuts*: a site's node-capacity row of a slice is added when the current shares overload it.

Every round also yields a Lagrangian bound: with the current duals (clipped to their valid signs; left-out
rows have dual 0), ``min`` of the Lagrangian over a box that contains every feasible point (each commodity's
shares and unserved share on their simplex, opens and nodes in their bounds) is a lower bound of the *full*
model over every pair and slice, its MILP included. When no pair prices out and no slice is overloaded, the
bound equals the LP optimum of the full model.

Two objectives share the machinery: ``"unserved"`` (least unserved mean goodput: what the sites' power can
carry at most) and ``"cost"`` (least cost, with unserved goodput capped). The restricted LP is a
:class:`~placement.optimize.linear.LinearModel` of the placement rows (:mod:`placement.optimize.rows`) that grows
in place, kept in step with HiGHS, which keeps its basis between rounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize import rows
from placement.optimize.linear import ColumnBlock, HighsSync, LinearModel, RowBlock, new_highs
from placement.optimize.problem import PlacementInput, load_entries_of

INITIAL_PAIRS_PER_COMMODITY = 10
"""Pairs each commodity starts with: its cheapest by node, energy and fixed cost at its peak."""

INITIAL_SLICES_PER_SITE = 2
"""Node-capacity rows each site starts with: its busiest slices if it served every pair it may serve."""

PRICED_PER_COMMODITY = 4
"""Pairs with negative reduced cost added per commodity and round (the most negative)."""

WEAK_PRICED_PER_COMMODITY = 8
"""As :data:`PRICED_PER_COMMODITY`, for the weak formulation (``links=False``): its LPs stay small as they grow, so
fewer, larger rounds pay (on a 2,000-site world 6 rounds to within 0.1 % of the LP instead of 10, 26 s against 39)."""

MAX_ROUNDS = 60
"""Rounds after which pricing stops (deterministic); the bound of the best round stands."""

ARTIFICIAL_PRICE = 10.0
"""Price of an artificial unserved share (every commodity served) over the dearest way of serving it, full
fixed cost and peak nodes included."""

CONVERGED = 1e-7
"""Relative distance of the bound to the restricted LP at which the rounds stop."""


@dataclass(frozen=True)
class Relaxation:
    """The LP relaxation of the full model and what it proved.

    Parameters
    ----------
    bound : float
        Lower bound on the objective of the full model (every pair, every slice), MILP included.
    value : float
        Optimum of the last restricted LP (an upper bound of the full LP's optimum).
    shares : numpy.ndarray
        ``(p,)`` LP shares on every pair (0 off the pairs in the model).
    open, nodes : numpy.ndarray
        ``(m,)`` LP open values and node counts.
    unserved : numpy.ndarray
        ``(c,)`` LP unserved shares.
    reduced_cost : numpy.ndarray
        ``(p,)`` reduced cost of every pair under the duals of the last round.
    in_model : numpy.ndarray of bool
        ``(p,)`` pairs in the restricted LP.
    rounds : int
        LP solves.
    converged : bool
        No pair priced out and no slice was overloaded in the last round.
    rows : int
        Rows of the last restricted LP.
    history : list of dict
        Per round: restricted LP value, its Lagrangian bound, LP seconds, pairs and rows in the model.
    timed_out : bool
        The deadline stopped the rounds (the figures are the last round's that finished).
    """

    bound: float
    value: float
    shares: FloatArray
    open: FloatArray
    nodes: FloatArray
    unserved: FloatArray
    reduced_cost: FloatArray
    in_model: BoolArray
    rounds: int
    converged: bool
    rows: int
    history: list[dict[str, float]] = field(default_factory=list)
    timed_out: bool = False


def site_slice_load(data: PlacementInput, shares: FloatArray) -> FloatArray:
    """``(m, T)`` node-equivalents each site carries in each slice (as ``PlacementInput.site_slice_load``, by one product).

    The product is sparse: a dense (sites x commodities) weight table is 400 MB at 2,000 sites and 25,000 rows,
    and most of it zero once the shares are a design's.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    shares : numpy.ndarray
        ``(p,)`` share of each pair.

    Returns
    -------
    numpy.ndarray
        ``(m, T)`` load. [nodes]
    """
    m, c = data.n_sites, data.n_commodities
    pair, site, nodes = data.load_entries()  # a cross-metro pair loads its second site too
    weight = shares[pair] * nodes
    used = np.flatnonzero(weight)
    table = sparse.csr_array((weight[used], (site[used], data.pair_commodity[pair[used]])), shape=(m, c))
    return np.asarray(table @ data.slice_demand_tok_s, dtype=float)


def _peak_cost(data: PlacementInput) -> FloatArray:
    """A pair's cost at a share of 1 if its site's nodes carried it at its peak: a ranking, not a bound."""
    return np.asarray(data.pair_cost_usd_per_h + _peak_site_cost(data, data.site_node_usd_per_h, data.peak_demand_tok_s))


def _peak_site_cost(data: PlacementInput, per_node: FloatArray, peak_demand: FloatArray) -> FloatArray:
    """``(p,)`` each pair's nodes at its commodity's peak, priced per node at every site it loads. [USD/h]"""
    pair, site, nodes = data.load_entries()
    weights = peak_demand[data.pair_commodity[pair]] * nodes * per_node[site]
    return np.bincount(pair, weights=weights, minlength=len(data.pair_site)).astype(float)


def first_of_each(order: IntArray, group: IntArray, count: int) -> IntArray:
    """The first ``count`` entries of ``order`` for each value of ``group[order]`` (in the order given).

    Parameters
    ----------
    order : numpy.ndarray
        Indices, best first.
    group : numpy.ndarray
        Group of every index.
    count : int
        Entries kept per group.

    Returns
    -------
    numpy.ndarray
        The kept indices, grouped.
    """
    ranked = order[np.argsort(group[order], kind="stable")]
    keys = group[ranked]
    starts = np.searchsorted(keys, keys, side="left")
    rank = np.arange(len(ranked)) - starts
    return np.asarray(ranked[rank < count])


def initial_pairs(data: PlacementInput, count: int | None = None) -> IntArray:
    """Each commodity's ``count`` cheapest pairs by :func:`_peak_cost`.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    count : int, optional
        Pairs per commodity (default :data:`INITIAL_PAIRS_PER_COMMODITY`).

    Returns
    -------
    numpy.ndarray
        Sorted pair indices.
    """
    order = np.argsort(_peak_cost(data), kind="stable")
    keep = INITIAL_PAIRS_PER_COMMODITY if count is None else count
    return np.sort(first_of_each(order, data.pair_commodity, keep))


def _entry_rank(model: LinearModel, slice_row: IntArray, row: IntArray) -> IntArray:
    """A priced pair's entries in order: its demand row (-1), then its slice rows (``slice_row``, (m, T)) by slice."""
    rank = np.full(model.n_rows, -1, dtype=np.int64)
    cut = slice_row >= 0
    rank[slice_row[cut]] = np.nonzero(cut)[1]
    return np.asarray(rank[row])


class _Lp:
    """The restricted LP, a :class:`LinearModel` kept in step with a HiGHS object.

    Columns ``[open | nodes | unserved | shares...]`` (shares as priced in); rows demand (c), power (m), the
    site counts, then the unserved cap, slice rows and linking rows as they are added. HiGHS gets each
    addition as it is made (one :meth:`HighsSync.sync` per step), so it keeps its basis between rounds.
    """

    def __init__(self, data: PlacementInput) -> None:
        self.data = data
        m, c = data.n_sites, data.n_commodities
        self.m, self.c = m, c
        self.pair_cost = np.zeros(len(data.pair_site))
        self.unserved_in_model = True
        self.model = LinearModel("priced_lp")
        lm = self.model
        self.open = rows.open_columns(lm, m, locked=data.site_locked)
        self.nodes = rows.node_columns(lm, data.site_max_nodes, cost=np.zeros(m))
        self.open.integer = self.nodes.integer = False  # the LP relaxation
        self.unserved = rows.unserved_columns(lm, c)
        no_pairs = np.zeros(0, dtype=np.int64)
        self.demand = rows.demand_rows(lm, no_pairs, no_pairs, np.ones(c), unserved_cols=self.unserved.cols)
        self.power = rows.power_rows(lm, self.nodes.cols, self.open.cols, data.site_node_mw, data.site_mw_available)
        counts = rows.site_count_rows(lm, self.open.cols, min_open=data.min_sites_open, max_open=data.max_sites_open)
        bounds = [(rhs, lower) for rhs, lower in ((data.min_sites_open, True), (data.max_sites_open, False)) if rhs is not None]
        # (row, rhs, is a lower bound) of each site-count row
        self.count_rows = [(b.start, float(rhs), lower) for b, (rhs, lower) in zip(counts, bounds, strict=True)]
        self.cap_row = -1
        self.cap_rhs = 0.0
        # the carbon and water cap rows, shares entering them as they are priced in
        self.caps: list[RowBlock] = [
            rows.resource_cap_row(
                lm, k, (self.open.cols, self.nodes.cols, no_pairs), (*cap.site_weights(), np.zeros(0)), cap.limit_per_h
            )
            for k, cap in enumerate(data.caps)
        ]
        self.slice_row = np.full((m, len(data.slice_hours)), -1, dtype=np.int64)
        self.slice_blocks: list[tuple[RowBlock, IntArray, IntArray]] = []  # capacity rows and their (site, slice)
        # per pair (2.9 M at 2,000 sites): int32, as HiGHS numbers its columns and rows
        self.pair_col = np.full(len(data.pair_site), -1, dtype=np.int32)
        self.pair_blocks: list[tuple[ColumnBlock, IntArray]] = []
        self.link_row = np.full(len(data.pair_site), -1, dtype=np.int32)
        self.remote_link_row = np.full(len(data.pair_site), -1, dtype=np.int32)  # cross-metro pairs' second sites
        self.objective = np.zeros(0)
        self.best_bound: float | None = None
        self.kind = ""
        # A priced pair's entries go to HiGHS as they always have: its demand row, then its slice rows by slice.
        # (a function of the model and the slice rows, not a bound method: the LP is freed once unused, not by the
        # cycle collector some time later with HiGHS's copy of it)
        self.sync = HighsSync(lm, new_highs(threads=1), entry_rank=partial(_entry_rank, lm, self.slice_row))
        self.h = self.sync.sync()

    @property
    def n_cols(self) -> int:
        """Columns of the restricted LP."""
        return self.model.n_cols

    @property
    def n_rows(self) -> int:
        """Rows of the restricted LP."""
        return self.model.n_rows

    def add_cap_row(self, cap: float) -> None:
        """``sum_c mean[c] * unserved[c] <= cap``."""
        block = rows.unserved_cap_row(self.model, self.unserved.cols, self.data.mean_demand_tok_s, cap)
        self.cap_row, self.cap_rhs = block.start, cap
        self.sync.sync()

    def set_objective(self, kind: Literal["cost", "unserved"]) -> None:
        data, m, c = self.data, self.m, self.c
        if kind != self.kind:
            self.best_bound = None  # a bound of the other objective
        self.kind = kind
        if kind == "cost":
            objective = np.concatenate([data.site_fixed_usd_per_h, data.site_node_usd_per_h, np.zeros(c)])
            pair_cost = data.pair_cost_usd_per_h
        else:
            objective = np.concatenate([np.zeros(2 * m), data.mean_demand_tok_s])
            pair_cost = np.zeros(len(data.pair_site))
        self.pair_cost = np.asarray(pair_cost, dtype=float)
        self.objective = objective
        self.open.cost, self.nodes.cost, self.unserved.cost = objective[:m], objective[m : 2 * m], objective[2 * m :]
        for block, pairs in self.pair_blocks:
            block.cost = self.pair_cost[pairs]
        cols = np.concatenate([self.open.cols, self.nodes.cols, self.unserved.cols]).astype(np.int32)
        self.h.changeColsCost(len(cols), cols, objective.astype(np.float64))
        active = np.flatnonzero(self.pair_col >= 0)
        if len(active):
            self.h.changeColsCost(len(active), self.pair_col[active].astype(np.int32), self.pair_cost[active])

    def set_unserved(self, *, in_model: bool) -> None:
        """Unserved shares as the model has them, or (every commodity served) as artificial columns.

        Artificial: the restricted LP keeps them at a price above any way of serving, so it stays feasible
        while pairs and rows are still missing (a site-count row can make a few pairs unable to carry the
        demand once their linking rows arrive); the Lagrangian bound leaves them out, as the model does.
        """
        self.unserved_in_model = in_model
        if in_model:
            return
        data, c = self.data, self.c
        per_share = data.pair_cost_usd_per_h + data.site_fixed_usd_per_h[data.pair_site]
        remote = data.remote_pairs
        if len(remote):  # the second site's fixed cost too
            assert data.pair_remote_site is not None
            per_share[remote] += data.site_fixed_usd_per_h[data.pair_remote_site[remote]]
        per_share = per_share + _peak_site_cost(data, data.site_node_usd_per_h, data.slice_demand_tok_s.max(axis=1))
        price = np.zeros(c)
        np.maximum.at(price, data.pair_commodity, per_share)
        self.unserved.cost = ARTIFICIAL_PRICE * price + 1.0
        self.h.changeColsCost(c, self.unserved.cols.astype(np.int32), self.unserved.cost)

    def add_pairs(self, pairs: IntArray) -> None:
        """Add share columns (with their entries in the demand and slice rows)."""
        data = self.data
        pairs = pairs[self.pair_col[pairs] < 0]
        if len(pairs) == 0:
            return
        commodity, sites = data.pair_commodity[pairs], data.pair_site[pairs]
        cost = self.pair_cost[pairs] if len(self.objective) else np.zeros(len(pairs))
        remote = None if data.pair_remote_site is None else data.pair_remote_site[pairs]
        block = rows.share_columns(self.model, commodity, sites, cost=cost, remote_site=remote)
        block.upper = np.ones(len(pairs))
        self.pair_blocks.append((block, pairs))
        self.pair_col[pairs] = block.cols
        rows.extend_demand_rows(self.demand, block.cols, commodity)
        for row, cap in zip(self.caps, data.caps, strict=True):
            row.extend(np.zeros(len(pairs), dtype=np.int64), block.cols, cap.pair_weights(data.pair_site, pairs))
        entry, at, nodes = load_entries_of(data, pairs)  # a cross-metro pair enters its second site's rows too
        load = data.slice_demand_tok_s[commodity[entry]] * nodes[:, None]
        for cut, cut_sites, cut_slices in self.slice_blocks:
            rows.extend_capacity_rows(cut, cut_sites, cut_slices, block.cols[entry], at, load)
        self.sync.sync()

    def add_links(self, pairs: IntArray) -> None:
        """Linking rows ``share[p] <= open[j]`` of pairs in the model."""
        data = self.data
        pairs = pairs[(self.link_row[pairs] < 0) & (self.pair_col[pairs] >= 0)]
        if len(pairs) == 0:
            return
        commodity, sites = data.pair_commodity[pairs], data.pair_site[pairs]
        remote = None if data.pair_remote_site is None else data.pair_remote_site[pairs]
        labels = rows.pair_labels(commodity, sites, remote)
        block = rows.linking_rows(
            self.model, self.pair_col[pairs].astype(np.int64), self.open.cols, commodity, sites, np.ones(self.c), labels=labels
        )
        self.link_row[pairs] = block.rows
        self.sync.sync()

    def add_remote_links(self, pairs: IntArray) -> None:
        """Linking rows ``share[p] <= open[k]`` of cross-metro pairs in the model, k their second site."""
        data = self.data
        pairs = pairs[(self.remote_link_row[pairs] < 0) & (self.pair_col[pairs] >= 0)]
        if len(pairs) == 0:
            return
        assert data.pair_remote_site is not None
        commodity, far = data.pair_commodity[pairs], data.pair_remote_site[pairs]
        labels = rows.pair_labels(commodity, data.pair_site[pairs], far)
        block = rows.linking_rows(
            self.model,
            self.pair_col[pairs].astype(np.int64),
            self.open.cols,
            commodity,
            far,
            np.ones(self.c),
            name="link_remote",
            labels=labels,
        )
        self.remote_link_row[pairs] = block.rows
        self.sync.sync()

    def add_slices(self, sites: IntArray, slices: IntArray) -> None:
        """Node-capacity rows of (site, slice), over every pair of the site in the model."""
        data = self.data
        fresh = self.slice_row[sites, slices] < 0
        sites, slices = sites[fresh], slices[fresh]
        if len(sites) == 0:
            return
        active = np.flatnonzero(self.pair_col >= 0)
        entry, at, nodes = load_entries_of(data, active)
        load = data.slice_demand_tok_s[data.pair_commodity[active[entry]]] * nodes[:, None]
        cols = self.pair_col[active[entry]].astype(np.int64)
        block = rows.capacity_rows(self.model, cols, at, load, self.nodes.cols, np.ones(self.m), sites, slices)
        self.slice_blocks.append((block, sites, slices))
        self.slice_row[sites, slices] = block.rows
        self.sync.sync()

    def solve(self, time_limit_s: float | None = None) -> tuple[FloatArray, FloatArray, float] | None:
        """Primal values, duals and value of the restricted LP; None when ``time_limit_s`` stops it first."""
        # HiGHS measures its time limit on a clock that adds up every run of this object: the limit is from now
        limit = float("inf") if time_limit_s is None else self.h.getRunTime() + float(time_limit_s)
        self.h.setOptionValue("time_limit", limit)
        self.h.run()
        status = self.h.modelStatusToString(self.h.getModelStatus())
        if status == "Time limit reached":
            return None
        if status != "Optimal":
            raise RuntimeError(f"restricted LP: {status}")
        solution = self.h.getSolution()
        return (
            np.asarray(solution.col_value, dtype=float),
            np.asarray(solution.row_dual, dtype=float),
            float(self.h.getInfo().objective_function_value),
        )


PRICE_CHUNK_COMMODITIES = 256
"""Commodities whose (commodity, site) slice prices are formed at a time: a block of the (c, m) table, not all of it
(305 MB a round on a 2,000-site world); 4 MB a block at 2,000 sites, below :data:`placement._process.MMAP_THRESHOLD_BYTES`,
so the blocks reuse the heap rather than map fresh pages each time."""


def _slice_prices(demand: FloatArray, slice_dual: FloatArray, commodity: IntArray, site: IntArray) -> FloatArray:
    """``(k,)`` a tok/s of each (commodity, site) priced by the site's slice duals: ``demand[c] @ slice_dual[j]``.

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
        ``(k,)`` the prices, by blocks of :data:`PRICE_CHUNK_COMMODITIES` commodities.
    """
    out = np.empty(len(commodity))
    ordered = bool(np.all(commodity[1:] >= commodity[:-1]))  # pairs are built commodity by commodity
    order = None if ordered else np.argsort(commodity, kind="stable")
    firsts = np.arange(0, len(demand), PRICE_CHUNK_COMMODITIES)
    by_commodity = commodity if order is None else commodity[order]
    ends: list[int] = [int(e) for e in np.asarray(np.searchsorted(by_commodity, np.r_[firsts, len(demand)]))]
    for k, first in enumerate(firsts):
        block = demand[first : first + PRICE_CHUNK_COMMODITIES] @ slice_dual.T  # (block, m)
        inside: slice | IntArray = slice(ends[k], ends[k + 1]) if order is None else order[ends[k] : ends[k + 1]]
        out[inside] = block[commodity[inside] - first, site[inside]]
    return out


def _link_duals(link_row: NDArray[np.int32], dual: FloatArray) -> FloatArray:
    """``(p,)`` each pair's linking-row dual, clipped to at most 0 (0 where it has no row); no per-pair temporaries."""
    out = np.zeros(len(link_row))
    linked = np.flatnonzero(link_row >= 0)
    out[linked] = np.minimum(dual[link_row[linked]], 0.0)
    return out


def _lagrangian(lp: _Lp, dual: FloatArray) -> tuple[float, FloatArray]:
    """The Lagrangian bound of the full model under these duals, and every pair's reduced cost.

    Duals are clipped to the signs that keep the bound valid (``<=`` rows: at most 0, ``>=`` rows: at
    least 0); rows not in the model have dual 0. Each commodity's shares and unserved share lie on the
    simplex ``sum = 1`` (its demand row), opens and nodes in their bounds.
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
        + sum(t * cap.limit_per_h for t, cap in zip(tau, data.caps, strict=True))
        + float(np.minimum(rc_open * lower_open, rc_open).sum())
        + float(np.minimum(0.0, rc_nodes * data.site_max_nodes).sum())
        + float(best.sum())
    )
    return bound, rc_pair


def _round_line(objective: str, step: dict[str, float], rounds: int, best: float) -> str:
    """One pricing round in words: the LP's value, the best bound, their gap, the model's size and what was added."""
    value = step["value"]
    gap = abs(value - best) / max(abs(value), 1e-9) if np.isfinite(best) else float("inf")
    return (
        f"LP round {rounds} ({'least unserved' if objective == 'unserved' else 'least cost'}): value {value:,.6g}, "
        f"bound {best:,.6g} (gap {gap:.2%}), {int(step['pairs']):,} pairs, {int(step['rows']):,} rows; "
        f"+{int(step['priced']):,} priced, +{int(step['slice_cuts']):,} slice and +{int(step['link_cuts']):,} link cuts; "
        f"{step['lp_s']:.1f} s"
    )


def _remote_unlinked(data: PlacementInput, lp: _Lp, active: BoolArray, shares: FloatArray, opens: FloatArray) -> IntArray:
    """Cross-metro pairs in the model whose share exceeds their second site's open value and has no linking row yet."""
    far = data.remote_pairs
    if len(far) == 0:
        return far
    assert data.pair_remote_site is not None
    cut = active[far] & (lp.remote_link_row[far] < 0) & (shares[far] > opens[data.pair_remote_site[far]] + 1e-7)
    return far[cut]


def relax(
    data: PlacementInput,
    *,
    objective: Literal["cost", "unserved"],
    unserved_cap_tok_s: float | None = None,
    pairs: IntArray | None = None,
    max_rounds: int = MAX_ROUNDS,
    target: float = CONVERGED,
    lp: _Lp | None = None,
    progress: Callable[[str], None] | None = None,
    deadline: float | None = None,
    links: bool = True,
    bound_goal: float | None = None,
) -> tuple[Relaxation, _Lp]:
    """Solve the LP relaxation of the full model by pricing pairs and cutting slices.

    Parameters
    ----------
    data : PlacementInput
        The arrays (N+1 rows are not modelled: call it without ``fault_tolerant``).
    objective : {"cost", "unserved"}
        Least cost, or least unserved mean goodput (everything else free).
    unserved_cap_tok_s : float, optional
        With ``"cost"``: unserved mean goodput allowed in all (None: every commodity served in full). [tokens/s]
    pairs : numpy.ndarray, optional
        Pairs to start with (default :func:`initial_pairs`).
    max_rounds : int, optional
        LP solves after which the rounds stop.
    target : float, optional
        Stop once the bound is within this share of the restricted LP's value and no slice is overloaded
        beyond its site's power (0: only when nothing is left to price or cut).
    lp : optional
        A restricted LP from an earlier call on the same data, kept with its pairs, slices and (same
        objective and cap) best bound.
    progress : callable, optional
        Receives a line per round: the restricted LP's value, the bound, their gap, what was priced and cut.
    deadline : float, optional
        ``time.perf_counter()`` by which the rounds must end: the LP of a round gets what is left, and one it stops
        (or a round that would start after it) ends the rounds with the last round that finished.
    links : bool, optional
        Cut with the strong linking rows ``share[p] <= open[j]`` a round's shares break (default). False leaves
        them out: the relaxation of the weak formulation, whose bound is lower by at most what the open sites'
        fixed costs share out (0.3 % on a 1,000-site world) and whose LPs are far smaller (1 s a round there,
        against 25 s with the thousands of linking rows a round adds); linking rows already in the LP stay.
    bound_goal : float, optional
        Stop as well once the bound reaches this (what proves a design in hand within its gap).

    Raises
    ------
    TimeoutError
        The deadline came before the first round's LP finished (there is no bound to hand back).

    Returns
    -------
    tuple
        The :class:`Relaxation` and the restricted LP (to continue from).

    Raises
    ------
    ValueError
        With ``"cost"`` from scratch, when no design meets the unserved cap (the least-unserved LP, run
        first to find pairs that carry the demand, proves it).
    """
    if lp is None and objective == "cost":
        # A few pairs per commodity may not carry the demand: the least-unserved LP first finds pairs that do.
        least, lp = relax(data, objective="unserved", pairs=pairs, progress=progress, deadline=deadline, links=links)
        cap = 0.0 if unserved_cap_tok_s is None else unserved_cap_tok_s
        short = least.value > cap * (1 + 1e-9) + 1e-9 * max(float(data.mean_demand_tok_s.sum()), 1.0)
        if short and least.timed_out:
            raise TimeoutError("the time limit stopped pricing before it found pairs that meet the unserved cap")
        if short:
            raise ValueError(f"no design found that leaves at most {cap:,.6g} tok/s unserved: the least is {least.bound:,.6g}")
        pairs = None
    if lp is None:
        lp = _Lp(data)
        lp.set_objective(objective)
        lp.add_pairs(initial_pairs(data) if pairs is None else pairs)
        potential = site_slice_load(data, np.ones(len(data.pair_site)))
        top = np.argsort(-potential, axis=1, kind="stable")[:, :INITIAL_SLICES_PER_SITE]
        lp.add_slices(np.repeat(np.arange(data.n_sites), top.shape[1]), top.ravel())
    else:
        lp.set_objective(objective)
        if pairs is not None:
            lp.add_pairs(pairs)
    if objective == "cost":
        lp.set_unserved(in_model=unserved_cap_tok_s is not None)
        if unserved_cap_tok_s is not None and lp.cap_row < 0:
            lp.add_cap_row(unserved_cap_tok_s)
        elif unserved_cap_tok_s is not None and lp.cap_rhs != unserved_cap_tok_s:
            raise ValueError("the restricted LP holds another unserved cap")
    else:
        lp.set_unserved(in_model=True)
    best = -np.inf if lp.best_bound is None else lp.best_bound
    history: list[dict[str, float]] = []
    rounds = 0
    converged = timed_out = False
    while True:
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0 and rounds > 0:
            timed_out = True
            break
        tic = time.perf_counter()
        solved = lp.solve(None if left is None else max(left, 1.0))
        lp_s = time.perf_counter() - tic
        if solved is None:
            if rounds == 0:
                raise TimeoutError(f"the time limit came before the first LP of pricing finished ({lp_s:.1f} s)")
            timed_out = True
            break
        rounds += 1
        col, dual, value = solved
        bound, rc_pair = _lagrangian(lp, dual)
        best = max(best, bound)
        shares = np.zeros(len(data.pair_site))
        active = lp.pair_col >= 0
        shares[active] = col[lp.pair_col[active]]
        nodes = col[lp.nodes.cols]
        load = site_slice_load(data, shares)
        over = (load > nodes[:, None] * (1 + 1e-9) + 1e-6) & (lp.slice_row < 0)
        opens = col[lp.open.cols]
        unlinked = np.flatnonzero(active & (lp.link_row < 0) & (shares > opens[data.pair_site] + 1e-7))
        remote_unlinked = _remote_unlinked(data, lp, active, shares, opens)
        if not links:
            unlinked, remote_unlinked = unlinked[:0], remote_unlinked[:0]
        scale = max(abs(value), 1.0)
        priced = np.flatnonzero(~active & (rc_pair < -1e-9 * scale))
        if len(priced):
            order = priced[np.argsort(rc_pair[priced], kind="stable")]
            priced = first_of_each(order, data.pair_commodity, PRICED_PER_COMMODITY if links else WEAK_PRICED_PER_COMMODITY)
        # With rows still to add the restricted LP is no upper bound of the full LP, so this is a heuristic stop
        # (the caller certifies its answer against the bound, and prices on if that falls short); a value
        # below the bound says the missing rows matter, and the rounds go on. No slice may be overloaded beyond
        # its site's power: the LP's shares are then a design once the nodes are rounded up.
        unserved = col[lp.unserved.cols]
        artificial = not lp.unserved_in_model and bool((unserved > 1e-9).any())
        # Overloads the site's power can carry do not stop it: rounding the nodes up to the busiest slice mends them.
        beyond_power = bool((load[over.any(axis=1)].max(axis=1) > data.site_max_nodes[over.any(axis=1)] * (1 - 1e-9)).any())
        closed = target > 0 and not beyond_power and not artificial and abs(value - best) <= target * scale
        closed = closed or (bound_goal is not None and best >= bound_goal)
        history.append({
            "value": value, "bound": bound, "lp_s": lp_s, "pairs": int(active.sum()), "rows": lp.n_rows,
            "slice_cuts": int(over.sum()), "link_cuts": len(unlinked) + len(remote_unlinked), "priced": len(priced),
        })  # fmt: skip
        if progress is not None:
            progress(_round_line(objective, history[-1], rounds, best))
        done = not over.any() and len(priced) == 0 and len(unlinked) == 0 and len(remote_unlinked) == 0
        if done or closed or rounds >= max_rounds:
            converged = done
            break
        lp.add_slices(*(a.astype(np.int64) for a in np.nonzero(over)))
        lp.add_links(unlinked)
        lp.add_remote_links(remote_unlinked)
        lp.add_pairs(priced)
    lp.best_bound = float(best)
    relaxation = Relaxation(
        bound=float(best),
        value=value,
        shares=shares,
        open=col[lp.open.cols],
        nodes=nodes,
        unserved=col[lp.unserved.cols],
        reduced_cost=rc_pair,
        in_model=lp.pair_col >= 0,
        rounds=rounds,
        converged=converged,
        rows=lp.n_rows,
        history=history,
        timed_out=timed_out,
    )
    return relaxation, lp
