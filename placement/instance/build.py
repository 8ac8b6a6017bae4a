"""A scenario turned into model arrays: demand per slice, latency, TTFT, residency, costs.

``catalog + cities + scenario -> latency model (built once, kept on the Instance) -> TTFT budget -> economics -> PlacementInput``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._cache import cached
from placement._process import Background, release_rows
from placement._types import FloatArray, IntArray
from placement.economics.cost import NodeCost
from placement.instance.commodities import (
    commodities,
    commodity_demand,
    commodity_options,
    commodity_permitted,
    commodity_within_budget,
    reach_fixed_ms,
)
from placement.instance.cross_metro import CrossMetro, EnergyPrices, build_cross_metro, option_nodes, with_cross_metro
from placement.instance.latency import build_latency_model, mapped_from_disk, retrieval_extra_ms, site_rtt_ms, worst_member_rtt_ms
from placement.instance.load import load_populations, load_sites, slice_demand
from placement.instance.pair_mask import PairMask
from placement.instance.prices import (
    carbon_charge,
    carbon_profiles,
    energy_demand_tok_s,
    site_carbon_intensity,
    site_energy_price,
    site_node_cost,
    site_price_multiplier,
    summed_charges,
    water_charge,
    with_tier_cost,
)
from placement.instance.record import Instance, ScenarioFacts, TierChoice, flatten_sets
from placement.instance.rows import (
    ModelRows,
    ModelSections,
    failure_domain_sites,
    model_rows,
    placement_input,
    row_all,
    row_worst,
    with_cache_warmup,
)
from placement.network.latency import LatencyModel
from placement.network.paths import Quantile, RoundTripQuantiles
from placement.optimize.problem import PlacementInput, ResourceCap
from placement.profiles.build import (
    ClassProfile,
    catalog_node_capex_usd,
    cross_metro_profiles,
    node_kw,
    runs_options,
    warm_catalogs,
)
from placement.profiles.tiers import (
    ProfileSets,
    cheapest_part,
    free_tier_sites,
    profile_sets,
    with_site_tiers,
    with_start_tier,
)
from placement.progress import Progress, quiet
from placement.rules.availability import AvailabilityRule, SiteParts, availability_rules, site_parts
from placement.rules.faults import fault_domains
from placement.rules.residency import CommoditySplit, Regime, scenario_regimes, split_commodities
from placement.rules.resources import CapSpec, SiteWater, cap_specs, site_water
from placement.scenario.document import Scenario
from placement.scenario.load import LoadedScenario
from placement.world.demand import Populations


def world_key(scenario: Scenario) -> str:
    """A digest of the ``sites``, ``demand`` and ``latency`` sections, on which the catalog and round trips depend."""
    sections = [s.model_dump(mode="json") for s in (scenario.sites, scenario.demand, scenario.latency)]
    return hashlib.sha256(json.dumps(sections, sort_keys=True).encode()).hexdigest()


def scenario_facts(loaded: LoadedScenario) -> ScenarioFacts:
    """What the solve, its tables and its notes read of the scenario beside the arrays."""
    scenario = loaded.scenario
    return ScenarioFacts(
        name=scenario.name,
        path=loaded.path,
        catalog=str(scenario.sites.catalog),
        catalog_name=loaded.catalog_path.name,
        classes=scenario.classes,
        quantile=scenario.latency.quantile,
        serving=scenario.serving,
        residency=scenario.residency,
        solver=scenario.solver,
        policy=scenario.policy,
        peak_factor=scenario.demand.peak_factor,
        mw_multiplier=scenario.sites.mw_multiplier,
        carbon_usd_per_t=scenario.objective.carbon_usd_per_t,
        water_usd_per_m3=scenario.objective.water_usd_per_m3,
        node_life_years=scenario.economics.node_life_years,
        discover=scenario.sites.discover is not None,
        availability=tuple(availability_rules(loaded)),
        world_key=world_key(scenario),
    )


FORK_PROFILES_SITES = 20
"""Sites from which a world built afresh has its node profiles computed in a forked child, beside the populations and
round trips (the bundled world, 74 sites, from an empty cache: the build in 2.0-2.3 s, not 3.2)."""


@dataclass(frozen=True)
class _World:
    """The catalog, the populations, the latency model and the round trips between them."""

    sites: pd.DataFrame
    populations: Populations
    latency: LatencyModel
    quantiles: RoundTripQuantiles


def _same_world(facts: ScenarioFacts, like: Instance | None) -> Instance | None:
    """``like`` when it was built on the same world (sites, demand and latency sections), else None."""
    if like is not None and like.facts.path == facts.path and like.facts.world_key == facts.world_key:
        return like
    return None


def _catalog(loaded: LoadedScenario, same: Instance | None, progress: Progress) -> pd.DataFrame:
    """The candidate sites: ``same``'s, an instance of the same world (:func:`_same_world`), when given."""
    if same is not None:
        return same.sites
    sites = load_sites(loaded.scenario.sites, loaded.resolve, source=str(loaded.path))
    progress(f"catalog: {len(sites)} candidate sites")
    return sites


