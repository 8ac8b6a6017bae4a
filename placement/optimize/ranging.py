"""The plan's LP with the design fixed, in HiGHS: duals of every site's power and fast what-if re-solves.

Open sites are fixed (closed ones carry nothing), node counts are continuous and bounded only by each
site's power row, and demand that the design cannot serve is left unserved at the least possible share
(an elastic first solve), then held at that share so every figure compares plans at the same service.
The dual of a site's power row is the cost one more MW there saves (at a closed site: what the first MW
would save were the site open at no fixed cost). A what-if (one site closed, or opened) changes a few
bounds and re-solves from the previous basis, a fraction of building the model again. Carbon and water caps are
rows too: the dual of each is what one more unit of it a year is worth, and a what-if moves its limit.
N+1 rows are not in this LP: :func:`supports` says when it stands for the plan's model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from placement._types import BoolArray, FloatArray
from placement.optimize import rows
from placement.optimize.linear import ColumnBlock, LinearModel, RowBlock, to_highspy
from placement.optimize.problem import PlacementInput, ResourceCap

__all__ = ["FixedDesignLP", "FixedDesignModel", "Resolve", "fixed_design_model", "supports"]


def supports(data: PlacementInput) -> bool:
    """True when the array LP is the plan's LP with the design fixed (no N+1 rows).

    Parameters
    ----------
    data : PlacementInput
        The arrays.

    Returns
    -------
    bool
        Whether :class:`FixedDesignLP` applies.
    """
    return not data.fault_tolerant


@dataclass(frozen=True)
class Resolve:
    """One what-if: the LP's cost and the node count of the site toggled.

    Parameters
    ----------
    cost_usd_per_h : float
        Total cost, open sites' fixed costs included (``inf`` when infeasible at the same service). [USD/h]
    nodes : float
        The toggled site's (continuous) node count.
    load_cost_usd_per_h : float
        The load-dependent cost of the shares it carries, at its own prices. [USD/h]
    """

    cost_usd_per_h: float
    nodes: float
    load_cost_usd_per_h: float = 0.0


@dataclass(frozen=True)
class FixedDesignModel:
    """The fixed-design LP as a linear model, and the blocks its what-ifs change.

    Parameters
    ----------
    model : LinearModel
        Columns shares (p), nodes (m), unserved (c); rows demand (c), capacity (m x T, site-major), power (m).
    shares, nodes, unserved : ColumnBlock
        The share of every pair (bounded by 0 at closed sites), the continuous node count of every site,
        the unserved share of every commodity.
    power : RowBlock
        Every site's power row (0 MW at closed sites).
    caps : tuple of RowBlock
        Each carbon or water cap's row, less the fixed use of the open sites (a constant with the design fixed).
    """

    model: LinearModel
    shares: ColumnBlock
    nodes: ColumnBlock
    unserved: ColumnBlock
    power: RowBlock
    caps: tuple[RowBlock, ...] = ()


def fixed_design_model(data: PlacementInput, is_open: BoolArray, unserved_penalty_usd_per_tok_s: float) -> FixedDesignModel:
    """The plan's LP with its open sites fixed, nodes continuous, demand elastic: the placement rows on every pair.

    Parameters
    ----------
    data : PlacementInput
        The arrays (without N+1).
    is_open : numpy.ndarray of bool
        ``(m,)`` open sites.
    unserved_penalty_usd_per_tok_s : float
        Price of a mean tok/s left unserved. [USD/h per tok/s]

    Returns
    -------
    FixedDesignModel
        The model and its blocks.
    """
    m, t = data.n_sites, len(data.slice_hours)
    lm = LinearModel("fixed_design")
    shares = rows.share_columns(lm, data.pair_commodity, data.pair_site, cost=data.pair_cost_usd_per_h)
    shares.upper = data.pairs_open(is_open).astype(float)
    nodes = lm.add_columns("nodes", [str(j) for j in range(m)], cost=data.site_node_usd_per_h)  # continuous, unbounded
    unserved = rows.unserved_columns(lm, data.n_commodities, cost=unserved_penalty_usd_per_tok_s * data.mean_demand_tok_s)
    rows.demand_rows(lm, shares.cols, data.pair_commodity, np.ones(data.n_commodities), unserved_cols=unserved.cols)
    sites, slices = np.repeat(np.arange(m), t), np.tile(np.arange(t), m)
    entry_pair, entry_site, _ = data.load_entries()  # a cross-metro pair loads its second site too
    rows.capacity_rows(lm, shares.cols[entry_pair], entry_site, data.entry_slice_load(), nodes.cols, np.ones(m), sites, slices)
    power = rows.power_rows(lm, nodes.cols, None, data.site_node_mw, data.site_mw_available * is_open)
    no_sites = np.zeros(0, dtype=np.int64)
    caps = tuple(
        rows.resource_cap_row(
            lm,
            k,
            (no_sites, nodes.cols, shares.cols),
            (np.zeros(0), cap.site_weights()[1], cap.pair_weights(data.pair_site)),
            cap_room_per_h(cap, is_open),
        )
        for k, cap in enumerate(data.caps)
    )
    return FixedDesignModel(lm, shares, nodes, unserved, power, caps)


def cap_room_per_h(cap: ResourceCap, is_open: BoolArray) -> float:
    """What a cap leaves the nodes and the load of a design with these sites open: its limit less their fixed use."""
    return float(cap.limit_per_h - cap.site_weights()[0][np.asarray(is_open, dtype=bool)].sum())


class FixedDesignLP:
    """The fixed-design LP of a plan, built once in HiGHS.

    Parameters
    ----------
    data : PlacementInput
        The arrays (without N+1).
    is_open : numpy.ndarray of bool
        ``(m,)`` the plan's open sites.
    unserved_penalty_usd_per_tok_s : float
        Price of a mean tok/s left unserved in the first, elastic solve. [USD/h per tok/s]
    threads : int, optional
        HiGHS threads.
    """

    def __init__(
        self, data: PlacementInput, is_open: BoolArray, unserved_penalty_usd_per_tok_s: float, *, threads: int = 1
    ) -> None:
        self.data = data
        self.is_open = np.asarray(is_open, dtype=bool).copy()
        self.n_pairs, self.n_sites, self.n_rows = len(data.pair_site), data.n_sites, data.n_commodities
        self.n_slices = len(data.slice_hours)
        self.model = fixed_design_model(data, self.is_open, unserved_penalty_usd_per_tok_s)
        self.highs = to_highspy(self.model.model, threads=threads)
        self.status = self._run()
        self.unserved_share = self._fix_unserved() if self.status else np.zeros(self.n_rows)
        self.status = self.status and self._run()

    # --- layout: columns shares (p), nodes (m), unserved (c); rows demand (c), capacity (m x T, site-major), power (m)

    def _power_row(self, site: int) -> int:
        return self.model.power.start + site

    def _node_column(self, site: int) -> int:
        return self.model.nodes.start + site

    def _pair_columns(self, site: int) -> NDArray[np.int32]:
        """Columns of the pairs that load the site (a cross-metro pair's second site included)."""
        touches = self.data.pair_site == site
        if self.data.pair_remote_site is not None:
            touches |= self.data.pair_remote_site == site
        return (self.model.shares.start + np.flatnonzero(touches)).astype(np.int32)

    def _run(self) -> bool:
        self.highs.run()
        return bool(self.highs.modelStatusToString(self.highs.getModelStatus()) == "Optimal")

    def _fix_unserved(self) -> FloatArray:
        """Hold each row's unserved share at the elastic solve's (0 where the design serves it all)."""
        start = self.model.unserved.start
        share: FloatArray = np.clip(np.asarray(self.highs.getSolution().col_value, dtype=float)[start:], 0.0, 1.0)
        share[share * self.data.mean_demand_tok_s < 1e-6] = 0.0
        self.model.unserved.fix(share)
        self.model.unserved.cost = np.zeros(self.n_rows)
        columns = self.model.unserved.cols.astype(np.int32)
        self.highs.changeColsBounds(self.n_rows, columns, share, share)
        self.highs.changeColsCost(self.n_rows, columns, np.zeros(self.n_rows))
        return share

    # --- results of the base solve

    @property
    def fixed_usd_per_h(self) -> float:
        """Fixed cost of the open sites, a constant of this LP. [USD/h]"""
        return float(self.data.site_fixed_usd_per_h[self.is_open].sum())

    def cost_usd_per_h(self) -> float:
        """The last solve's total cost, fixed costs of its open sites included (``inf`` if not optimal). [USD/h]"""
        if not self.status:
            return float("inf")
        return float(self.highs.getInfo().objective_function_value) + self.fixed_usd_per_h

    def mw_value_usd_per_h(self) -> FloatArray:
        """Cost one more MW saves at each site (closed sites: the first MW, their fixed cost aside). [USD/h per MW]"""
        if not self.status:
            return np.full(self.n_sites, np.nan)
        duals = np.asarray(self.highs.getSolution().row_dual, dtype=float)
        values = -duals[self.model.power.rows]
        return np.where(np.abs(values) < 1e-9, 0.0, values)

    def cap_value_usd_per_h(self) -> FloatArray:
        """``(k,)`` cost one more unit a hour of each carbon or water cap saves (its row's dual; NaN unsolved). [USD/unit]"""
        if not self.status:
            return np.full(len(self.model.caps), np.nan)
        duals = np.asarray(self.highs.getSolution().row_dual, dtype=float)
        values = np.array([-duals[row.start] for row in self.model.caps])
        return np.where(np.abs(values) < 1e-9, 0.0, values)

    def resolve_cap_scaled(self, k: int, factor: float) -> float:
        """Cost with cap ``k``'s limit times ``factor``, the design as in the plan (``inf`` if infeasible). [USD/h]"""
        cap, row = self.data.caps[k], self.model.caps[k].start
        self.highs.changeRowBounds(row, -np.inf, cap_room_per_h(replace(cap, limit_per_h=cap.limit_per_h * factor), self.is_open))
        feasible = self._run()
        cost = float(self.highs.getInfo().objective_function_value) + self.fixed_usd_per_h if feasible else float("inf")
        self.highs.changeRowBounds(row, -np.inf, cap_room_per_h(cap, self.is_open))
        self._run()  # the base solve again: what the other what-ifs start from
        return cost

    def nodes(self) -> FloatArray:
        """Continuous node count of every site in the last solve."""
        col = np.asarray(self.highs.getSolution().col_value, dtype=float)
        return np.asarray(col[self.model.nodes.cols], dtype=float)

    # --- what-ifs

    def _set_site(self, site: int, is_open: bool) -> None:
        pairs = self._pair_columns(site)
        self.is_open[site] = is_open
        bound = self.data.pairs_open(self.is_open)[pairs - self.model.shares.start].astype(float)
        self.highs.changeColsBounds(len(pairs), pairs, np.zeros(len(pairs)), bound)
        mw = float(self.data.site_mw_available[site]) if is_open else 0.0
        self.highs.changeRowBounds(self._power_row(site), -np.inf, mw)
        for row, cap in zip(self.model.caps, self.data.caps, strict=True):  # the site's fixed use in or out
            self.highs.changeRowBounds(row.start, -np.inf, cap_room_per_h(cap, self.is_open))

    def resolve_toggled(self, site: int) -> Resolve:
        """Cost with one site toggled (open to closed or closed to open), every other site as in the plan.

        The LP is left as it was (bounds restored); its basis is the what-if's, a warm start for the next.

        Parameters
        ----------
        site : int
            Index of the site to toggle.

        Returns
        -------
        Resolve
            The what-if's cost (``inf`` if the others cannot serve as much) and the site's node count.
        """
        was_open = bool(self.is_open[site])
        self._set_site(site, not was_open)
        result = Resolve(float("inf"), 0.0)
        if self._run():
            col = np.asarray(self.highs.getSolution().col_value, dtype=float)
            pairs = self.data.pair_site == site
            load = float(col[self.model.shares.cols[pairs]] @ self.data.pair_cost_usd_per_h[pairs])
            cost = float(self.highs.getInfo().objective_function_value) + self.fixed_usd_per_h
            result = Resolve(cost, float(col[self._node_column(site)]), load)
        self._set_site(site, was_open)
        return result

    def resolve_open_repriced(self, site: int, *, node_usd_per_h: float, pair_cost_scale: float) -> Resolve:
        """Cost with a closed site opened at other prices: its node cost and its pairs' load cost scaled.

        Parameters
        ----------
        site : int
            Index of a closed site.
        node_usd_per_h : float
            Its node cost in the what-if. [USD/h]
        pair_cost_scale : float
            Factor on the load-dependent cost of its pairs.

        Returns
        -------
        Resolve
            The what-if's cost and the site's nodes; the LP's costs and bounds are restored.
        """
        pairs = self._pair_columns(site)
        cost = self.data.pair_cost_usd_per_h[pairs - self.model.shares.start]
        node = np.array([self._node_column(site)], dtype=np.int32)
        self.highs.changeColsCost(len(pairs), pairs, cost * pair_cost_scale)
        self.highs.changeColsCost(1, node, np.array([node_usd_per_h]))
        result = self.resolve_toggled(site)
        self.highs.changeColsCost(len(pairs), pairs, cost)
        self.highs.changeColsCost(1, node, self.data.site_node_usd_per_h[[site]])
        return result

    def resolve_more_power(self, site: int, extra_mw: float) -> float:
        """Cost with ``extra_mw`` more power at one open site, every other site as in the plan. [USD/h]

        Parameters
        ----------
        site : int
            Index of an open site.
        extra_mw : float
            Power added to its available MW. [MW]

        Returns
        -------
        float
            The what-if's cost (``inf`` if the LP fails); the LP's bounds are restored.
        """
        available = float(self.data.site_mw_available[site]) if self.is_open[site] else 0.0
        self.highs.changeRowBounds(self._power_row(site), -np.inf, available + extra_mw)
        feasible = self._run()
        cost = float(self.highs.getInfo().objective_function_value) + self.fixed_usd_per_h if feasible else float("inf")
        self.highs.changeRowBounds(self._power_row(site), -np.inf, available)
        return cost
