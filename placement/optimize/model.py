"""The placement MILP on arrays: which sites open, how many nodes each, which shares go where.

Commodities are (population, workload class) pairs with a goodput demand in tokens/s in each
time slice. Each allowed (commodity, site) pair carries a *share* of the commodity's demand, the
same in every slice (DESIGN.md section 7: one assignment for the day, capacity checked in every
hour keeps the model small). Nodes are sized once per site and shared by every class and slice;
each tok/s of a class uses ``1 / (goodput per node x utilisation cap)`` node-equivalents.

Options, each a few rows: locked sites, a minimum / maximum number of open sites, optional
serving (unserved shares), and N+1 fault tolerance by exact single-failure scenarios: for every
site f, the shares of the protected commodities it carries are re-routed to other open sites
inside each commodity's budget without exceeding any node count, all other shares staying where
they are, at every commodity's peak demand (conservative across slices). Commodities left out of
``PlacementInput.protect`` (a single site in reach) keep their normal load and have no backup.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pulp

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize import n_plus_one_rows, rows
from placement.optimize.linear import ColumnBlock, LinearModel, to_pulp
from placement.optimize.problem import PlacementInput


@dataclass
class PlacementBlocks:
    """The placement model as a :class:`~placement.optimize.linear.LinearModel` and its column blocks.

    Parameters
    ----------
    model : LinearModel
        Columns and rows.
    open, nodes, shares : ColumnBlock
        ``open_j``, ``nodes_j`` and the pairs' shares ``flow_i_j``.
    unserved : ColumnBlock or None
        ``unserved_c`` (optional serving only).
    site_peak : numpy.ndarray
        ``(m,)`` column of each site's peak load, -1 where none (N+1 only; empty otherwise).
    failover : dict
        ``{site f: (backup pairs, re-routing columns)}`` (exact N+1 only).
    """

    model: LinearModel
    open: ColumnBlock
    nodes: ColumnBlock
    shares: ColumnBlock
    unserved: ColumnBlock | None
    site_peak: IntArray
    failover: dict[int, tuple[IntArray, ColumnBlock]] = field(default_factory=dict)


@dataclass
class PlacementModel:
    """The PuLP problem, its variables (one per column of ``blocks``) and the blocks it was written from."""

    problem: pulp.LpProblem
    variables: list[pulp.LpVariable]
    blocks: PlacementBlocks

    def of(self, block: ColumnBlock) -> list[pulp.LpVariable]:
        """The variables of one of the blocks' column blocks."""
        return self.variables[block.start : block.start + block.size]

    @property
    def opens(self) -> list[pulp.LpVariable]:
        """``open_j``."""
        return self.of(self.blocks.open)

    @property
    def nodes(self) -> list[pulp.LpVariable]:
        """``nodes_j``."""
        return self.of(self.blocks.nodes)

    @property
    def shares(self) -> list[pulp.LpVariable]:
        """The pairs' shares."""
        return self.of(self.blocks.shares)

    @property
    def unserved(self) -> list[pulp.LpVariable] | None:
        """``unserved_c`` (optional serving only)."""
        return None if self.blocks.unserved is None else self.of(self.blocks.unserved)


def _define_columns(data: PlacementInput, *, optional: bool) -> PlacementBlocks:
    """``open``, ``nodes``, shares and (optional serving) ``unserved``, at their costs."""
    model = LinearModel("placement")
    opens = rows.open_columns(model, data.n_sites, cost=data.site_fixed_usd_per_h, locked=data.site_locked)
    nodes = rows.node_columns(model, data.site_max_nodes, cost=data.site_node_usd_per_h)
    shares = rows.share_columns(
        model, data.pair_commodity, data.pair_site, cost=data.pair_cost_usd_per_h, remote_site=data.pair_remote_site
    )
    unserved = rows.unserved_columns(model, data.n_commodities) if optional else None
    return PlacementBlocks(model, opens, nodes, shares, unserved, np.zeros(0, dtype=np.int64))


def _define_placement_rows(data: PlacementInput, b: PlacementBlocks, capacity_slices: list[list[int]] | None) -> None:
    """Demand, strong linking, node capacity per slice, power and site counts."""
    ones = np.ones(data.n_commodities)
    unserved = None if b.unserved is None else b.unserved.cols
    rows.demand_rows(b.model, b.shares.cols, data.pair_commodity, ones, unserved_cols=unserved)
    labels = rows.pair_labels(data.pair_commodity, data.pair_site, data.pair_remote_site)
    rows.linking_rows(b.model, b.shares.cols, b.open.cols, data.pair_commodity, data.pair_site, ones, labels=labels)
    remote = data.remote_pairs
    if len(remote):  # a pair that loads a second site needs it open too
        assert data.pair_remote_site is not None
        cols, commodity, far = b.shares.cols[remote], data.pair_commodity[remote], data.pair_remote_site[remote]
        labels = rows.pair_labels(commodity, data.pair_site[remote], far)
        rows.linking_rows(b.model, cols, b.open.cols, commodity, far, ones, name="link_remote", labels=labels)
    entry_pair, entry_site, _ = data.load_entries()
    load = data.entry_slice_load()
    sites, slices = rows.capacity_slices(entry_site, load, data.n_sites, capacity_slices)
    capacity = np.ones(data.n_sites)
    rows.capacity_rows(b.model, b.shares.cols[entry_pair], entry_site, load, b.nodes.cols, capacity, sites, slices)
    rows.power_rows(b.model, b.nodes.cols, b.open.cols, data.site_node_mw, data.site_mw_available)
    rows.site_count_rows(b.model, b.open.cols, min_open=data.min_sites_open, max_open=data.max_sites_open)
    for k, cap in enumerate(data.caps):
        columns = (b.open.cols, b.nodes.cols, b.shares.cols)
        rows.resource_cap_row(b.model, k, columns, (*cap.site_weights(), cap.pair_weights(data.pair_site)), cap.limit_per_h)


