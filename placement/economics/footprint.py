"""Energy and grid emissions of a plan: what each open site draws over a year, and the carbon that electricity emits.

A node draws its idle share of power whenever it is installed and the rest in proportion to the load it carries
(``serving.idle_power_share``, the same split the cost model prices). Facility power, PUE included, in each time
slice of the day is then

    P[j, t] = node_mw[j] * (idle * (nodes[j] + warm-up nodes[j]) + (1 - idle) * busy[j, t])      [MW]

with ``busy`` the node-equivalents the plan's shares load in the slice (the daily mean with one peak slice, as
energy is priced). A year is 365 such days; emissions are the energy times the grid's carbon intensity at the
site (``carbon_intensity_g_per_kwh`` of the catalog: g/kWh is kg/MWh). Everything here is arithmetic on arrays:
the plan's tables call it, the solve does not.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from placement._types import FloatArray

DAYS_PER_YEAR = 365.0
"""Days a year of the plan's daily cycle (the cost model's 8,760 hours)."""

SECONDS_PER_YEAR = DAYS_PER_YEAR * 24 * 3600.0


def site_power_mw_by_slice(
    node_mw: ArrayLike, nodes: ArrayLike, warmup_nodes: ArrayLike, busy_nodes: ArrayLike, idle_power_share: float
) -> FloatArray:
    """``(m, T)`` facility power each site draws in each slice, PUE included. [MW]

    Parameters
    ----------
    node_mw : array_like
        ``(m,)`` facility power of one node at full load (IT power times PUE). [MW]
    nodes, warmup_nodes : array_like
        ``(m,)`` serving nodes and cache warm-up nodes installed (0 at a closed site).
    busy_nodes : array_like
        ``(m, T)`` node-equivalents of load in each slice (at most ``nodes``; more is clipped).
    idle_power_share : float
        Share of a node's power drawn at zero load.

    Returns
    -------
    numpy.ndarray
        ``(m, T)`` power. [MW]
    """
    installed = np.asarray(nodes, dtype=float) + np.asarray(warmup_nodes, dtype=float)
    busy = np.clip(np.asarray(busy_nodes, dtype=float), 0.0, np.asarray(nodes, dtype=float)[:, None])
    drawn = idle_power_share * installed[:, None] + (1.0 - idle_power_share) * busy
    return np.asarray(np.asarray(node_mw, dtype=float)[:, None] * drawn)


def energy_mwh_per_year(power_mw: ArrayLike, slice_hours: ArrayLike) -> FloatArray:
    """``(m,)`` energy a year from power by slice of a day. [MWh]"""
    return np.asarray(np.asarray(power_mw, dtype=float) @ np.asarray(slice_hours, dtype=float) * DAYS_PER_YEAR)


def tco2e_per_year(power_mw: ArrayLike, slice_hours: ArrayLike, intensity_g_per_kwh: ArrayLike) -> FloatArray:
    """``(m,)`` emissions a year of power by slice at the grid's intensity by slice. [tCO2e]

    Parameters
    ----------
    power_mw : array_like
        ``(m, T)`` power drawn. [MW]
    slice_hours : array_like
        ``(T,)`` hours of the day each slice stands for.
    intensity_g_per_kwh : array_like
        ``(m, T)`` (or ``(m, 1)``) carbon intensity of the electricity. [gCO2e/kWh, = kg/MWh]

    Returns
    -------
    numpy.ndarray
        ``(m,)`` emissions. [tCO2e]
    """
    kg_per_h = np.asarray(power_mw, dtype=float) * np.asarray(intensity_g_per_kwh, dtype=float)
    return np.asarray(kg_per_h @ np.asarray(slice_hours, dtype=float) * DAYS_PER_YEAR / 1000.0)


def per_million_tokens(per_year: ArrayLike, goodput_tok_s: ArrayLike, *, scale: float = 1.0) -> FloatArray:
    """A yearly figure per million goodput tokens (NaN without goodput), times ``scale`` (1e6: tonnes to grams).

    Parameters
    ----------
    per_year : array_like
        The figure a year (tCO2e, m3, ...).
    goodput_tok_s : array_like
        Mean goodput delivered inside the objectives. [tokens/s]
    scale : float, optional
        Unit change of the result (1e6 turns tonnes into grams, 1e3 cubic metres into litres).

    Returns
    -------
    numpy.ndarray
        The figure per million goodput tokens.
    """
    tokens_m = np.asarray(goodput_tok_s, dtype=float) * SECONDS_PER_YEAR / 1e6
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(tokens_m > 0, np.asarray(per_year, dtype=float) * scale / tokens_m, np.nan))


LOW_CARBON_FLOOR_SHARE = 0.1
"""Least carbon intensity of any hour, as a share of the day's mean: low-carbon generation is not free of emissions
over its life cycle (IPCC AR5 WGIII Annex III medians: solar PV 41-48, wind 11-12, nuclear 12, hydro 24 gCO2e/kWh),
so an hour that solar covers in full keeps a floor (an estimate of the shape, not a measured figure)."""


def solar_by_local_hour() -> FloatArray:
    """``(24,)`` clear-sky solar output by local solar hour, mean 1: a half sine from 06:00 to 18:00 (hour midpoints)."""
    middle = np.arange(24) + 0.5
    output = np.clip(np.sin(np.pi * (middle - 6.0) / 12.0), 0.0, None)
    return np.asarray(output / output.mean())


def intensity_shape(solar_share: ArrayLike, fossil_share: ArrayLike, solar_by_hour: ArrayLike) -> FloatArray:
    """``(m, H)`` multiplier of each site's mean carbon intensity in each hour (mean 1 over the hours).

    Solar generation follows its daily curve and displaces fossil generation hour by hour (other sources and
    the load are taken as flat): fossil's share of the hour is ``fossil - solar * (curve - 1)``, at least 0, and the
    intensity follows it, floored at :data:`LOW_CARBON_FLOOR_SHARE` of the mean. A grid without fossil generation,
    or without solar, is flat.

    Parameters
    ----------
    solar_share, fossil_share : array_like
        ``(m,)`` shares of the year's generation (0 to 1; NaN: unknown, flat).
    solar_by_hour : array_like
        ``(m, H)`` solar output at each site in each hour, mean 1 (:func:`solar_by_local_hour` by UTC hour).

    Returns
    -------
    numpy.ndarray
        ``(m, H)`` multipliers.
    """
    solar = np.nan_to_num(np.asarray(solar_share, dtype=float))[:, None]
    fossil = np.nan_to_num(np.asarray(fossil_share, dtype=float))[:, None]
    hourly = np.clip(fossil - solar * (np.asarray(solar_by_hour, dtype=float) - 1.0), 0.0, None)
    mean = hourly.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        shape = np.where((mean > 0) & (fossil > 0), hourly / mean, 1.0)
    shape = np.maximum(shape, LOW_CARBON_FLOOR_SHARE)
    return np.asarray(shape / shape.mean(axis=1, keepdims=True))
