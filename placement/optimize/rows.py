"""The placement model's columns and rows, written once as array blocks of a :class:`~placement.optimize.linear.LinearModel`.

Each function adds one family of columns or rows, in the spirit of PyPSA's ``define_*`` steps, and
returns its block. Rows take global column indices (``block.cols``, or a subset of them), so a model
built on some pairs or some slices (pricing, lazy slice rows, restricted MILPs) uses the same rows as
the full one. Flows live only on *pairs* (commodity, site) that are allowed, so the model grows with
the number of feasible pairs, not with commodities x sites.

The names are the model's vocabulary: ``open_j``, ``nodes_j``, ``flow_i_j`` (a pair's share),
``unserved_c``, ``site_peak_j`` and ``failover_f_p`` columns; ``demand_i``, ``link_i_j``,
``capacity_j_t``, ``power_j``, ``min_sites_open`` / ``max_sites_open``, ``cover2_c``, ``site_peak_j``,
``reroute_f_c``, ``failover_link_f_p``, ``failover_cap_f_j``, ``spare_p`` and ``min_served`` rows.
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


def _labels(*parts: IntArray) -> list[str]:
    """``"a_b"`` labels from integer arrays of equal length."""
    columns = [part.tolist() for part in parts]
    return ["_".join(str(v) for v in values) for values in zip(*columns, strict=True)]


def _rows_of(groups: Sequence[tuple[IntArray, FloatArray]]) -> tuple[IntArray, IntArray, FloatArray]:
    """Triplets of rows given one by one as (columns, values), in that order."""
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
    return model.add_columns("open", _labels(np.arange(n_sites)), lower=lower, upper=1.0, cost=cost, integer=True)


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
    return model.add_columns("nodes", _labels(sites), lower=0.0, upper=max_nodes.astype(float), cost=cost, integer=True)


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
    labels = _labels(pair_commodity, pair_site)
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
    return model.add_columns("unserved", _labels(np.arange(n_commodities)), lower=0.0, upper=1.0, cost=cost)


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
    return model.add_rows("demand", _labels(np.arange(n)), row=row, col=col, value=value, lower=demand, upper=demand)


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
    labels = _labels(pair_commodity, pair_site) if labels is None else labels
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
    row, col, value = _rows_of(groups)
    upper = 0.0 if capacity_cols is not None else capacity_per_unit[sites]
    return model.add_rows(name, _labels(sites, slices), row=row, col=col, value=value, upper=upper, size=len(sites))


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
        return model.add_rows("power", _labels(local), row=local, col=node_cols, value=node_mw, upper=mw_available, size=m)
    row = np.column_stack([local, local]).ravel()
    col = np.column_stack([node_cols, open_cols]).ravel()
    value = np.column_stack([node_mw, -mw_available]).ravel()
    return model.add_rows("power", _labels(local), row=row, col=col, value=value, upper=0.0, size=m)


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


# ----------------------------------------------------------------------------- N+1


def coverage_rows(
    model: LinearModel,
    open_cols: IntArray,
    pair_commodity: IntArray,
    pair_site: IntArray,
    protected: BoolArray,
    *,
    unserved_cols: IntArray | None = None,
) -> RowBlock:
    """Every protected commodity keeps at least two open sites inside its budget, ``cover2_c``.

    In an elastic model the requirement falls with the share left unserved (``2 - 2 u``), so a
    commodity that cannot have two sites shows up as unserved instead of making the model infeasible.

    Parameters
    ----------
    model : LinearModel
        The model.
    open_cols : numpy.ndarray
        ``(m,)`` open columns.
    pair_commodity, pair_site : numpy.ndarray
        Indices of each pair.
    protected : numpy.ndarray of bool
        ``(c,)`` commodities held to N+1.
    unserved_cols : numpy.ndarray, optional
        ``(c,)`` unserved columns of an elastic model.

    Returns
    -------
    RowBlock
        One row per protected commodity.
    """
    by_commodity = group_by(pair_commodity, len(protected))
    chosen = np.flatnonzero(protected)
    groups = []
    for c in chosen.tolist():
        cols, values = open_cols[pair_site[by_commodity[c]]], np.ones(len(by_commodity[c]))
        if unserved_cols is not None:
            cols, values = np.append(cols, unserved_cols[c]), np.append(values, 2.0)
        groups.append((cols, values))
    row, col, value = _rows_of(groups)
    return model.add_rows("cover2", _labels(chosen), row=row, col=col, value=value, lower=2.0, size=len(chosen))


def peak_load(peak_demand_tok_s: FloatArray, pair_commodity: IntArray, pair_nodes_per_tok_s: FloatArray) -> FloatArray:
    """``(p,)`` node-equivalents of each pair at a share of 1 at its commodity's peak demand.

    Parameters
    ----------
    peak_demand_tok_s : numpy.ndarray
        ``(c,)`` largest slice demand. [tokens/s]
    pair_commodity : numpy.ndarray
        Commodity of each pair.
    pair_nodes_per_tok_s : numpy.ndarray
        Node-equivalents per tok/s on each pair. [nodes/(tokens/s)]

    Returns
    -------
    numpy.ndarray
        The load. [nodes]
    """
    return np.asarray(peak_demand_tok_s[pair_commodity] * pair_nodes_per_tok_s)


def site_peak_columns_and_rows(
    model: LinearModel, share_cols: IntArray, pair_site: IntArray, pair_peak_load: FloatArray, n_sites: int
) -> IntArray:
    """``site_peak[j] = sum_p share[p] * peak_load[p]`` over the pairs at j: a column and a row per site with pairs.

    Every failure scenario reads a site's normal load from this column, so the shares at a site
    appear in one row instead of once per failed site (a factor of m fewer non-zeros).

    Parameters
    ----------
    model : LinearModel
        The model.
    share_cols : numpy.ndarray
        Column of each pair's share.
    pair_site : numpy.ndarray
        Site of each pair.
    pair_peak_load : numpy.ndarray
        ``(p,)`` :func:`peak_load`. [nodes]
    n_sites : int
        Number of sites.

    Returns
    -------
    numpy.ndarray
        ``(m,)`` the ``site_peak`` column of each site (-1 at a site with no pairs).
    """
    by_site = group_by(pair_site, n_sites)
    used = np.asarray([j for j in range(n_sites) if len(by_site[j])], dtype=np.int64)
    block = model.add_columns("site_peak", _labels(used), lower=0.0, size=len(used))
    site_peak = np.full(n_sites, -1, dtype=np.int64)
    site_peak[used] = block.cols
    groups = [
        (np.append(share_cols[by_site[j]], site_peak[j]), np.append(pair_peak_load[by_site[j]], -1.0)) for j in used.tolist()
    ]
    row, col, value = _rows_of(groups)
    model.add_rows("site_peak", _labels(used), row=row, col=col, value=value, lower=0.0, upper=0.0, size=len(used))
    return site_peak


def failover_pairs(
    failed_sites: IntArray,
    pair_commodity: IntArray,
    pair_site: IntArray,
    protected: BoolArray,
    by_site: list[IntArray],
    by_commodity: list[IntArray],
) -> tuple[IntArray, IntArray]:
    """The protected pairs at the failed sites, and the pairs of the same commodities at the other sites.

    Parameters
    ----------
    failed_sites : numpy.ndarray of int
        The sites lost together (one site, or a fault domain).
    pair_commodity, pair_site : numpy.ndarray
        Indices of each pair.
    protected : numpy.ndarray of bool
        ``(c,)`` commodities held to N+1.
    by_site, by_commodity : list of numpy.ndarray
        :func:`group_by` of the pairs by site and by commodity.

    Returns
    -------
    tuple of numpy.ndarray
        The failed pairs of commodities with a backup pair, and their backup pairs (each once); a commodity
        whose every pair is at a failed site is left out (that loss cannot be covered).
    """
    at_failed = np.concatenate([by_site[int(f)] for f in failed_sites.tolist()]) if len(failed_sites) else np.zeros(0, np.int64)
    failed = at_failed[protected[pair_commodity[at_failed]]].astype(np.int64)
    if len(failed) == 0:
        return failed, failed
    commodities = np.unique(pair_commodity[failed])
    backup = np.concatenate([by_commodity[int(c)] for c in commodities.tolist()])
    backup = backup[~np.isin(pair_site[backup], failed_sites)].astype(np.int64)
    # A commodity with nothing in reach outside the failed sites (a fault domain holding all of them) is exposed.
    return failed[np.isin(pair_commodity[failed], pair_commodity[backup])], backup


def failure_scenario(
    model: LinearModel,
    f: int,
    pairs: tuple[IntArray, IntArray],
    cols: tuple[IntArray, IntArray, IntArray, IntArray],
    pair_commodity: IntArray,
    pair_site: IntArray,
    pair_peak_load: FloatArray,
    n_commodities: int,
) -> ColumnBlock:
    """Scenario f (a site, or a fault domain) fails: its protected shares move to other open sites, which carry them.

    Columns ``failover_f_p`` re-route the share of each failed pair's commodity to its backup pair p;
    rows ``reroute_f_c`` (the failed share moves in full), ``failover_link_f_p`` (only to open sites)
    and ``failover_cap_f_j`` (normal peak load plus what moves in stays within the nodes).

    Parameters
    ----------
    model : LinearModel
        The model.
    f : int
        The scenario's key (:meth:`placement.optimize.problem.PlacementInput.failure_scenarios`), used in names.
    pairs : tuple of numpy.ndarray
        :func:`failover_pairs` of its failed sites.
    cols : tuple of numpy.ndarray
        Open (m,), node (m,), share (p,) and site-peak (m,, -1 where none) columns.
    pair_commodity, pair_site : numpy.ndarray
        Indices of each pair.
    pair_peak_load : numpy.ndarray
        ``(p,)`` :func:`peak_load`. [nodes]
    n_commodities : int
        Number of commodities.

    Returns
    -------
    ColumnBlock
        The re-routing columns, one per backup pair.
    """
    failed, backup = pairs
    open_cols, node_cols, share_cols, site_peak = cols
    z = model.add_columns(f"failover_{f}", _labels(backup), lower=0.0, upper=1.0, size=len(backup))
    z_by_commodity = group_by(pair_commodity[backup], n_commodities)
    commodities = np.unique(pair_commodity[failed])
    failed_by_commodity = group_by(pair_commodity[failed], n_commodities)
    groups = [
        (
            np.concatenate([z.cols[z_by_commodity[c]], share_cols[failed[failed_by_commodity[c]]]]),
            np.concatenate([np.ones(len(z_by_commodity[c])), -np.ones(len(failed_by_commodity[c]))]),
        )
        for c in commodities.tolist()
    ]
    row, col, value = _rows_of(groups)
    size = len(commodities)
    model.add_rows(f"reroute_{f}", _labels(commodities), row=row, col=col, value=value, lower=0.0, upper=0.0, size=size)
    k = len(backup)
    local = np.arange(k)
    row = np.column_stack([local, local]).ravel()
    col = np.column_stack([z.cols, open_cols[pair_site[backup]]]).ravel()
    value = np.column_stack([np.ones(k), -np.ones(k)]).ravel()
    model.add_rows(f"failover_link_{f}", _labels(backup), row=row, col=col, value=value, upper=0.0, size=k)
    sites, groups = [], []
    for j, moved in enumerate(group_by(pair_site[backup], len(open_cols))):
        if len(moved) == 0 or site_peak[j] < 0:
            continue
        sites.append(j)
        cols_j = np.concatenate([z.cols[moved], [site_peak[j], node_cols[j]]])
        groups.append((cols_j, np.concatenate([pair_peak_load[backup[moved]], [1.0, -1.0]])))
    row, col, value = _rows_of(groups)
    labels = _labels(np.asarray(sites, dtype=np.int64))
    model.add_rows(f"failover_cap_{f}", labels, row=row, col=col, value=value, upper=0.0, size=len(sites))
    return z


def spare_rows(
    model: LinearModel,
    cols: tuple[IntArray, IntArray, IntArray],
    pair_commodity: IntArray,
    pair_site: IntArray,
    pair_peak_load: FloatArray,
    protected: BoolArray,
) -> RowBlock:
    """A relaxation of the failure scenarios without re-routing columns (a valid lower bound), ``spare_p``.

    When site f fails, a protected commodity's share at f must fit in the spare nodes
    (``nodes[j] - site_peak[j]``) of the other sites it reaches: the sum of scenario f's capacity
    rows over those sites, with the other commodities' re-routes dropped. One row per protected pair.

    Parameters
    ----------
    model : LinearModel
        The model.
    cols : tuple of numpy.ndarray
        Node (m,), share (p,) and site-peak (m,, -1 where none) columns.
    pair_commodity, pair_site : numpy.ndarray
        Indices of each pair.
    pair_peak_load : numpy.ndarray
        ``(p,)`` :func:`peak_load`. [nodes]
    protected : numpy.ndarray of bool
        ``(c,)`` commodities held to N+1.

    Returns
    -------
    RowBlock
        One row per pair of a protected commodity.
    """
    node_cols, share_cols, site_peak = cols
    by_commodity = group_by(pair_commodity, len(protected))
    chosen = np.flatnonzero(protected[pair_commodity])
    groups = []
    for p in chosen.tolist():
        sites = pair_site[by_commodity[int(pair_commodity[p])]]
        others = sites[sites != pair_site[p]]
        peaks = site_peak[others][site_peak[others] >= 0]
        cols_p = np.concatenate([[share_cols[p]], node_cols[others], peaks])
        groups.append((cols_p, np.concatenate([[pair_peak_load[p]], -np.ones(len(others)), np.ones(len(peaks))])))
    row, col, value = _rows_of(groups)
    return model.add_rows("spare", _labels(chosen), row=row, col=col, value=value, upper=0.0, size=len(chosen))


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
