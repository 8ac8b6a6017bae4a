"""A scenario with a horizon turned into the build-out model's arrays.

``scenario -> instance (populations, round trips, slices, residency; aggregated) -> fleet (goodput per
class and accelerator) -> power schedule -> demand per row, slice, year and scenario -> BuildoutInput``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InputError, Problem, problems_of
from placement._types import FloatArray, IntArray
from placement._validate import Column, Table, known, missing_columns, numbers, raise_if, read_table
from placement.buildout.cross_metro import BuildoutCrossMetro, with_cross_metro
from placement.buildout.fleet import Fleet, build_fleet, model_goodput_tok_s, offers, with_accelerator
from placement.buildout.ladder import GroupRungs, groups_of, pair_load, pair_rungs
from placement.buildout.tiers import SiteTiers, build_site_tiers, with_site_tiers
from placement.economics.cost import HOURS_PER_YEAR, amortised_usd_per_h
from placement.instance.build import build_instance
from placement.instance.commodities import commodity_permitted, commodity_within_budget, merge_commodities
from placement.instance.pair_mask import PairMask
from placement.instance.record import Instance
from placement.optimize.buildout.input import BuildoutInput, NPlusOne, YearCap
from placement.profiles.tiers import with_start_tier
from placement.progress import Progress, quiet
from placement.rules.availability import AvailabilityRule, barred_mask
from placement.rules.resources import SiteWater, cap_specs
from placement.scenario.classes import WorkloadClass
from placement.scenario.horizon import AcceleratorOffer, DemandScenario, HorizonSection
from placement.scenario.load import LoadedScenario
from placement.scenario.sections import EconomicsSection, ServingSection
from placement.world.regions import region_values


@dataclass(frozen=True)
class Buildout:
    """A build-out problem: the arrays and what they stand for.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario as given.
    horizon : HorizonSection
        Its horizon (a one-year horizon for a fleet-mix scenario without one).
    instance : Instance
        Populations, sites, round trips and slices (at the build-out's aggregation).
    fleet : Fleet
        Accelerators on offer.
    data : BuildoutInput
        The model arrays.
    years : list of int
        Planning years.
    scenario_names : list of str
        Demand scenarios.
    allowed : numpy.ndarray of bool
        ``(c, m)`` commodity-site pairs inside the TTFT objective on every accelerator, permitted, with power some year.
    row_of_commodity : numpy.ndarray of int
        ``(c,)`` model row of each commodity (-1: none).
    commodity_demand_tok_s : numpy.ndarray
        ``(c, Y, S)`` daily mean demand of each commodity. [tokens/s]
    rules : list of AvailabilityRule
        The availability rules the fleet obeyed (:mod:`placement.rules.availability`; empty: not enforced).
    site_parts : numpy.ndarray of bool
        ``(M, A)`` accelerators each site may ever run (the pairs suit the slowest of them).
    energy_price_usd_per_mwh : numpy.ndarray
        ``(M, Y)`` what a MWh drawn costs at each site in each year: the power price and the carbon and water charges.
    carbon_usd_per_t : list of float
        The carbon price in each year (``horizon.carbon_usd_per_t``, else ``objective.carbon_usd_per_t``).
    tiers : SiteTiers or None
        Each site's KV tier and the fleet on it (:mod:`placement.buildout.tiers`); None: ``fleet`` everywhere.
    rung_groups : tuple of GroupRungs
        Each group of sites (one KV tier, the same parts) with its classes' node TTFT rungs (one without
        ``serving.node_ttft_ladder``, :mod:`placement.buildout.ladder`): the pairs' TTFT; empty: ``fleet`` everywhere.
    cross_metro : BuildoutCrossMetro or None
        The cross-metro prefill columns among the pairs (:mod:`placement.buildout.cross_metro`); None: none.
    """

    loaded: LoadedScenario
    horizon: HorizonSection
    instance: Instance
    fleet: Fleet
    data: BuildoutInput
    years: list[int]
    scenario_names: list[str]
    allowed: NDArray[np.bool_]
    row_of_commodity: IntArray
    commodity_demand_tok_s: FloatArray
    rules: list[AvailabilityRule]
    site_parts: NDArray[np.bool_]
    energy_price_usd_per_mwh: FloatArray
    carbon_usd_per_t: list[float]
    tiers: SiteTiers | None = None
    rung_groups: tuple[GroupRungs, ...] = ()
    cross_metro: BuildoutCrossMetro | None = None

    @property
    def sites(self) -> pd.DataFrame:
        """The candidate sites."""
        return self.instance.sites

    @property
    def scenario_name(self) -> str:
        """The scenario's ``name``."""
        return self.loaded.scenario.name

    @property
    def scenario_path(self) -> Path:
        """The scenario's file (``summary.json``'s ``scenario_path``; copied as ``scenario.yaml``)."""
        return self.loaded.path

    @property
    def classes(self) -> list[WorkloadClass]:
        """The workload classes, in the order of the instance's class indices."""
        return self.loaded.scenario.classes

    @property
    def base_index(self) -> int:
        """Index of the scenario written per year."""
        return self.scenario_names.index(self.horizon.base)