def _world(loaded: LoadedScenario, same: Instance | None, sites: pd.DataFrame, progress: Progress) -> _World:
    """Populations, latency model and round trips to ``sites``: ``same``'s, an instance of the same world, when given."""
    if same is not None:
        populations = same.populations
        progress(f"catalog, demand and round trips as before: {len(sites)} sites, {len(populations.table)} populations")
        return _World(sites, populations, same.latency, RoundTripQuantiles(same.rtt_p50_ms, same.rtt_p90_ms))
    scenario, resolve, source = loaded.scenario, loaded.resolve, str(loaded.path)
    # the clusters of a demand section and cities file an earlier run built (placement._cache)
    populations = cached(
        "populations", scenario.demand, lambda: load_populations(scenario.demand, resolve, source=source), base=loaded.path.parent
    )
    progress(f"demand: {len(populations.cities)} cities in {len(populations.table)} populations")

    def round_trips() -> tuple[LatencyModel, RoundTripQuantiles]:
        latency = build_latency_model(scenario.latency, resolve, sites=sites, source=source)
        return latency, worst_member_rtt_ms(populations.cities, sites, latency)

    if len(populations.table) * len(sites) > CACHED_ROUND_TRIPS_MAX:
        return _World(sites, populations, *round_trips())
    # the round trips of the same network, cities and site places an earlier run computed (placement._cache)
    places = sites[[c for c in ROUND_TRIP_SITE_COLUMNS if c in sites.columns]]
    inputs = (scenario.latency, populations.cities[["lat", "lon", "country_code", "population_index"]], places)
    return _World(sites, populations, *cached("round-trips", inputs, round_trips, base=loaded.path.parent))


CACHED_ROUND_TRIPS_MAX = 4_000_000
"""Populations x sites up to which the round trips are cached (their two tables then hold at most 64 MB): a catalog
world's tables are larger than a run takes to compute them."""

ROUND_TRIP_SITE_COLUMNS = ("id", "lat", "lon", "country_code", "network")
"""What of a site its round trips depend on (its id: a planner's measurements may name it); a price changed in the
catalog keeps them."""


@dataclass(frozen=True)
class _Commodities:
    """The commodities with the sites they may use and their demand, and the node profiles they run."""

    split: CommoditySplit
    regimes: list[Regime]
    sets: ProfileSets
    rungs: list[list[ClassProfile]]
    rtt_ms: FloatArray
    retrieval_extra_ms: FloatArray
    within_budget: PairMask
    permitted: PairMask
    allowed: PairMask
    slice_demand_tok_s: FloatArray
    mean_demand_tok_s: FloatArray
    parts: SiteParts
    part_serves: NDArray[np.bool_] | None


def _site_parts(scenario: Scenario, sites: pd.DataFrame, rules: Sequence[AvailabilityRule], source: str) -> SiteParts:
    """The part each site runs: the scenario's, or where a standing rule bars it, the cheapest the rules permit."""
    serving = scenario.serving
    choose = partial(
        cheapest_part, classes=scenario.classes, serving=serving, params=scenario.economics.params(0.0),
        price_usd_per_mwh=float(sites["power_price_usd_per_mwh"].mean()), pue=float(sites["pue"].mean()), source=source,
    )  # fmt: skip
    return site_parts(rules, serving.accelerator, sites["country_code"].fillna("").astype(str).tolist(), choose=choose)


