"""What the build-out model takes and gives, as arrays: :class:`BuildoutInput`, :class:`FirstStage`, :class:`BuildoutSolution`.

Stage one (shared by every demand scenario): which sites are open in each year and how many MW are
reserved there; both never go back. Stage two (one copy per scenario): nodes bought per site,
accelerator and year (they serve for their economic life), the share of each demand row routed to each
allowed site, the tokens of each class each accelerator serves, and the unserved share.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize.buildout.protected import Protection
from placement.optimize.solver import SolverReport

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class YearCap:
    """One carbon or water cap on every year and scenario of a build-out.

    Parameters
    ----------
    name : str
        What it caps, in words (``carbon``, ``water in EU``, ``on-site water at madrid``).
    unit : str
        The unit of a year's use (``tCO2e``, ``m3``).
    per_mwh : numpy.ndarray
        ``(M,)`` use per MWh drawn at each site (PUE included), 0 where the cap does not count the site.
        [unit/MWh]
    limit_per_year : float
        The most a year, in every scenario. [unit]
    held_back : numpy.ndarray or None
        ``(Y, S)`` held below the limit in the model (room for rounding purchases up); None: nothing. [unit]
    """

    name: str
    unit: str
    per_mwh: FloatArray
    limit_per_year: float
    held_back: FloatArray | None = None

    def model_limit(self, n_years: int, n_scen: int) -> FloatArray:
        """``(Y, S)`` the limit the model's rows hold: the cap less what is held back. [unit]"""
        back = np.zeros((n_years, n_scen)) if self.held_back is None else self.held_back
        return np.asarray(self.limit_per_year - back)