def horizon_of(loaded: LoadedScenario) -> HorizonSection:
    """The scenario's horizon; a fleet mix without one plans one year (``2027``) under its own demand and solver limits."""
    horizon, solver = loaded.scenario.horizon, loaded.scenario.solver
    if horizon is not None:
        return horizon
    return HorizonSection(
        years=[2027], gap=solver.gap, time_limit_s=solver.time_limit_s or HorizonSection.model_fields["time_limit_s"].default
    )


def aggregated(loaded: LoadedScenario, horizon: HorizonSection) -> LoadedScenario:
    """The scenario at the build-out's aggregation (``horizon.clusters``, ``horizon.time_slices``) on its first accelerator."""
    scenario = loaded.scenario
    demand = scenario.demand.model_copy(update={"clusters": horizon.clusters or scenario.demand.clusters})
    time = scenario.time.model_copy(update={"slices": horizon.time_slices or scenario.time.slices})
    serving = with_accelerator(scenario.serving, offers(scenario.horizon, scenario.serving)[0])
    changed = scenario.model_copy(update={"demand": demand, "time": time, "serving": serving})
    return LoadedScenario(scenario=changed, path=loaded.path)


def power_schedule(loaded: LoadedScenario, horizon: HorizonSection, sites: pd.DataFrame, years: list[int]) -> FloatArray:
    """``(M, Y)`` MW energized per site and year: the schedule CSV where it lists a site, else the catalog's.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario (paths are relative to it).
    horizon : HorizonSection
        Its horizon (``power_schedule``).
    sites : pandas.DataFrame
        The candidate sites.
    years : list of int
        Planning years.

    Returns
    -------
    numpy.ndarray
        MW in each year: a listed site has, in year ``y``, the MW of its latest row with ``year <= y`` (0 before its first).

    Raises
    ------
    InputError
        Every bad row of the schedule (unknown site, missing or negative MW, MW that go down), gathered.
    """
    mw = np.repeat(sites["mw_available"].to_numpy(float)[:, None], len(years), axis=1)
    if horizon.power_schedule is None:
        return mw
    path = loaded.resolve(horizon.power_schedule)
    table = _read_schedule(path, set(sites["id"]))
    index = {site: j for j, site in enumerate(sites["id"])}
    for site, rows in table.groupby("site_id", sort=False):
        rows = rows.sort_values("year")
        j = index[str(site)]
        for y, year in enumerate(years):
            earlier = rows[rows["year"] <= year]
            mw[j, y] = float(earlier["mw_available"].iloc[-1]) if len(earlier) else 0.0
    return mw * loaded.scenario.sites.mw_multiplier


_SCHEDULE_COLUMNS = (
    Column("site_id", help="site id of the catalog"),
    Column("year", "number", whole=True, help="year the MW are energized from, e.g. 2029"),
    Column("mw_available", "number", low=0.0, help="MW energized from that year on"),
)


def _read_schedule(path: Path, known_sites: set[str]) -> pd.DataFrame:
    """The schedule's rows (``site_id``, ``year``, ``mw_available``); InputError lists every bad row."""
    table = read_table(path, fix="write a CSV site_id,year,mw_available", comment="#")
    problems = missing_columns(table, _SCHEDULE_COLUMNS)
    raise_if(problems)
    known(table, "site_id", known_sites, problems, what="site", fix="use an id of the site catalog")
    year = numbers(table, _SCHEDULE_COLUMNS[1], problems)
    mw = numbers(table, _SCHEDULE_COLUMNS[2], problems)
    raise_if(problems)
    _repeated_site_years(table, year, problems)
    raise_if(problems)
    schedule = pd.DataFrame({"site_id": table.column("site_id"), "year": year.astype("int64"), "mw_available": mw})
    raise_if(_power_that_goes_down(schedule, str(path)))
    return schedule


