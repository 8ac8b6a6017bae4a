"""A scenario turned into model arrays: demand per slice, latency, TTFT, residency, costs.

``catalog + cities + scenario -> latency -> TTFT budget -> economics -> PlacementInput``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InputError, Problem
from placement.budget import ttft_p99_ms
from placement.catalog import load_catalog
from placement.cities import load_cities
from placement.demand import Populations, aggregate, demand_tok_s
from placement.economics import NodeCost, node_cost_usd_per_h
from placement.network.graph import HUBS_CSV, LINKS_CSV, default_network, default_params, load_network, site_site_rtt_ms
from placement.network.graph import population_site_rtt_ms as graph_population_site_rtt_ms
from placement.network.great_circle import population_site_rtt_ms
from placement.optimize.problem import PlacementInput
from placement.profiles import ClassProfile, catalog_node_capex_usd, class_profiles, node_kw
from placement.residency import residency_mask
from placement.scenario import LoadedScenario, WorkloadClass
from placement.timeslices import (
    HOURS,
    block_demand,
    block_mean,
    hourly_multipliers,
    load_profile,
    site_offsets_h,
    utc_offset_hours,
)

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
Progress = Callable[[str], None]


def quiet(_: str) -> None:
    """Progress sink that prints nothing."""
    return None


@dataclass(frozen=True)
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
        ``(n, m)`` worst member-city round trip from each population to each site. [ms]
    commodity_population, commodity_class : numpy.ndarray
        Population and class index of each commodity.
    ttft_ms : numpy.ndarray
        ``(c, m)`` p99 TTFT of each commodity at each site. [ms]
    within_budget : numpy.ndarray of bool
        ``(c, m)`` pairs inside the class objective (latency only).
    allowed : numpy.ndarray of bool
        ``(c, m)`` pairs inside the objective, permitted by residency, at a site with power.
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
    """

    loaded: LoadedScenario
    sites: pd.DataFrame
    populations: Populations
    population_slice_demand_tok_s: FloatArray
    slice_hours: FloatArray
    rtt_ms: FloatArray
    commodity_population: IntArray
    commodity_class: IntArray
    ttft_ms: FloatArray
    within_budget: NDArray[np.bool_]
    allowed: NDArray[np.bool_]
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

    @property
    def classes(self) -> list[WorkloadClass]:
        """The workload classes."""
        return self.loaded.scenario.classes

    @property
    def commodity_peak_demand_tok_s(self) -> FloatArray:
        """Largest slice demand of every commodity (the daily mean for time-shiftable classes). [tokens/s]"""
        return np.asarray(self.commodity_slice_demand_tok_s.max(axis=1))

    @property
    def unreachable(self) -> NDArray[np.bool_]:
        """Commodities with no allowed site."""
        return np.asarray(~self.allowed.any(axis=1))


def population_site_rtt(loaded: LoadedScenario, lat_deg: FloatArray, lon_deg: FloatArray, sites: pd.DataFrame) -> FloatArray:
    """Round trip from users at each point to each site, with the scenario's latency model. [ms]

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario (``latency`` section).
    lat_deg, lon_deg : numpy.ndarray
        User points. [degrees]
    sites : pandas.DataFrame
        Sites (``lat``, ``lon``).

    Returns
    -------
    numpy.ndarray
        ``(n, m)`` round trips, the users' last mile included. [ms]
    """
    spec = loaded.scenario.latency
    if spec.model == "great_circle":
        return population_site_rtt_ms(lat_deg, lon_deg, sites["lat"], sites["lon"], spec.params())
    network = default_network()
    if spec.hubs is not None or spec.links is not None:
        network = load_network(
            loaded.resolve(spec.hubs) if spec.hubs else HUBS_CSV, loaded.resolve(spec.links) if spec.links else LINKS_CSV
        )
    params = replace(default_params(), last_mile_ms=spec.access_ms)
    return graph_population_site_rtt_ms(lat_deg, lon_deg, sites["lat"], sites["lon"], params, network=network)


def _worst_member_rtt_ms(populations: Populations, sites: pd.DataFrame, loaded: LoadedScenario) -> FloatArray:
    """Round trip to each site from the farthest member city of each population (conservative)."""
    cities = populations.cities.sort_values("population_index", kind="stable")
    rtt = population_site_rtt(loaded, cities["lat"].to_numpy(float), cities["lon"].to_numpy(float), sites)
    labels = cities["population_index"].to_numpy()
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    return np.asarray(np.maximum.reduceat(rtt, starts, axis=0))