@dataclass(frozen=True)
class NPlusOne:
    """N+1 in a build-out: every year survives the loss of any one site, or of any one of these fault domains.

    Parameters
    ----------
    domains : tuple of numpy.ndarray of int
        Sites that fail together (``fault_tolerance.domains``), each as site indices; empty: single sites only.
    domain_names : tuple of str
        Name of each domain.
    """

    domains: tuple[IntArray, ...] = ()
    domain_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class BuildoutInput:
    """Everything the build-out model needs, as arrays.

    Dimensions: ``R`` demand rows, ``P`` allowed (row, site) pairs, ``M`` sites, ``K`` classes,
    ``A`` accelerators, ``Y`` years, ``S`` demand scenarios, ``T`` time slices.

    Parameters
    ----------
    year_weight_h : numpy.ndarray
        ``(Y,)`` discounted hours of each year: ``8760 / (1 + rate) ** (year - first)``. [h]
    slice_weight : numpy.ndarray
        ``(T,)`` share of the day in each slice (sums to 1).
    row_class : numpy.ndarray of int
        ``(R,)`` class of each demand row.
    row_demand_tok_s : numpy.ndarray
        ``(R, T, Y, S)`` demand of each row per slice, year and scenario. [tokens/s]
    pair_row, pair_site : numpy.ndarray of int
        ``(P,)`` row and site of each allowed pair.
    site_fixed_usd_per_h : numpy.ndarray
        ``(M,)`` cost of an open site. [USD/h]
    site_usd_per_h_per_mw : numpy.ndarray
        ``(M,)`` cost of one reserved MW (facility build, amortised). [USD/h/MW]
    site_mw_available : numpy.ndarray
        ``(M, Y)`` MW energized at each site in each year. [MW]
    site_locked : numpy.ndarray of bool
        ``(M,)`` sites open from the first year (an existing fleet, or the catalog's ``locked``).
    goodput_tok_s : numpy.ndarray
        ``(K, A)`` goodput of one node of each accelerator for each class (0: cannot serve it), or
        ``(K, A, Y, S)`` when it changes by year and scenario (a larger model arriving). [tokens/s]
    node_mw : numpy.ndarray
        ``(M, A)`` facility MW of one node (IT power times PUE). [MW]
    node_usd_per_h : numpy.ndarray
        ``(M, A)`` running cost of one node in service (idle power, opex), capex excluded, or ``(M, A, Y)`` when it
        changes by year (a carbon price path). [USD/h]
    energy_usd_per_h_per_tok_s : numpy.ndarray
        ``(M, K, A)`` load-following power cost of serving 1 token/s for an hour, or ``(M, K, A, Y, S)``.
        [USD/h per token/s]
    offered : numpy.ndarray of bool
        ``(A, Y)`` accelerators that can be bought in each year.
    node_capex_usd : numpy.ndarray
        ``(A, Y)`` price of one node bought in each year. [USD]
    node_annuity_usd_per_h : numpy.ndarray
        ``(A, Y)`` capex of one node bought in each year, annualised over its life. [USD/h]
    life_years : int
        Years a node serves after it is bought (the year of purchase included).
    existing_nodes : numpy.ndarray
        ``(M, A, Y)`` nodes already installed that are still in service. [nodes]
    probability : numpy.ndarray
        ``(S,)`` probability of each scenario.
    unserved_usd_per_million_tokens : float
        Penalty of a goodput token not served. [USD/Mtok]
    integer_nodes : bool
        Integer purchases (else continuous; see :func:`round_up`).
    power_margin_mw : numpy.ndarray or None
        ``(M,)`` MW held back below each site's energized power so that rounding continuous purchases
        up cannot exceed it (None: none).
    row_mean_demand_tok_s : numpy.ndarray or None
        ``(R, Y, S)`` daily mean demand of each row (None: the slice-weighted ``row_demand_tok_s``). Slices
        hold each block's busiest hour for capacity; goodput, energy and the unserved penalty follow the
        mean. [tokens/s]
    barred : numpy.ndarray of bool, optional
        ``(M, A, Y)`` accelerators a rule keeps out of a site in a year (export controls); None: none.
    node_idle_mw : numpy.ndarray or None
        ``(M, A)`` power a node in service draws idle, all year (PUE included); None: not given (no caps). [MW]
    node_load_mw : numpy.ndarray or None
        ``(M, A)`` load-following power of a node at full load (PUE included), on top of its idle draw. [MW]
    caps : tuple of YearCap
        Carbon and water caps held in every year and scenario (:mod:`placement.optimize.buildout.caps` writes their rows).
    n_plus_one : NPlusOne or None
        Spare capacity for the loss of any one site or fault domain, in every year and scenario
        (:mod:`placement.optimize.buildout.spares`); None: none.
    site_goodput_factor : numpy.ndarray or None
        ``(M, K, A)`` each site's goodput per node relative to ``goodput_tok_s`` (its KV tier's cache,
        :mod:`placement.buildout.tiers`; 0: the site's node cannot serve the class); None: 1 everywhere.
    pair_load : numpy.ndarray or None
        ``(P,)`` node-equivalents of a token/s over each pair per token/s at the site's loosest rung (its rung of
        ``serving.node_ttft_ladder``, :mod:`placement.buildout.ladder`; at least 1); None: 1 everywhere.
    pair_remote_site : numpy.ndarray of int or None
        ``(P,)`` a second site each pair loads (the prefill site of a cross-metro column,
        :mod:`placement.buildout.cross_metro`; -1: none); None: none anywhere.
    pair_remote_load : numpy.ndarray or None
        ``(P,)`` node-equivalents at the second site per token/s over the pair, per token/s served whole there.
    pair_usd_per_h_per_tok_s : numpy.ndarray or None
        ``(P,)`` cost of 1 token/s over each pair for an hour besides its nodes (the WAN transport of a cross-metro
        column's KV). [USD/h per token/s]
    site_open_mw : numpy.ndarray or None
        ``(M,)`` power an open site draws whatever it serves, all year (its cold cache's warm-up nodes at full power,
        PUE included): in its energy and the caps; None: none. [MW]
    """

    year_weight_h: FloatArray
    slice_weight: FloatArray
    row_class: IntArray
    row_demand_tok_s: FloatArray
    pair_row: IntArray
    pair_site: IntArray
    site_fixed_usd_per_h: FloatArray
    site_usd_per_h_per_mw: FloatArray
    site_mw_available: FloatArray
    site_locked: BoolArray
    goodput_tok_s: FloatArray
    node_mw: FloatArray
    node_usd_per_h: FloatArray
    energy_usd_per_h_per_tok_s: FloatArray
    offered: BoolArray
    node_capex_usd: FloatArray
    node_annuity_usd_per_h: FloatArray
    life_years: int
    existing_nodes: FloatArray
    probability: FloatArray
    unserved_usd_per_million_tokens: float
    integer_nodes: bool = False
    power_margin_mw: FloatArray | None = None
    row_mean_demand_tok_s: FloatArray | None = None
    barred: BoolArray | None = None
    node_idle_mw: FloatArray | None = None
    node_load_mw: FloatArray | None = None
    caps: tuple[YearCap, ...] = ()
    n_plus_one: NPlusOne | None = None
    site_goodput_factor: FloatArray | None = None
    pair_load: FloatArray | None = None
    pair_remote_site: IntArray | None = None
    pair_remote_load: FloatArray | None = None
    pair_usd_per_h_per_tok_s: FloatArray | None = None
    site_open_mw: FloatArray | None = None

    @property
    def remote_site(self) -> IntArray:
        """``(P,)`` :attr:`pair_remote_site`, -1 where not given."""
        none = np.full(self.pair_row.size, -1, dtype=np.int64)
        return none if self.pair_remote_site is None else self.pair_remote_site

    @property
    def remote_load(self) -> FloatArray:
        """``(P,)`` :attr:`pair_remote_load`, 0 where not given."""
        return np.zeros(self.pair_row.size) if self.pair_remote_load is None else self.pair_remote_load

    @property
    def pair_usd_per_tok_s(self) -> FloatArray:
        """``(P,)`` :attr:`pair_usd_per_h_per_tok_s`, 0 where not given. [USD/h per token/s]"""
        return np.zeros(self.pair_row.size) if self.pair_usd_per_h_per_tok_s is None else self.pair_usd_per_h_per_tok_s

    @property
    def pair_load_factor(self) -> FloatArray:
        """``(P,)`` :attr:`pair_load`, 1 where not given."""
        return np.ones(self.pair_row.size) if self.pair_load is None else self.pair_load

    @property
    def buyable_at_site(self) -> BoolArray:
        """``(M, A, Y)`` on offer and not barred at the site."""
        m = self.node_mw.shape[0]
        offered = np.broadcast_to(self.offered[None, :, :], (m, *self.offered.shape))
        return np.asarray(offered if self.barred is None else offered & ~self.barred)

    @property
    def shape(self) -> tuple[int, int, int, int, int, int]:
        """``(M, K, A, Y, S, T)``."""
        m, a = self.node_mw.shape
        _, t, y, s = self.row_demand_tok_s.shape
        return m, self.goodput_tok_s.shape[0], a, y, s, t

    @property
    def goodput_kays(self) -> FloatArray:
        """``(K, A, Y, S)`` goodput of one node per class, accelerator, year and scenario. [tokens/s]"""
        k, a = self.goodput_tok_s.shape[:2]
        _, _, y, s = self.row_demand_tok_s.shape
        table = self.goodput_tok_s if self.goodput_tok_s.ndim == 4 else self.goodput_tok_s[:, :, None, None]
        return np.asarray(np.broadcast_to(table, (k, a, y, s)))

    @property
    def goodput_mkays(self) -> FloatArray:
        """``(M, K, A, Y, S)`` goodput of one node at each site (its KV tier's). [tokens/s]"""
        m = self.node_mw.shape[0]
        table = self.goodput_kays[None]
        if self.site_goodput_factor is not None:
            table = table * self.site_goodput_factor[:, :, :, None, None]
        return np.asarray(np.broadcast_to(table, (m, *self.goodput_kays.shape)))

    @property
    def energy_mkays(self) -> FloatArray:
        """``(M, K, A, Y, S)`` load-following power cost per token/s served for an hour. [USD/h per token/s]"""
        m, k, a = self.energy_usd_per_h_per_tok_s.shape[:3]
        _, _, y, s = self.row_demand_tok_s.shape
        table = self.energy_usd_per_h_per_tok_s
        table = table if table.ndim == 5 else table[..., None, None]
        return np.asarray(np.broadcast_to(table, (m, k, a, y, s)))

    @property
    def running_may(self) -> FloatArray:
        """``(M, A, Y)`` running cost of one node in service in each year. [USD/h]"""
        m, a = self.node_mw.shape
        table = self.node_usd_per_h if self.node_usd_per_h.ndim == 3 else self.node_usd_per_h[:, :, None]
        return np.asarray(np.broadcast_to(table, (m, a, self.year_weight_h.size)))

    def life_cost_usd(self, site: IntArray, accelerator: IntArray, bought: IntArray) -> FloatArray:
        """Cost over its life of one node bought at each (site, accelerator, year). [USD]

        Its capex annuity and its running cost in each year it serves, over that year's discounted hours.
        """
        served_h = self.alive.astype(float) * self.year_weight_h[None, :]  # (bought year, year)
        running = (self.running_may[site, accelerator, :] * served_h[bought]).sum(axis=1)
        return np.asarray(self.node_annuity_usd_per_h[accelerator, bought] * served_h[bought].sum(axis=1) + running)

    @property
    def alive(self) -> BoolArray:
        """``(Y, Y)``: ``alive[v, y]`` when a node bought in year ``v`` serves in year ``y``."""
        years = np.arange(self.year_weight_h.size)
        age = years[None, :] - years[:, None]
        return np.asarray((age >= 0) & (age < self.life_years))

    @property
    def unserved_usd_per_h_per_tok_s(self) -> float:
        """Penalty of 1 token/s not served for an hour. [USD/h per token/s]"""
        return self.unserved_usd_per_million_tokens * SECONDS_PER_HOUR / 1e6

    @property
    def daily_demand_tok_s(self) -> FloatArray:
        """``(R, Y, S)`` daily mean demand of each row. [tokens/s]"""
        if self.row_mean_demand_tok_s is not None:
            return self.row_mean_demand_tok_s
        return np.asarray(np.einsum("rtys,t->rys", self.row_demand_tok_s, self.slice_weight))

    @property
    def energy_weight(self) -> FloatArray:
        """``(Y, S, T)`` weight of a slice's load in the day's energy: its share of the day times mean over busiest-hour load."""
        peak = np.einsum("rtys,t->ys", self.row_demand_tok_s, self.slice_weight)
        mean = self.daily_demand_tok_s.sum(axis=0)
        ratio = np.where(peak > 0, mean / np.maximum(peak, 1e-300), 1.0)
        return np.asarray(ratio[:, :, None] * self.slice_weight[None, None, :])

    def scenario(self, s: int) -> BuildoutInput:
        """Scenario ``s`` alone, with probability 1."""
        one = slice(s, s + 1)
        return replace(
            self,
            row_demand_tok_s=self.row_demand_tok_s[..., one],
            row_mean_demand_tok_s=self.daily_demand_tok_s[..., one],
            goodput_tok_s=self.goodput_kays[..., one],
            energy_usd_per_h_per_tok_s=self.energy_mkays[..., one],
            probability=np.ones(1),
            caps=tuple(replace(c, held_back=None if c.held_back is None else c.held_back[:, one]) for c in self.caps),
        )

    def mean_value(self) -> BuildoutInput:
        """The mean-value problem: one scenario whose demand, goodput and energy are the probability-weighted means."""
        p = self.probability
        return replace(
            self,
            row_demand_tok_s=np.einsum("rtys,s->rty", self.row_demand_tok_s, p)[..., None],
            row_mean_demand_tok_s=np.einsum("rys,s->ry", self.daily_demand_tok_s, p)[..., None],
            goodput_tok_s=np.einsum("kays,s->kay", self.goodput_kays, p)[..., None],
            energy_usd_per_h_per_tok_s=np.einsum("mkays,s->mkay", self.energy_mkays, p)[..., None],
            probability=np.ones(1),
            caps=tuple(
                replace(c, held_back=None if c.held_back is None else c.held_back.max(axis=1, keepdims=True)) for c in self.caps
            ),
        )