def _repeated_site_years(table: Table, year: pd.Series, problems: list[Problem]) -> None:
    """Two rows for one site and year: one value would silently win."""
    first: dict[tuple[str, int], int] = {}
    for k, key in enumerate(zip(table.column("site_id").tolist(), year.astype("int64").tolist(), strict=True)):
        if key in first:
            rule = f"a second row for site {key[0]!r} in {key[1]} (first at {table.where(first[key])})"
            problems.append(table.problem(k, "year", rule, "give each site one row per year"))
        else:
            first[key] = k


def _power_that_goes_down(schedule: pd.DataFrame, source: str) -> list[Problem]:
    problems = []
    for site_key, rows in schedule.groupby("site_id", sort=False):
        ordered = rows.sort_values("year")
        if (np.diff(ordered["mw_available"].to_numpy(float)) < 0).any():
            problems.append(
                Problem(
                    source,
                    f"site {site_key}",
                    "mw_available",
                    "energized MW go down in a later year",
                    "list MW that only grow (a site keeps its interconnection)",
                )
            )
    return problems


def growth_multipliers(scenarios: list[DemandScenario], country: NDArray[np.str_], years: list[int]) -> FloatArray:
    """``(n, Y, S)`` demand of each population relative to the first year, per scenario."""
    elapsed = np.array(years, dtype=float) - years[0]
    rates = np.stack([region_values(country, s.growth_by_region, s.growth_per_year) for s in scenarios], axis=1)  # (n, S)
    return np.asarray((1.0 + rates[:, None, :]) ** elapsed[None, :, None])


def class_share_path(classes: list[WorkloadClass], horizon: HorizonSection, years: list[int]) -> FloatArray:
    """``(K, Y)`` each class's share in each year, relative to the scenario's shares (linear between given years)."""
    base = np.array([c.share for c in classes])
    if not horizon.class_shares:
        return np.ones((len(classes), len(years)))
    given = sorted(horizon.class_shares)
    table = np.array([[horizon.class_shares[y][c.name] for y in given] for c in classes])
    shares = np.array([np.interp(years, given, table[k]) for k in range(len(classes))])
    shares /= shares.sum(axis=0, keepdims=True)
    return np.asarray(shares / base[:, None])


def _existing(horizon: HorizonSection, sites: pd.DataFrame, fleet: Fleet, years: list[int], life: int, source: str) -> FloatArray:
    nodes = np.zeros((len(sites), len(fleet.ids), len(years)))
    ids = list(sites["id"])
    problems = []
    for n, entry in enumerate(horizon.existing_fleet):
        if entry.site not in ids:
            problems.append(
                Problem(
                    source,
                    f"horizon.existing_fleet[{n}]",
                    "site",
                    f"unknown site {entry.site!r}",
                    "use an id of the site catalog",
                )
            )
            continue
        alive = (np.array(years) >= entry.installed_year) & (np.array(years) < entry.installed_year + life)
        nodes[ids.index(entry.site), fleet.ids.index(entry.accelerator)] += entry.nodes * alive
    if problems:
        raise InputError(problems)
    return nodes


def site_parts(fleet: Fleet, barred: NDArray[np.bool_], existing: FloatArray) -> NDArray[np.bool_]:
    """``(M, A)`` parts a site may ever run: on offer and not barred there in some year, or installed before."""
    return np.asarray((fleet.offered[None, :, :] & ~barred).any(axis=2) | (existing.sum(axis=2) > 0))


def part_groups(parts: NDArray[np.bool_]) -> list[tuple[IntArray, NDArray[np.bool_]]]:
    """Sites that may run the same set of parts, with that set (a site that may run none serves nobody: left out).

    Parameters
    ----------
    parts : numpy.ndarray of bool
        ``(M, A)`` from :func:`site_parts`.

    Returns
    -------
    list of tuple
        ``(site indices, (A,) parts)`` per distinct set.
    """
    return [(np.flatnonzero((parts == key).all(axis=1)), key) for key in np.unique(parts, axis=0) if key.any()]


