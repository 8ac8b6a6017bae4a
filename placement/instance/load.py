"""The sites and the demand of a scenario, read and checked: the catalog, the populations and their demand per slice."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from placement._errors import InputError, Problem
from placement._types import FloatArray
from placement.scenario.load import Resolve
from placement.scenario.sections import DemandSection, SitesSection, TimeSection
from placement.world.catalog import load_catalog
from placement.world.cities import load_cities
from placement.world.demand import Populations, aggregate, demand_tok_s
from placement.world.regions import region_values
from placement.world.timeslices import (
    HOURS,
    block_demand,
    hourly_multipliers,
    load_profile,
    utc_offset_hours,
)


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