@dataclass(frozen=True)
class FirstStage:
    """The shared decisions: sites open and MW reserved per year.

    Parameters
    ----------
    open : numpy.ndarray of bool
        ``(M, Y)`` open sites.
    mw_reserved : numpy.ndarray
        ``(M, Y)`` MW reserved. [MW]
    """

    open: BoolArray
    mw_reserved: FloatArray


@dataclass(frozen=True)
class BuildoutSolution:
    """A solved build-out.

    Parameters
    ----------
    first : FirstStage
        Sites and MW per year.
    buy : numpy.ndarray
        ``(M, A, Y, S)`` nodes bought. [nodes]
    nodes : numpy.ndarray
        ``(M, A, Y, S)`` nodes in service (existing included). [nodes]
    pair_share : numpy.ndarray
        ``(P, Y, S)`` share of each row's demand served over each pair.
    unserved_share : numpy.ndarray
        ``(R, Y, S)`` share of each row's demand not served.
    served_tok_s : numpy.ndarray
        ``(M, K, A, Y, S, T)`` tokens/s of each class served on each accelerator. [tokens/s]
    report : SolverReport
        What the solver proved (for a rounded solution: the solve before rounding).
    rounded : bool
        Whether continuous purchases were rounded up after the solve.
    protection : Protection or None
        The N+1 spares the plan carries (:mod:`placement.optimize.buildout.spares`); None: a plan without N+1.
    """

    first: FirstStage
    buy: FloatArray
    nodes: FloatArray
    pair_share: FloatArray
    unserved_share: FloatArray
    served_tok_s: FloatArray
    report: SolverReport
    rounded: bool = False
    protection: Protection | None = None


def nodes_in_service(data: BuildoutInput, buy: FloatArray) -> FloatArray:
    """``(M, A, Y, S)`` nodes in service: existing plus purchases still inside their life."""
    bought = np.einsum("mabs,by->mays", buy, data.alive.astype(float))
    return np.asarray(bought + data.existing_nodes[..., None])
