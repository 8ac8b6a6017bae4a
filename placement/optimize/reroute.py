"""A fixed plan loses sites: its load there re-routed to the capacity left, slice by slice, as LPs in HiGHS.

With the plan's nodes fixed, the time slices do not interact, so each slice is its own LP. Its columns are the
tok/s each affected commodity moves to each surviving open site it is allowed at (the instance's pairs: inside
its objectives); its rows hold each commodity to what it lost and each surviving site to its nodes, its own load
in the slice included. A cross-metro column (decode at one site, prefill at a second) is lost with either site,
moves only where both survive, and loads both. The objective is lexicographic: first the most goodput moved,
then, with the moved total held at that optimum (to a relative 1e-9), the least goodput-weighted round trip. A
second LP rather than a weighted tie-break, so no RTT weight can ever trade goodput for latency.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from placement._types import FloatArray, IntArray
from placement.optimize.linear import LinearModel, new_highs, to_highspy
from placement.optimize.problem import PlacementInput, PlacementSolution, load_entries_of
from placement.optimize.solver import SolverOptions

MOVED_TOLERANCE = 1e-9
"""Relative slack on the moved total when the second LP minimises the round trip."""


@dataclass(frozen=True)
class Reroute:
    """What a plan does, slice by slice, when some of its sites are lost.

    Parameters
    ----------
    failed_sites : numpy.ndarray of int
        The sites lost.
    lost_tok_s : numpy.ndarray
        ``(c, T)`` goodput each commodity was served at the failed sites. [tokens/s]
    move_commodity, move_site, move_slice : numpy.ndarray of int
        Each move: the commodity, the surviving site it moves to and the slice (a commodity-site-slice once).
    move_tok_s : numpy.ndarray
        Goodput of each move. [tokens/s] (Moves, not a ``(c, m, T)`` table: at full resolution that would
        hold ~1.5 GB of zeros.)
    unserved_tok_s : numpy.ndarray
        ``(c, T)`` lost goodput that no surviving site can take. [tokens/s]
    site_load_nodes : numpy.ndarray
        ``(m, T)`` node-equivalents each surviving site carries after the move (0 at the failed ones).
    site_nodes : numpy.ndarray of int
        ``(m,)`` nodes of the surviving sites (0 at the failed ones).
    """

    failed_sites: IntArray
    lost_tok_s: FloatArray
    move_commodity: IntArray
    move_site: IntArray
    move_slice: IntArray
    move_tok_s: FloatArray
    unserved_tok_s: FloatArray
    site_load_nodes: FloatArray
    site_nodes: IntArray

    @property
    def moved_in_tok_s(self) -> FloatArray:
        """``(m, T)`` goodput each site takes in. [tokens/s]"""
        moved_in = np.zeros_like(self.site_load_nodes)
        np.add.at(moved_in, (self.move_site, self.move_slice), self.move_tok_s)
        return moved_in

    @property
    def moved_by_commodity_tok_s(self) -> FloatArray:
        """``(c, T)`` goodput each commodity moves, all sites together. [tokens/s]"""
        moved = np.zeros_like(self.lost_tok_s)
        np.add.at(moved, (self.move_commodity, self.move_slice), self.move_tok_s)
        return moved

    def moved_between(self, commodity: int, site: int) -> FloatArray:
        """``(T,)`` goodput one commodity moves to one site, per slice. [tokens/s]"""
        out = np.zeros(self.lost_tok_s.shape[1])
        hit = (self.move_commodity == commodity) & (self.move_site == site)
        np.add.at(out, self.move_slice[hit], self.move_tok_s[hit])
        return out


def _slice_model(
    data: PlacementInput, pairs: IntArray, lost: FloatArray, headroom: FloatArray, t: int
) -> tuple[LinearModel, FloatArray]:
    """The first LP of slice ``t``: the most goodput moved; returns it and each column's round trip."""
    commodity, site = data.pair_commodity[pairs], data.pair_site[pairs]
    lm = LinearModel(f"reroute_slice_{t}")
    labels = [f"{c}_{j}" for c, j in zip(commodity.tolist(), site.tolist(), strict=True)]
    block = lm.add_columns("move", labels, upper=lost[commodity], cost=-1.0)
    takers, row_of = np.unique(commodity, return_inverse=True)
    lm.add_rows(
        "lost", [str(c) for c in takers.tolist()], row=row_of, col=block.cols, value=np.ones(len(pairs)), upper=lost[takers]
    )
    position, entry_site, nodes = load_entries_of(data, pairs)  # a cross-metro column loads its prefill site too
    receivers, site_row = np.unique(entry_site, return_inverse=True)
    lm.add_rows(
        "capacity",
        [str(j) for j in receivers.tolist()],
        row=site_row,
        col=block.cols[position],
        value=nodes,
        upper=headroom[receivers],
    )
    return lm, data.pair_rtt_ms[pairs]