def _define_failover(data: PlacementInput, b: PlacementBlocks, failover_rows: Literal["exact", "spare"]) -> None:
    """N+1: two open sites per protected commodity, then the failure scenarios or their spare-capacity relaxation.

    Exact: for each site f and each protected commodity c allowed at f, columns ``z[f, c, j]``
    (j != f, allowed for c) re-route ``share[c, f]``; at every other site j the normal load plus
    the re-routed load at peak demand stays within ``nodes[j]``. Unprotected commodities keep
    their normal load everywhere and lose what f carried. A cross-metro pair is lost when its decode
    or its prefill site fails; a re-route onto one needs both its sites to survive and loads both.
    """
    unserved = None if b.unserved is None else b.unserved.cols
    protected = data.protected
    n_plus_one_rows.coverage_rows(b.model, b.open.cols, data.pair_commodity, data.pair_site, protected, unserved_cols=unserved)
    load = n_plus_one_rows.peak_load(data.peak_demand_tok_s, data.pair_commodity, data.pair_nodes_per_tok_s)
    entry_pair, entry_site, entry_nodes = data.load_entries()  # a cross-metro pair loads its second site too
    entry_load = n_plus_one_rows.peak_load(data.peak_demand_tok_s, data.pair_commodity[entry_pair], entry_nodes)
    share_cols = b.shares.cols[entry_pair]
    b.site_peak = n_plus_one_rows.site_peak_columns_and_rows(b.model, share_cols, entry_site, entry_load, data.n_sites)
    far = data.pair_remote_site
    if failover_rows == "spare":
        if data.has_remote:  # a lost pair frees load at its other site, which the relaxation cannot see
            raise ValueError("the spare-capacity relaxation of N+1 is not written for cross-metro pairs; use the exact rows")
        spare_cols = (b.nodes.cols, b.shares.cols, b.site_peak)
        n_plus_one_rows.spare_rows(b.model, spare_cols, data.pair_commodity, data.pair_site, load, protected)
        return
    remote = None
    if far is not None and data.pair_remote_nodes_per_tok_s is not None:
        remote = (far, n_plus_one_rows.peak_load(data.peak_demand_tok_s, data.pair_commodity, data.pair_remote_nodes_per_tok_s))
    by_commodity = rows.group_by(data.pair_commodity, data.n_commodities)
    by_site = n_plus_one_rows.pairs_by_site(data.pair_site, far, data.n_sites)  # lost with either of their sites
    for f, failed_sites in data.failure_scenarios():
        pairs = n_plus_one_rows.failover_pairs(
            failed_sites, data.pair_commodity, data.pair_site, protected, by_site, by_commodity, pair_remote_site=far
        )
        if len(pairs[0]) == 0:
            continue
        cols = (b.open.cols, b.nodes.cols, b.shares.cols, b.site_peak)
        z = n_plus_one_rows.failure_scenario(
            b.model, f, pairs, cols, data.pair_commodity, data.pair_site, load, data.n_commodities, remote=remote
        )
        b.failover[f] = (pairs[1], z)


def _define_objective(
    data: PlacementInput,
    b: PlacementBlocks,
    unserved_penalty_usd_per_tok_s: float | None,
    served_value_usd_per_tok_s: float | None,
) -> None:
    """Cost: fixed, node and load costs (less lambda x goodput with a served value; plus unserved x penalty)."""
    mean = data.mean_demand_tok_s
    if served_value_usd_per_tok_s is not None:
        # One coefficient per share: a separate "- lambda x goodput" term would be a second coefficient of the
        # same variable, and PuLP keeps only the last, silently dropping the share's load-energy cost.
        b.shares.cost = data.pair_cost_usd_per_h - served_value_usd_per_tok_s * mean[data.pair_commodity]
    if b.unserved is not None and unserved_penalty_usd_per_tok_s is not None:
        b.unserved.cost = unserved_penalty_usd_per_tok_s * mean