def retrieval_extra_ms(loaded: LoadedScenario, sites: pd.DataFrame) -> FloatArray:
    """Round trip from each site to each class's remote retrieval store (0 where it is local). [ms]

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario.
    sites : pandas.DataFrame
        The sites.

    Returns
    -------
    numpy.ndarray
        ``(k, m)`` extra retrieval time per class and site. [ms]

    Raises
    ------
    InputError
        If a class names a retrieval store that is not a site of the catalog.
    """
    classes = loaded.scenario.classes
    extra = np.zeros((len(classes), len(sites)))
    ids = sites["id"].tolist()
    problems = []
    for k, workload in enumerate(classes):
        store = workload.retrieval_store_site
        if store is None:
            continue
        if store not in ids:
            problems.append(
                Problem(str(loaded.path), f"classes[{k}].retrieval_store_site", "", f"unknown site {store!r}", "use a catalog id")
            )
            continue
        j = ids.index(store)
        lat, lon = sites["lat"].to_numpy(float), sites["lon"].to_numpy(float)
        if loaded.scenario.latency.model == "great_circle":
            params = replace(loaded.scenario.latency.params(), access_ms=0.0)
            extra[k] = population_site_rtt_ms(lat, lon, lat[j : j + 1], lon[j : j + 1], params)[:, 0]
        else:
            extra[k] = site_site_rtt_ms(lat, lon, lat[j : j + 1], lon[j : j + 1])[:, 0]
        extra[k, j] = 0.0
    if problems:
        raise InputError(problems)
    return extra


def load_sites(loaded: LoadedScenario) -> pd.DataFrame:
    """The site catalog with the scenario's what-ifs applied (exclusions, power price, MW).

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario.

    Returns
    -------
    pandas.DataFrame
        The adjusted catalog.

    Raises
    ------
    InputError
        If ``sites.exclude`` names a site the catalog does not have, or leaves no site.
    """
    spec = loaded.scenario.sites
    sites = load_catalog(loaded.catalog_path)
    unknown = sorted(set(spec.exclude) - set(sites["id"]))
    problems = [
        Problem(str(loaded.path), "sites.exclude", "", f"unknown site id {site!r}", "use ids from the catalog")
        for site in unknown
    ]
    sites = sites[~sites["id"].isin(spec.exclude)].reset_index(drop=True)
    if sites.empty:
        problems.append(Problem(str(loaded.path), "sites.exclude", "", "every site is excluded", "keep at least one"))
    if problems:
        raise InputError(problems)
    multiplier = sites["continent"].map(spec.power_price_multiplier).fillna(1.0)
    by_country = sites["country_code"].map(spec.power_price_multiplier)
    multiplier = by_country.fillna(multiplier)
    return sites.assign(
        power_price_usd_per_mwh=sites["power_price_usd_per_mwh"] * multiplier,
        mw_available=sites["mw_available"] * spec.mw_multiplier,
    )


def load_populations(loaded: LoadedScenario) -> Populations:
    """Cities, their daily mean demand and their aggregation, as the scenario says.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario.

    Returns
    -------
    Populations
        Demand points with member cities; ``demand_tok_s`` is the daily mean.
    """
    spec = loaded.scenario.demand
    cities = load_cities(loaded.cities_path, min_population=spec.min_population, countries=spec.countries)
    demand = (
        demand_tok_s(
            cities["population"].to_numpy(float),
            adoption=spec.adoption,
            tokens_per_user_per_day=spec.tokens_per_user_per_day,
            peak_factor=1.0,
        )
        * spec.growth
    )
    return aggregate(cities, demand, spec.clusters)


def slice_demand(loaded: LoadedScenario, populations: Populations) -> tuple[FloatArray, FloatArray]:
    """Demand of each population in each time slice.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario (``time`` section and ``demand.peak_factor``).
    populations : Populations
        Populations with daily mean demand.

    Returns
    -------
    tuple of numpy.ndarray
        ``(n, T)`` demand per slice [tokens/s] and ``(T,)`` hours per slice.
    """
    spec = loaded.scenario
    mean = populations.table["demand_tok_s"].to_numpy(float)
    if spec.time.slices == 1 and spec.time.profile is None:
        return (mean * spec.demand.peak_factor)[:, None], np.array([float(HOURS)])
    assert spec.time.profile is not None
    profile = load_profile(loaded.resolve(spec.time.profile))
    cities = populations.cities
    offsets = np.array([utc_offset_hours(tz) for tz in cities["timezone"].tolist()])
    city_hourly = hourly_multipliers(offsets, profile) * cities["demand_tok_s"].to_numpy(float)[:, None]
    hourly = np.zeros((len(mean), HOURS))
    np.add.at(hourly, cities["population_index"].to_numpy(), city_hourly)
    return block_demand(hourly, spec.time.slices)


