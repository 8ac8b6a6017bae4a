"""The restricted LP of pricing: the placement LP on the pairs and time slices priced in so far, kept in HiGHS.

Column generation (:mod:`placement.optimize.pricing`) solves the LP relaxation of the full model on a few
pairs per commodity and a few slices per site, and grows it round by round. The restricted LP is a
:class:`~placement.optimize.linear.LinearModel` of the placement rows (:mod:`placement.optimize.rows`) that grows
in place, kept in step with a HiGHS object, which keeps its basis between rounds.
"""

from __future__ import annotations

from functools import partial
from typing import Literal

import numpy as np

from placement._types import FloatArray, IntArray
from placement.optimize import rows
from placement.optimize.linear import ColumnBlock, HighsSync, LinearModel, RowBlock, new_highs
from placement.optimize.problem import PlacementInput, load_entries_of

ARTIFICIAL_PRICE = 10.0
"""Price of an artificial unserved share (every commodity served) over the dearest way of serving it, full
fixed cost and peak nodes included."""


def peak_site_cost(data: PlacementInput, per_node: FloatArray, peak_demand: FloatArray) -> FloatArray:
    """``(p,)`` each pair's nodes at its commodity's peak, priced per node at every site it loads.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    per_node : numpy.ndarray
        ``(m,)`` price of a node at each site. [USD/h]
    peak_demand : numpy.ndarray
        ``(c,)`` each commodity's peak demand. [tokens/s]

    Returns
    -------
    numpy.ndarray
        ``(p,)`` the cost. [USD/h]
    """
    pair, site, nodes = data.load_entries()
    weights = peak_demand[data.pair_commodity[pair]] * nodes * per_node[site]
    return np.bincount(pair, weights=weights, minlength=len(data.pair_site)).astype(float)


def _entry_rank(model: LinearModel, slice_row: IntArray, row: IntArray) -> IntArray:
    """A priced pair's entries in order: its demand row (-1), then its slice rows (``slice_row``, (m, T)) by slice."""
    rank = np.full(model.n_rows, -1, dtype=np.int64)
    cut = slice_row >= 0
    rank[slice_row[cut]] = np.nonzero(cut)[1]
    return np.asarray(rank[row])


class RestrictedLP:
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
                lm,
                k,
                (self.open.cols, self.nodes.cols, no_pairs),
                (*cap.site_weights(), np.zeros(0)),
                cap.lp_limit_per_h,
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

    def hold_caps_at(self, data: PlacementInput) -> None:
        """Hold each carbon or water cap row at ``data``'s limit (its caps' margins), ``data`` the LP's arrays from now.

        ``data`` is the LP's with other margins only. The bound found so far was of the other limits: it is dropped.
        """
        self.data = data
        for row, cap in zip(self.caps, data.caps, strict=True):
            row.upper = np.full(row.size, cap.lp_limit_per_h)
            self.h.changeRowBounds(row.start, -np.inf, cap.lp_limit_per_h)
        self.best_bound = None

    def set_objective(self, kind: Literal["cost", "unserved"]) -> None:
        """Least cost, or least unserved mean goodput: the costs of every column, in the model and in HiGHS."""
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
        per_share = per_share + peak_site_cost(data, data.site_node_usd_per_h, data.slice_demand_tok_s.max(axis=1))
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
        # only the entries at the rows' sites: the load table of every pair in the model is 0.1 GB on a 2,000-site world
        wanted = np.zeros(self.m, dtype=bool)
        wanted[sites] = True
        near = wanted[at]
        entry, at, nodes = entry[near], at[near], nodes[near]
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