def placement_blocks(
    data: PlacementInput,
    *,
    unserved_penalty_usd_per_tok_s: float | None = None,
    served_value_usd_per_tok_s: float | None = None,
    min_served_tok_s: float = 0.0,
    capacity_slices: list[list[int]] | None = None,
    failover_rows: Literal["exact", "spare"] = "exact",
) -> PlacementBlocks:
    """Build the placement MILP as array blocks (the options of :func:`build_model`).

    Returns
    -------
    PlacementBlocks
        The linear model and its column blocks, ready for :func:`~placement.optimize.linear.to_pulp`
        or :func:`~placement.optimize.linear.to_highspy`.
    """
    optional = unserved_penalty_usd_per_tok_s is not None or served_value_usd_per_tok_s is not None
    b = _define_columns(data, optional=optional)
    _define_placement_rows(data, b, capacity_slices)
    if data.fault_tolerant:
        _define_failover(data, b, failover_rows)
    _define_objective(data, b, unserved_penalty_usd_per_tok_s, served_value_usd_per_tok_s)
    if optional and min_served_tok_s > 0:
        rows.served_row(b.model, b.shares.cols, data.mean_demand_tok_s[data.pair_commodity], min_served_tok_s)
    return b


def to_placement_model(b: PlacementBlocks) -> PlacementModel:
    """Write the blocks as a PuLP problem."""
    pulp_model = to_pulp(b.model)
    return PlacementModel(pulp_model.problem, pulp_model.variables, b)


def build_model(
    data: PlacementInput,
    *,
    unserved_penalty_usd_per_tok_s: float | None = None,
    served_value_usd_per_tok_s: float | None = None,
    min_served_tok_s: float = 0.0,
    capacity_slices: list[list[int]] | None = None,
    failover_rows: Literal["exact", "spare"] = "exact",
) -> PlacementModel:
    """Build the placement MILP in PuLP (:func:`placement_blocks`, then :func:`to_placement_model`).

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    unserved_penalty_usd_per_tok_s : float, optional
        Demand may go unserved at this price per mean tok/s (an elastic model for diagnosis).
    served_value_usd_per_tok_s : float, optional
        Demand may go unserved; each mean tok/s served is worth this much (a Dinkelbach step:
        minimise cost minus lambda times goodput).
    min_served_tok_s : float, optional
        With optional serving, serve at least this much mean goodput. [tokens/s]
    capacity_slices : list of list of int, optional
        Node-capacity rows only for these slices at each site (a relaxation, for row
        generation); default every undominated slice.
    failover_rows : {"exact", "spare"}, optional
        With N+1, the exact single-failure scenarios, or their relaxation by spare capacity
        (no re-routing variables; its optimum is a lower bound of the exact model's).

    Returns
    -------
    PlacementModel
        The problem and its variables.
    """
    blocks = placement_blocks(
        data,
        unserved_penalty_usd_per_tok_s=unserved_penalty_usd_per_tok_s,
        served_value_usd_per_tok_s=served_value_usd_per_tok_s,
        min_served_tok_s=min_served_tok_s,
        capacity_slices=capacity_slices,
        failover_rows=failover_rows,
    )
    return to_placement_model(blocks)


def warm_start_values(
    b: PlacementBlocks,
    data: PlacementInput,
    design: tuple[BoolArray, IntArray, FloatArray],
    failover: dict[int, FloatArray] | None = None,
    unserved: FloatArray | None = None,
) -> FloatArray:
    """A starting design as a value per column: open flags, node counts, shares, unserved shares, peaks and re-routes.

    ``failover[f]`` holds the ``(p,)`` shares moved when site f fails; a scenario it does not list moves nothing.
    ``unserved`` holds the ``(c,)`` unserved shares of a model with optional serving (default 0).

    Returns
    -------
    numpy.ndarray
        ``(n_cols,)`` starting value of each column, NaN for a column the design does not give.
    """
    is_open, nodes, shares = design
    values = np.full(b.model.n_cols, np.nan)
    values[b.open.cols] = np.where(is_open, 1.0, 0.0)
    values[b.nodes.cols] = nodes.astype(np.int64)
    values[b.shares.cols] = shares
    if b.unserved is not None:
        values[b.unserved.cols] = 0.0 if unserved is None else unserved
    if len(b.site_peak):
        entry_pair, entry_site, entry_nodes = data.load_entries()  # a cross-metro pair's second site too
        entry_peak = data.peak_demand_tok_s[data.pair_commodity[entry_pair]] * entry_nodes
        site_peak = np.bincount(entry_site, weights=shares[entry_pair] * entry_peak, minlength=data.n_sites)
        has = b.site_peak >= 0
        values[b.site_peak[has]] = site_peak[has]
    moves = failover or {}
    for f, (pairs, z) in b.failover.items():
        values[z.cols] = moves[f][pairs] if f in moves else 0.0
    return values


def set_warm_start(
    model: PlacementModel,
    data: PlacementInput,
    design: tuple[BoolArray, IntArray, FloatArray],
    failover: dict[int, FloatArray] | None = None,
    unserved: FloatArray | None = None,
) -> None:
    """Give the PuLP variables a starting design (:func:`warm_start_values`)."""
    values = warm_start_values(model.blocks, data, design, failover, unserved)
    for var, value in zip(model.variables, values.tolist(), strict=True):
        if not np.isnan(value):
            var.setInitialValue(value)
