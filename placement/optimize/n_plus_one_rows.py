"""The N+1 columns and rows of the placement model: every protected commodity survives the loss of a site.

Written, like :mod:`placement.optimize.rows`, as array blocks of a :class:`~placement.optimize.linear.LinearModel`:
coverage (``cover2_c``: two open sites in reach), each site's normal peak load (``site_peak_j`` column and
row), one failure scenario per lost site or fault domain (``failover_f_p`` columns re-routing the failed
shares; ``reroute_f_c``, ``failover_link_f_p`` and ``failover_cap_f_j`` rows) and the spare-node relaxation
of the scenarios (``spare_p``).

A pair may load a second site (cross-metro prefill: ``pair_remote_site``): it is lost when either of its sites
fails, re-routes only onto pairs whose two sites survive, and what moves onto it loads both of them.
"""

from __future__ import annotations

import numpy as np

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize.linear import ColumnBlock, LinearModel, RowBlock
from placement.optimize.rows import group_by, index_labels, stack_rows


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

    The sites counted are the distinct sites the commodity's pairs serve it at (a cross-metro pair's decode site is
    one of them once, however many prefill sites it pairs with): the loss of one of them leaves another.

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
        sites = np.unique(pair_site[by_commodity[c]])
        cols, values = open_cols[sites], np.ones(len(sites))
        if unserved_cols is not None:
            cols, values = np.append(cols, unserved_cols[c]), np.append(values, 2.0)
        groups.append((cols, values))
    row, col, value = stack_rows(groups)
    return model.add_rows("cover2", index_labels(chosen), row=row, col=col, value=value, lower=2.0, size=len(chosen))


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
    block = model.add_columns("site_peak", index_labels(used), lower=0.0, size=len(used))
    site_peak = np.full(n_sites, -1, dtype=np.int64)
    site_peak[used] = block.cols
    groups = [
        (np.append(share_cols[by_site[j]], site_peak[j]), np.append(pair_peak_load[by_site[j]], -1.0)) for j in used.tolist()
    ]
    row, col, value = stack_rows(groups)
    model.add_rows("site_peak", index_labels(used), row=row, col=col, value=value, lower=0.0, upper=0.0, size=len(used))
    return site_peak


def pairs_by_site(pair_site: IntArray, pair_remote_site: IntArray | None, n_sites: int) -> list[IntArray]:
    """The pairs that load each site: its own pairs and the cross-metro pairs whose second site it is.

    Parameters
    ----------
    pair_site : numpy.ndarray
        Site of each pair.
    pair_remote_site : numpy.ndarray, optional
        Second site of each pair, -1 for none.
    n_sites : int
        Number of sites.

    Returns
    -------
    list of numpy.ndarray
        ``groups[j]`` holds the pairs lost when site j fails, ascending.
    """
    if pair_remote_site is None:
        return group_by(pair_site, n_sites)
    far = np.flatnonzero(pair_remote_site >= 0)
    pair = np.concatenate([np.arange(len(pair_site), dtype=np.int64), far])
    site = np.concatenate([pair_site, pair_remote_site[far]]).astype(np.int64)
    return [np.sort(pair[k]) for k in group_by(site, n_sites)]


def failover_pairs(
    failed_sites: IntArray,
    pair_commodity: IntArray,
    pair_site: IntArray,
    protected: BoolArray,
    by_site: list[IntArray],
    by_commodity: list[IntArray],
    *,
    pair_remote_site: IntArray | None = None,
) -> tuple[IntArray, IntArray]:
    """The protected pairs lost with the failed sites, and the pairs of the same commodities that survive.

    Parameters
    ----------
    failed_sites : numpy.ndarray of int
        The sites lost together (one site, or a fault domain).
    pair_commodity, pair_site : numpy.ndarray
        Indices of each pair.
    protected : numpy.ndarray of bool
        ``(c,)`` commodities held to N+1.
    by_site, by_commodity : list of numpy.ndarray
        :func:`pairs_by_site` (every site a pair loads) and :func:`~placement.optimize.rows.group_by` of the pairs
        by commodity.
    pair_remote_site : numpy.ndarray, optional
        Second site of each pair, -1 for none: a pair whose second site fails is no backup.

    Returns
    -------
    tuple of numpy.ndarray
        The failed pairs of commodities with a backup pair, and their backup pairs (each once); a commodity
        whose every pair loads a failed site is left out (that loss cannot be covered).
    """
    at_failed = np.concatenate([by_site[int(f)] for f in failed_sites.tolist()]) if len(failed_sites) else np.zeros(0, np.int64)
    at_failed = np.unique(at_failed)  # a cross-metro pair with both sites in a failed domain is listed twice
    failed = at_failed[protected[pair_commodity[at_failed]]].astype(np.int64)
    if len(failed) == 0:
        return failed, failed
    commodities = np.unique(pair_commodity[failed])
    backup = np.concatenate([by_commodity[int(c)] for c in commodities.tolist()])
    survives = ~np.isin(pair_site[backup], failed_sites)
    if pair_remote_site is not None:
        survives &= ~np.isin(pair_remote_site[backup], failed_sites)
    backup = backup[survives].astype(np.int64)
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
    *,
    remote: tuple[IntArray, FloatArray] | None = None,
) -> ColumnBlock:
    """Scenario f (a site, or a fault domain) fails: its protected shares move to other open sites, which carry them.

    Columns ``failover_f_p`` re-route the share of each failed pair's commodity to its backup pair p;
    rows ``reroute_f_c`` (the failed share moves in full), ``failover_link_f_p`` (only to open sites)
    and ``failover_cap_f_j`` (normal peak load plus what moves in stays within the nodes).

    With cross-metro pairs (``remote``) a backup pair needs its second site open too and what moves onto it loads
    both sites; a failed pair that loads a surviving site (its decode site, when its prefill site fails) no longer
    loads it, so its load there is taken out of that site's normal peak.

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
    remote : tuple of numpy.ndarray, optional
        ``(pair_remote_site, remote_peak_load)``: each pair's second site (-1 for none) and its :func:`peak_load`
        there. [nodes]

    Returns
    -------
    ColumnBlock
        The re-routing columns, one per backup pair.
    """
    failed, backup = pairs
    open_cols, node_cols, share_cols, site_peak = cols
    z = model.add_columns(f"failover_{f}", index_labels(backup), lower=0.0, upper=1.0, size=len(backup))
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
    row, col, value = stack_rows(groups)
    size = len(commodities)
    model.add_rows(f"reroute_{f}", index_labels(commodities), row=row, col=col, value=value, lower=0.0, upper=0.0, size=size)
    k = len(backup)
    local = np.arange(k)
    row = np.column_stack([local, local]).ravel()
    col = np.column_stack([z.cols, open_cols[pair_site[backup]]]).ravel()
    value = np.column_stack([np.ones(k), -np.ones(k)]).ravel()
    model.add_rows(f"failover_link_{f}", index_labels(backup), row=row, col=col, value=value, upper=0.0, size=k)
    moved_in = _entries(backup, z.cols, pair_site, pair_peak_load, remote)
    if remote is not None:
        far = np.flatnonzero(remote[0][backup] >= 0)
        if len(far):
            local = np.arange(len(far))
            row = np.column_stack([local, local]).ravel()
            col = np.column_stack([z.cols[far], open_cols[remote[0][backup[far]]]]).ravel()
            value = np.column_stack([np.ones(len(far)), -np.ones(len(far))]).ravel()
            labels = index_labels(backup[far])
            model.add_rows(f"failover_link_remote_{f}", labels, row=row, col=col, value=value, upper=0.0, size=len(far))
    freed = _entries(failed, share_cols[failed], pair_site, pair_peak_load, remote)
    _capacity_rows(model, f, moved_in, freed, (node_cols, site_peak))
    return z