def _pair_energy_usd_per_h(
    loaded: LoadedScenario,
    sites: pd.DataFrame,
    commodity_slice_demand: FloatArray,
    slice_hours: FloatArray,
    pair_commodity: IntArray,
    pair_site: IntArray,
    pair_class: IntArray,
    profiles: list[ClassProfile],
) -> FloatArray:
    """Load-dependent energy cost of each pair at a share of 1, averaged over the day. [USD/h]"""
    scenario = loaded.scenario
    dynamic_share = 1.0 - scenario.serving.idle_power_share
    if dynamic_share <= 0:
        return np.zeros(len(pair_site))
    goodput = np.array([p.goodput_tok_s_per_node for p in profiles])
    mw_per_tok_s = dynamic_share * node_kw(loaded) / 1000.0 / goodput[pair_class]
    price = sites["power_price_usd_per_mwh"].to_numpy(float) * sites["pue"].to_numpy(float)
    multiplier = _site_price_multiplier(loaded, sites, len(slice_hours))
    weights = slice_hours / slice_hours.sum()
    if len(slice_hours) == 1:  # a single peak slice: energy follows the daily mean, not the peak
        commodity_slice_demand = commodity_slice_demand / loaded.scenario.demand.peak_factor
    energy = commodity_slice_demand[pair_commodity] * (price[pair_site, None] * multiplier[pair_site]) * weights[None, :]
    return np.asarray(mw_per_tok_s * energy.sum(axis=1))


def _site_price_multiplier(loaded: LoadedScenario, sites: pd.DataFrame, n_slices: int) -> FloatArray:
    """``(m, T)`` power price multiplier of each site in each slice (1 without a profile)."""
    path = loaded.scenario.time.power_price_profile
    if path is None:
        return np.ones((len(sites), n_slices))
    profile = load_profile(loaded.resolve(path))
    hourly = hourly_multipliers(site_offsets_h(sites["lon"].to_numpy(float)), profile)
    return block_mean(hourly, n_slices)