def _on_start_tier(loaded: LoadedScenario) -> LoadedScenario:
    """The scenario with ``kv_cache.tier: auto`` made its start tier (the scenario itself otherwise)."""
    scenario = loaded.scenario
    serving = with_start_tier(scenario.classes, scenario.serving, source=str(loaded.path))
    if serving is scenario.serving:
        return loaded
    return LoadedScenario(scenario=scenario.model_copy(update={"serving": serving}), path=loaded.path)


def _node_profiles(
    loaded: LoadedScenario, sites: pd.DataFrame, rules: Sequence[AvailabilityRule]
) -> tuple[SiteParts, ProfileSets]:
    """The part each site runs and the class profiles of every part and KV tier the sites use (the serving model)."""
    scenario, source = loaded.scenario, str(loaded.path)
    parts = _site_parts(scenario, sites, rules, source)
    sets = profile_sets(scenario.classes, scenario.serving, sites, source=source, parts=parts.part if parts.moved else None)
    return parts, sets


def _commodities(
    loaded: LoadedScenario, world: _World, pop_slices: FloatArray, node: tuple[SiteParts, ProfileSets]
) -> _Commodities:
    """Commodities, their profiles, the pairs inside their objectives that residency permits at a site with power."""
    scenario, source = loaded.scenario, str(loaded.path)
    classes, sites, populations = scenario.classes, world.sites, world.populations
    parts, sets = node
    quantile = Quantile(scenario.latency.quantile)
    rtt = world.quantiles.p90_ms if quantile is Quantile.P90 else world.quantiles.p50_ms
    commodity_population, commodity_class = commodities(len(populations.table), len(classes))
    population_country = populations.table["country_code"].to_numpy(str)
    regimes = scenario_regimes(loaded)
    split = split_commodities(population_country, commodity_population, commodity_class, regimes)
    rungs = sets.sets[0] if runs_options(scenario.serving) else []
    retrieval_extra = retrieval_extra_ms(classes, sites, world.latency, source=source, quantile=quantile)
    # a pair is inside its objective if some rung fits (at its site's KV tier): the one with the least fixed TTFT
    reach = [min(r, key=lambda p: p.fixed_ttft_ms) for r in rungs] if rungs else sets.profiles
    within_budget = commodity_within_budget(
        rtt, reach, retrieval_extra, split.workload, split.population, fixed_ms=reach_fixed_ms(sets, len(sites))
    )
    permitted = commodity_permitted(population_country, sites["country_code"].to_numpy(str), scenario.residency, split, regimes)
    # as bits: the (commodities, sites) byte tables are 200 MB each at 2,000 sites
    allowed = within_budget.and_(permitted).and_columns(sites["mw_available"].to_numpy(float) > 0)
    part_serves = None
    if parts.moved:  # a site serves nothing the rules permit no part for, and no class its part cannot serve
        runs = np.array([bool(p) for p in parts.part])
        served = sets.class_site_served(len(sites))
        part_serves = (np.ones((len(classes), len(sites)), bool) if served is None else served) & runs
        allowed = allowed.and_row_groups(split.workload, part_serves)
    pop_mean = populations.table["demand_tok_s"].to_numpy(float)
    slices, mean = commodity_demand(pop_slices, pop_mean, classes, split.population, split.workload)
    return _Commodities(
        split, regimes, sets, rungs, rtt, retrieval_extra, within_budget, permitted, allowed,
        slices * split.demand_factor[:, None], mean * split.demand_factor, parts, part_serves,
    )  # fmt: skip


@dataclass(frozen=True)
class _Energy:
    """What a node draws and what each site's power costs and emits, with the caps on it."""

    kw: float | FloatArray
    price_multiplier: FloatArray
    intensity: FloatArray
    water: SiteWater
    charge_usd_per_mwh: FloatArray | None
    caps: list[CapSpec]