def _entries(
    pairs: IntArray, cols: IntArray, pair_site: IntArray, pair_peak_load: FloatArray, remote: tuple[IntArray, FloatArray] | None
) -> tuple[IntArray, IntArray, FloatArray]:
    """Every (column, site, peak load) of these pairs: each at its own site, and a cross-metro pair at its second.

    Parameters
    ----------
    pairs : numpy.ndarray
        The pairs.
    cols : numpy.ndarray
        The column of each (a share, or a re-route).
    pair_site : numpy.ndarray
        Site of each pair.
    pair_peak_load : numpy.ndarray
        ``(p,)`` :func:`peak_load`. [nodes]
    remote : tuple of numpy.ndarray, optional
        As :func:`failure_scenario`.

    Returns
    -------
    tuple of numpy.ndarray
        Column, site and peak load of each entry. [-, -, nodes]
    """
    col, site, load = cols, pair_site[pairs], pair_peak_load[pairs]
    if remote is None:
        return col, site, load
    far = np.flatnonzero(remote[0][pairs] >= 0)
    return (
        np.concatenate([col, cols[far]]),
        np.concatenate([site, remote[0][pairs[far]]]),
        np.concatenate([load, remote[1][pairs[far]]]),
    )


def _capacity_rows(
    model: LinearModel,
    f: int,
    moved_in: tuple[IntArray, IntArray, FloatArray],
    freed: tuple[IntArray, IntArray, FloatArray],
    cols: tuple[IntArray, IntArray],
) -> None:
    """``failover_cap_f_j``: a receiving site's normal peak, less what the loss frees there, plus what moves in.

    At each site something moves into, that sum stays within the site's nodes.

    Parameters
    ----------
    model : LinearModel
        The model.
    f : int
        The scenario's key, used in names.
    moved_in, freed : tuple of numpy.ndarray
        :func:`_entries` of the backup pairs (re-routing columns) and of the failed pairs (share columns).
    cols : tuple of numpy.ndarray
        Node (m,) and site-peak (m,, -1 where none) columns.
    """
    node_cols, site_peak = cols
    m = len(node_cols)
    in_by_site, freed_by_site = group_by(moved_in[1], m), group_by(freed[1], m)
    sites, groups = [], []
    for j, moved in enumerate(in_by_site):
        if len(moved) == 0 or site_peak[j] < 0:
            continue
        sites.append(j)
        out = freed_by_site[j]
        cols_j = np.concatenate([moved_in[0][moved], freed[0][out], [site_peak[j], node_cols[j]]])
        groups.append((cols_j, np.concatenate([moved_in[2][moved], -freed[2][out], [1.0, -1.0]])))
    row, col, value = stack_rows(groups)
    labels = index_labels(np.asarray(sites, dtype=np.int64))
    model.add_rows(f"failover_cap_{f}", labels, row=row, col=col, value=value, upper=0.0, size=len(sites))


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
    rows over those sites, with the other commodities' re-routes dropped. One row per protected pair. Not written
    for pairs that load a second site (:func:`placement.optimize.model.placement_blocks` refuses them).

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
    row, col, value = stack_rows(groups)
    return model.add_rows("spare", index_labels(chosen), row=row, col=col, value=value, upper=0.0, size=len(chosen))