def merge_commodities(
    allowed: NDArray[np.bool_], commodity_class: IntArray, commodity_slices: FloatArray
) -> tuple[IntArray, IntArray]:
    """Group interchangeable commodities: same class, same allowed sites, same demand shape.

    Parameters
    ----------
    allowed : numpy.ndarray of bool
        ``(c, m)`` allowed pairs.
    commodity_class : numpy.ndarray of int
        ``(c,)`` class of each commodity.
    commodity_slices : numpy.ndarray
        ``(c, T)`` demand per slice.

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
    for c in np.flatnonzero(allowed.any(axis=1)).tolist():
        key = int(commodity_class[c]).to_bytes(4, "little") + np.packbits(allowed[c]).tobytes() + shapes[c].tobytes()
        row = rows.setdefault(key, len(rows))
        if row == len(firsts):
            firsts.append(c)
        row_of_commodity[c] = row
    return row_of_commodity, np.array(firsts, dtype=np.int64)


def build_instance(loaded: LoadedScenario, *, progress: Progress = quiet) -> Instance:
    """Turn a scenario into model arrays.

    Parameters
    ----------
    loaded : LoadedScenario
        A validated scenario.
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    Instance
        Arrays ready for :func:`placement.plan.solve_instance`.
    """
    start = time.perf_counter()
    scenario = loaded.scenario
    sites = load_sites(loaded)
    progress(f"catalog: {len(sites)} candidate sites")
    populations = load_populations(loaded)
    progress(f"demand: {len(populations.cities)} cities in {len(populations.table)} populations")
    pop_slices, slice_hours = slice_demand(loaded, populations)
    pop_mean = populations.table["demand_tok_s"].to_numpy(float)
    rtt = _worst_member_rtt_ms(populations, sites, loaded)
    n_pop, n_class = len(populations.table), len(scenario.classes)
    commodity_population = np.repeat(np.arange(n_pop, dtype=np.int64), n_class)
    commodity_class = np.tile(np.arange(n_class, dtype=np.int64), n_pop)
    profiles = class_profiles(loaded)
    retrieval_extra = retrieval_extra_ms(loaded, sites)
    ttft = np.empty((len(commodity_population), len(sites)))
    for k, profile in enumerate(profiles):
        ttft[commodity_class == k] = ttft_p99_ms(rtt, profile, retrieval_extra_ms=retrieval_extra[k][None, :])
    objective = np.array([c.ttft_p99_ms for c in scenario.classes])[commodity_class]
    within_budget = ttft <= objective[:, None]
    permitted = residency_mask(
        populations.table["country_code"].to_numpy(str), sites["country_code"].to_numpy(str), scenario.residency
    )[commodity_population]
    allowed = within_budget & permitted & (sites["mw_available"].to_numpy(float) > 0)[None, :]

    shares = np.array([c.share for c in scenario.classes])[commodity_class]
    shiftable = np.array([c.time_shiftable for c in scenario.classes])[commodity_class]
    commodity_slices = pop_slices[commodity_population] * shares[:, None]
    commodity_mean = pop_mean[commodity_population] * shares
    commodity_slices[shiftable] = commodity_mean[shiftable, None]

    serving = scenario.serving
    kw = node_kw(loaded)
    node_cost = node_cost_usd_per_h(
        scenario.economics.params(catalog_node_capex_usd(loaded)),
        node_kw=kw,
        pue=sites["pue"],
        price_usd_per_mwh=sites["power_price_usd_per_mwh"] * _site_price_multiplier(loaded, sites, len(slice_hours)).mean(axis=1),
        facility_capex_usd_per_mw=sites["capex_usd_per_mw"],
        idle_power_share=serving.idle_power_share,
    )
    fixed = sites["fixed_cost_usd_per_h"].fillna(scenario.economics.site_fixed_cost_usd_per_h).to_numpy(float)
    row_of_commodity, modelled = merge_commodities(allowed, commodity_class, commodity_slices)
    n_rows = len(modelled)
    row_slices = np.zeros((n_rows, commodity_slices.shape[1]))
    members = row_of_commodity >= 0
    np.add.at(row_slices, row_of_commodity[members], commodity_slices[members])
    row_mean = np.bincount(row_of_commodity[members], weights=commodity_mean[members], minlength=n_rows).astype(float)
    pair_row, pair_site = (a.astype(np.int64) for a in np.nonzero(allowed[modelled]))
    pair_class = commodity_class[modelled][pair_row]
    member_rtt = np.zeros((n_rows, len(sites)))
    np.add.at(member_rtt, row_of_commodity[members], rtt[commodity_population[members]] * commodity_mean[members, None])
    row_rtt = member_rtt / np.maximum(row_mean, 1e-12)[:, None]
    nodes_per_tok_s = np.array([p.nodes_per_tok_s for p in profiles])
    inputs = PlacementInput(
        slice_demand_tok_s=row_slices,
        slice_hours=slice_hours,
        pair_commodity=pair_row,
        pair_site=pair_site,
        pair_nodes_per_tok_s=nodes_per_tok_s[pair_class],
        pair_rtt_ms=row_rtt[pair_row, pair_site],
        pair_cost_usd_per_h=_pair_energy_usd_per_h(
            loaded, sites, row_slices, slice_hours, pair_row, pair_site, pair_class, profiles
        ),
        site_fixed_usd_per_h=fixed,
        site_node_usd_per_h=node_cost.total_usd_per_h,
        site_node_mw=kw * sites["pue"].to_numpy(float) / 1000.0,
        site_mw_available=sites["mw_available"].to_numpy(float),
        site_locked=sites["locked"].to_numpy(bool),
        min_sites_open=scenario.sites_open.min,
        max_sites_open=scenario.sites_open.max,
        fault_tolerant=scenario.fault_tolerance.n_plus_one,
        daily_mean_tok_s=row_mean,
        protect=allowed[modelled].sum(axis=1) >= 2,  # N+1 needs a second site in reach
    )
    progress(
        f"model: {len(commodity_population)} commodities in {n_rows} rows x {len(slice_hours)} slices, "
        f"{len(pair_row)} feasible pairs of {allowed.size}"
    )
    return Instance(
        loaded,
        sites,
        populations,
        pop_slices,
        slice_hours,
        rtt,
        commodity_population,
        commodity_class,
        ttft,
        within_budget,
        allowed,
        node_cost,
        inputs,
        modelled,
        time.perf_counter() - start,
        profiles,
        retrieval_extra,
        kw,
        row_of_commodity,
        commodity_slices,
        commodity_mean,
    )
