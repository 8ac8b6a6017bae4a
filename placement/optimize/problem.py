"""The placement problem and its answer, as arrays: what the MILP reads and what it returns.

Commodities are (population, workload class) pairs with a goodput demand in tokens/s in each
time slice; pairs are the allowed (commodity, site) combinations. See :mod:`placement.optimize.model`
for the formulation.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize.solver import SolverReport


@dataclass(frozen=True)
class ResourceCap:
    """A cap on what the plan uses of a resource (grid emissions, water), over all its sites or some: a linear row.

    Use follows the power drawn, as the cost does: an open site's warm-up nodes and every node draw their idle share
    all day, a share draws the rest in proportion to its load (:mod:`placement.economics.footprint`). Caps over different sites
    share the same coefficient arrays (a per-site water limit is the plan's water coefficients and one site).

    Parameters
    ----------
    name : str
        What it caps, in words ("carbon", "water at dubai", "carbon in Europe").
    unit : str
        The unit of a year's use (``tCO2e``, ``m3``).
    site_fixed_per_h : numpy.ndarray
        ``(m,)`` use of an open site whatever it serves (its cache warm-up nodes' idle draw). [unit/h]
    site_node_per_h : numpy.ndarray
        ``(m,)`` use of one node's idle draw. [unit/h]
    pair_per_h : numpy.ndarray
        ``(p,)`` use of the load of each pair at a share of 1, daily mean. [unit/h]
    limit_per_h : float
        The most the plan may use, a year's limit over 8,760 h. [unit/h]
    sites : numpy.ndarray of bool, optional
        ``(m,)`` the sites it counts (None: every site).
    lp_margin_per_h : float, optional
        How far below the limit the LP relaxations hold their row (default 0): an LP's design rounded up to whole
        nodes uses more than the LP does, so the priced solve backs its LPs off by that much
        (:func:`placement.optimize.priced.solve_priced`). MILPs, checks and bounds use the limit itself. [unit/h]
    """

    name: str
    unit: str
    site_fixed_per_h: FloatArray
    site_node_per_h: FloatArray
    pair_per_h: FloatArray
    limit_per_h: float
    sites: BoolArray | None = None
    lp_margin_per_h: float = 0.0

    @property
    def lp_limit_per_h(self) -> float:
        """The limit the LP relaxations hold: the limit less the margin. [unit/h]"""
        return self.limit_per_h - self.lp_margin_per_h

    def site_weights(self) -> tuple[FloatArray, FloatArray]:
        """``(m,)`` use of an open site and of a node, zero at sites the cap does not count."""
        if self.sites is None:
            return self.site_fixed_per_h, self.site_node_per_h
        return self.site_fixed_per_h * self.sites, self.site_node_per_h * self.sites

    def pair_weights(self, pair_site: IntArray, pairs: IntArray | None = None) -> FloatArray:
        """Use of a share of 1 of each pair (of ``pairs``, default all), zero at sites the cap does not count."""
        weights = self.pair_per_h if pairs is None else self.pair_per_h[pairs]
        if self.sites is None:
            return weights
        return np.asarray(weights * self.sites[pair_site if pairs is None else pair_site[pairs]])

    def used_per_h(self, is_open: BoolArray, nodes: IntArray, shares: FloatArray, pair_site: IntArray) -> float:
        """A design's use. [unit/h]"""
        fixed, node = self.site_weights()
        return float(fixed[is_open].sum() + (nodes * node).sum() + (shares * self.pair_weights(pair_site)).sum())


@dataclass(frozen=True)
class PlacementInput:
    """Everything the MILP needs, as arrays.

    Parameters
    ----------
    slice_demand_tok_s : numpy.ndarray
        ``(c, T)`` goodput demand of each commodity in each time slice. [tokens/s]
    slice_hours : numpy.ndarray
        ``(T,)`` hours of the day each slice stands for (they sum to 24). [h]
    pair_commodity, pair_site : numpy.ndarray
        ``(p,)`` indices of each allowed pair.
    pair_nodes_per_tok_s : numpy.ndarray
        ``(p,)`` node-equivalents used per tok/s on each pair. [nodes/(tokens/s)]
    pair_rtt_ms : numpy.ndarray
        ``(p,)`` round trip of each pair; used to route shares to the nearest open capacity
        once the design is fixed. [ms]
    pair_cost_usd_per_h : numpy.ndarray
        ``(p,)`` cost that scales with the share carried (load-dependent energy), averaged over
        the day, at a share of 1. [USD/h]
    site_fixed_usd_per_h : numpy.ndarray
        ``(m,)`` cost of an open site. [USD/h]
    site_node_usd_per_h : numpy.ndarray
        ``(m,)`` all-in cost of one node at each site, load-independent part. [USD/h]
    site_node_mw : numpy.ndarray
        ``(m,)`` facility power of one node, PUE included. [MW]
    site_mw_available : numpy.ndarray
        ``(m,)`` facility power available. [MW]
    site_locked : numpy.ndarray of bool
        ``(m,)`` sites that must be open.
    min_sites_open, max_sites_open : int or None
        Bounds on the number of open sites.
    fault_tolerant : bool
        Require N+1: every protected commodity keeps a second open site inside its budget, and
        the load of any single failed site can be re-routed within budget and capacity.
    protect : numpy.ndarray of bool, optional
        ``(c,)`` commodities held to N+1 when ``fault_tolerant`` (default: every commodity). A
        commodity with fewer than two allowed sites cannot be protected; leave it out here, or
        the model is infeasible.
    daily_mean_tok_s : numpy.ndarray, optional
        ``(c,)`` daily mean demand, when the slices do not cover the day in proportion (a single
        peak slice); default: the hour-weighted mean of the slices. [tokens/s]
    failure_domains : tuple of numpy.ndarray, optional
        Sites that fail together (a grid region, a campus, a corridor), each as site indices: with
        ``fault_tolerant`` the plan survives the loss of any one of them as well as of any one site.
    pair_remote_site : numpy.ndarray of int, optional
        ``(p,)`` a second site each pair loads, ``-1`` for none: cross-metro prefill, the decode pool at
        ``pair_site`` and the prefill pool here. A pair with a second site needs both open; with N+1 the loss of
        either site loses it.
    pair_remote_nodes_per_tok_s : numpy.ndarray, optional
        ``(p,)`` node-equivalents used at the second site per tok/s (0 where there is none). [nodes/(tokens/s)]
    caps : tuple of ResourceCap, optional
        Caps on the plan's grid emissions and water, whole plan, per region and per site (``objective``).
    """

    slice_demand_tok_s: FloatArray
    slice_hours: FloatArray
    pair_commodity: IntArray
    pair_site: IntArray
    pair_nodes_per_tok_s: FloatArray
    pair_rtt_ms: FloatArray
    pair_cost_usd_per_h: FloatArray
    site_fixed_usd_per_h: FloatArray
    site_node_usd_per_h: FloatArray
    site_node_mw: FloatArray
    site_mw_available: FloatArray
    site_locked: BoolArray
    min_sites_open: int | None = None
    max_sites_open: int | None = None
    fault_tolerant: bool = False
    daily_mean_tok_s: FloatArray | None = None
    protect: BoolArray | None = None
    failure_domains: tuple[IntArray, ...] = ()
    pair_remote_site: IntArray | None = None
    pair_remote_nodes_per_tok_s: FloatArray | None = None
    caps: tuple[ResourceCap, ...] = ()

    def __post_init__(self) -> None:
        if (self.pair_remote_site is None) != (self.pair_remote_nodes_per_tok_s is None):
            raise ValueError("pair_remote_site and pair_remote_nodes_per_tok_s are given together")

    @property
    def has_remote(self) -> bool:
        """Whether some pair loads a second site (cross-metro prefill)."""
        return self.pair_remote_site is not None and bool((self.pair_remote_site >= 0).any())

    @property
    def remote_pairs(self) -> IntArray:
        """Pairs that load a second site, ascending."""
        if self.pair_remote_site is None:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(self.pair_remote_site >= 0).astype(np.int64)

    def load_entries(self) -> tuple[IntArray, IntArray, FloatArray]:
        """Every (pair, site, node-equivalents per tok/s) a share loads: each pair's own site, then the second sites.

        Capacity rows, site loads and reduced costs are written over these entries, so a pair that loads two
        sites (cross-metro prefill) counts at both. Without second sites they are the pairs themselves.
        """
        return load_entries_of(self, np.arange(len(self.pair_site), dtype=np.int64))

    def pairs_open(self, is_open: BoolArray) -> BoolArray:
        """``(p,)`` pairs whose every site is open."""
        ok = np.asarray(is_open[self.pair_site], dtype=bool)
        remote = self.remote_pairs
        if len(remote):
            assert self.pair_remote_site is not None
            ok[remote] &= is_open[self.pair_remote_site[remote]]
        return ok

    def pairs_touching(self, sites: IntArray) -> BoolArray:
        """``(p,)`` pairs that load one of ``sites``, as their own site or as their second (lost when it fails)."""
        touched = np.isin(self.pair_site, sites)
        remote = self.remote_pairs
        if len(remote):
            assert self.pair_remote_site is not None
            touched[remote] |= np.isin(self.pair_remote_site[remote], sites)
        return np.asarray(touched, dtype=bool)

    @property
    def n_sites(self) -> int:
        """Number of candidate sites."""
        return len(self.site_fixed_usd_per_h)

    @property
    def n_commodities(self) -> int:
        """Number of commodities."""
        return int(self.slice_demand_tok_s.shape[0])

    @property
    def mean_demand_tok_s(self) -> FloatArray:
        """Daily mean demand of each commodity. [tokens/s]"""
        if self.daily_mean_tok_s is not None:
            return self.daily_mean_tok_s
        return np.asarray(self.slice_demand_tok_s @ self.slice_hours / self.slice_hours.sum())

    @property
    def peak_demand_tok_s(self) -> FloatArray:
        """Largest slice demand of each commodity. [tokens/s]"""
        return np.asarray(self.slice_demand_tok_s.max(axis=1))

    @property
    def protected(self) -> BoolArray:
        """``(c,)`` commodities the N+1 rows apply to: with demand, and in ``protect`` if given."""
        if not self.fault_tolerant:
            return np.zeros(self.n_commodities, dtype=bool)
        mask = self.peak_demand_tok_s > 0
        return mask if self.protect is None else mask & self.protect

    def failure_scenarios(self) -> list[tuple[int, IntArray]]:
        """Every loss N+1 guards against, as ``(key, failed sites)``.

        Key ``f < n_sites`` is the loss of site f alone; key ``n_sites + d`` the loss of
        ``failure_domains[d]`` (PlacementSolution's ``failover_share`` uses the same keys).
        """
        single = [(f, np.asarray([f], dtype=np.int64)) for f in range(self.n_sites)]
        domains = [(self.n_sites + d, np.asarray(sites, dtype=np.int64)) for d, sites in enumerate(self.failure_domains)]
        return single + domains

    @property
    def site_max_nodes(self) -> IntArray:
        """Most nodes each site's power allows."""
        return np.floor(self.site_mw_available / self.site_node_mw + 1e-9).astype(np.int64)

    def pair_slice_load(self) -> FloatArray:
        """``(p, T)`` node-equivalents each pair uses in each slice at a share of 1."""
        return np.asarray(self.slice_demand_tok_s[self.pair_commodity] * self.pair_nodes_per_tok_s[:, None])

    def entry_slice_load(self) -> FloatArray:
        """``(e, T)`` node-equivalents each of :meth:`load_entries` uses in each slice at a share of 1."""
        pair, _, nodes = self.load_entries()
        return np.asarray(self.slice_demand_tok_s[self.pair_commodity[pair]] * nodes[:, None])

    def used_entry_load(self, shares: FloatArray) -> tuple[IntArray, IntArray, FloatArray]:
        """:meth:`load_entries` with a share other than 0: pair, site and :meth:`entry_slice_load` (``(e, T)``) of each.

        A share of 0 adds nothing to a load, so sums over these entries are those over all of them to the bit, without
        the dense (entries x slices) table (1 GB on a 2,000-site world).
        """
        pair, site, nodes = self.load_entries()
        used = shares[pair] != 0
        pair, site, nodes = pair[used], site[used], nodes[used]
        return pair, site, self.slice_demand_tok_s[self.pair_commodity[pair]] * nodes[:, None]

    def site_slice_load(self, shares: FloatArray) -> FloatArray:
        """``(m, T)`` node-equivalents each site carries in each slice under the given shares (second sites too)."""
        load = np.zeros((self.n_sites, len(self.slice_hours)))
        pair, site, entry_load = self.used_entry_load(shares)
        np.add.at(load, site, entry_load * shares[pair, None])
        return load

    def free_of_cost(self) -> PlacementInput:
        """These arrays with every cost at 0: the model whose objective is what else it is given (goodput served)."""
        zeros = np.zeros(self.n_sites)
        return replace(
            self, site_fixed_usd_per_h=zeros, site_node_usd_per_h=zeros, pair_cost_usd_per_h=np.zeros(len(self.pair_site))
        )

    def cost_usd_per_h(self, is_open: BoolArray, nodes: IntArray, shares: FloatArray) -> float:
        """Total cost of a design. [USD/h]"""
        return float(
            self.site_fixed_usd_per_h[is_open].sum()
            + (nodes * self.site_node_usd_per_h).sum()
            + (shares * self.pair_cost_usd_per_h).sum()
        )


def load_entries_of(data: PlacementInput, pairs: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
    """:meth:`PlacementInput.load_entries` of a subset of pairs: (position in ``pairs``, site, nodes per tok/s)."""
    local = np.arange(len(pairs), dtype=np.int64)
    if data.pair_remote_site is None or data.pair_remote_nodes_per_tok_s is None:
        return local, data.pair_site[pairs], data.pair_nodes_per_tok_s[pairs]
    far = np.flatnonzero(data.pair_remote_site[pairs] >= 0)
    return (
        np.concatenate([local, far]),
        np.concatenate([data.pair_site[pairs], data.pair_remote_site[pairs[far]]]),
        np.concatenate([data.pair_nodes_per_tok_s[pairs], data.pair_remote_nodes_per_tok_s[pairs[far]]]),
    )


@dataclass(frozen=True)
class PlacementSolution:
    """A solved placement.

    Parameters
    ----------
    open : numpy.ndarray of bool
        ``(m,)`` open sites.
    nodes : numpy.ndarray of int
        ``(m,)`` nodes per site.
    pair_share : numpy.ndarray
        ``(p,)`` share of each commodity's demand served on each pair.
    unserved_share : numpy.ndarray
        ``(c,)`` share of each commodity's demand left unserved.
    objective_usd_per_h : float
        Cost of the design (penalties and ratio terms excluded). [USD/h]
    report : SolverReport
        The (last) MILP solve.
    routing_report : SolverReport or None
        The routing LP solved with the design fixed.
    failover_share : dict
        ``{scenario key: (p,) shares re-routed when its sites fail}`` (N+1 only; keys of
        :meth:`PlacementInput.failure_scenarios`).
    unprotected_share : dict
        ``{scenario key: (c,) share of each commodity served at the failed sites that cannot be re-routed}``
        (N+1 plans protected after a shortfall: no spare power in reach; empty when every loss is covered).
    iterations : list of dict
        Dinkelbach iterations (ratio objective only).
    n_plus_one_dropped : bool
        The problem asked for N+1 but no protected design was found in the time limit: this is the plan
        without N+1, with no spare capacity for a loss, and it says so.
    without_n_plus_one : PlacementSolution or None
        The plan without N+1 an N+1 plan was built on or compared with (what protection costs).
    """

    open: BoolArray
    nodes: IntArray
    pair_share: FloatArray
    unserved_share: FloatArray
    objective_usd_per_h: float
    report: SolverReport
    routing_report: SolverReport | None = None
    failover_share: dict[int, FloatArray] = field(default_factory=dict)
    unprotected_share: dict[int, FloatArray] = field(default_factory=dict)
    iterations: list[dict[str, float]] = field(default_factory=list)
    n_plus_one_dropped: bool = False
    without_n_plus_one: PlacementSolution | None = None

    def pair_mean_flow_tok_s(self, data: PlacementInput) -> FloatArray:
        """Daily mean goodput carried on each pair. [tokens/s]"""
        return np.asarray(self.pair_share * data.mean_demand_tok_s[data.pair_commodity])

    def served_mean_tok_s(self, data: PlacementInput) -> float:
        """Daily mean goodput served in total. [tokens/s]"""
        return float(self.pair_mean_flow_tok_s(data).sum())