def _energy(loaded: LoadedScenario, sites: pd.DataFrame, n_slices: int, sets: ProfileSets) -> _Energy:
    """A node's power (each site's part's), each site's price by slice, its carbon and water, the charges and the caps."""
    scenario, resolve = loaded.scenario, loaded.resolve
    catalog = str(scenario.sites.catalog)
    kw = sets.site_node_kw(len(sites)) if sets.runs_other_parts(scenario.serving.accelerator) else node_kw(scenario.serving)
    price_multiplier = site_price_multiplier(scenario.time, sites, n_slices, resolve)
    intensity = site_carbon_intensity(sites, n_slices, carbon_profiles(scenario.time, sites, resolve))
    water = site_water(sites, scenario.sites.cooling)
    charge = summed_charges(
        carbon_charge(scenario.objective, catalog, sites, intensity),
        water_charge(scenario.objective, catalog, sites, water, n_slices),
    )
    caps = cap_specs(scenario.objective, sites, intensity, water, source=str(loaded.path), catalog=catalog)
    return _Energy(kw, price_multiplier, intensity, water, charge, caps)


def _node_cost(scenario: Scenario, sites: pd.DataFrame, energy: _Energy, sets: ProfileSets) -> NodeCost:
    """The hourly cost of one node at each site (its part's: the catalog's price where it is not the scenario's part)."""
    capex = None
    if sets.runs_other_parts(scenario.serving.accelerator):
        own = scenario.economics.params(catalog_node_capex_usd(scenario.serving)).node_capex_usd
        theirs = np.array(sets.site_parts(len(sites))) != scenario.serving.accelerator
        capex = np.where(theirs, sets.site_node_capex_usd(len(sites)), own)
    node_cost = site_node_cost(
        scenario.economics, scenario.serving, sites, kw=energy.kw, price_multiplier=energy.price_multiplier,
        charge_usd_per_mwh=energy.charge_usd_per_mwh, node_capex_usd=capex,
    )  # fmt: skip
    return with_tier_cost(node_cost, sets.tier_usd_per_node_h(len(sites)))


