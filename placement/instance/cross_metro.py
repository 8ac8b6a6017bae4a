"""Cross-metro prefill as columns of the MILP: a prefill pool in one metro serving the decode pool of another.

Users reach the decode site D as before; the prompt goes on to a prefill site P and its KV comes back over the WAN.
So a (population, class, D) pair served this way loads two sites: D with the decode pool's node-equivalents per
tok/s and P with the prefill pool's (:class:`placement.profiles.build.CrossMetroProfile`); its TTFT adds the round trip
between D and P to the decode site's (the KV's transfer is in the profile's prefill), and every GB of KV moved is
priced (``serving.cross_metro_prefill.wan_usd_per_gb``). Whether a pair runs this way is the optimizer's choice:
each is a column beside the pair served whole at D, and the MILP takes either, or a share of each.

The pools are sized for a round trip between the sites (``rtt_ms``, e.g. 10 and 25 ms): a pair of sites uses the
smallest allowance that covers its round trip, so near partners leave the pools more of the node's TTFT budget.
Columns are made only where they can pay. For each class and decode site the candidate prefill sites are the
``partners`` cheapest per prefill tok/s (node cost and energy) within the largest allowance, with power; a column is
left out where residency bars the prefill site for some member of the row, where the TTFT with the sites' round trip
misses the objective, or where the decode pool alone uses at least the node-equivalents of the pair served whole at
D (it would load D as much and P besides: dominated).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from placement._types import BoolArray, FloatArray, IntArray
from placement.economics.cost import load_energy_usd_per_h
from placement.optimize.problem import PlacementInput
from placement.profiles.build import ClassProfile, CrossMetroProfile
from placement.scenario.sections import CrossMetroSection


@dataclass(frozen=True)
class CrossMetroPairs:
    """The cross-metro columns appended to the model arrays, each with what the outputs read of it.

    Parameters
    ----------
    first : int
        Index of the first of them among the model's pairs (they are the last ``len(row)``).
    row, decode_site, prefill_site, klass : numpy.ndarray of int
        ``(q,)`` model row, the site users reach (decode), the prefill site and the class of each.
    option : numpy.ndarray of int
        ``(q,)`` the profile each runs (index into :attr:`CrossMetro.options`: its class at its sites' allowance).
    site_rtt_ms : numpy.ndarray
        ``(q,)`` round trip between the decode and the prefill site, at the scenario's quantile. [ms]
    decode_energy_usd_per_h, prefill_energy_usd_per_h, wan_usd_per_h : numpy.ndarray
        ``(q,)`` at a share of 1: load energy at each site and the WAN transport of the KV. [USD/h]
    kv_gb_per_h : numpy.ndarray
        ``(q,)`` KV moved over the WAN at a share of 1, daily mean. [GB/h]
    """

    first: int
    row: IntArray
    decode_site: IntArray
    prefill_site: IntArray
    klass: IntArray
    option: IntArray
    site_rtt_ms: FloatArray
    decode_energy_usd_per_h: FloatArray
    prefill_energy_usd_per_h: FloatArray
    wan_usd_per_h: FloatArray
    kv_gb_per_h: FloatArray

    def __len__(self) -> int:
        return len(self.row)


@dataclass(frozen=True)
class CrossMetroReach:
    """Why each class has the cross-metro columns it has: candidates considered and where they dropped out.

    Parameters
    ----------
    local_pairs : int
        Pairs of the class served whole at a site (the decode sites' candidates).
    dominated : int
        Of those, pairs whose decode pool alone needs at least the node-equivalents of the pair served whole.
    no_partner : int
        Undominated pairs whose decode site has no prefill site with power within ``max_rtt_ms``.
    barred : int
        (pair, partner) combinations residency bars (some member may not be served at the prefill site).
    over_budget : int
        (pair, partner) combinations whose TTFT with the sites' round trip misses the objective.
    columns : int
        Columns made.
    """

    local_pairs: int = 0
    dominated: int = 0
    no_partner: int = 0
    barred: int = 0
    over_budget: int = 0
    columns: int = 0


@dataclass(frozen=True)
class CrossMetro:
    """Cross-metro prefill in an instance: the scenario's settings, each class's profile and the columns made.

    Parameters
    ----------
    spec : CrossMetroSection
        ``serving.cross_metro_prefill``.
    profiles : list
        Per class, its :class:`~placement.profiles.build.CrossMetroProfile` at each allowance of ``rtt_ms`` that leaves
        it goodput (ascending), or why it has none (a sentence).
    site_rtt_ms : numpy.ndarray
        ``(m, m)`` round trip between every two sites at the scenario's quantile. [ms]
    partners : list of list of numpy.ndarray
        Per class and decode site, its candidate prefill sites, cheapest first (empty without a profile).
    pairs : CrossMetroPairs
        The columns.
    reach : list of CrossMetroReach
        Per class, how the candidates fell out.
    """

    spec: CrossMetroSection
    profiles: list[list[CrossMetroProfile] | str]
    site_rtt_ms: FloatArray
    partners: list[list[IntArray]]
    pairs: CrossMetroPairs
    reach: list[CrossMetroReach]

    def steps(self, k: int) -> list[CrossMetroProfile]:
        """Class k's cross-metro profiles, one per allowance that leaves it goodput (empty: it has none)."""
        found = self.profiles[k]
        return [] if isinstance(found, str) else found

    @property
    def options(self) -> list[CrossMetroProfile]:
        """Every class's profiles in one list, class by class: what :attr:`CrossMetroPairs.option` indexes."""
        return [step for k in range(len(self.profiles)) for step in self.steps(k)]

    def why_none(self, k: int) -> str:
        """Why class k has no cross-metro columns ('' when it has some)."""
        found, reach = self.profiles[k], self.reach[k]
        if isinstance(found, str):
            return found
        if reach.columns:
            return ""
        if reach.local_pairs and reach.dominated == reach.local_pairs:
            nodes = found[0].decode_nodes_per_tok_s * 1e3
            return (
                f"dominated: its decode pool alone needs {nodes:.3g} node-equivalents per 1,000 tok/s at the users' site, "
                "no fewer than serving the class whole there"
            )
        if reach.no_partner and not (reach.barred or reach.over_budget):
            return f"no site with power within {self.spec.max_rtt_ms:g} ms of a decode site"
        return (
            f"no column inside the objective: {reach.over_budget} (pair, prefill site) combinations miss the TTFT "
            f"objective with the sites' round trip, {reach.barred} are barred by residency"
        )


@dataclass(frozen=True)
class EnergyPrices:
    """What load costs in energy: the rows' demand energy follows, the slices' weights and each site's price.

    Parameters
    ----------
    demand_tok_s : numpy.ndarray
        ``(r, T)`` demand of each model row that energy follows (the daily mean with one peak slice). [tokens/s]
    weights : numpy.ndarray
        ``(T,)`` share of the day of each slice.
    site_price_usd_per_mwh : numpy.ndarray
        ``(m, T)`` power price, PUE included. [USD/MWh]
    dynamic_mw_per_node : float
        Power of one node that follows its load, before PUE. [MW]
    """

    demand_tok_s: FloatArray
    weights: FloatArray
    site_price_usd_per_mwh: FloatArray
    dynamic_mw_per_node: float

    def usd_per_h(self, row: IntArray, site: IntArray, nodes_per_tok_s: FloatArray) -> FloatArray:
        """``(q,)`` energy cost at a share of 1 of ``nodes_per_tok_s`` node-equivalents per tok/s at each site. [USD/h]"""
        mw = self.dynamic_mw_per_node * np.asarray(nodes_per_tok_s, dtype=float)
        return load_energy_usd_per_h(self.demand_tok_s, self.weights, row, site, mw, self.site_price_usd_per_mwh)


def rank_partners(
    site_rtt_ms: FloatArray,
    has_power: BoolArray,
    prefill_usd_per_tok_s: FloatArray,
    *,
    max_rtt_ms: float,
    count: int,
) -> list[IntArray]:
    """Each decode site's candidate prefill sites: other sites with power within ``max_rtt_ms``, cheapest first.

    Parameters
    ----------
    site_rtt_ms : numpy.ndarray
        ``(m, m)`` round trips between sites. [ms]
    has_power : numpy.ndarray of bool
        ``(m,)`` sites with MW available.
    prefill_usd_per_tok_s : numpy.ndarray
        ``(m,)`` cost of the prefill pool per tok/s at each site (its nodes and their energy). [USD/h per tok/s]
    max_rtt_ms : float
        Farthest partner. [ms]
    count : int
        Partners kept per decode site.

    Returns
    -------
    list of numpy.ndarray
        Per decode site, up to ``count`` site indices.
    """
    m = len(has_power)
    out = []
    for d in range(m):
        near = np.flatnonzero(has_power & (site_rtt_ms[d] <= max_rtt_ms) & (np.arange(m) != d))
        order = near[np.lexsort((site_rtt_ms[d, near], prefill_usd_per_tok_s[near]))]
        out.append(order[:count].astype(np.int64))
    return out


def build_cross_metro(
    inputs: PlacementInput,
    *,
    spec: CrossMetroSection,
    profiles: list[list[CrossMetroProfile] | str],
    class_profiles: list[ClassProfile],
    site_rtt_ms: FloatArray,
    row_class: IntArray,
    row_rtt_ms: FloatArray,
    row_permitted: BoolArray,
    retrieval_extra_ms: FloatArray,
    node_usd_per_h: FloatArray,
    energy: EnergyPrices,
    site_runs_profiles: BoolArray | None = None,
) -> CrossMetro:
    """The cross-metro columns of a model: every (row, decode site) pair served whole, with each of its partners.

    Parameters
    ----------
    inputs : PlacementInput
        The model arrays with the pairs served whole at one site.
    spec : CrossMetroSection
        ``serving.cross_metro_prefill``.
    profiles : list
        Per class, its cross-metro profiles by allowance or why it has none
        (:func:`placement.profiles.build.cross_metro_profiles`).
    class_profiles : list of ClassProfile
        Per class, its profile served whole (round trips to users, objective).
    site_rtt_ms : numpy.ndarray
        ``(m, m)`` round trips between sites at the scenario's quantile. [ms]
    row_class : numpy.ndarray of int
        ``(r,)`` class of each model row.
    row_rtt_ms : numpy.ndarray
        ``(r, m)`` worst member's round trip of each row to each site (the one its TTFT budget uses). [ms]
    row_permitted : numpy.ndarray of bool
        ``(r, m)`` sites where residency lets every member of the row be served.
    retrieval_extra_ms : numpy.ndarray
        ``(k, m)`` remote retrieval round trip per class and site. [ms]
    node_usd_per_h : numpy.ndarray
        ``(m,)`` load-independent cost of a node at each site. [USD/h]
    energy : EnergyPrices
        Load energy prices.
    site_runs_profiles : numpy.ndarray of bool, optional
        ``(m,)`` the sites whose nodes ``profiles`` describe (the scenario's part); the others (the availability rules
        moved them to another part) are neither decode nor prefill site of a column. None: every site.

    Returns
    -------
    CrossMetro
        Profiles, partners and the columns (to append with :func:`with_cross_metro`).
    """
    m = inputs.n_sites
    runs = np.ones(m, dtype=bool) if site_runs_profiles is None else np.asarray(site_runs_profiles, dtype=bool)
    has_power = (inputs.site_mw_available > 0) & runs
    mean_price = (energy.site_price_usd_per_mwh * energy.weights[None, :]).sum(axis=1)
    parts: list[tuple[IntArray, ...]] = []
    partners: list[list[IntArray]] = []
    reach: list[CrossMetroReach] = []
    offset = 0
    for k, found in enumerate(profiles):
        if isinstance(found, str):
            partners.append([np.zeros(0, dtype=np.int64)] * m)
            reach.append(CrossMetroReach())
            continue
        per_tok = found[0].prefill_nodes_per_tok_s * (node_usd_per_h + energy.dynamic_mw_per_node * mean_price)
        farthest = found[-1].allowance_ms
        ranked = rank_partners(site_rtt_ms, has_power, per_tok, max_rtt_ms=farthest, count=spec.partners)
        partners.append(ranked)
        sites = _Candidates(inputs, ranked, site_rtt_ms, row_class, row_rtt_ms, row_permitted, retrieval_extra_ms, runs)
        columns, counts = sites.columns(k, found, class_profiles[k], offset)
        offset += len(found)
        parts.append(columns)
        reach.append(counts)
    cross = CrossMetro(spec, profiles, site_rtt_ms, partners, _empty_pairs(len(inputs.pair_site)), reach)
    return replace(cross, pairs=_pairs(inputs, parts, site_rtt_ms, spec, cross.options, energy))


@dataclass(frozen=True)
class _Candidates:
    """What a class's candidate (row, decode site, prefill site) columns are checked against."""

    inputs: PlacementInput
    ranked: list[IntArray]
    site_rtt_ms: FloatArray
    row_class: IntArray
    row_rtt_ms: FloatArray
    row_permitted: BoolArray
    retrieval_extra_ms: FloatArray
    runs: BoolArray

    def columns(
        self, k: int, steps: list[CrossMetroProfile], whole: ClassProfile, offset: int
    ) -> tuple[tuple[IntArray, ...], CrossMetroReach]:
        """Class k's columns as (row, decode site, prefill site, class, option) arrays, and how its candidates fell out.

        A (row, decode, prefill) runs the profile of the smallest allowance covering the sites' round trip.
        """
        inputs = self.inputs
        local = np.flatnonzero((self.row_class[inputs.pair_commodity] == k) & self.runs[inputs.pair_site])
        lightest = min(s.decode_nodes_per_tok_s for s in steps)
        undominated = local[lightest < inputs.pair_nodes_per_tok_s[local] * (1 - 1e-9)]
        count = np.array([len(self.ranked[d]) for d in inputs.pair_site[undominated].tolist()], dtype=np.int64)
        pair = np.repeat(undominated, count)
        row, decode = inputs.pair_commodity[pair], inputs.pair_site[pair]
        prefill = (
            np.concatenate([self.ranked[d] for d in inputs.pair_site[undominated].tolist()]).astype(np.int64)
            if len(pair)
            else np.zeros(0, dtype=np.int64)
        )
        site_rtt = self.site_rtt_ms[decode, prefill]
        allowances = np.array([s.allowance_ms for s in steps])
        step = np.minimum(np.searchsorted(allowances, site_rtt, side="left"), len(steps) - 1)
        decode_nodes = np.array([s.decode_nodes_per_tok_s for s in steps])[step]
        fixed = np.array([s.profile.fixed_ttft_ms for s in steps])[step]
        lighter = decode_nodes < inputs.pair_nodes_per_tok_s[pair] * (1 - 1e-9)
        permitted = self.row_permitted[row, prefill]
        ttft = whole.round_trips * self.row_rtt_ms[row, decode] + fixed + site_rtt + self.retrieval_extra_ms[k, decode]
        inside = (ttft <= whole.ttft_objective_ms) & (site_rtt <= allowances[-1])
        keep = lighter & permitted & inside
        counts = CrossMetroReach(
            local_pairs=len(local),
            dominated=len(local) - len(undominated),
            no_partner=int((count == 0).sum()),
            barred=int((lighter & ~permitted).sum()),
            over_budget=int((lighter & permitted & ~inside).sum()),
            columns=int(keep.sum()),
        )
        option = offset + step[keep]
        return (row[keep], decode[keep], prefill[keep], np.full(int(keep.sum()), k, dtype=np.int64), option), counts


def _empty_pairs(first: int) -> CrossMetroPairs:
    none, empty = np.zeros(0, dtype=np.int64), np.zeros(0)
    return CrossMetroPairs(first, none, none, none, none, none, empty, empty, empty, empty, empty)


def _pairs(
    inputs: PlacementInput,
    parts: list[tuple[IntArray, ...]],
    site_rtt_ms: FloatArray,
    spec: CrossMetroSection,
    options: list[CrossMetroProfile],
    energy: EnergyPrices,
) -> CrossMetroPairs:
    """The columns of every class in one set of arrays, with their energy, WAN cost and KV moved at a share of 1."""
    if not parts:
        return _empty_pairs(len(inputs.pair_site))
    row, decode, prefill, klass, option = (np.concatenate([p[i] for p in parts]).astype(np.int64) for i in range(5))
    decode_nodes, prefill_nodes = option_nodes(options, option)
    gb_per_tok = np.array([o.kv_gb_per_tok for o in options])[option] if options else np.zeros(0)
    kv_gb_per_h = gb_per_tok * inputs.mean_demand_tok_s[row] * 3600.0
    return CrossMetroPairs(
        first=len(inputs.pair_site),
        row=row,
        decode_site=decode,
        prefill_site=prefill,
        klass=klass,
        option=option,
        site_rtt_ms=site_rtt_ms[decode, prefill],
        decode_energy_usd_per_h=energy.usd_per_h(row, decode, decode_nodes),
        prefill_energy_usd_per_h=energy.usd_per_h(row, prefill, prefill_nodes),
        wan_usd_per_h=kv_gb_per_h * spec.wan_usd_per_gb,
        kv_gb_per_h=kv_gb_per_h,
    )


def option_nodes(options: list[CrossMetroProfile], option: IntArray) -> tuple[FloatArray, FloatArray]:
    """``(q,)`` node-equivalents per tok/s at the decode and at the prefill site of each column's profile."""
    if not options:
        return np.zeros(len(option)), np.zeros(len(option))
    decode = np.array([o.decode_nodes_per_tok_s for o in options])
    prefill = np.array([o.prefill_nodes_per_tok_s for o in options])
    return decode[option], prefill[option]


def with_cross_metro(inputs: PlacementInput, cross: CrossMetro, *, pair_rtt_ms: FloatArray) -> PlacementInput:
    """The model arrays with the cross-metro columns appended (decode pool at the pair's site, prefill at its second).

    Parameters
    ----------
    inputs : PlacementInput
        The arrays with the pairs served whole (their indices are kept).
    cross : CrossMetro
        The columns (:func:`build_cross_metro` on ``inputs``).
    pair_rtt_ms : numpy.ndarray
        ``(q,)`` users' round trip of each column (to its decode site), for routing. [ms]

    Returns
    -------
    PlacementInput
        With ``pair_remote_site`` set (-1 on the pairs served whole).
    """
    pairs = cross.pairs
    n = len(inputs.pair_site)
    decode_nodes, prefill_nodes = option_nodes(cross.options, pairs.option)
    cost = pairs.decode_energy_usd_per_h + pairs.prefill_energy_usd_per_h + pairs.wan_usd_per_h
    return replace(
        inputs,
        pair_commodity=np.concatenate([inputs.pair_commodity, pairs.row]).astype(np.int64),
        pair_site=np.concatenate([inputs.pair_site, pairs.decode_site]).astype(np.int64),
        pair_nodes_per_tok_s=np.concatenate([inputs.pair_nodes_per_tok_s, decode_nodes]),
        pair_rtt_ms=np.concatenate([inputs.pair_rtt_ms, pair_rtt_ms]),
        pair_cost_usd_per_h=np.concatenate([inputs.pair_cost_usd_per_h, cost]),
        pair_remote_site=np.concatenate([np.full(n, -1, dtype=np.int64), pairs.prefill_site]).astype(np.int64),
        pair_remote_nodes_per_tok_s=np.concatenate([np.zeros(n), prefill_nodes]),
    )
