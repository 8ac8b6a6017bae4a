"""The placement model's columns and rows, written once as array blocks of a :class:`~placement.optimize.linear.LinearModel`.

Each function adds one family of columns or rows, in the spirit of PyPSA's ``define_*`` steps, and
returns its block. Rows take global column indices (``block.cols``, or a subset of them), so a model
built on some pairs or some slices (pricing, lazy slice rows, restricted MILPs) uses the same rows as
the full one. Flows live only on *pairs* (commodity, site) that are allowed, so the model grows with
the number of feasible pairs, not with commodities x sites.

The names are the model's vocabulary: ``open_j``, ``nodes_j``, ``flow_i_j`` (a pair's share) and
``unserved_c`` columns; ``demand_i``, ``link_i_j``, ``capacity_j_t``, ``power_j``, ``min_sites_open`` /
``max_sites_open``, ``min_served``, ``routing_cost_budget``, ``max_unserved`` and ``cap_k`` rows. The N+1
columns and rows (``site_peak_j``, ``failover_f_p``; ``cover2_c``, ``reroute_f_c``, ``spare_p``, ...) are in
:mod:`placement.optimize.n_plus_one_rows`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize.linear import ColumnBlock, LinearModel, RowBlock


def group_by(index: IntArray, size: int) -> list[IntArray]:
    """Positions of ``index`` grouped by value.

    Parameters
    ----------
    index : numpy.ndarray
        Integer labels in ``[0, size)``.
    size : int
        Number of groups.

    Returns
    -------
    list of numpy.ndarray
        ``groups[k]`` holds the positions where ``index == k`` (possibly empty), ascending.
    """
    order = np.argsort(index, kind="stable")
    bounds = np.searchsorted(index[order], np.arange(size + 1))
    return [order[bounds[k] : bounds[k + 1]] for k in range(size)]


def index_labels(*parts: IntArray) -> list[str]:
    """``"a_b"`` labels from integer arrays of equal length.

    Parameters
    ----------
    *parts : numpy.ndarray
        Integer arrays of equal length, one per part of the label.

    Returns
    -------
    list of str
        One label per position, its parts joined by ``_``.
    """
    columns = [part.tolist() for part in parts]
    return ["_".join(str(v) for v in values) for values in zip(*columns, strict=True)]


def stack_rows(groups: Sequence[tuple[IntArray, FloatArray]]) -> tuple[IntArray, IntArray, FloatArray]:
    """Triplets of rows given one by one as (columns, values), in that order.

    Parameters
    ----------
    groups : sequence of tuple of numpy.ndarray
        Row ``r``'s columns and their values.

    Returns
    -------
    tuple of numpy.ndarray
        Local row, column and value of every entry.
    """
    if not groups:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    row = np.concatenate([np.full(len(cols), r, dtype=np.int64) for r, (cols, _) in enumerate(groups)])
    col = np.concatenate([np.asarray(cols, dtype=np.int64) for cols, _ in groups])
    value = np.concatenate([np.asarray(values, dtype=float) for _, values in groups])
    return row, col, value


# ----------------------------------------------------------------------------- columns


def open_columns(
    model: LinearModel, n_sites: int, *, cost: FloatArray | float = 0.0, locked: BoolArray | None = None
) -> ColumnBlock:
    """Binary open/closed decision per site, ``open_j``; locked sites are fixed open.

    Parameters
    ----------
    model : LinearModel
        The model.
    n_sites : int
        Number of candidate sites.
    cost : numpy.ndarray or float, optional
        Fixed cost of an open site. [USD/h]
    locked : numpy.ndarray of bool, optional
        Sites that must be open.

    Returns
    -------
    ColumnBlock
        ``open[j]``.
    """
    lower = np.zeros(n_sites) if locked is None else locked.astype(float)
    return model.add_columns("open", index_labels(np.arange(n_sites)), lower=lower, upper=1.0, cost=cost, integer=True)


def node_columns(model: LinearModel, max_nodes: IntArray, *, cost: FloatArray) -> ColumnBlock:
    """Integer node count per site, ``nodes_j``, from 0 to what the site's power allows.

    Parameters
    ----------
    model : LinearModel
        The model.
    max_nodes : numpy.ndarray of int
        ``(m,)`` most nodes each site's power allows.
    cost : numpy.ndarray
        ``(m,)`` cost of one node. [USD/h]

    Returns
    -------
    ColumnBlock
        ``nodes[j]``.
    """
    sites = np.arange(len(max_nodes))
    return model.add_columns("nodes", index_labels(sites), lower=0.0, upper=max_nodes.astype(float), cost=cost, integer=True)


def share_columns(
    model: LinearModel,
    pair_commodity: IntArray,
    pair_site: IntArray,
    *,
    cost: FloatArray | float = 0.0,
    remote_site: IntArray | None = None,
) -> ColumnBlock:
    """Continuous flow (share of the commodity's demand) per allowed pair, ``flow_i_j >= 0``.

    Parameters
    ----------
    model : LinearModel
        The model.
    pair_commodity, pair_site : numpy.ndarray
        Commodity and site index of each pair.
    cost : numpy.ndarray or float, optional
        Cost per unit of flow. [USD/h]
    remote_site : numpy.ndarray of int, optional
        A second site of each pair (``-1``: none): such a pair is ``flow_i_j_via_k``, so that it and the pair
        of the same commodity and site without one keep distinct names.

    Returns
    -------
    ColumnBlock
        ``flow[p]``, in the unit of demand (a share of 1 in the placement model).
    """
    return model.add_columns("flow", pair_labels(pair_commodity, pair_site, remote_site), lower=0.0, cost=cost)


def pair_labels(pair_commodity: IntArray, pair_site: IntArray, remote_site: IntArray | None = None) -> list[str]:
    """``i_j`` per pair, ``i_j_via_k`` for a pair with a second site k."""
    labels = index_labels(pair_commodity, pair_site)
    if remote_site is not None:
        for p in np.flatnonzero(remote_site >= 0).tolist():
            labels[p] += f"_via_{int(remote_site[p])}"
    return labels


def unserved_columns(model: LinearModel, n_commodities: int, *, cost: FloatArray | float = 0.0) -> ColumnBlock:
    """Share of each commodity's demand left unserved, ``unserved_c`` in ``[0, 1]``.

    Parameters
    ----------
    model : LinearModel
        The model.
    n_commodities : int
        Number of commodities.
    cost : numpy.ndarray or float, optional
        Price of a share left unserved. [USD/h]

    Returns
    -------
    ColumnBlock
        ``unserved[c]``.
    """
    return model.add_columns("unserved", index_labels(np.arange(n_commodities)), lower=0.0, upper=1.0, cost=cost)


# ----------------------------------------------------------------------------- demand, linking, capacity, power


def demand_rows(
    model: LinearModel,
    share_cols: IntArray,
    pair_commodity: IntArray,
    demand: FloatArray,
    *,
    unserved_cols: IntArray | None = None,
) -> RowBlock:
    """Every commodity's demand is served: ``sum_j flow[i, j] (+ unserved[i]) == demand[i]``, ``demand_i``.

    Parameters
    ----------
    model : LinearModel
        The model.
    share_cols : numpy.ndarray
        Column of each pair's flow.
    pair_commodity : numpy.ndarray
        Commodity of each of those pairs.
    demand : numpy.ndarray
        ``(c,)`` demand of every commodity (one row each, in order).
    unserved_cols : numpy.ndarray, optional
        ``(c,)`` column of each commodity's unserved share (elastic models only).

    Returns
    -------
    RowBlock
        One equality per commodity.
    """
    n = len(demand)
    row, col, value = pair_commodity, share_cols, np.ones(len(share_cols))
    if unserved_cols is not None:
        row = np.concatenate([row, np.arange(n)])
        col = np.concatenate([col, unserved_cols])
        value = np.concatenate([value, np.ones(n)])
    return model.add_rows("demand", index_labels(np.arange(n)), row=row, col=col, value=value, lower=demand, upper=demand)


def linking_rows(
    model: LinearModel,
    share_cols: IntArray,
    open_cols: IntArray,
    pair_commodity: IntArray,
    pair_site: IntArray,
    demand: FloatArray,
    *,
    name: str = "link",
    labels: list[str] | None = None,
) -> RowBlock:
    """Strong linking rows ``flow[i, j] <= demand[i] * open[j]``, ``link_i_j``, one per pair.

    They are implied by the capacity rows but tighten the LP bound from tens of percent to
    under one percent on facility-location instances (see DESIGN.md section 7).

    Parameters
    ----------
    model : LinearModel
        The model.
    share_cols : numpy.ndarray
        Column of each pair's flow.
    open_cols : numpy.ndarray
        ``(m,)`` column of each site's open decision.
    pair_commodity, pair_site : numpy.ndarray
        Indices of each pair.
    demand : numpy.ndarray
        ``(c,)`` demand per commodity.
    name : str, optional
        Row name prefix (``link_remote`` for the second sites of cross-metro pairs).
    labels : list of str, optional
        One label per row (default ``i_j``).

    Returns
    -------
    RowBlock
        One row per pair.
    """
    k = len(share_cols)
    local = np.arange(k)
    row = np.column_stack([local, local]).ravel()
    col = np.column_stack([share_cols, open_cols[pair_site]]).ravel()
    value = np.column_stack([np.ones(k), -demand[pair_commodity]]).ravel()
    labels = index_labels(pair_commodity, pair_site) if labels is None else labels
    return model.add_rows(name, labels, row=row, col=col, value=value, upper=0.0, size=k)


def extend_demand_rows(block: RowBlock, share_cols: IntArray, pair_commodity: IntArray) -> None:
    """Shares priced in after the demand rows (:func:`demand_rows`) enter their commodity's row.

    Parameters
    ----------
    block : RowBlock
        The demand rows, one per commodity.
    share_cols : numpy.ndarray
        Column of each new pair's share.
    pair_commodity : numpy.ndarray
        Commodity of each of those pairs.
    """
    block.extend(pair_commodity, share_cols, np.ones(len(share_cols)))


def undominated_columns(block: FloatArray) -> list[int]:
    """Columns of ``block`` not dominated (elementwise <=, and different) by another column.

    Parameters
    ----------
    block : numpy.ndarray
        ``(pairs, T)`` weights of one site's pairs in each slice.

    Returns
    -------
    list of int
        The slices whose row can bind (a single one for a site with no pairs).
    """
    n_cols = block.shape[1]
    if n_cols == 1 or block.shape[0] == 0:
        return [0]  # one slice, or a site with no pairs: one row is enough
    keep = []
    for t in range(n_cols):
        column = block[:, t : t + 1]
        covers = (block >= column).all(axis=0)
        strictly = covers & (block > column).any(axis=0)
        earlier_equal = covers & (block == column).all(axis=0) & (np.arange(n_cols) < t)
        if not strictly.any() and not earlier_equal.any():
            keep.append(t)
    return keep


def capacity_slices(
    pair_site: IntArray, pair_weight: FloatArray, n_sites: int, columns: Sequence[Sequence[int]] | None = None
) -> tuple[IntArray, IntArray]:
    """The (site, slice) capacity rows to write, site by site: every undominated slice, or the given ones.

    A slice whose weights at a site are all no larger than another slice's adds nothing and is skipped.

    Parameters
    ----------
    pair_site : numpy.ndarray
        Site of each pair.
    pair_weight : numpy.ndarray
        ``(p, T)`` capacity used per unit of flow.
    n_sites : int
        Number of sites.
    columns : sequence of sequence of int, optional
        The slices of each site, in the order given (lazy slice rows).

    Returns
    -------
    tuple of numpy.ndarray
        Site and slice of each row.
    """
    sites: list[int] = []
    slices: list[int] = []
    for j, positions in enumerate(group_by(pair_site, n_sites)):
        chosen = undominated_columns(pair_weight[positions]) if columns is None else list(columns[j])
        sites += [j] * len(chosen)
        slices += [int(t) for t in chosen]
    return np.asarray(sites, dtype=np.int64), np.asarray(slices, dtype=np.int64)


def capacity_rows(
    model: LinearModel,
    share_cols: IntArray,
    pair_site: IntArray,
    pair_weight: FloatArray,
    capacity_cols: IntArray | None,
    capacity_per_unit: FloatArray,
    sites: IntArray,
    slices: IntArray,
    *,
    name: str = "capacity",
    granted: tuple[IntArray, IntArray, FloatArray] | None = None,
) -> RowBlock:
    """Per (site, slice) capacity ``sum_i weight[i, j, t] * flow[i, j] <= capacity_per_unit[j] * var[j]``.

    With ``var = open`` and ``capacity_per_unit = capacity`` this is the classic capacitated
    facility-location row; with ``var = nodes`` and a weight of node-equivalents per unit of share
    in each time slice it is the node-capacity row of the placement model. Each row holds the pairs
    of its site (in the order given), then the capacity column, then the ``granted`` columns.

    A "site" is whatever owns the capacity: the build-out indexes its rows by (site, accelerator,
    year, scenario, slice), its nodes in service being the purchases still inside their life
    (``granted``) plus the nodes installed before (the fixed capacity, ``capacity_cols=None``).

    Parameters
    ----------
    model : LinearModel
        The model.
    share_cols : numpy.ndarray
        Column of each pair's flow.
    pair_site : numpy.ndarray
        Site of each of those pairs.
    pair_weight : numpy.ndarray
        ``(p, T)`` capacity used per unit of flow on each pair in each slice.
    capacity_cols : numpy.ndarray or None
        ``(m,)`` the column that grants capacity at each site; None: the capacity is fixed, each row's
        upper bound (a design with its nodes fixed).
    capacity_per_unit : numpy.ndarray
        ``(m,)`` capacity granted per unit of that column (or, without columns, the capacity).
    sites, slices : numpy.ndarray
        The (site, slice) of each row (:func:`capacity_slices`).
    name : str, optional
        Row name prefix.
    granted : tuple of numpy.ndarray, optional
        ``(site, column, capacity per unit)`` of further columns granting capacity at a site (several per
        site: a fleet bought year by year), each written with the coefficient ``-capacity per unit``.

    Returns
    -------
    RowBlock
        One row per (site, slice), named ``name_j_t``.
    """
    by_site = group_by(pair_site, len(capacity_per_unit))
    by_grant = None if granted is None else group_by(granted[0], len(capacity_per_unit))
    groups = []
    for j, t in zip(sites.tolist(), slices.tolist(), strict=True):
        positions = by_site[j]
        if capacity_cols is None:
            cols, values = share_cols[positions], pair_weight[positions, t]
        else:
            cols = np.append(share_cols[positions], capacity_cols[j])
            values = np.append(pair_weight[positions, t], -capacity_per_unit[j])
        if granted is not None and by_grant is not None:
            cols = np.append(cols, granted[1][by_grant[j]])
            values = np.append(values, -granted[2][by_grant[j]])
        groups.append((cols, values))
    row, col, value = stack_rows(groups)
    upper = 0.0 if capacity_cols is not None else capacity_per_unit[sites]
    return model.add_rows(name, index_labels(sites, slices), row=row, col=col, value=value, upper=upper, size=len(sites))


def extend_capacity_rows(
    block: RowBlock,
    sites: IntArray,
    slices: IntArray,
    share_cols: IntArray,
    pair_site: IntArray,
    pair_weight: FloatArray,
) -> None:
    """Shares priced in after capacity rows (:func:`capacity_rows`) enter the rows of their site.

    Parameters
    ----------
    block : RowBlock
        Capacity rows, row k of site ``sites[k]`` and slice ``slices[k]``.
    sites, slices : numpy.ndarray
        The (site, slice) of each row of the block.
    share_cols : numpy.ndarray
        Column of each new pair's share.
    pair_site : numpy.ndarray
        Site of each of those pairs.
    pair_weight : numpy.ndarray
        ``(k, T)`` capacity used per unit of flow on each new pair in each slice.
    """
    order = np.argsort(sites, kind="stable")
    first = np.searchsorted(sites[order], pair_site, side="left")
    count = np.searchsorted(sites[order], pair_site, side="right") - first
    pair = np.repeat(np.arange(len(share_cols)), count)
    offset = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    local = order[np.repeat(first, count) + offset]
    block.extend(local, share_cols[pair], pair_weight[pair, slices[local]])


def power_rows(
    model: LinearModel, node_cols: IntArray, open_cols: IntArray | None, node_mw: FloatArray, mw_available: FloatArray
) -> RowBlock:
    """``nodes[j] * node_mw[j] <= mw_available[j] * open[j]``, ``power_j``.

    Parameters
    ----------
    model : LinearModel
        The model.
    node_cols : numpy.ndarray
        ``(m,)`` node-count columns.
    open_cols : numpy.ndarray or None
        ``(m,)`` open columns; None: the design is fixed and ``mw_available`` is each row's upper bound
        (pass 0 at closed sites).
    node_mw : numpy.ndarray
        ``(m,)`` facility power of one node. [MW]
    mw_available : numpy.ndarray
        ``(m,)`` facility power available. [MW]

    Returns
    -------
    RowBlock
        One row per site.
    """
    m = len(node_cols)
    local = np.arange(m)
    if open_cols is None:
        return model.add_rows("power", index_labels(local), row=local, col=node_cols, value=node_mw, upper=mw_available, size=m)
    row = np.column_stack([local, local]).ravel()
    col = np.column_stack([node_cols, open_cols]).ravel()
    value = np.column_stack([node_mw, -mw_available]).ravel()
    return model.add_rows("power", index_labels(local), row=row, col=col, value=value, upper=0.0, size=m)


def site_count_rows(model: LinearModel, open_cols: IntArray, *, min_open: int | None, max_open: int | None) -> list[RowBlock]:
    """``min_open <= sum_j open[j] <= max_open``: rows ``min_sites_open`` and ``max_sites_open`` (those bounded).

    Parameters
    ----------
    model : LinearModel
        The model.
    open_cols : numpy.ndarray
        ``(m,)`` open columns.
    min_open, max_open : int or None
        Bounds on the number of open sites.

    Returns
    -------
    list of RowBlock
        The rows added.
    """
    row, ones = np.zeros(len(open_cols), dtype=np.int64), np.ones(len(open_cols))
    blocks = []
    if min_open is not None:
        blocks.append(model.add_rows("min_sites_open", None, row=row, col=open_cols, value=ones, lower=float(min_open)))
    if max_open is not None:
        blocks.append(model.add_rows("max_sites_open", None, row=row, col=open_cols, value=ones, upper=float(max_open)))
    return blocks


# ----------------------------------------------------------------------------- service


def served_row(model: LinearModel, share_cols: IntArray, pair_mean_tok_s: FloatArray, min_served_tok_s: float) -> RowBlock:
    """Serve at least ``min_served_tok_s`` mean goodput: ``sum_p mean[p] * share[p] >= min``, ``min_served``.

    Parameters
    ----------
    model : LinearModel
        The model.
    share_cols : numpy.ndarray
        Column of each pair's share.
    pair_mean_tok_s : numpy.ndarray
        Mean demand of each pair's commodity (pairs with none carry no term). [tokens/s]
    min_served_tok_s : float
        The least mean goodput served. [tokens/s]

    Returns
    -------
    RowBlock
        The row.
    """
    return _sum_row(model, "min_served", share_cols, pair_mean_tok_s, lower=min_served_tok_s)


def load_cost_budget_row(
    model: LinearModel, share_cols: IntArray, pair_cost_usd_per_h: FloatArray, current_usd_per_h: float
) -> RowBlock:
    """The load-dependent cost may not rise above a design's: ``sum_p cost[p] * share[p] <= current``, ``routing_cost_budget``.

    The right-hand side carries a relative and an absolute slack of 1e-9, so the design's own shares meet it
    through rounding. Pairs with no load-dependent cost carry no term.

    Parameters
    ----------
    model : LinearModel
        The model.
    share_cols : numpy.ndarray
        Column of each pair's share.
    pair_cost_usd_per_h : numpy.ndarray
        Load-dependent cost of each of those pairs at a share of 1. [USD/h]
    current_usd_per_h : float
        The design's load-dependent cost. [USD/h]

    Returns
    -------
    RowBlock
        The row.
    """
    budget = current_usd_per_h * (1 + 1e-9) + 1e-9
    return _sum_row(model, "routing_cost_budget", share_cols, pair_cost_usd_per_h, upper=budget)


def unserved_cap_row(model: LinearModel, unserved_cols: IntArray, mean_demand_tok_s: FloatArray, cap_tok_s: float) -> RowBlock:
    """At most ``cap_tok_s`` mean goodput left unserved: ``sum_c mean[c] * unserved[c] <= cap``, ``max_unserved``.

    Parameters
    ----------
    model : LinearModel
        The model.
    unserved_cols : numpy.ndarray
        ``(c,)`` column of each commodity's unserved share.
    mean_demand_tok_s : numpy.ndarray
        ``(c,)`` mean demand of each commodity. [tokens/s]
    cap_tok_s : float
        The most mean goodput left unserved. [tokens/s]

    Returns
    -------
    RowBlock
        The row.
    """
    return _sum_row(model, "max_unserved", unserved_cols, mean_demand_tok_s, upper=cap_tok_s, drop_zeros=False)


def resource_cap_row(
    model: LinearModel,
    index: int,
    cols: tuple[IntArray, IntArray, IntArray],
    per_h: tuple[FloatArray, FloatArray, FloatArray],
    limit_per_h: float,
) -> RowBlock:
    """The plan's use of a resource within a cap: ``sum fixed[j] open[j] + node[j] nodes[j] + pair[p] share[p] <= cap``.

    Parameters
    ----------
    model : LinearModel
        The model.
    index : int
        The cap's place among the model's caps (its row is ``cap_{index}``).
    cols : tuple of numpy.ndarray
        ``(m,)`` open columns, ``(m,)`` node-count columns and ``(p,)`` share columns.
    per_h : tuple of numpy.ndarray
        Their use: of an open site, of a node, of a share of 1 (tCO2e/h, m3/h). [unit/h]
    limit_per_h : float
        The most the plan may use. [unit/h]

    Returns
    -------
    RowBlock
        The row.
    """
    return _sum_row(model, f"cap_{index}", np.concatenate(cols), np.concatenate(per_h), upper=limit_per_h)


def _sum_row(
    model: LinearModel,
    name: str,
    cols: IntArray,
    weights: FloatArray,
    *,
    lower: float = -np.inf,
    upper: float = np.inf,
    drop_zeros: bool = True,
) -> RowBlock:
    """One row ``lower <= sum_k weights[k] * x[cols[k]] <= upper``, zero weights left out unless told to keep them."""
    keep = weights != 0.0 if drop_zeros else np.ones(len(cols), dtype=bool)
    row = np.zeros(int(keep.sum()), dtype=np.int64)
    return model.add_rows(name, None, row=row, col=cols[keep], value=weights[keep], lower=lower, upper=upper)