def build_instance(
    loaded: LoadedScenario,
    *,
    progress: Progress = quiet,
    like: Instance | None = None,
    site_kv_tiers: Mapping[str, str] | None = None,
) -> Instance:
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
    site_kv_tiers : mapping, optional
        With ``serving.kv_cache.tier: auto``: the tiers a plan chose at some of the free sites (site id -> tier); the
        other free sites run the start tier (:func:`placement.profiles.tiers.best_tier`).

    Returns
    -------
    Instance
        Arrays ready for :func:`placement.plan.solve.solve_instance`.
    """
    start = time.perf_counter()
    written = loaded
    loaded = _on_start_tier(loaded)
    scenario = loaded.scenario
    facts = scenario_facts(loaded)
    same = _same_world(facts, like)
    catalog = _catalog(loaded, same, progress)
    sites, choice = catalog, None
    if loaded is not written:  # kv_cache.tier: auto
        free = like.tier_choice.free if like is not None and like.tier_choice is not None else None
        free = free_tier_sites(catalog, written.scenario.serving) if free is None else free
        chosen = {str(s): t for s, t in (site_kv_tiers or {}).items()}
        choice = TierChoice(written, free, chosen)
        sites = with_site_tiers(catalog, chosen)
    # A world built afresh: the serving model in a forked child while this process clusters the demand and computes
    # the round trips (the two need only the catalog), forked before the round trips start their threads. A world of
    # a few sites, or ``like``'s reused, builds in moments: there the profiles are computed here, where what this
    # process memoises of them (placement.profiles.build) serves the next build too.
    fork = same is None and len(catalog) >= FORK_PROFILES_SITES
    if fork:
        warm_catalogs()  # read once in this process, not once per child
    node = Background(partial(_node_profiles, loaded, sites, facts.availability), fork=fork)
    try:
        world = _world(loaded, same, catalog, progress)
    except BaseException:
        del node  # its child stopped now, not when the traceback that holds this frame is let go
        raise
    # large tables to disk now, not after the build: the quantile the TTFT budgets do not read is never paged in
    # (the 2,000-site world's build peaked with both in memory, 0.54 GB)
    quantiles = RoundTripQuantiles(mapped_from_disk(world.quantiles.p50_ms), mapped_from_disk(world.quantiles.p90_ms))
    world = replace(world, sites=sites, quantiles=quantiles)
    pop_slices, slice_hours = slice_demand(scenario.time, world.populations, loaded.resolve, peak_factor=facts.peak_factor)
    cm = _commodities(loaded, world, pop_slices, node.result())
    energy = _energy(loaded, sites, len(slice_hours), cm.sets)
    node_cost = _node_cost(scenario, sites, energy, cm.sets)
    inputs, rows, cross = _model_inputs(loaded, world, cm, slice_hours, node_cost, energy, progress)
    domains = fault_domains(scenario.fault_tolerance, sites, source=str(loaded.path))
    names, failure_domains = failure_domain_sites(domains, sites)
    warmup = cm.sets.warmup_nodes(len(sites))
    inputs = with_cache_warmup(replace(inputs, failure_domains=failure_domains), node_cost.total_usd_per_h, warmup)
    for table in world.quantiles:  # whatever pages of the mapped round trips the build read, not held through the solve
        release_rows(table)
    progress(
        f"model: {len(cm.split.population)} commodities in {len(rows.modelled)} rows x {len(slice_hours)} slices, "
        f"{len(inputs.pair_site)} feasible pairs of {cm.allowed.size}"
    )
    return Instance(
        facts=facts,
        sites=sites,
        populations=world.populations,
        population_slice_demand_tok_s=pop_slices,
        slice_hours=slice_hours,
        rtt_ms=world.quantiles.p90_ms if Quantile(facts.quantile) is Quantile.P90 else world.quantiles.p50_ms,
        rtt_p50_ms=world.quantiles.p50_ms,
        rtt_p90_ms=world.quantiles.p90_ms,
        commodity_population=cm.split.population,
        commodity_class=cm.split.workload,
        within_budget=cm.within_budget,
        allowed=cm.allowed,
        node_cost=node_cost,
        inputs=inputs,
        modelled=rows.modelled,
        build_s=time.perf_counter() - start,
        profiles=cm.sets.profiles,
        retrieval_extra_ms=cm.retrieval_extra_ms,
        node_kw=node_kw(scenario.serving),
        site_parts=cm.parts if cm.parts.moved else None,
        tier_choice=choice,
        part_serves=cm.part_serves,
        row_of_commodity=rows.row_of_commodity,
        commodity_slice_demand_tok_s=cm.slice_demand_tok_s,
        commodity_mean_demand_tok_s=cm.mean_demand_tok_s,
        latency=world.latency,
        failure_domain_names=names,
        fault_domains=domains,
        failure_domain_grouping=None if domains is None else domains.grouping,
        regimes=cm.regimes,
        commodity_regime=cm.split.regime if cm.regimes else None,
        cache_warmup_nodes=warmup,
        rungs=cm.rungs if any(len(r) > 1 for r in cm.rungs) else [],
        cross_metro=cross,
        tier_sets=cm.sets.sets if len(cm.sets.sets) > 1 else [],
        tier_names=cm.sets.names if cm.sets.names[0] else (),
        site_set=cm.sets.site_set,
        energy_price_usd_per_mwh=site_energy_price(sites, energy.price_multiplier, energy.charge_usd_per_mwh),
        carbon_intensity_g_per_kwh=energy.intensity,
        site_water=energy.water,
    )


def _model_inputs(
    loaded: LoadedScenario,
    world: _World,
    cm: _Commodities,
    slice_hours: FloatArray,
    node_cost: NodeCost,
    energy: _Energy,
    progress: Progress,
) -> tuple[PlacementInput, ModelRows, CrossMetro | None]:
    """The merged rows and the model arrays, with the cross-metro columns when the scenario has them."""
    scenario, sites, sets = loaded.scenario, world.sites, cm.sets
    commodity_class, commodity_population = cm.split.workload, cm.split.population
    varies = any(len(r) > 1 for group in sets.sets for r in group) or len(sets.sets) > 1
    codes = commodity_options(sets, cm.rtt_ms, cm.retrieval_extra_ms, commodity_class, commodity_population) if varies else None
    rows = model_rows(
        cm.allowed, commodity_class, commodity_population, cm.slice_demand_tok_s, cm.mean_demand_tok_s, cm.rtt_ms, codes
    )
    options = None if codes is None else (flatten_sets(sets.sets)[0], codes[rows.modelled])
    sections = ModelSections(
        scenario.economics, scenario.serving, scenario.sites_open, scenario.fault_tolerance, scenario.demand.peak_factor
    )
    inputs = placement_input(
        sites, rows, cm.allowed.rows(rows.modelled), commodity_class[rows.modelled], slice_hours, sets.profiles,
        node_cost, energy.kw, price_multiplier=energy.price_multiplier, sections=sections, options=options,
        charge_usd_per_mwh=energy.charge_usd_per_mwh, caps=energy.caps,
    )  # fmt: skip
    cross = None
    if scenario.serving.cross_metro_prefill is not None:
        cross = _cross_metro(
            loaded, inputs, rows, sets.profiles, sites, world.latency,
            (commodity_class, commodity_population, cm.rtt_ms, cm.permitted), cm.retrieval_extra_ms, node_cost,
            energy.price_multiplier, node_kw(scenario.serving), energy.charge_usd_per_mwh,
            cm.parts.runs(scenario.serving.accelerator) if cm.parts.moved else None,
        )  # fmt: skip
        inputs = with_cross_metro(inputs, cross, pair_rtt_ms=rows.rtt_ms(cross.pairs.row, cross.pairs.decode_site))
        if inputs.caps:
            unit = _energy_prices(scenario, inputs, rows, np.zeros((len(sites), len(slice_hours))), node_kw(scenario.serving))
            inputs = replace(inputs, caps=_cross_metro_caps(inputs.caps, energy.caps, cross, unit, sites["pue"].to_numpy(float)))
        progress(f"cross-metro prefill: {len(cross.pairs)} columns (decode here, prefill at a partner)")
    return inputs, rows, cross


def _energy_prices(
    scenario: Scenario, inputs: PlacementInput, rows: ModelRows, site_price_per_mwh: FloatArray, kw: float
) -> EnergyPrices:
    """What the model rows' load draws, priced per MWh at each site and slice (USD, or a cap's unit). [unit/MWh]"""
    return EnergyPrices(
        energy_demand_tok_s(rows.slice_demand_tok_s, inputs.slice_hours, scenario.demand.peak_factor),
        inputs.slice_hours / inputs.slice_hours.sum(),
        site_price_per_mwh,
        (1.0 - scenario.serving.idle_power_share) * kw / 1000.0,
    )


def _cross_metro_caps(
    caps: tuple[ResourceCap, ...], specs: list[CapSpec], cross: CrossMetro, unit: EnergyPrices, pue: FloatArray
) -> tuple[ResourceCap, ...]:
    """The caps with the cross-metro columns' use appended: the load at the decode site and at the prefill site.

    ``caps`` are the model's (one per spec, their coefficients of the pairs served whole), ``unit`` prices the load
    at nothing: each spec's use per MWh (PUE included) takes the price's place.
    """
    decode_nodes, prefill_nodes = option_nodes(cross.options, cross.pairs.option)
    pairs = cross.pairs
    extended: dict[int, FloatArray] = {}  # caps on one resource share one coefficient array: extended once
    for cap, spec in zip(caps, specs, strict=True):
        if id(cap.pair_per_h) not in extended:
            per_unit = replace(unit, site_price_usd_per_mwh=pue[:, None] * spec.per_mwh)
            use = per_unit.usd_per_h(pairs.row, pairs.decode_site, decode_nodes)
            use = use + per_unit.usd_per_h(pairs.row, pairs.prefill_site, prefill_nodes)
            extended[id(cap.pair_per_h)] = np.concatenate([cap.pair_per_h, use])
    return tuple(replace(cap, pair_per_h=extended[id(cap.pair_per_h)]) for cap in caps)


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
    site_runs_profiles: NDArray[np.bool_] | None = None,
) -> CrossMetro:
    """The scenario's cross-metro columns (``serving.cross_metro_prefill``): profiles, partners, pairs.

    ``site_runs_profiles``: the sites running the scenario's part, the only ones of a column where the availability
    rules moved others to another part (None: every site).
    """
    scenario = loaded.scenario
    spec = scenario.serving.cross_metro_prefill
    assert spec is not None
    commodity_class, commodity_population, rtt, permitted = commodity
    n_rows = len(rows.modelled)
    energy = _energy_prices(scenario, inputs, rows, site_energy_price(sites, price_multiplier, charge_usd_per_mwh), kw)
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
        site_runs_profiles=site_runs_profiles,
    )
