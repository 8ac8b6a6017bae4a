"""The instance record: a scenario turned into arrays.

And the options its pairs run: the class profiles by KV tier and node TTFT rung.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._process import take_pairs
from placement._types import FloatArray, IntArray
from placement.economics.cost import NodeCost
from placement.instance.cross_metro import CrossMetro
from placement.instance.pair_mask import PairMask
from placement.network.latency import LatencyModel
from placement.optimize.problem import PlacementInput
from placement.profiles.build import ClassProfile
from placement.profiles.ttft_budget import COMPONENTS, ttft_components_ms
from placement.rules.availability import AvailabilityRule, SiteParts
from placement.rules.faults import FaultDomains
from placement.rules.residency import FREE, CommoditySplit, Regime
from placement.rules.resources import SiteWater
from placement.scenario.classes import WorkloadClass
from placement.scenario.load import LoadedScenario
from placement.scenario.sections import PolicySection, ResidencySection, ServingSection, SolverSection
from placement.world.demand import Populations


@dataclass(frozen=True, kw_only=True)
class ScenarioFacts:
    """What the solve, its tables and its notes read of the scenario beside the arrays: named facts, not the scenario.

    Parameters
    ----------
    name : str
        The scenario's ``name``.
    path : pathlib.Path
        The scenario file (``summary.json``'s ``scenario_path``; copied as ``scenario.yaml``).
    catalog : str
        ``sites.catalog`` as written (named in input errors).
    catalog_name : str
        The site catalog file's name (named in the notes).
    classes : list of WorkloadClass
        The workload classes, in the order of the instance's class indices.
    quantile : str
        ``latency.quantile``: the round trip the TTFT budgets use (``p50`` or ``p90``).
    serving : ServingSection
        ``serving``: the node the classes are planned on.
    residency : ResidencySection
        ``residency``: where each population's traffic may be served.
    solver : SolverSection
        ``solver``: the solver, its limits and gap.
    policy : PolicySection
        ``policy``: what to do with unreachable demand and whether serving is optional.
    peak_factor : float
        ``demand.peak_factor``.
    mw_multiplier : float
        ``sites.mw_multiplier``.
    carbon_usd_per_t : float
        ``objective.carbon_usd_per_t``. [USD/tCO2e]
    water_usd_per_m3 : float
        ``objective.water_usd_per_m3``. [USD/m3]
    node_life_years : float
        ``economics.node_life_years``: embodied carbon is spread over it. [years]
    discover : bool
        Whether ``sites.discover`` is set (``placement discover`` reads it).
    availability : tuple of AvailabilityRule
        The accelerator availability rules in force (none when ``availability.enforce`` is false).
    world_key : str
        A digest of the ``sites``, ``demand`` and ``latency`` sections: two instances of one file with the same key
        share their catalog, populations and round trips.
    """

    name: str
    path: Path
    catalog: str
    catalog_name: str
    classes: list[WorkloadClass]
    quantile: str
    serving: ServingSection
    residency: ResidencySection
    solver: SolverSection
    policy: PolicySection
    peak_factor: float
    mw_multiplier: float
    carbon_usd_per_t: float
    water_usd_per_m3: float
    node_life_years: float
    discover: bool
    availability: tuple[AvailabilityRule, ...]
    world_key: str


@dataclass(frozen=True)
class TierChoice:
    """``serving.kv_cache.tier: auto``: the scenario as written, the sites whose tier the plan chooses, its choices.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario as written (its tier ``auto``); the instance was built on its start tier.
    free : numpy.ndarray of bool
        ``(m,)`` the sites whose catalog ``kv_tier`` is blank: the plan chooses theirs.
    chosen : dict
        Site id -> the tier chosen so far (a free site not in it runs the start tier).
    """

    loaded: LoadedScenario
    free: NDArray[np.bool_]
    chosen: dict[str, str]


@dataclass(frozen=True, kw_only=True)
class Instance:
    """A scenario turned into arrays, before solving.

    Parameters
    ----------
    facts : ScenarioFacts
        What the solve reads of the scenario beside the arrays.
    sites : pandas.DataFrame
        The site catalog.
    populations : Populations
        Demand points and their member cities.
    population_slice_demand_tok_s : numpy.ndarray
        ``(n, T)`` demand of each population in each slice (all classes). [tokens/s]
    slice_hours : numpy.ndarray
        ``(T,)`` hours per slice. [h]
    rtt_ms : numpy.ndarray
        ``(n, m)`` worst member-city round trip from each population to each site that the TTFT
        budget uses: ``rtt_p90_ms`` or ``rtt_p50_ms`` as ``latency.quantile`` says. [ms]
    rtt_p50_ms, rtt_p90_ms : numpy.ndarray
        ``(n, m)`` worst member-city median and p90 round trips (``access`` path). [ms]
    commodity_population, commodity_class : numpy.ndarray
        Population and class index of each commodity.
    ttft_ms : numpy.ndarray
        ``(c, m)`` p99 TTFT of each commodity at each site. [ms]
    within_budget : PairMask
        ``(c, m)`` pairs inside the class objective (latency only), as bits.
    allowed : PairMask
        ``(c, m)`` pairs inside the objective, permitted by residency, at a site with power, as bits.
    node_cost : NodeCost
        Hourly cost of one node per site, by component (load-independent part).
    inputs : PlacementInput
        The model arrays (only commodities with at least one allowed site).
    modelled : numpy.ndarray of int
        A representative commodity of each row of ``inputs``.
    build_s : float
        Time to build the instance. [s]
    profiles : list of ClassProfile
        Per-node goodput and node-side TTFT of each class (given or from the serving model).
    retrieval_extra_ms : numpy.ndarray
        ``(k, m)`` round trip from each site to each class's remote retrieval store (0 if local). [ms]
    node_kw : float
        IT power of one node. [kW]
    row_of_commodity : numpy.ndarray of int
        ``(c,)`` model row serving each commodity (-1: no allowed site). Commodities of one class
        with the same allowed sites and the same demand shape over the day share a row: they are
        interchangeable, so merging them is exact and keeps the model small.
    commodity_slice_demand_tok_s : numpy.ndarray
        ``(c, T)`` demand of every commodity in each slice (flat for time-shiftable classes). [tokens/s]
    commodity_mean_demand_tok_s : numpy.ndarray
        ``(c,)`` daily mean demand of every commodity. [tokens/s]
    latency : LatencyModel
        The scenario's latency model (network, parameters, shortest paths), built once: the
        outputs draw the same network the round trips were computed on.
    failure_domain_names : tuple of str
        Name of each of ``inputs.failure_domains`` (``fault_tolerance.domains``).
    fault_domains : FaultDomains or None
        The scenario's fault domains as configured (``fault_tolerance.domains``, single-site ones included).
    failure_domain_grouping : str or None
        The catalog column the domains come from, ``listed``, or None without domains.
    regimes : list of Regime
        The residency regimes the scenario picks (``residency.regimes``).
    commodity_regime : numpy.ndarray of int or None
        ``(c,)`` regime whose in-bloc share a commodity is (index into ``regimes``), ``-1`` for the
        rest; None: every commodity is one whole (population, class).
    cache_warmup_nodes : numpy.ndarray of int
        ``(m,)`` nodes each open site holds for prefilling the shared prefixes its cache misses (``serving.kv_cache``;
        :func:`with_cache_warmup`): in the site's fixed cost and off its power.
    rungs : list of list of ClassProfile
        Per class, its profiles at the node TTFT budgets of ``serving.node_ttft_ladder``, loosest first
        (:func:`placement.profiles.build.class_rungs`); empty without a ladder. Each (commodity, site) pair runs its
        loosest rung inside the objective (:meth:`option_at`): the options of the model, by dominance.
    cross_metro : CrossMetro or None
        With ``serving.cross_metro_prefill``: each class's cross-metro profile and the columns appended to
        ``inputs`` (pairs from ``cross_metro.pairs.first`` on load their decode site and a prefill site).
    tier_sets : list of list of list of ClassProfile
        With ``serving.kv_cache`` and sites of more than one KV cache tier (the catalog's ``kv_tier``): per tier of
        :attr:`tier_names`, each class's rungs (one without a ladder) on a node with that tier; a pair runs its site's
        set. Empty: one set, ``rungs`` (or the class profiles), at every site.
    tier_names : tuple of str
        The KV cache tier of each set (with ``serving.kv_cache``; the scenario's tier first).
    site_set : numpy.ndarray of int or None
        ``(m,)`` each site's set in :attr:`tier_sets` (None: one set).
    energy_price_usd_per_mwh : numpy.ndarray or None
        ``(m, T)`` power price of each site in each slice, PUE included (:func:`site_energy_price`), as the load
        energy of every pair was priced; None: the catalog's price times PUE in every slice.
    carbon_intensity_g_per_kwh : numpy.ndarray or None
        ``(m, T)`` carbon intensity of the electricity at each site in each slice (:func:`site_carbon_intensity`;
        NaN where the catalog has none); None: the catalog's figure in every slice.
    site_water : SiteWater or None
        Water each site consumes per MWh drawn, on site and by the grid (:func:`placement.rules.resources.site_water`; NaN
        where unknown); None: not known.
    site_parts : SiteParts or None
        The accelerator each site runs where a standing availability rule bars the scenario's at some site
        (:func:`placement.rules.availability.site_parts`; its sets are in :attr:`tier_sets`); None: the scenario's
        everywhere.
    part_serves : numpy.ndarray of bool or None
        ``(classes, m)`` with :attr:`site_parts`: whether each site's part serves each class inside its objectives
        (False everywhere at a site the rules permit no part); its pairs are kept out of :attr:`allowed`.
    tier_choice : TierChoice or None
        With ``serving.kv_cache.tier: auto``: what the plan may choose, and has (:mod:`placement.plan.tier_rounds`).
    """

    facts: ScenarioFacts
    sites: pd.DataFrame
    populations: Populations
    population_slice_demand_tok_s: FloatArray
    slice_hours: FloatArray
    rtt_ms: FloatArray
    rtt_p50_ms: FloatArray
    rtt_p90_ms: FloatArray
    commodity_population: IntArray
    commodity_class: IntArray
    within_budget: PairMask
    allowed: PairMask
    node_cost: NodeCost
    inputs: PlacementInput
    modelled: IntArray
    build_s: float
    profiles: list[ClassProfile]
    retrieval_extra_ms: FloatArray
    node_kw: float
    row_of_commodity: IntArray
    commodity_slice_demand_tok_s: FloatArray
    commodity_mean_demand_tok_s: FloatArray
    latency: LatencyModel
    failure_domain_names: tuple[str, ...] = ()
    fault_domains: FaultDomains | None = None
    failure_domain_grouping: str | None = None
    regimes: list[Regime] = field(default_factory=list)
    commodity_regime: IntArray | None = None
    cache_warmup_nodes: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    rungs: list[list[ClassProfile]] = field(default_factory=list)
    cross_metro: CrossMetro | None = None
    tier_sets: list[list[list[ClassProfile]]] = field(default_factory=list)
    tier_names: tuple[str, ...] = ()
    site_set: IntArray | None = None
    energy_price_usd_per_mwh: FloatArray | None = None
    carbon_intensity_g_per_kwh: FloatArray | None = None
    site_water: SiteWater | None = None
    site_parts: SiteParts | None = None
    part_serves: NDArray[np.bool_] | None = None
    tier_choice: TierChoice | None = None

    def site_accelerator(self) -> list[str]:
        """Each site's accelerator: the scenario's, or what the availability rules let it run (``''``: nothing)."""
        if self.site_parts is None:
            return [self.facts.serving.accelerator] * len(self.sites)
        return list(self.site_parts.part)

    def split(self) -> CommoditySplit:
        """The commodities as the regimes split them (demand already scaled in the commodity arrays: factor 1)."""
        n = len(self.commodity_population)
        regime = np.full(n, FREE, dtype=np.int64) if self.commodity_regime is None else self.commodity_regime
        return CommoditySplit(self.commodity_population, self.commodity_class, regime, np.ones(n))

    def regime_of(self, commodity: IntArray) -> list[str]:
        """The regime id of each commodity's regulated part ('' for a free or whole commodity)."""
        if self.commodity_regime is None:
            return [""] * len(commodity)
        ids = [r.regime_id for r in self.regimes]
        return [ids[r] if r != FREE else "" for r in self.commodity_regime[commodity].tolist()]

    @property
    def laddered(self) -> bool:
        """Whether some class runs more than one node TTFT budget (``serving.node_ttft_ladder``)."""
        return any(len(r) > 1 for r in self.rungs) or any(len(r) > 1 for rungs in self.tier_sets for r in rungs)

    @property
    def varies_by_pair(self) -> bool:
        """Whether a (commodity, site) pair's profile is not just its class's: a ladder, or sites of several KV tiers."""
        return self.laddered or len(self.tier_sets) > 1

    def _sets(self) -> list[list[list[ClassProfile]]]:
        """Each set's rungs per class: the tier sets, or the one set of ``rungs`` (or of the class profiles)."""
        if self.tier_sets:
            return self.tier_sets
        return [self.rungs if any(len(r) > 1 for r in self.rungs) else [[p] for p in self.profiles]]

    def _flat(self) -> tuple[list[ClassProfile], IntArray, IntArray]:
        return flatten_sets(self._sets())

    @property
    def options(self) -> list[ClassProfile]:
        """Every (set, class, rung) profile, set by set and class by class (the class profiles with one set, no ladder)."""
        return self._flat()[0]

    @property
    def option_class(self) -> IntArray:
        """Class of each of :attr:`options`."""
        return self._flat()[2]

    def profiles_at(self, site: int) -> list[ClassProfile]:
        """The class profiles (each class's loosest rung) on the node of one site: its KV tier's where they differ."""
        if self.site_set is None:
            return self.profiles
        return [rungs[0] for rungs in self.tier_sets[int(self.site_set[site])]]

    @property
    def profiles_by_site(self) -> dict[str, list[ClassProfile]] | None:
        """Site id -> its node's class profiles, where sites' KV tiers differ (None: every site has :attr:`profiles`)."""
        if self.site_set is None:
            return None
        return {str(site_id): self.profiles_at(j) for j, site_id in enumerate(self.sites["id"])}

    def site_tier(self, site: int) -> str:
        """The KV cache tier of a site ('' without ``serving.kv_cache``)."""
        if not self.tier_names:
            return ""
        return self.tier_names[0 if self.site_set is None else int(self.site_set[site])]

    def option_at(self, commodity: IntArray, site: IntArray) -> IntArray:
        """The option (index into :attr:`options`) each (commodity, site) pair runs, element-wise."""
        commodity, site = np.asarray(commodity, dtype=np.int64), np.asarray(site, dtype=np.int64)
        workload = self.commodity_class[commodity]
        rtt = take_pairs(self.rtt_ms, self.commodity_population[commodity], site)
        return self._option_of(workload, site, rtt, self.retrieval_extra_ms[workload, site])

    def _option_of(self, workload: IntArray, site: IntArray, rtt: FloatArray, extra: FloatArray) -> IntArray:
        """The option of each element: its site's set, its class, the loosest rung inside the objective (same shapes)."""
        _, offset, _ = self._flat()
        sets = self._sets()
        group = np.zeros(np.shape(rtt), dtype=np.int64) if self.site_set is None else self.site_set[site]
        out = np.zeros(np.shape(rtt), dtype=np.int64)
        for g, rungs in enumerate(sets):
            mask = group == g
            if mask.any():
                out[mask] = offset[g, workload[mask]] + rung_index(rungs, workload[mask], rtt[mask], extra[mask])
        return out

    @property
    def classes(self) -> list[WorkloadClass]:
        """The workload classes."""
        return self.facts.classes

    def cross_metro_ttft_parts_ms(self, pair: IntArray, commodity: IntArray) -> dict[str, FloatArray]:
        """TTFT parts of commodities served on cross-metro columns, the network part with the two sites' round trip.

        Each row takes its cross-metro profile's parts; the round trip between its decode and prefill sites is added
        to its network part.

        Parameters
        ----------
        pair : numpy.ndarray of int
            Model pair of each row, every one a cross-metro column.
        commodity : numpy.ndarray of int
            Commodity of each row.

        Returns
        -------
        dict
            Each of :data:`~placement.profiles.ttft_budget.COMPONENTS`, one figure per row. [ms]
        """
        cross = self.cross_metro
        assert cross is not None
        q = pair - cross.pairs.first
        site = self.inputs.pair_site[pair]
        rtt = take_pairs(self.rtt_ms, self.commodity_population[commodity], site)
        klass = self.commodity_class[commodity]
        parts = {name: np.zeros(len(pair)) for name in COMPONENTS}
        option = cross.pairs.option[q]
        for o in np.unique(option).tolist():
            rows = np.flatnonzero(option == o)
            extra = self.retrieval_extra_ms[int(klass[rows[0]])][site[rows]]
            found = ttft_components_ms(rtt[rows], cross.options[o].profile, retrieval_extra_ms=extra)
            for name in COMPONENTS:
                parts[name][rows] = found[name]
        parts["network_ms"] = parts["network_ms"] + cross.pairs.site_rtt_ms[q]
        return parts

    def ttft_ms(
        self,
        commodity: IntArray | int,
        site: IntArray | slice | int = slice(None),
        *,
        profiles: list[ClassProfile] | None = None,
    ) -> FloatArray:
        """p99 TTFT of commodities at sites, the same figure the budget was checked with. [ms]

        Computed on demand (it is affine in the round trip): at full resolution the whole
        (commodities x sites) table would hold ~200 MB for the few thousand figures the outputs read.

        Parameters
        ----------
        commodity : int or numpy.ndarray of int
            Commodity indices.
        site : int, numpy.ndarray of int or slice, optional
            Site indices, element-wise with ``commodity`` when an array (default: every site).
        profiles : list of ClassProfile, optional
            Node-side TTFT per class (default: the instance's; a fleet passes its slowest node's).

        Returns
        -------
        numpy.ndarray
            p99 TTFT, shaped like ``rtt_ms[population, site]``. [ms]
        """
        commodity = np.asarray(commodity, dtype=np.int64)
        population, workload = self.commodity_population[commodity], self.commodity_class[commodity]
        if isinstance(site, np.ndarray) and site.shape == population.shape and population.ndim == 1:
            # element-wise pairs from a mapped table: a block of rows at a time, its pages let go afterwards
            rtt = take_pairs(self.rtt_ms, population, site)
        else:
            rtt = self.rtt_ms[population, site]
        laddered = profiles is None and self.varies_by_pair
        profiles = self.profiles if profiles is None else profiles
        round_trips = np.array([p.round_trips for p in profiles])[workload]
        fixed = np.array([p.fixed_ttft_ms for p in profiles])[workload]
        extra = self.retrieval_extra_ms[workload, site]
        if rtt.ndim > np.ndim(workload):  # one commodity (or an array of them) against every site in ``site``
            round_trips, fixed = np.expand_dims(round_trips, -1), np.expand_dims(fixed, -1)
        if laddered:  # each pair's own rung (at its site's KV tier)
            klass = np.broadcast_to(np.expand_dims(workload, -1) if rtt.ndim > np.ndim(workload) else workload, np.shape(rtt))
            where = np.broadcast_to(np.arange(self.rtt_ms.shape[1])[site], np.shape(rtt))
            option = self._option_of(klass, where, rtt, np.broadcast_to(extra, np.shape(rtt)))
            fixed = np.array([p.fixed_ttft_ms for p in self.options])[option]
        return np.asarray(round_trips * rtt + fixed + extra)

    @property
    def commodity_peak_demand_tok_s(self) -> FloatArray:
        """Largest slice demand of every commodity (the daily mean for time-shiftable classes). [tokens/s]"""
        return np.asarray(self.commodity_slice_demand_tok_s.max(axis=1))

    @property
    def unreachable(self) -> NDArray[np.bool_]:
        """Commodities with no allowed site."""
        return np.asarray(~self.allowed.any_by_row())


def flatten_rungs(rungs: list[list[ClassProfile]]) -> tuple[list[ClassProfile], IntArray, IntArray]:
    """Every (class, rung) profile in one list, the index of each class's first, and the class of each."""
    sizes = np.array([len(r) for r in rungs], dtype=np.int64)
    offset = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return [p for r in rungs for p in r], offset, np.repeat(np.arange(len(rungs), dtype=np.int64), sizes)


def flatten_sets(sets: list[list[list[ClassProfile]]]) -> tuple[list[ClassProfile], IntArray, IntArray]:
    """:func:`flatten_rungs` of several sets in one list: the profiles, ``(G, k)`` each set's class's first, each's class."""
    flat: list[ClassProfile] = []
    offsets, classes = [], []
    for rungs in sets:
        profiles, offset, klass = flatten_rungs(rungs)
        offsets.append(offset + len(flat))
        classes.append(klass)
        flat += profiles
    return flat, np.array(offsets, dtype=np.int64).reshape(len(sets), -1), np.concatenate(classes).astype(np.int64)


def rung_index(rungs: list[list[ClassProfile]], workload: IntArray, rtt_ms: FloatArray, extra_ms: FloatArray) -> IntArray:
    """The loosest rung of its class whose p99 TTFT fits the objective, element-wise (the tightest where none does).

    Parameters
    ----------
    rungs : list of list of ClassProfile
        Per class, its rungs loosest first (empty: every pair rung 0).
    workload : numpy.ndarray of int
        Class of each element.
    rtt_ms, extra_ms : numpy.ndarray
        Round trip and remote-retrieval round trip of each element (same shape). [ms]

    Returns
    -------
    numpy.ndarray of int
        Rung of each element, in the shape of ``rtt_ms``.
    """
    workload = np.broadcast_to(workload, np.shape(rtt_ms))
    out = np.zeros(np.shape(rtt_ms), dtype=np.int64)
    for k, ladder in enumerate(rungs):
        mask = workload == k
        if len(ladder) < 2 or not mask.any():
            continue
        network = ladder[0].round_trips * np.asarray(rtt_ms)[mask] + np.asarray(extra_ms)[mask]
        choice = np.full(network.shape, len(ladder) - 1, dtype=np.int64)
        for r in range(len(ladder) - 1, -1, -1):  # the loosest that fits is set last
            choice = np.where(network + ladder[r].fixed_ttft_ms <= ladder[r].ttft_objective_ms, r, choice)
        out[mask] = choice
    return out
