"""What power costs at each site, and what a plan's energy is charged.

Price by hour, the carbon and water charges, and the hourly cost of a node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from placement._errors import InputError, Problem
from placement._types import FloatArray, IntArray
from placement.economics import footprint
from placement.economics.cost import NodeCost, amortised_usd_per_h, load_energy_usd_per_h, node_cost_usd_per_h
from placement.profiles.build import ClassProfile, catalog_node_capex_usd
from placement.rules.resources import GRID_MIX_CSV, SiteWater, water_charge_usd_per_mwh
from placement.scenario.load import Resolve
from placement.scenario.sections import EconomicsSection, ObjectiveSection, ServingSection, TimeSection
from placement.world.bundled import bundled_path
from placement.world.timeslices import (
    block_mean,
    hourly_multipliers,
    load_area_profiles,
    load_profile,
    site_offsets_h,
)


def pair_energy_usd_per_h(
    sites: pd.DataFrame,
    commodity_slice_demand: FloatArray,
    slice_hours: FloatArray,
    pair_commodity: IntArray,
    pair_site: IntArray,
    pair_class: IntArray,
    profiles: list[ClassProfile],
    *,
    kw: float | FloatArray,
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
    pair_kw = kw if np.ndim(kw) == 0 else np.asarray(kw, dtype=float)[pair_site]  # each site's part's node
    mw_per_tok_s = dynamic_share * pair_kw / 1000.0 / goodput[pair_class]
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


def carbon_charge(objective: ObjectiveSection, catalog: str, sites: pd.DataFrame, intensity: FloatArray) -> FloatArray | None:
    """:func:`carbon_charge_usd_per_mwh` at ``objective.carbon_usd_per_t``; an input error names sites without a figure."""
    price = objective.carbon_usd_per_t
    if (price > 0 or objective.carbon_cap_t_per_year is not None) and np.isnan(intensity).any():
        missing = sites["id"].astype(str).to_numpy()[np.isnan(intensity).any(axis=1)].tolist()
        raise InputError([
            Problem(
                catalog, f"site '{site}'", "carbon_intensity_g_per_kwh",
                "a carbon price or cap (objective.carbon_usd_per_t, objective.carbon_cap_t_per_year) needs every "
                "site's grid intensity, and this site has none",
                "give it a carbon_intensity_g_per_kwh (gCO2e/kWh) in the catalog, or drop the carbon price and cap",
            )
            for site in missing
        ])  # fmt: skip
    return carbon_charge_usd_per_mwh(intensity, price)


def water_charge(
    objective: ObjectiveSection, catalog: str, sites: pd.DataFrame, water: SiteWater, n_slices: int
) -> FloatArray | None:
    """:func:`placement.rules.resources.water_charge_usd_per_mwh` at ``objective.water_usd_per_m3``.

    An input error names the sites without a water figure.
    """
    price = objective.water_usd_per_m3
    unknown = np.isnan(water.total_m3_per_mwh)
    if price > 0 and unknown.any():
        raise InputError([
            Problem(
                catalog, f"site '{site}'", "climate",
                "a water price (objective.water_usd_per_m3) needs every site's water per MWh, and this site has none",
                "give it a climate (cool, temperate, hot-humid, hot-dry) or its own wue_l_per_kwh, and a country_code the "
                "grid mix table knows, or drop the water price",
            )
            for site in sites["id"].astype(str).to_numpy()[unknown].tolist()
        ])  # fmt: skip
    return water_charge_usd_per_mwh(water, price, n_slices)


def summed_charges(*charges: FloatArray | None) -> FloatArray | None:
    """The sum of the charges per MWh given (None: none)."""
    given = [c for c in charges if c is not None]
    return None if not given else np.asarray(sum(given[1:], given[0]))


def carbon_profiles(spec: TimeSection, sites: pd.DataFrame, resolve: Resolve) -> dict[str, FloatArray] | None:
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


def site_node_cost(
    economics: EconomicsSection,
    serving: ServingSection,
    sites: pd.DataFrame,
    *,
    kw: float | FloatArray,
    price_multiplier: FloatArray,
    charge_usd_per_mwh: FloatArray | None = None,
    node_capex_usd: FloatArray | None = None,
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
    kw : float or numpy.ndarray
        IT power of one node, or ``(m,)`` of each site's node where sites run different parts. [kW]
    price_multiplier : numpy.ndarray
        ``(m, T)`` power price multiplier per site and slice (:func:`site_price_multiplier`; averaged over the slices).
    charge_usd_per_mwh : numpy.ndarray, optional
        ``(m, T)`` carbon and water charges per MWh (:func:`site_energy_price`; averaged over the slices): in the idle
        power.
    node_capex_usd : numpy.ndarray, optional
        ``(m,)`` the price of one node at each site where sites run different parts (default: the scenario's). [USD]

    Returns
    -------
    NodeCost
        Per-site node cost. [USD/h]
    """
    price = sites["power_price_usd_per_mwh"] * price_multiplier.mean(axis=1)
    if charge_usd_per_mwh is not None:
        price = price + charge_usd_per_mwh.mean(axis=1)
    params = economics.params(catalog_node_capex_usd(serving))
    cost = node_cost_usd_per_h(
        params,
        node_kw=kw,
        pue=sites["pue"],
        price_usd_per_mwh=price,
        facility_capex_usd_per_mw=sites["capex_usd_per_mw"],
        idle_power_share=serving.idle_power_share,
    )
    if node_capex_usd is None:
        return cost
    return replace(cost, node_capex_usd_per_h=amortised_usd_per_h(node_capex_usd, params.discount_rate, params.node_life_years))


def with_tier_cost(cost: NodeCost, tier_usd_per_node_h: FloatArray) -> NodeCost:
    """The node cost with what each site's KV tier adds (``kv_tiers.csv`` ``usd_per_node_h``), as node capex."""
    if not np.any(tier_usd_per_node_h):
        return cost
    return replace(cost, node_capex_usd_per_h=np.asarray(cost.node_capex_usd_per_h + tier_usd_per_node_h))
