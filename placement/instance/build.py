"""A scenario turned into model arrays: demand per slice, latency, TTFT, residency, costs.

``catalog + cities + scenario -> latency model (built once, kept on the Instance) -> TTFT budget -> economics -> PlacementInput``.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InputError, Problem
from placement._types import FloatArray, IntArray
from placement.economics import footprint
from placement.economics.cost import HOURS_PER_YEAR, NodeCost, load_energy_usd_per_h, node_cost_usd_per_h
from placement.instance.cross_metro import CrossMetro, EnergyPrices, build_cross_metro, with_cross_metro
from placement.instance.pair_mask import PairMask
from placement.network.latency import LatencyModel
from placement.network.load import HUBS_CSV, LINKS_CSV, default_network, load_network
from placement.network.measurements import calibrate, load_measurements
from placement.network.paths import Endpoints, Quantile, RoundTripQuantiles, round_trips
from placement.optimize.problem import PlacementInput, ResourceCap
from placement.profiles.build import ClassProfile, catalog_node_capex_usd, cross_metro_profiles, node_kw
from placement.profiles.tiers import ProfileSets, profile_sets
from placement.profiles.ttft_budget import ttft_p99_ms
from placement.progress import Progress, quiet
from placement.rules.faults import FaultDomains, fault_domains
from placement.rules.residency import (
    FREE,
    CommoditySplit,
    Regime,
    regime_mask,
    residency_mask,
    scenario_regimes,
    split_commodities,
)
from placement.rules.resources import GRID_MIX_CSV, CapSpec, SiteWater, cap_specs, site_water, water_charge_usd_per_mwh
from placement.scenario.classes import WorkloadClass
from placement.scenario.load import LoadedScenario, Resolve
from placement.scenario.sections import (
    DemandSection,
    EconomicsSection,
    FaultToleranceSection,
    LatencySection,
    ResidencySection,
    ServingSection,
    SitesOpenSection,
    SitesSection,
    TimeSection,
)
from placement.world.bundled import bundled_path
from placement.world.catalog import load_catalog
from placement.world.cities import load_cities
from placement.world.demand import Populations, aggregate, demand_tok_s
from placement.world.regions import region_values
from placement.world.timeslices import (
    HOURS,
    block_demand,
    block_mean,
    hourly_multipliers,
    load_area_profiles,
    load_profile,
    site_offsets_h,
    utc_offset_hours,
)


@dataclass(frozen=True, kw_only=True)
class Instance:
    """A scenario turned into arrays, before solving.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario.
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
    """

    loaded: LoadedScenario
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
        rtt = self.rtt_ms[self.commodity_population[commodity], site]
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
        return self.loaded.scenario.classes

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


def build_latency_model(
    spec: LatencySection, resolve: Resolve, *, sites: pd.DataFrame | None = None, source: str = "scenario"
) -> LatencyModel:
    """The scenario's latency model, built once: its network, parameters and shortest paths.

    Parameters
    ----------
    spec : LatencySection
        The scenario's ``latency`` section.
    resolve : callable
        Turns a path written in the scenario into a file (relative to the scenario's folder).
    sites : pandas.DataFrame, optional
        The catalog, so that ``latency.measurements`` may name sites by id.
    source : str, optional
        The scenario file, for error messages.

    Returns
    -------
    LatencyModel
        The great-circle model, or the graph over the scenario's ``latency.hubs``/``links``
        (the bundled files where the scenario names none) with the calibrated parameters, the
        users' last mile (the per-country priors, or the scenario's ``access_ms``) and the
        corrections of the planner's ``latency.measurements`` (with their before/after report).

    Raises
    ------
    InputError
        Every problem in the hubs, links and measurement files.
    """
    if spec.model == "great_circle":
        if spec.measurements is not None:
            rule = "corrects the graph model; the great_circle model has no paths to correct"
            raise InputError([Problem(source, "latency.measurements", "", rule, "set latency.model: graph, or remove it")])
        return LatencyModel.from_great_circle(spec.params())
    if spec.hubs is None and spec.links is None:
        network = default_network()
    else:
        network = load_network(resolve(spec.hubs) if spec.hubs else HUBS_CSV, resolve(spec.links) if spec.links else LINKS_CSV)
    trips = round_trips(network, last_mile_override_ms=spec.access_ms)
    if spec.measurements is None:
        return LatencyModel.from_graph(trips)
    report = calibrate(load_measurements(resolve(spec.measurements), sites=sites), trips)
    return LatencyModel.from_graph(replace(trips, corrections=report.corrections), calibration=report)


def endpoints(frame: pd.DataFrame) -> Endpoints:
    """Points of a city or site table (``lat``, ``lon``, ``country_code``; a site's ``network``: transit or backbone)."""
    on_transit = frame["network"].eq("transit").to_numpy(bool) if "network" in frame.columns else False
    return Endpoints.of(
        frame["lat"].to_numpy(float), frame["lon"].to_numpy(float), frame["country_code"].to_numpy(str), on_transit
    )


def worst_member_rtt_ms(cities: pd.DataFrame, sites: pd.DataFrame, latency: LatencyModel) -> RoundTripQuantiles:
    """Round trips to each site from the farthest member city of each population (conservative).

    Each member city is a user point of its own country (``access`` path, see
    :mod:`placement.network.paths`); a population takes, per site and per quantile, its worst member's.

    Parameters
    ----------
    cities : pandas.DataFrame
        Member cities (``lat``, ``lon``, ``country_code``, ``population_index``).
    sites : pandas.DataFrame
        Sites (``lat``, ``lon``, ``country_code``).
    latency : LatencyModel
        The scenario's latency model.

    Returns
    -------
    RoundTripQuantiles
        ``(n, m)`` worst member p50 and p90 round trips of each population to each site, users'
        last mile included. [ms]
    """
    cities = cities.sort_values("population_index", kind="stable")
    labels = cities["population_index"].to_numpy()
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    m = len(sites)
    dtype = np.float32 if len(starts) * m > FLOAT32_RTT_FROM else np.float64
    p50, p90 = np.empty((len(starts), m), dtype=dtype), np.empty((len(starts), m), dtype=dtype)
    site_points = endpoints(sites)

    def fill(span: tuple[int, int]) -> None:  # populations first..last-1, whole
        first, last = span
        rows = slice(int(starts[first]), int(starts[last]) if last < len(starts) else len(cities))
        rtt = latency.population_site_rtt(endpoints(cities.iloc[rows]), site_points)
        local = starts[first:last] - starts[first]
        one_each = len(local) == len(rtt.p50_ms)  # every population one city (full resolution): nothing to reduce
        p50[first:last] = _stored(rtt.p50_ms if one_each else np.maximum.reduceat(rtt.p50_ms, local, axis=0), dtype)
        p90[first:last] = _stored(rtt.p90_ms if one_each else np.maximum.reduceat(rtt.p90_ms, local, axis=0), dtype)

    spans = _chunks(starts, RTT_CHUNK_CITIES)
    latency.population_site_rtt(endpoints(cities.iloc[:1]), site_points)  # the shared tables, built once
    # numpy lets go of the GIL in its array loops: two threads share the cores; each writes rows of its own
    with ThreadPoolExecutor(max_workers=min(RTT_THREADS, len(spans))) as pool:
        list(pool.map(fill, spans))
    return RoundTripQuantiles(p50, p90)


RTT_CHUNK_CITIES = 1024
"""Member cities whose round trips to every site are computed at a time: each of the latency model's temporaries is
then ``1024 x sites`` figures (16 MB on 2,000 sites) rather than every city's (0.5 GB)."""

RTT_THREADS = 2
"""Chunks computed at once (the machines this runs on have two cores; the results do not depend on it)."""

FLOAT32_RTT_FROM = 16_000_000
"""Populations x sites above which round trips are kept in float32 (each table 64 MB rather than 128 at that size),
rounded up so that no pair looks nearer than it is: 34,000 cities on 2,000 sites hold 0.27 GB a table, not 0.54."""


def _chunks(starts: IntArray, size: int) -> list[tuple[int, int]]:
    """``(first, last)`` ranges of groups (each beginning at ``starts``) holding about ``size`` rows at a time."""
    out, first = [], 0
    while first < len(starts):
        end = np.searchsorted(starts, starts[first] + size, side="left")
        last = max(int(end), first + 1)
        out.append((first, last))
        first = last
    return out


def _stored(values: FloatArray, dtype: type) -> NDArray[np.floating]:
    """Round trips in the table's type: float32 rounded up (never below the float64 figure), or as they are."""
    if dtype is np.float64:
        return values
    down = values.astype(np.float32)
    np.nextafter(down, np.float32(np.inf), out=down, where=down < values)
    return down


MAPPED_RTT_FROM = FLOAT32_RTT_FROM
"""Populations x sites above which the round-trip tables, once the model is built, are kept in a temporary file and
mapped back (0.27 GB each at 2,000 sites and 34,000 populations)."""


def mapped_from_disk(table: FloatArray) -> FloatArray:
    """A large table moved to an unnamed temporary file and mapped back read-only (a small one as it is).

    The solve never reads the round trips (its pairs carry their own); the plan's tables read them afterwards, a
    page at a time. Mapped from a file, the pages are the system's to drop and read again, not the process's
    to hold through the solve: on ``world_2k`` that is 0.54 GB less at the solve's peak. The file has no name
    and goes when the table does. (Where the temporary folder is a RAM disk, ``TMPDIR`` can point elsewhere.)

    Parameters
    ----------
    table : numpy.ndarray
        The table, contiguous.

    Returns
    -------
    numpy.ndarray
        The same figures: a read-only :class:`numpy.memmap` above :data:`MAPPED_RTT_FROM` cells, else ``table``.
    """
    if table.size <= MAPPED_RTT_FROM or isinstance(table, np.memmap):
        return table
    with tempfile.TemporaryFile(prefix="placement-rtt-") as handle:
        np.ascontiguousarray(table).tofile(handle)
        handle.flush()
        mapped = np.memmap(handle, dtype=table.dtype, mode="r", shape=table.shape)  # the map keeps the file open
    return mapped


def retrieval_extra_ms(
    classes: list[WorkloadClass], sites: pd.DataFrame, latency: LatencyModel, *, source: str, quantile: Quantile = Quantile.P50
) -> FloatArray:
    """Round trip from each site to each class's remote retrieval store (0 where it is local). [ms]

    Parameters
    ----------
    classes : list of WorkloadClass
        The workload classes (``retrieval_store_site``).
    sites : pandas.DataFrame
        The sites.
    latency : LatencyModel
        The scenario's latency model (data center to data center over the public internet).
    source : str
        The scenario file, for error messages.
    quantile : Quantile, optional
        Which round trip the budget uses (``latency.quantile``).

    Returns
    -------
    numpy.ndarray
        ``(k, m)`` extra retrieval time per class and site. [ms]

    Raises
    ------
    InputError
        If a class names a retrieval store that is not a site of the catalog.
    """
    extra = np.zeros((len(classes), len(sites)))
    ids = sites["id"].tolist()
    problems = []
    for k, workload in enumerate(classes):
        store = workload.retrieval_store_site
        if store is None:
            continue
        if store not in ids:
            problems.append(
                Problem(source, f"classes[{k}].retrieval_store_site", "", f"unknown site {store!r}", "use a catalog id")
            )
            continue
        j = ids.index(store)
        trips = latency.site_site_rtt(endpoints(sites), endpoints(sites.iloc[j : j + 1]))
        extra[k] = (trips.p90_ms if quantile is Quantile.P90 else trips.p50_ms)[:, 0]
        extra[k, j] = 0.0
    if problems:
        raise InputError(problems)
    return extra


def load_sites(spec: SitesSection, resolve: Resolve, *, source: str) -> pd.DataFrame:
    """The site catalog with the scenario's what-ifs applied (exclusions, power price, MW).

    Parameters
    ----------
    spec : SitesSection
        The scenario's ``sites`` section.
    resolve : callable
        Turns a path written in the scenario into a file (relative to the scenario's folder).
    source : str
        The scenario file, for error messages.

    Returns
    -------
    pandas.DataFrame
        The adjusted catalog.

    Raises
    ------
    InputError
        If ``sites.exclude`` names a site the catalog does not have, or leaves no site.
    """
    sites = load_catalog(resolve(spec.catalog))
    unknown = sorted(set(spec.exclude) - set(sites["id"]))
    problems = [Problem(source, "sites.exclude", "", f"unknown site id {site!r}", "use ids from the catalog") for site in unknown]
    sites = sites[~sites["id"].isin(spec.exclude)].reset_index(drop=True)
    if sites.empty:
        problems.append(Problem(source, "sites.exclude", "", "every site is excluded", "keep at least one"))
    if problems:
        raise InputError(problems)
    multiplier = sites["continent"].map(spec.power_price_multiplier).fillna(1.0)
    by_country = sites["country_code"].map(spec.power_price_multiplier)
    multiplier = by_country.fillna(multiplier)
    return sites.assign(
        power_price_usd_per_mwh=sites["power_price_usd_per_mwh"] * multiplier,
        mw_available=sites["mw_available"] * spec.mw_multiplier,
    )


def load_populations(spec: DemandSection, resolve: Resolve, *, source: str) -> Populations:
    """Cities, their daily mean demand and their aggregation, as the scenario says.

    Parameters
    ----------
    spec : DemandSection
        The scenario's ``demand`` section.
    resolve : callable
        Turns a path written in the scenario into a file (relative to the scenario's folder).
    source : str
        The scenario file, for error messages.

    Returns
    -------
    Populations
        Demand points with member cities; ``demand_tok_s`` is the daily mean.

    Raises
    ------
    InputError
        If the cities file is unreadable, or the scenario's filters leave no city.
    """
    cities = demand_cities(spec, resolve, source=source)
    country = cities["country_code"].to_numpy(str)
    demand = (
        demand_tok_s(
            cities["population"].to_numpy(float),
            adoption=region_values(country, spec.adoption_by_region, spec.adoption),
            tokens_per_user_per_day=spec.tokens_per_user_per_day,
            peak_factor=1.0,
        )
        * spec.growth
        * region_values(country, spec.growth_by_region, 1.0)
    )
    return aggregate(cities, demand, spec.clusters)


def demand_cities(spec: DemandSection, resolve: Resolve, *, source: str) -> pd.DataFrame:
    """The cities the scenario's demand filters keep (``demand.countries``, ``demand.min_population``).

    Parameters
    ----------
    spec : DemandSection
        The scenario's ``demand`` section.
    resolve : callable
        Turns a path written in the scenario into a file (relative to the scenario's folder).
    source : str
        The scenario file, for error messages.

    Returns
    -------
    pandas.DataFrame
        The kept cities (as :func:`placement.world.cities.load_cities`); never empty.

    Raises
    ------
    InputError
        If the cities file is unreadable, or the filters keep no city (naming the filter and its value).
    """
    path = resolve(spec.cities)
    cities = load_cities(path, min_population=spec.min_population, countries=spec.countries)
    if cities.empty:
        raise InputError([_empty_demand_problem(spec, path, source)])
    return cities


def _empty_demand_problem(spec: DemandSection, path: Path, source: str) -> Problem:
    """Which filter of ``demand`` left no city, with its value and what the file ``path`` holds instead."""
    every = load_cities(path)
    if every.empty:
        return Problem(source, "demand.cities", "", f"{path} holds no city", "point it at a GeoNames cities file")
    if spec.countries:
        wanted = [c.upper() for c in spec.countries]
        inside = every[every["country_code"].isin(wanted)]
        if inside.empty:
            common = ", ".join(str(c) for c in every["country_code"].value_counts().index[:5])
            return Problem(
                source,
                "demand.countries",
                "",
                f"no city of {path.name} is in {spec.countries} (ISO alpha-2 codes)",
                f"use codes the cities file has (e.g. {common}), or null for all",
            )
        every = inside
    largest = int(every["population"].max())
    where = f" in {spec.countries}" if spec.countries else ""
    return Problem(
        source,
        "demand.min_population",
        "",
        f"no city{where} has at least {spec.min_population:,} people (the largest has {largest:,})",
        f"lower demand.min_population to {largest:,} or less",
    )


def slice_demand(
    spec: TimeSection, populations: Populations, resolve: Resolve, *, peak_factor: float
) -> tuple[FloatArray, FloatArray]:
    """Demand of each population in each time slice.

    Parameters
    ----------
    spec : TimeSection
        The scenario's ``time`` section.
    populations : Populations
        Populations with daily mean demand.
    resolve : callable
        Turns a path written in the scenario into a file (relative to the scenario's folder).
    peak_factor : float
        Peak-hour demand over the daily mean (``demand.peak_factor``): the demand of the single peak slice.

    Returns
    -------
    tuple of numpy.ndarray
        ``(n, T)`` demand per slice [tokens/s] and ``(T,)`` hours per slice.
    """
    mean = populations.table["demand_tok_s"].to_numpy(float)
    if spec.slices == 1 and spec.profile is None:
        return (mean * peak_factor)[:, None], np.array([float(HOURS)])
    assert spec.profile is not None
    profile = load_profile(resolve(spec.profile))
    cities = populations.cities
    offsets = np.array([utc_offset_hours(tz) for tz in cities["timezone"].tolist()])
    city_hourly = hourly_multipliers(offsets, profile) * cities["demand_tok_s"].to_numpy(float)[:, None]
    hourly = np.zeros((len(mean), HOURS))
    np.add.at(hourly, cities["population_index"].to_numpy(), city_hourly)
    return block_demand(hourly, spec.slices)


def _pair_energy_usd_per_h(
    sites: pd.DataFrame,
    commodity_slice_demand: FloatArray,
    slice_hours: FloatArray,
    pair_commodity: IntArray,
    pair_site: IntArray,
    pair_class: IntArray,
    profiles: list[ClassProfile],
    *,
    kw: float,
    price_multiplier: FloatArray,
    idle_power_share: float,
    peak_factor: float,
    charge_usd_per_mwh: FloatArray | None = None,
    per_mwh: FloatArray | None = None,
) -> FloatArray:
    """Load-dependent energy cost of each pair at a share of 1, averaged over the day, any carbon charge in. [USD/h]

    ``per_mwh``: ``(m, T)`` another figure per MWh drawn (PUE included) in place of the price, e.g. tCO2e per MWh:
    the result is then that figure per hour.
    """
    dynamic_share = 1.0 - idle_power_share
    if dynamic_share <= 0:
        return np.zeros(len(pair_site))
    goodput = np.array([p.goodput_tok_s_per_node for p in profiles])
    mw_per_tok_s = dynamic_share * kw / 1000.0 / goodput[pair_class]
    demand = energy_demand_tok_s(commodity_slice_demand, slice_hours, peak_factor)
    weights = slice_hours / slice_hours.sum()
    price = site_energy_price(sites, price_multiplier, charge_usd_per_mwh) if per_mwh is None else per_mwh
    return load_energy_usd_per_h(demand, weights, pair_commodity, pair_site, mw_per_tok_s, price)


def energy_demand_tok_s(slice_demand_tok_s: FloatArray, slice_hours: FloatArray, peak_factor: float) -> FloatArray:
    """The demand energy follows in each slice: the slices', or with a single peak slice the daily mean. [tokens/s]"""
    return slice_demand_tok_s / peak_factor if len(slice_hours) == 1 else slice_demand_tok_s


def site_energy_price(
    sites: pd.DataFrame, price_multiplier: FloatArray, charge_usd_per_mwh: FloatArray | None = None
) -> FloatArray:
    """``(m, T)`` power price of each site in each slice, PUE included, with any carbon charge. [USD/MWh]

    ``charge_usd_per_mwh``: ``(m, T)`` the carbon and water prices on a MWh drawn from the grid (the carbon price
    times the grid's intensity, :func:`carbon_charge_usd_per_mwh`, and the water price times the water a MWh drawn
    consumes, :func:`placement.rules.resources.water_charge_usd_per_mwh`; None: neither price).
    """
    pue = sites["pue"].to_numpy(float)
    price = sites["power_price_usd_per_mwh"].to_numpy(float) * pue
    energy = price[:, None] * price_multiplier
    return np.asarray(energy if charge_usd_per_mwh is None else energy + pue[:, None] * charge_usd_per_mwh)


def carbon_charge_usd_per_mwh(intensity_g_per_kwh: FloatArray, carbon_usd_per_t: float) -> FloatArray | None:
    """``(m, T)`` what a carbon price adds to a MWh drawn from the grid (None without a price). [USD/MWh]

    g/kWh is kg/MWh: the charge is ``intensity / 1000 * price``. Raises ValueError where an intensity is unknown.
    """
    if carbon_usd_per_t <= 0:
        return None
    if np.isnan(intensity_g_per_kwh).any():
        raise ValueError("carbon price: some site has no carbon_intensity_g_per_kwh")
    return np.asarray(intensity_g_per_kwh / 1000.0 * carbon_usd_per_t)


def _carbon_charge(loaded: LoadedScenario, sites: pd.DataFrame, intensity: FloatArray) -> FloatArray | None:
    """:func:`carbon_charge_usd_per_mwh` at ``objective.carbon_usd_per_t``; an input error names sites without a figure."""
    objective = loaded.scenario.objective
    price = objective.carbon_usd_per_t
    if (price > 0 or objective.carbon_cap_t_per_year is not None) and np.isnan(intensity).any():
        missing = sites["id"].astype(str).to_numpy()[np.isnan(intensity).any(axis=1)].tolist()
        raise InputError([
            Problem(
                str(loaded.scenario.sites.catalog), f"site '{site}'", "carbon_intensity_g_per_kwh",
                "a carbon price or cap (objective.carbon_usd_per_t, objective.carbon_cap_t_per_year) needs every "
                "site's grid intensity, and this site has none",
                "give it a carbon_intensity_g_per_kwh (gCO2e/kWh) in the catalog, or drop the carbon price and cap",
            )
            for site in missing
        ])  # fmt: skip
    return carbon_charge_usd_per_mwh(intensity, price)


def _water_charge(loaded: LoadedScenario, sites: pd.DataFrame, water: SiteWater, n_slices: int) -> FloatArray | None:
    """:func:`placement.rules.resources.water_charge_usd_per_mwh` at ``objective.water_usd_per_m3``.

    An input error names the sites without a water figure.
    """
    price = loaded.scenario.objective.water_usd_per_m3
    unknown = np.isnan(water.total_m3_per_mwh)
    if price > 0 and unknown.any():
        raise InputError([
            Problem(
                str(loaded.scenario.sites.catalog), f"site '{site}'", "climate",
                "a water price (objective.water_usd_per_m3) needs every site's water per MWh, and this site has none",
                "give it a climate (cool, temperate, hot-humid, hot-dry) or its own wue_l_per_kwh, and a country_code the "
                "grid mix table knows, or drop the water price",
            )
            for site in sites["id"].astype(str).to_numpy()[unknown].tolist()
        ])  # fmt: skip
    return water_charge_usd_per_mwh(water, price, n_slices)


def _charges(*charges: FloatArray | None) -> FloatArray | None:
    """The sum of the charges per MWh given (None: none)."""
    given = [c for c in charges if c is not None]
    return None if not given else np.asarray(sum(given[1:], given[0]))


def _carbon_profiles(spec: TimeSection, sites: pd.DataFrame, resolve: Resolve) -> dict[str, FloatArray] | None:
    """``time.carbon_intensity_profile`` read and checked against the sites' ids and countries (None without one)."""
    if spec.carbon_intensity_profile is None:
        return None
    areas = set(sites["id"].astype(str)) | (set(sites["country_code"].astype(str)) if "country_code" in sites else set())
    return load_area_profiles(resolve(spec.carbon_intensity_profile), "gco2e_per_kwh", areas)


def site_carbon_intensity(sites: pd.DataFrame, n_slices: int, profiles: Mapping[str, FloatArray] | None = None) -> FloatArray:
    """``(m, T)`` carbon intensity at each site in each slice: the catalog's yearly mean, shaped by the hour. [g/kWh]

    The shape (:func:`placement.economics.footprint.intensity_shape`) follows the solar output at the site's solar hour and the
    country's shares of solar and fossil generation (``data/energy/grid_mix_by_country.csv``); a country the table
    lacks, and a single (peak) slice, stay flat. NaN where the catalog has no ``carbon_intensity_g_per_kwh``.
    ``profiles`` (``time.carbon_intensity_profile``: area -> 24 figures by local hour, the area a site id or a country
    code) replace both for the sites they name (a site's own before its country's); one slice takes their daily mean.
    """
    annual = (
        sites["carbon_intensity_g_per_kwh"].to_numpy(float)
        if "carbon_intensity_g_per_kwh" in sites.columns
        else np.full(len(sites), np.nan)
    )
    if n_slices == 1 or "country_code" not in sites.columns:
        intensity = np.repeat(annual[:, None], n_slices, axis=1)
    else:
        mix = pd.read_csv(bundled_path(*GRID_MIX_CSV), keep_default_na=False, na_values=[""]).set_index("country_code")
        country = sites["country_code"].astype(str)
        solar = country.map(mix["solar_share"]).to_numpy(float)
        fossil = country.map(mix["fossil_share"]).to_numpy(float)
        sun = hourly_multipliers(site_offsets_h(sites["lon"].to_numpy(float)), footprint.solar_by_local_hour())
        intensity = annual[:, None] * block_mean(footprint.intensity_shape(solar, fossil, sun), n_slices)
    if profiles:
        offsets = site_offsets_h(sites["lon"].to_numpy(float))
        countries = sites["country_code"].astype(str).tolist() if "country_code" in sites.columns else [""] * len(sites)
        for j, (site, country_code) in enumerate(zip(sites["id"].astype(str).tolist(), countries, strict=True)):
            own = profiles.get(site, profiles.get(country_code))
            if own is not None:
                hourly = hourly_multipliers(offsets[j : j + 1], own)  # (1, 24) by UTC hour
                intensity[j] = block_mean(hourly, n_slices)[0] if n_slices > 1 else hourly.mean()
    return np.asarray(intensity)


def site_price_multiplier(spec: TimeSection, sites: pd.DataFrame, n_slices: int, resolve: Resolve) -> FloatArray:
    """``(m, T)`` power price multiplier of each site in each slice (1 without ``time.power_price_profile``).

    Parameters
    ----------
    spec : TimeSection
        The scenario's ``time`` section.
    sites : pandas.DataFrame
        The sites (``lon`` sets their local hour).
    n_slices : int
        Time slices.
    resolve : callable
        Turns a path written in the scenario into a file (relative to the scenario's folder).

    Returns
    -------
    numpy.ndarray
        ``(m, T)`` multipliers.
    """
    path = spec.power_price_profile
    if path is None:
        return np.ones((len(sites), n_slices))
    profile = load_profile(resolve(path))
    hourly = hourly_multipliers(site_offsets_h(sites["lon"].to_numpy(float)), profile)
    return block_mean(hourly, n_slices)


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


def commodity_options(
    sets: ProfileSets,
    rtt_ms: FloatArray,
    retrieval_extra: FloatArray,
    commodity_class: IntArray,
    commodity_population: IntArray,
) -> NDArray[np.int16]:
    """``(c, m)`` option (:func:`flatten_sets`) of every commodity at every site: its site's set, the loosest rung that fits.

    One class and one set at a time, by population.
    """
    _, offset, _ = flatten_sets(sets.sets)
    m = rtt_ms.shape[1]
    group = np.zeros(m, dtype=np.int64) if sets.site_set is None else sets.site_set
    out = np.zeros((len(commodity_class), m), dtype=np.int16)
    for g, rungs in enumerate(sets.sets):
        where = np.flatnonzero(group == g)
        rtt = rtt_ms[:, where]
        for k in range(len(rungs)):
            of_class = np.flatnonzero(commodity_class == k)
            klass = np.full(rtt.shape, k, dtype=np.int64)
            by_population = offset[g, k] + rung_index(
                rungs, klass, rtt, np.broadcast_to(retrieval_extra[k][None, where], rtt.shape)
            )
            out[np.ix_(of_class, where)] = by_population[commodity_population[of_class]]
    return out


def merge_commodities(
    allowed: PairMask,
    commodity_class: IntArray,
    commodity_slices: FloatArray,
    codes: NDArray[np.int16] | None = None,
) -> tuple[IntArray, IntArray]:
    """Group interchangeable commodities: same class, same allowed sites, same demand shape.

    Parameters
    ----------
    allowed : PairMask
        ``(c, m)`` allowed pairs.
    commodity_class : numpy.ndarray of int
        ``(c,)`` class of each commodity.
    commodity_slices : numpy.ndarray
        ``(c, T)`` demand per slice.
    codes : numpy.ndarray of int, optional
        ``(c, m)`` option of each pair (a rung of ``serving.node_ttft_ladder``, a site's KV tier): merged commodities
        run the same option at every allowed site.

    Returns
    -------
    tuple of numpy.ndarray
        ``row_of_commodity`` (``(c,)``, -1 for commodities with no allowed site) and the first
        commodity of each row.
    """
    row_of_commodity = np.full(len(commodity_class), -1, dtype=np.int64)
    rows: dict[bytes, int] = {}
    firsts: list[int] = []
    peaks = np.maximum(commodity_slices.max(axis=1), 1e-300)
    shapes = np.round(commodity_slices / peaks[:, None], 6)
    for c in np.flatnonzero(allowed.any_by_row()).tolist():
        key = int(commodity_class[c]).to_bytes(4, "little") + allowed.bits[c].tobytes() + shapes[c].tobytes()
        if codes is not None:
            key += codes[c][allowed.row(c)].tobytes()
        row = rows.setdefault(key, len(rows))
        if row == len(firsts):
            firsts.append(c)
        row_of_commodity[c] = row
    return row_of_commodity, np.array(firsts, dtype=np.int64)


def commodities(n_populations: int, n_classes: int) -> tuple[IntArray, IntArray]:
    """Population and class index of every commodity (one per population and class, population-major).

    Parameters
    ----------
    n_populations, n_classes : int
        Numbers of populations and classes.

    Returns
    -------
    tuple of numpy.ndarray
        ``commodity_population`` and ``commodity_class``, each ``(n_populations * n_classes,)``.
    """
    population = np.repeat(np.arange(n_populations, dtype=np.int64), n_classes)
    workload = np.tile(np.arange(n_classes, dtype=np.int64), n_populations)
    return population, workload


def commodity_within_budget(
    rtt_ms: FloatArray,
    profiles: list[ClassProfile],
    retrieval_extra: FloatArray,
    commodity_class: IntArray,
    commodity_population: IntArray,
    *,
    fixed_ms: FloatArray | None = None,
) -> PairMask:
    """Whether each commodity meets its class's p99 TTFT objective at each site, as bits.

    One class at a time, so that no (commodities x sites) TTFT table is held, nor the answer as bytes.

    Parameters
    ----------
    rtt_ms : numpy.ndarray
        ``(n, m)`` population-site round trips. [ms]
    profiles : list of ClassProfile
        Node-side TTFT, round trips and objective of each class.
    retrieval_extra : numpy.ndarray
        ``(k, m)`` remote retrieval round trip per class and site. [ms]
    commodity_class, commodity_population : numpy.ndarray of int
        Class and population of each commodity (:func:`commodities`, then the residency regimes' split).
    fixed_ms : numpy.ndarray, optional
        ``(k, m)`` the fixed TTFT of each class at each site where it differs by site (sites of several KV tiers);
        default each profile's. [ms]

    Returns
    -------
    PairMask
        ``(c, m)``.
    """
    within = PairMask.empty(len(commodity_class), rtt_ms.shape[1])
    inside = np.empty(rtt_ms.shape, dtype=bool)  # by population, one class at a time
    for k, profile in enumerate(profiles):
        for start in range(0, len(rtt_ms), ROWS_CHUNK):  # the TTFT table a chunk of populations at a time
            rows = slice(start, start + ROWS_CHUNK)
            if fixed_ms is None:
                ttft = ttft_p99_ms(rtt_ms[rows], profile, retrieval_extra_ms=retrieval_extra[k][None, :])
            else:
                ttft = (
                    profile.round_trips * np.asarray(rtt_ms[rows], dtype=float)
                    + fixed_ms[k][None, :]
                    + retrieval_extra[k][None, :]
                )
            inside[rows] = ttft <= profile.ttft_objective_ms
        of_class = commodity_class == k
        within.bits[of_class] = PairMask.of(inside).bits[commodity_population[of_class]]
    return within


def commodity_demand(
    population_slices: FloatArray,
    population_mean: FloatArray,
    classes: list[WorkloadClass],
    commodity_population: IntArray,
    commodity_class: IntArray,
) -> tuple[FloatArray, FloatArray]:
    """Demand of every commodity per slice (flat for time-shiftable classes) and its daily mean.

    Parameters
    ----------
    population_slices : numpy.ndarray
        ``(n, T)`` demand of each population per slice. [tokens/s]
    population_mean : numpy.ndarray
        ``(n,)`` daily mean demand. [tokens/s]
    classes : list of WorkloadClass
        Classes (``share``, ``time_shiftable``).
    commodity_population, commodity_class : numpy.ndarray of int
        From :func:`commodities`.

    Returns
    -------
    tuple of numpy.ndarray
        ``(c, T)`` demand per slice and ``(c,)`` daily mean. [tokens/s]
    """
    shares = np.array([c.share for c in classes])[commodity_class]
    shiftable = np.array([c.time_shiftable for c in classes])[commodity_class]
    slices = population_slices[commodity_population] * shares[:, None]
    mean = population_mean[commodity_population] * shares
    slices[shiftable] = mean[shiftable, None]
    return slices, mean


def site_node_cost(
    economics: EconomicsSection,
    serving: ServingSection,
    sites: pd.DataFrame,
    *,
    kw: float,
    price_multiplier: FloatArray,
    charge_usd_per_mwh: FloatArray | None = None,
) -> NodeCost:
    """Hourly cost of one node at each site, by component (load-independent part).

    Parameters
    ----------
    economics : EconomicsSection
        The scenario's ``economics`` section.
    serving : ServingSection
        The scenario's ``serving`` section (the catalog's node capex, the idle power share).
    sites : pandas.DataFrame
        The sites.
    kw : float
        IT power of one node. [kW]
    price_multiplier : numpy.ndarray
        ``(m, T)`` power price multiplier per site and slice (:func:`site_price_multiplier`; averaged over the slices).
    charge_usd_per_mwh : numpy.ndarray, optional
        ``(m, T)`` carbon and water charges per MWh (:func:`site_energy_price`; averaged over the slices): in the idle
        power.

    Returns
    -------
    NodeCost
        Per-site node cost. [USD/h]
    """
    price = sites["power_price_usd_per_mwh"] * price_multiplier.mean(axis=1)
    if charge_usd_per_mwh is not None:
        price = price + charge_usd_per_mwh.mean(axis=1)
    return node_cost_usd_per_h(
        economics.params(catalog_node_capex_usd(serving)),
        node_kw=kw,
        pue=sites["pue"],
        price_usd_per_mwh=price,
        facility_capex_usd_per_mw=sites["capex_usd_per_mw"],
        idle_power_share=serving.idle_power_share,
    )


@dataclass(frozen=True)
class ModelRows:
    """Interchangeable commodities merged into the rows of the model.

    Parameters
    ----------
    row_of_commodity : numpy.ndarray of int
        ``(c,)`` row of each commodity (-1: no allowed site).
    modelled : numpy.ndarray of int
        A representative commodity of each row.
    slice_demand_tok_s : numpy.ndarray
        ``(r, T)`` demand of each row per slice. [tokens/s]
    mean_demand_tok_s : numpy.ndarray
        ``(r,)`` daily mean demand of each row. [tokens/s]
    pair_key : numpy.ndarray of int
        ``row x sites + site`` of every allowed (row, site), ascending.
    pair_rtt_ms : numpy.ndarray
        Demand-weighted round trip of each such pair's members (only allowed pairs: a dense ``(rows, sites)``
        table would hold 0.3 GB on 2,000 sites). [ms]
    n_sites : int
        Sites of the model.
    """

    row_of_commodity: IntArray
    modelled: IntArray
    slice_demand_tok_s: FloatArray
    mean_demand_tok_s: FloatArray
    pair_key: IntArray
    pair_rtt_ms: FloatArray
    n_sites: int

    def rtt_ms(self, row: IntArray, site: IntArray) -> FloatArray:
        """The demand-weighted round trip of allowed (row, site) pairs, element-wise. [ms]"""
        at = np.searchsorted(self.pair_key, np.asarray(row, dtype=np.int64) * self.n_sites + np.asarray(site, dtype=np.int64))
        return np.asarray(self.pair_rtt_ms[at])


def model_rows(
    allowed: PairMask,
    commodity_class: IntArray,
    commodity_population: IntArray,
    commodity_slices: FloatArray,
    commodity_mean: FloatArray,
    rtt_ms: FloatArray,
    codes: NDArray[np.int16] | None = None,
) -> ModelRows:
    """Merge interchangeable commodities (:func:`merge_commodities`) and sum their demand.

    Parameters
    ----------
    allowed : PairMask
        ``(c, m)`` allowed pairs.
    commodity_class, commodity_population : numpy.ndarray of int
        Class and population of each commodity.
    commodity_slices, commodity_mean : numpy.ndarray
        Demand per slice and daily mean of each commodity. [tokens/s]
    rtt_ms : numpy.ndarray
        ``(n, m)`` population-site round trips. [ms]
    codes : numpy.ndarray of int, optional
        ``(c, m)`` option of each pair (:func:`commodity_options`).

    Returns
    -------
    ModelRows
        The rows.
    """
    row_of_commodity, modelled = merge_commodities(allowed, commodity_class, commodity_slices, codes)
    n_rows = len(modelled)
    members = row_of_commodity >= 0
    rows = row_of_commodity[members]
    slices = np.zeros((n_rows, commodity_slices.shape[1]))
    np.add.at(slices, rows, commodity_slices[members])
    mean = np.bincount(rows, weights=commodity_mean[members], minlength=n_rows).astype(float)
    m = rtt_ms.shape[1]
    pair_row, pair_site = np.nonzero(allowed.rows(modelled))  # row-major: the keys ascend
    key = pair_row.astype(np.int64) * m + pair_site
    weighted = np.zeros(len(key))
    row_start = np.searchsorted(pair_row, np.arange(n_rows))  # each row's first pair
    row_count = np.bincount(pair_row, minlength=n_rows)
    member = np.flatnonzero(members)
    for start in range(0, len(member), ROWS_CHUNK):  # members in order, so the sums are the same as in one go
        chunk = member[start : start + ROWS_CHUNK]
        # a row's members share its allowed sites: each member's entries are its row's pairs, in their order
        row = row_of_commodity[chunk]
        count = row_count[row]
        at = np.arange(int(count.sum())) + np.repeat(row_start[row] - (np.cumsum(count) - count), count)
        rtt = np.asarray(rtt_ms[np.repeat(commodity_population[chunk], count), pair_site[at]], dtype=float)
        np.add.at(weighted, at, rtt * np.repeat(commodity_mean[chunk], count))
    return ModelRows(row_of_commodity, modelled, slices, mean, key, weighted / np.maximum(mean, 1e-12)[pair_row], m)


ROWS_CHUNK = 4096
"""Commodities whose round trips are summed into their rows at a time: at full resolution all of them at once
would gather a (commodities x sites) array (~240 MB on ~300 sites, twice over) just to add it up."""


@dataclass(frozen=True)
class ModelSections:
    """The scenario's sections the model arrays read, as :func:`build_instance` hands them out.

    Parameters
    ----------
    economics : EconomicsSection
        ``economics`` (the sites' default fixed cost).
    serving : ServingSection
        ``serving`` (the idle power share: the rest of a node's power follows its load).
    sites_open : SitesOpenSection
        ``sites_open`` (bounds on the number of open sites).
    fault_tolerance : FaultToleranceSection
        ``fault_tolerance`` (N+1).
    peak_factor : float
        ``demand.peak_factor``: with a single peak slice, energy follows the daily mean, not the peak.
    """

    economics: EconomicsSection
    serving: ServingSection
    sites_open: SitesOpenSection
    fault_tolerance: FaultToleranceSection
    peak_factor: float


def placement_input(
    sites: pd.DataFrame,
    rows: ModelRows,
    pair_allowed: NDArray[np.bool_],
    row_class: IntArray,
    slice_hours: FloatArray,
    profiles: list[ClassProfile],
    node_cost: NodeCost,
    kw: float,
    *,
    price_multiplier: FloatArray,
    sections: ModelSections,
    options: tuple[list[ClassProfile], NDArray[np.int16]] | None = None,
    charge_usd_per_mwh: FloatArray | None = None,
    caps: Sequence[CapSpec] = (),
) -> PlacementInput:
    """The model arrays: rows, allowed pairs, capacity and cost per site.

    Parameters
    ----------
    sites : pandas.DataFrame
        The sites.
    rows : ModelRows
        The merged commodities.
    pair_allowed : numpy.ndarray of bool
        ``(r, m)`` allowed pairs of each row.
    row_class : numpy.ndarray of int
        Class of each row.
    slice_hours : numpy.ndarray
        Hours per slice. [h]
    profiles : list of ClassProfile
        Per-node goodput of each class.
    node_cost : NodeCost
        Per-site node cost. [USD/h]
    kw : float
        IT power of one node. [kW]
    price_multiplier : numpy.ndarray
        ``(m, T)`` power price multiplier per site and slice (:func:`site_price_multiplier`).
    sections : ModelSections
        The scenario's sections the model reads.
    options : tuple, optional
        ``(profiles of every option, (r, m) option of each row's pairs)`` with ``serving.node_ttft_ladder`` or sites of
        several KV tiers: each pair then uses its own option's goodput.

    Returns
    -------
    PlacementInput
        Arrays for :mod:`placement.optimize`.
    """
    pair_row, pair_site = (a.astype(np.int64) for a in np.nonzero(pair_allowed))
    pair_class = row_class[pair_row]
    if options is not None:  # a pair's option: its class's rung there, at its site's tier
        profiles, row_codes = options
        pair_class = row_codes[pair_row, pair_site].astype(np.int64)
    nodes_per_tok_s = np.array([p.nodes_per_tok_s for p in profiles])
    pair_load = partial(
        _pair_energy_usd_per_h,
        sites,
        rows.slice_demand_tok_s,
        slice_hours,
        pair_row,
        pair_site,
        pair_class,
        profiles,
        kw=kw,
        price_multiplier=price_multiplier,
        idle_power_share=sections.serving.idle_power_share,
        peak_factor=sections.peak_factor,
    )
    energy = pair_load(charge_usd_per_mwh=charge_usd_per_mwh)
    node_mw = kw * sites["pue"].to_numpy(float) / 1000.0
    # per MWh drawn, PUE included: the pairs' load and the nodes' idle draw, hour-weighted; one coefficient array
    # per resource, shared by every cap on it (a per-site limit costs no more memory than its mask)
    coefficients: dict[int, tuple[FloatArray, FloatArray]] = {}
    for spec in caps:
        if id(spec.per_mwh) not in coefficients:
            idle_per_mwh = spec.per_mwh @ (slice_hours / slice_hours.sum())
            coefficients[id(spec.per_mwh)] = (
                node_mw * sections.serving.idle_power_share * idle_per_mwh,
                pair_load(per_mwh=sites["pue"].to_numpy(float)[:, None] * spec.per_mwh),
            )
    resource_caps = tuple(
        ResourceCap(
            name=spec.name, unit=spec.unit, site_fixed_per_h=np.zeros(len(sites)),
            site_node_per_h=coefficients[id(spec.per_mwh)][0], pair_per_h=coefficients[id(spec.per_mwh)][1],
            limit_per_h=spec.limit_per_year / HOURS_PER_YEAR, sites=spec.sites,
        )
        for spec in caps
    )  # fmt: skip
    return PlacementInput(
        slice_demand_tok_s=rows.slice_demand_tok_s,
        slice_hours=slice_hours,
        pair_commodity=pair_row,
        pair_site=pair_site,
        pair_nodes_per_tok_s=nodes_per_tok_s[pair_class],
        pair_rtt_ms=rows.rtt_ms(pair_row, pair_site),
        pair_cost_usd_per_h=energy,
        site_fixed_usd_per_h=sites["fixed_cost_usd_per_h"].fillna(sections.economics.site_fixed_cost_usd_per_h).to_numpy(float),
        site_node_usd_per_h=node_cost.total_usd_per_h,
        site_node_mw=node_mw,
        site_mw_available=sites["mw_available"].to_numpy(float),
        site_locked=sites["locked"].to_numpy(bool),
        min_sites_open=sections.sites_open.min,
        max_sites_open=sections.sites_open.max,
        fault_tolerant=sections.fault_tolerance.n_plus_one,
        daily_mean_tok_s=rows.mean_demand_tok_s,
        protect=pair_allowed.sum(axis=1) >= 2,  # N+1 needs a second site in reach
        caps=resource_caps,
    )


def with_cache_warmup(inputs: PlacementInput, node_usd_per_h: FloatArray, nodes: IntArray) -> PlacementInput:
    """The model arrays with ``nodes`` held at every open site: their cost in the site's fixed cost, their power off its MW.

    The miss work of a site peaks at a level of traffic and falls as its shared prefixes get hot
    (:func:`placement.serving.prefix_cache.miss_peak`), so charging the peak to every open site never under-counts
    its nodes, and makes each further site pay for its cold cache: the consolidation the cache rewards.
    """
    if not np.any(nodes > 0):
        return inputs
    fixed: dict[int, FloatArray] = {}  # the warm-up nodes draw their idle power wherever the site is open
    for cap in inputs.caps:
        fixed.setdefault(id(cap.site_fixed_per_h), cap.site_fixed_per_h + nodes * cap.site_node_per_h)
    return replace(
        inputs,
        site_fixed_usd_per_h=inputs.site_fixed_usd_per_h + nodes * node_usd_per_h,
        site_mw_available=np.maximum(inputs.site_mw_available - nodes * inputs.site_node_mw, 0.0),
        caps=tuple(replace(cap, site_fixed_per_h=fixed[id(cap.site_fixed_per_h)]) for cap in inputs.caps),
    )


def _failure_domains(domains: FaultDomains | None, sites: pd.DataFrame) -> tuple[tuple[str, ...], tuple[IntArray, ...]]:
    """The domains that fail more than one site (one site alone is already an N+1 loss): names and site indices."""
    if domains is None:
        return (), ()
    index = {str(site): j for j, site in enumerate(sites["id"])}
    kept = [(name, ids) for name, ids in zip(domains.names, domains.site_ids, strict=True) if len(ids) > 1]
    names = tuple(name for name, _ in kept)
    return names, tuple(np.asarray([index[i] for i in ids], dtype=np.int64) for _, ids in kept)


def commodity_permitted(
    population_country: NDArray[np.str_],
    site_country: NDArray[np.str_],
    residency: ResidencySection,
    split: CommoditySplit,
    regimes: list[Regime],
) -> PairMask:
    """``(c, m)`` commodity-site pairs residency permits (the whole-country rules and the regimes), as bits.

    A commodity's row depends only on its population's country and its regime: each distinct pair of them is
    worked out once (a few hundred rows, not a (commodities x sites) byte table of 200 MB at 2,000 sites).
    """
    country = np.asarray(population_country, dtype=str)[split.population]
    keys = pd.MultiIndex.from_arrays([country, split.regime])
    codes, distinct = pd.factorize(keys)
    distinct_country = np.asarray(distinct.get_level_values(0), dtype=str)
    permitted = residency_mask(distinct_country, site_country, residency)
    if regimes:
        one_each = np.arange(len(distinct), dtype=np.int64)
        own = CommoditySplit(
            one_each, np.zeros(len(distinct), dtype=np.int64), np.asarray(distinct.get_level_values(1), dtype=np.int64),
            np.ones(len(distinct)),
        )  # fmt: skip
        permitted &= regime_mask(distinct_country, site_country, own, regimes)
    return PairMask(PairMask.of(permitted).bits[codes], permitted.shape[1])


def _same_world(loaded: LoadedScenario, like: Instance | None) -> bool:
    """Whether ``like`` was built from the same sites, demand and latency sections (from the same file)."""
    if like is None or like.loaded.path != loaded.path:
        return False
    a, b = loaded.scenario, like.loaded.scenario
    return a.sites == b.sites and a.demand == b.demand and a.latency == b.latency


def build_instance(loaded: LoadedScenario, *, progress: Progress = quiet, like: Instance | None = None) -> Instance:
    """Turn a scenario into model arrays: the one place that hands the scenario's sections out.

    ``sites, populations -> demand per slice -> latency model -> round trips -> TTFT ->
    allowed pairs -> commodity demand -> node cost -> merged rows -> model arrays``.

    Parameters
    ----------
    loaded : LoadedScenario
        A validated scenario.
    progress : callable, optional
        Receives one line per step.
    like : Instance, optional
        An instance of the same scenario file with the same sites, demand and latency sections (the same world
        under another arrangement): its catalog, populations, latency model and round trips are reused.

    Returns
    -------
    Instance
        Arrays ready for :func:`placement.plan.solve.solve_instance`.
    """
    start = time.perf_counter()
    scenario, resolve, source = loaded.scenario, loaded.resolve, str(loaded.path)
    classes = scenario.classes
    if like is not None and _same_world(loaded, like):
        sites, populations, latency = like.sites, like.populations, like.latency
        quantiles = RoundTripQuantiles(like.rtt_p50_ms, like.rtt_p90_ms)
        progress(f"catalog, demand and round trips as before: {len(sites)} sites, {len(populations.table)} populations")
    else:
        sites = load_sites(scenario.sites, resolve, source=source)
        progress(f"catalog: {len(sites)} candidate sites")
        populations = load_populations(scenario.demand, resolve, source=source)
        progress(f"demand: {len(populations.cities)} cities in {len(populations.table)} populations")
        latency = build_latency_model(scenario.latency, resolve, sites=sites, source=source)
        quantiles = worst_member_rtt_ms(populations.cities, sites, latency)
    pop_slices, slice_hours = slice_demand(scenario.time, populations, resolve, peak_factor=scenario.demand.peak_factor)
    pop_mean = populations.table["demand_tok_s"].to_numpy(float)
    quantile = Quantile(scenario.latency.quantile)
    rtt = quantiles.p90_ms if quantile is Quantile.P90 else quantiles.p50_ms
    commodity_population, commodity_class = commodities(len(populations.table), len(classes))
    population_country = populations.table["country_code"].to_numpy(str)
    regimes = scenario_regimes(loaded)
    split = split_commodities(population_country, commodity_population, commodity_class, regimes)
    commodity_population, commodity_class = split.population, split.workload
    sets = profile_sets(classes, scenario.serving, sites, source=source)
    profiles = sets.profiles
    rungs = sets.sets[0] if scenario.serving.node_ttft_ladder else []
    retrieval_extra = retrieval_extra_ms(classes, sites, latency, source=source, quantile=quantile)
    # a pair is inside its objective if some rung fits (at its site's KV tier): the one with the least fixed TTFT
    reach = [min(r, key=lambda p: p.fixed_ttft_ms) for r in rungs] if rungs else profiles
    within_budget = commodity_within_budget(
        rtt, reach, retrieval_extra, commodity_class, commodity_population, fixed_ms=reach_fixed_ms(sets, len(sites))
    )
    permitted = commodity_permitted(population_country, sites["country_code"].to_numpy(str), scenario.residency, split, regimes)
    # as bits: the (commodities, sites) byte tables are 200 MB each at 2,000 sites
    allowed = within_budget.and_(permitted)
    allowed = allowed.and_columns(sites["mw_available"].to_numpy(float) > 0)
    commodity_slices, commodity_mean = commodity_demand(pop_slices, pop_mean, classes, commodity_population, commodity_class)
    commodity_slices, commodity_mean = commodity_slices * split.demand_factor[:, None], commodity_mean * split.demand_factor
    kw = node_kw(scenario.serving)
    price_multiplier = site_price_multiplier(scenario.time, sites, len(slice_hours), resolve)
    intensity = site_carbon_intensity(sites, len(slice_hours), _carbon_profiles(scenario.time, sites, resolve))
    water = site_water(sites, scenario.sites.cooling)
    carbon = _charges(_carbon_charge(loaded, sites, intensity), _water_charge(loaded, sites, water, len(slice_hours)))
    caps = cap_specs(scenario.objective, sites, intensity, water, source=str(loaded.path), catalog=str(scenario.sites.catalog))
    node_cost = site_node_cost(
        scenario.economics, scenario.serving, sites, kw=kw, price_multiplier=price_multiplier, charge_usd_per_mwh=carbon
    )
    node_cost = with_tier_cost(node_cost, sets.tier_usd_per_node_h(len(sites)))
    laddered = any(len(r) > 1 for group in sets.sets for r in group)
    varies = laddered or len(sets.sets) > 1
    codes = commodity_options(sets, rtt, retrieval_extra, commodity_class, commodity_population) if varies else None
    rows = model_rows(allowed, commodity_class, commodity_population, commodity_slices, commodity_mean, rtt, codes)
    options = None
    if codes is not None:
        options = (flatten_sets(sets.sets)[0], codes[rows.modelled])
    sections = ModelSections(
        scenario.economics, scenario.serving, scenario.sites_open, scenario.fault_tolerance, scenario.demand.peak_factor
    )
    inputs = placement_input(
        sites,
        rows,
        allowed.rows(rows.modelled),
        commodity_class[rows.modelled],
        slice_hours,
        profiles,
        node_cost,
        kw,
        price_multiplier=price_multiplier,
        sections=sections,
        options=options,
        charge_usd_per_mwh=carbon,
        caps=caps,
    )
    cross = None
    if scenario.serving.cross_metro_prefill is not None:
        cross = _cross_metro(
            loaded, inputs, rows, profiles, sites, latency, (commodity_class, commodity_population, rtt, permitted),
            retrieval_extra, node_cost, price_multiplier, kw, carbon,
        )  # fmt: skip
        inputs = with_cross_metro(inputs, cross, pair_rtt_ms=rows.rtt_ms(cross.pairs.row, cross.pairs.decode_site))
        progress(f"cross-metro prefill: {len(cross.pairs)} columns (decode here, prefill at a partner)")
    domains = fault_domains(scenario.fault_tolerance, sites, source=source)
    names, failure_domains = _failure_domains(domains, sites)
    warmup = sets.warmup_nodes(len(sites))
    inputs = with_cache_warmup(replace(inputs, failure_domains=failure_domains), node_cost.total_usd_per_h, warmup)
    progress(
        f"model: {len(commodity_population)} commodities in {len(rows.modelled)} rows x {len(slice_hours)} slices, "
        f"{len(inputs.pair_site)} feasible pairs of {allowed.size}"
    )
    kept = RoundTripQuantiles(mapped_from_disk(quantiles.p50_ms), mapped_from_disk(quantiles.p90_ms))
    return Instance(
        loaded=loaded,
        sites=sites,
        populations=populations,
        population_slice_demand_tok_s=pop_slices,
        slice_hours=slice_hours,
        rtt_ms=kept.p90_ms if quantile is Quantile.P90 else kept.p50_ms,
        rtt_p50_ms=kept.p50_ms,
        rtt_p90_ms=kept.p90_ms,
        commodity_population=commodity_population,
        commodity_class=commodity_class,
        within_budget=within_budget,
        allowed=allowed,
        node_cost=node_cost,
        inputs=inputs,
        modelled=rows.modelled,
        build_s=time.perf_counter() - start,
        profiles=profiles,
        retrieval_extra_ms=retrieval_extra,
        node_kw=kw,
        row_of_commodity=rows.row_of_commodity,
        commodity_slice_demand_tok_s=commodity_slices,
        commodity_mean_demand_tok_s=commodity_mean,
        latency=latency,
        failure_domain_names=names,
        failure_domain_grouping=None if domains is None else domains.grouping,
        regimes=regimes,
        commodity_regime=split.regime if regimes else None,
        cache_warmup_nodes=warmup,
        rungs=rungs if any(len(r) > 1 for r in rungs) else [],
        cross_metro=cross,
        tier_sets=sets.sets if len(sets.sets) > 1 else [],
        tier_names=sets.names if sets.names[0] else (),
        site_set=sets.site_set,
        energy_price_usd_per_mwh=site_energy_price(sites, price_multiplier, carbon),
        carbon_intensity_g_per_kwh=intensity,
        site_water=water,
    )


def reach_fixed_ms(sets: ProfileSets, m: int) -> FloatArray | None:
    """``(k, m)`` each class's least fixed TTFT at each site's KV tier (any rung), or None with one set."""
    if sets.site_set is None:
        return None
    per_set = np.array([[min(p.fixed_ttft_ms for p in rungs) for rungs in group] for group in sets.sets])  # (G, k)
    return np.asarray(per_set[sets.site_set].T)


def with_tier_cost(cost: NodeCost, tier_usd_per_node_h: FloatArray) -> NodeCost:
    """The node cost with what each site's KV tier adds (``kv_tiers.csv`` ``usd_per_node_h``), as node capex."""
    if not np.any(tier_usd_per_node_h):
        return cost
    return replace(cost, node_capex_usd_per_h=np.asarray(cost.node_capex_usd_per_h + tier_usd_per_node_h))


def row_worst(values: FloatArray, row_of_commodity: IntArray, commodity_population: IntArray, n_rows: int) -> FloatArray:
    """``(r, m)`` the largest of each row's members' ``values[population]`` (by chunks of :data:`ROWS_CHUNK`)."""
    out = np.full((n_rows, values.shape[1]), -np.inf)
    members = np.flatnonzero(row_of_commodity >= 0)
    for start in range(0, len(members), ROWS_CHUNK):
        chunk = members[start : start + ROWS_CHUNK]
        np.maximum.at(out, row_of_commodity[chunk], values[commodity_population[chunk]])
    return out


def row_all(mask: NDArray[np.bool_], row_of_commodity: IntArray, n_rows: int) -> NDArray[np.bool_]:
    """``(r, m)`` where every member commodity of the row has ``mask`` (``(c, m)``)."""
    out = np.ones((n_rows, mask.shape[1]), dtype=bool)
    members = np.flatnonzero(row_of_commodity >= 0)
    np.logical_and.at(out, row_of_commodity[members], mask[members])
    return out


def site_rtt_ms(sites: pd.DataFrame, latency: LatencyModel, quantile: Quantile) -> FloatArray:
    """``(m, m)`` round trip between every two sites (data center to data center) at the budget's quantile. [ms]"""
    trips = latency.site_site_rtt(endpoints(sites), endpoints(sites))
    out = np.array(trips.p90_ms if quantile is Quantile.P90 else trips.p50_ms, dtype=float)
    np.fill_diagonal(out, 0.0)
    return out


def _cross_metro(
    loaded: LoadedScenario,
    inputs: PlacementInput,
    rows: ModelRows,
    profiles: list[ClassProfile],
    sites: pd.DataFrame,
    latency: LatencyModel,
    commodity: tuple[IntArray, IntArray, FloatArray, PairMask],
    retrieval_extra: FloatArray,
    node_cost: NodeCost,
    price_multiplier: FloatArray,
    kw: float,
    charge_usd_per_mwh: FloatArray | None = None,
) -> CrossMetro:
    """The scenario's cross-metro columns (``serving.cross_metro_prefill``): profiles, partners, pairs."""
    scenario = loaded.scenario
    spec = scenario.serving.cross_metro_prefill
    assert spec is not None
    commodity_class, commodity_population, rtt, permitted = commodity
    n_rows = len(rows.modelled)
    energy = EnergyPrices(
        energy_demand_tok_s(rows.slice_demand_tok_s, inputs.slice_hours, scenario.demand.peak_factor),
        inputs.slice_hours / inputs.slice_hours.sum(),
        site_energy_price(sites, price_multiplier, charge_usd_per_mwh),
        (1.0 - scenario.serving.idle_power_share) * kw / 1000.0,
    )
    return build_cross_metro(
        inputs,
        spec=spec,
        profiles=cross_metro_profiles(scenario.classes, scenario.serving, profiles, source=str(loaded.path)),
        class_profiles=profiles,
        site_rtt_ms=site_rtt_ms(sites, latency, Quantile(scenario.latency.quantile)),
        row_class=commodity_class[rows.modelled],
        row_rtt_ms=row_worst(rtt, rows.row_of_commodity, commodity_population, n_rows),
        row_permitted=row_all(permitted.dense(), rows.row_of_commodity, n_rows),
        retrieval_extra_ms=retrieval_extra,
        node_usd_per_h=node_cost.total_usd_per_h,
        energy=energy,
    )