def _allowed(instance: Instance, groups: tuple[GroupRungs, ...], mw: FloatArray, parts: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """Pairs inside the objective at some rung on every part the site may run (at its KV tier), permitted, with power."""
    within = np.zeros((len(instance.commodity_class), parts.shape[0]), dtype=bool)
    for group in groups:
        columns = group.columns
        within[:, columns] = commodity_within_budget(
            instance.rtt_ms[:, columns],
            group.reach,
            instance.retrieval_extra_ms[:, columns],
            instance.commodity_class,
            instance.commodity_population,
        ).dense()
    # The instance's residency, whole-country rules and regimes alike (its allowed pairs are for one part).
    permitted = commodity_permitted(
        instance.populations.table["country_code"].to_numpy(str),
        instance.sites["country_code"].to_numpy(str),
        instance.facts.residency,
        instance.split(),
        instance.regimes,
    )
    return np.asarray(within & permitted.dense() & (mw.max(axis=1) > 0)[None, :])


def scenario_goodput(
    classes: list[WorkloadClass],
    serving: ServingSection,
    offered: list[AcceleratorOffer],
    horizon: HorizonSection,
    fleet: Fleet,
    years: list[int],
    *,
    source: str,
) -> FloatArray:
    """``(K, A, Y, S)`` goodput per node: the scenario's model, or a scenario's ``model_change`` from its year on.

    ``classes`` and ``serving`` are the scenario's sections, ``offered`` its accelerators (:func:`offers`).

    Raises
    ------
    InputError
        A model the serving catalog does not know, with the scenario's key path.
    """
    base = fleet.goodput_tok_s
    table = np.repeat(np.repeat(base[:, :, None, None], len(years), axis=2), len(horizon.demand_scenarios), axis=3)
    problems = []
    for s, scenario in enumerate(horizon.demand_scenarios):
        change = scenario.model_change
        if change is None:
            continue
        try:
            changed = model_goodput_tok_s(classes, serving, fleet, offered, change.model)
        except InputError as exc:
            where = f"horizon.demand_scenarios[{s}].model_change.model"
            problems += [Problem(source, where, "", p.rule, p.fix) for p in exc.problems]
            continue
        later = np.array(years) >= change.year
        table[:, :, later, s] = changed[:, :, None]
    if problems:
        raise InputError(problems)
    return table


def _per_token(goodput: FloatArray) -> FloatArray:
    """Nodes per token/s (0 where a node cannot serve the class)."""
    return np.asarray(np.where(goodput > 0, 1.0 / np.maximum(goodput, 1e-300), 0.0))


def site_charges_usd_per_mwh(instance: Instance, carbon_usd_per_t: list[float], water_usd_per_m3: float) -> FloatArray:
    """``(M, Y)`` carbon and water charges on a MWh drawn at each site in each year. [USD/MWh]

    The carbon price of the year times the site's grid intensity (its day's mean: the build-out's slices price energy
    by the day), and the water price times its water per MWh (:mod:`placement.rules.resources`). Raises InputError where a
    price meets a site without the figure.
    """
    m, years = len(instance.sites), len(carbon_usd_per_t)
    charge = np.zeros((m, years))
    if any(price > 0 for price in carbon_usd_per_t):
        intensity = day_mean_intensity(instance)
        _raise_if_unknown(instance, np.isnan(intensity), "carbon_intensity_g_per_kwh", "a carbon price")
        charge += intensity[:, None] / 1000.0 * np.asarray(carbon_usd_per_t)[None, :]
    if water_usd_per_m3 > 0:
        water = instance.site_water.total_m3_per_mwh if instance.site_water is not None else np.full(m, np.nan)
        _raise_if_unknown(instance, np.isnan(water), "climate", "a water price")
        charge += (water * water_usd_per_m3)[:, None]
    return charge


def day_mean_intensity(instance: Instance) -> FloatArray:
    """``(M,)`` each site's grid carbon intensity over the day (NaN: unknown). [gCO2e/kWh]"""
    intensity = instance.carbon_intensity_g_per_kwh
    if intensity is None:
        return np.asarray(instance.sites["carbon_intensity_g_per_kwh"].to_numpy(float))
    return np.asarray(intensity @ (instance.slice_hours / instance.slice_hours.sum()))


def year_caps(loaded: LoadedScenario, instance: Instance) -> tuple[YearCap, ...]:
    """The scenario's carbon and water caps (:func:`placement.rules.resources.cap_specs`) as the build-out holds them.

    Each site's figure per MWh is its day's mean, as the written tables count a year's emissions and water
    (:func:`day_mean_intensity`, water flat over the day); a cap counts only its region's or its site's.

    Raises
    ------
    InputError
        A region naming no site, or a site a cap counts whose carbon intensity or water is unknown.
    """
    objective = loaded.scenario.objective
    if not objective.has_caps:
        return ()
    sites = instance.sites
    nan = np.full(len(sites), np.nan)
    water = instance.site_water if instance.site_water is not None else SiteWater(nan, nan)
    intensity = day_mean_intensity(instance)[:, None]
    specs = cap_specs(objective, sites, intensity, water, source=str(loaded.path), catalog=instance.facts.catalog)
    caps = []
    for spec in specs:
        counted = np.ones(len(sites), dtype=bool) if spec.sites is None else spec.sites
        per_mwh = np.where(counted, np.nan_to_num(spec.per_mwh[:, 0]), 0.0)
        caps.append(YearCap(spec.name, spec.unit, per_mwh, spec.limit_per_year))
    return tuple(caps)


def _raise_if_unknown(instance: Instance, unknown: NDArray[np.bool_], field: str, what: str) -> None:
    if unknown.any():
        catalog = instance.facts.catalog
        raise InputError([
            Problem(catalog, f"site '{site}'", field, f"{what} needs every site's figure, and this site has none",
                    f"give it a {field} in the catalog, or drop the price")
            for site in instance.sites["id"].astype(str).to_numpy()[unknown].tolist()
        ])  # fmt: skip


def _site_costs(
    economics: EconomicsSection, serving: ServingSection, sites: pd.DataFrame, fleet: Fleet, charge: FloatArray
) -> tuple[FloatArray, ...]:
    """Per site: fixed cost, cost per reserved MW; per site and accelerator: node MW, running cost, full-load energy.

    ``charge``: ``(M, Y)`` carbon and water charges per MWh (:func:`site_charges_usd_per_mwh`). Without any, running
    cost and energy are ``(M, A)``; with them ``(M, A, Y)``, each year at its own charge.
    """
    pue = sites["pue"].to_numpy(float)
    price = sites["power_price_usd_per_mwh"].to_numpy(float)
    if charge.any():
        price = price[:, None] + charge  # (M, Y)
    fixed = sites["fixed_cost_usd_per_h"].fillna(economics.site_fixed_cost_usd_per_h).to_numpy(float)
    per_mw = amortised_usd_per_h(
        sites["capex_usd_per_mw"].to_numpy(float) / pue, economics.discount_rate, economics.facility_life_years
    )
    node_mw = fleet.node_kw[None, :] * pue[:, None] / 1000.0
    idle = serving.idle_power_share
    per_mwh = price[:, None] if price.ndim == 1 else price[:, None, :]  # (M, 1) or (M, 1, Y)
    mw = node_mw if price.ndim == 1 else node_mw[:, :, None]
    running = mw * per_mwh * idle + economics.opex_usd_per_node_h
    node_energy = mw * per_mwh * (1.0 - idle)  # (M, A[, Y]) load-following power of a node at full load
    return fixed, np.asarray(per_mw), node_mw, np.asarray(running), np.asarray(node_energy)


def check_buildout_inputs(loaded: LoadedScenario, sites: pd.DataFrame) -> list[Problem]:
    """Every problem of the build-out's own inputs that :func:`build_buildout` would raise, without building it.

    The accelerators on offer (catalog ids, repeats, years, whether they serve every class), each future's
    ``model_change``, the existing fleet's sites and the power schedule, gathered: ``placement validate`` reports
    them with the scenario's other problems.

    Parameters
    ----------
    loaded : LoadedScenario
        A scenario with a horizon or a fleet mix, its YAML valid.
    sites : pandas.DataFrame
        Its candidate sites.

    Returns
    -------
    list of Problem
        Empty when the build-out can be built.
    """
    scenario, horizon = loaded.scenario, horizon_of(loaded)
    years, source = list(horizon.years), str(loaded.path)
    problems = problems_of(lambda: power_schedule(loaded, horizon, sites, years))
    try:
        fleet = build_fleet(scenario.classes, scenario.serving, scenario.horizon, years, source=source)
    except InputError as exc:
        return list(exc.problems) + problems
    life = horizon.node_life_years or math.ceil(scenario.economics.node_life_years)
    problems += problems_of(lambda: _existing(horizon, sites, fleet, years, life, source))
    offered = offers(scenario.horizon, scenario.serving)
    problems += problems_of(
        lambda: scenario_goodput(scenario.classes, scenario.serving, offered, horizon, fleet, years, source=source)
    )
    return problems


def build_buildout(loaded: LoadedScenario, *, progress: Progress = quiet) -> Buildout:
    """Turn a scenario with a horizon (or a fleet mix) into the build-out model's arrays.

    Parameters
    ----------
    loaded : LoadedScenario
        A validated scenario with ``horizon`` or ``serving.accelerators``.
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    Buildout
        The arrays and their meaning.

    Raises
    ------
    InputError
        Bad power schedule, unknown sites or accelerators, gathered per file.
    """
    serving = with_start_tier(loaded.scenario.classes, loaded.scenario.serving, source=str(loaded.path))
    if serving is not loaded.scenario.serving:  # kv_cache.tier auto: a fleet per site, each free site on the best tier
        loaded = LoadedScenario(scenario=loaded.scenario.model_copy(update={"serving": serving}), path=loaded.path)
    scenario, horizon = loaded.scenario, horizon_of(loaded)
    years = list(horizon.years)
    instance = build_instance(aggregated(loaded, horizon), progress=progress)
    fleet = build_fleet(scenario.classes, scenario.serving, scenario.horizon, years, source=str(loaded.path))
    tiers = build_site_tiers(
        scenario.classes, scenario.serving, scenario.horizon, instance.sites, years, fleet, source=str(loaded.path)
    )
    progress(f"fleet: {', '.join(fleet.ids)}; goodput per node by class: {np.round(fleet.goodput_tok_s).astype(int).tolist()}")
    for line in fleet.cannot_serve:
        progress(f"fleet: {line}")
    sites = instance.sites
    mw = power_schedule(loaded, horizon, sites, years)
    life = horizon.node_life_years or math.ceil(scenario.economics.node_life_years)
    existing = _existing(horizon, sites, fleet, years, life, str(loaded.path))
    rules = list(instance.facts.availability)  # read once, by build_instance
    barred = barred_mask(rules, sites["country_code"].fillna("").astype(str).tolist(), fleet.ids, years)
    parts = site_parts(fleet, barred, existing)
    offered = offers(scenario.horizon, scenario.serving)
    groups = groups_of(tiers, parts, scenario.classes, scenario.serving, offered, source=str(loaded.path))
    allowed = _allowed(instance, groups, mw, parts)
    laddered = bool(scenario.serving.node_ttft_ladder)
    rungs = pair_rungs(instance, groups) if laddered else None
    scenarios = horizon.demand_scenarios
    country = instance.populations.table["country_code"].to_numpy(str)[instance.commodity_population]
    growth = growth_multipliers(scenarios, country, years)  # (c, Y, S)
    mix = class_share_path(scenario.classes, horizon, years)[instance.commodity_class]  # (c, Y)
    trajectory = instance.commodity_slice_demand_tok_s[:, :, None, None] * (growth * mix[:, :, None])[:, None, :, :]
    c_count, n_slices = instance.commodity_slice_demand_tok_s.shape
    shapes = trajectory.reshape(c_count, -1)
    codes = None if rungs is None else np.where(allowed, rungs, 0).astype(np.int16)  # merged: one rung at each site
    row_of_commodity, modelled = merge_commodities(PairMask.of(allowed), instance.commodity_class, shapes, codes)
    members = row_of_commodity >= 0
    row_demand = np.zeros((len(modelled), n_slices, len(years), len(scenarios)))
    np.add.at(row_demand, row_of_commodity[members], trajectory[members])
    commodity_demand = instance.commodity_mean_demand_tok_s[:, None, None] * growth * mix[:, :, None]  # (c, Y, S)
    row_mean = np.zeros((len(modelled), len(years), len(scenarios)))
    np.add.at(row_mean, row_of_commodity[members], commodity_demand[members])
    pair_row, pair_site = (a.astype(np.int64) for a in np.nonzero(allowed[modelled]))
    carbon_path = horizon.carbon_price_path(scenario.objective.carbon_usd_per_t)
    charge = site_charges_usd_per_mwh(instance, carbon_path, scenario.objective.water_usd_per_m3)
    fixed, per_mw, node_mw, running, node_energy = _site_costs(scenario.economics, scenario.serving, sites, fleet, charge)
    goodput = scenario_goodput(scenario.classes, scenario.serving, offered, horizon, fleet, years, source=str(loaded.path))
    by_year = node_energy.ndim == 3  # a charge that changes by year: (M, A, Y)
    if any(s.model_change is not None for s in scenarios):
        last = np.round(goodput[..., -1, :]).astype(int).T.tolist()
        progress(f"model changes: goodput per node in the last year, by scenario {last}")
        per_node = node_energy[:, None, :, :, None] if by_year else node_energy[:, None, :, None, None]
        energy = per_node * _per_token(goodput)[None]
    elif by_year:
        goodput = fleet.goodput_tok_s
        energy = np.repeat(
            (node_energy[:, None, :, :] * _per_token(goodput)[None, :, :, None])[..., None], len(scenarios), axis=4
        )
    else:
        goodput = fleet.goodput_tok_s
        energy = node_energy[:, None, :] * _per_token(goodput)[None]
    if by_year:
        progress(
            f"carbon and water charges by year: {', '.join(f'{y} ${p:g}/t' for y, p in zip(years, carbon_path, strict=True))}"
        )
    rate = horizon.discount_rate
    economics = scenario.economics
    prices = np.nan_to_num(fleet.node_capex_usd)
    margin = None if horizon.integer_nodes else node_mw.sum(axis=1) * min(life, len(years))
    data = BuildoutInput(
        year_weight_h=HOURS_PER_YEAR / (1.0 + rate) ** (np.array(years, dtype=float) - years[0]),
        slice_weight=instance.slice_hours / instance.slice_hours.sum(),
        row_class=instance.commodity_class[modelled],
        row_demand_tok_s=row_demand,
        pair_row=pair_row,
        pair_site=pair_site,
        site_fixed_usd_per_h=fixed,
        site_usd_per_h_per_mw=per_mw,
        site_mw_available=mw,
        site_locked=sites["locked"].to_numpy(bool) | (existing.sum(axis=(1, 2)) > 0),
        goodput_tok_s=goodput,
        node_mw=node_mw,
        node_usd_per_h=running,
        energy_usd_per_h_per_tok_s=energy,
        offered=fleet.offered,
        node_capex_usd=prices,
        node_annuity_usd_per_h=amortised_usd_per_h(prices, economics.discount_rate, float(life)),
        life_years=life,
        existing_nodes=existing,
        probability=np.array([s.probability for s in scenarios]),
        unserved_usd_per_million_tokens=horizon.unserved_penalty_usd_per_million_tokens,
        integer_nodes=horizon.integer_nodes,
        power_margin_mw=margin,
        row_mean_demand_tok_s=row_mean,
        barred=barred if barred.any() else None,
        node_idle_mw=node_mw * scenario.serving.idle_power_share,
        node_load_mw=node_mw * (1.0 - scenario.serving.idle_power_share),
        caps=year_caps(loaded, instance),
        n_plus_one=NPlusOne(instance.inputs.failure_domains, instance.failure_domain_names)
        if scenario.fault_tolerance.n_plus_one
        else None,
        pair_load=None if rungs is None else pair_load(groups, instance.commodity_class, rungs)[modelled[pair_row], pair_site],
    )
    site_price = sites["power_price_usd_per_mwh"].to_numpy(float)[:, None] + charge
    data = with_site_tiers(data, tiers, site_price)
    cross = None
    if scenario.serving.cross_metro_prefill is not None:
        data, cross = with_cross_metro(data, instance, row_of_commodity, scenario.serving.cross_metro_prefill, groups)
        progress(f"cross-metro prefill: {0 if cross is None else len(cross)} columns (decode here, prefill at a partner)")
    if tiers.cached:
        progress(f"KV tiers: {', '.join(tiers.names)}; cold-cache nodes per open site {tiers.warmup_nodes().tolist()}")
    progress(
        f"build-out: {len(years)} years x {len(scenarios)} scenarios, {len(modelled)} demand rows, {len(pair_row)} pairs, "
        f"{int((mw.max(axis=1) > 0).sum())} sites with power, {len(fleet.ids)} accelerators"
    )
    return Buildout(
        loaded,
        horizon,
        instance,
        fleet,
        data,
        years,
        [s.name for s in scenarios],
        allowed,
        row_of_commodity,
        commodity_demand,
        rules,
        parts,
        site_price,
        carbon_path,
        tiers,
        groups,
        cross,
    )