def _solve_slice(lm: LinearModel, rtt_ms: FloatArray, *, options: SolverOptions) -> FloatArray:
    """Both LPs of one slice: moved tok/s of every column."""
    highs = to_highspy(lm, new_highs(threads=options.threads))
    limit = options.remaining_s()
    if limit is not None:
        highs.setOptionValue("time_limit", float(limit))
    highs.run()
    status = highs.modelStatusToString(highs.getModelStatus())
    if status != "Optimal":
        raise RuntimeError(f"re-routing LP '{lm.name}': HiGHS reports {status}")
    first = np.asarray(highs.getSolution().col_value, dtype=float)
    best = float(first.sum())
    if best <= 0.0:
        return np.zeros(lm.n_cols)
    # Second LP: the moved total held at its optimum, the least goodput-weighted round trip.
    n = lm.n_cols
    highs.addRow(best * (1.0 - MOVED_TOLERANCE), np.inf, n, np.arange(n, dtype=np.int32), np.ones(n))
    highs.changeColsCost(n, np.arange(n, dtype=np.int32), rtt_ms.astype(float))
    highs.run()
    status = highs.modelStatusToString(highs.getModelStatus())
    if status != "Optimal":
        return first
    return np.asarray(highs.getSolution().col_value, dtype=float)


def reroute_on_capacity(
    data: PlacementInput, solution: PlacementSolution, failed_sites: IntArray, *, options: SolverOptions
) -> Reroute:
    """Re-route the goodput a plan serves at failed sites onto the capacity its other open sites have left.

    The plan's open sites and nodes are fixed; every commodity keeps its shares at the surviving sites, and what
    it was served at the failed ones moves, inside its objectives (its allowed pairs), to surviving open sites
    with spare nodes in that slice. Per slice: the most goodput moved, then, among moves of that total, the least
    goodput-weighted round trip (a second LP, see the module docstring).

    Parameters
    ----------
    data : PlacementInput
        The arrays the plan was solved on.
    solution : PlacementSolution
        The plan: ``open``, ``nodes`` and ``pair_share`` are read.
    failed_sites : numpy.ndarray of int
        Indices of the sites lost (closed ones lose nothing; empty: nothing moves).
    options : SolverOptions
        ``threads`` and ``time_limit_s`` (per LP) are used.

    Returns
    -------
    Reroute
        Per slice: lost, moved (per commodity and new site) and unserved tok/s; load and nodes per site.

    Raises
    ------
    ValueError
        A failed site index outside the instance.
    RuntimeError
        HiGHS does not report an optimum (the LP is always feasible: moving nothing is).
    """
    failed = np.unique(np.asarray(failed_sites, dtype=np.int64))
    m, n_slices, n_c = data.n_sites, len(data.slice_hours), data.n_commodities
    if len(failed) and (failed.min() < 0 or failed.max() >= m):
        raise ValueError(f"failed site indices must be in 0..{m - 1}, got {failed.tolist()}")
    is_failed = np.zeros(m, dtype=bool)
    is_failed[failed] = True
    shares = np.asarray(solution.pair_share, dtype=float)
    remote = data.pair_remote_site if data.pair_remote_site is not None else np.full(len(data.pair_site), -1, dtype=np.int64)
    # a cross-metro column is lost with its decode site or with its prefill site
    at_failed = is_failed[data.pair_site] | ((remote >= 0) & is_failed[np.maximum(remote, 0)])
    demand = data.slice_demand_tok_s
    lost = np.zeros((n_c, n_slices))
    np.add.at(lost, data.pair_commodity[at_failed], shares[at_failed, None] * demand[data.pair_commodity[at_failed]])
    kept = np.where(at_failed, 0.0, shares)
    load = data.site_slice_load(kept)  # (m, T) each surviving site's own load
    survives = np.asarray(solution.open, dtype=bool) & ~is_failed
    nodes = np.where(survives, np.asarray(solution.nodes, dtype=np.int64), 0)
    parts: list[tuple[IntArray, IntArray, int, FloatArray]] = []
    affected = lost.max(axis=1) > 0 if n_slices else np.zeros(n_c, dtype=bool)
    usable = survives[data.pair_site] & ((remote < 0) | survives[np.maximum(remote, 0)])
    pairs = np.flatnonzero(usable & affected[data.pair_commodity])
    for t in range(n_slices):
        live = pairs[lost[data.pair_commodity[pairs], t] > 0]
        if not len(live):
            continue
        headroom = np.maximum(nodes - load[:, t], 0.0)
        lm, rtt = _slice_model(data, live, lost[:, t], headroom, t)
        x = np.clip(_solve_slice(lm, rtt, options=options), 0.0, None)
        keep = x > 0.0
        parts.append((data.pair_commodity[live][keep], data.pair_site[live][keep], t, x[keep]))
        position, entry_site, nodes_per_tok_s = load_entries_of(data, live)
        np.add.at(load[:, t], entry_site, x[position] * nodes_per_tok_s)
    commodity = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    site = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    slices = np.concatenate([np.full(len(p[3]), p[2], dtype=np.int64) for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    tok_s = np.concatenate([p[3] for p in parts]) if parts else np.zeros(0)
    moved = np.zeros((n_c, n_slices))
    np.add.at(moved, (commodity, slices), tok_s)
    unserved = np.maximum(lost - moved, 0.0)
    load[~survives] = 0.0
    return Reroute(failed, lost, commodity, site, slices, tok_s, unserved, load, nodes)
