"""Follow-the-sun demand: each population's goodput demand in each UTC hour or block of hours.

A diurnal profile gives demand by *local* hour (mean 1 over the day); each city's IANA time zone
turns it into UTC hours, so the world's demand moves west with the sun and a site can serve
Europe's evening and America's morning with the same nodes. With fewer than 24 slices, the day is
cut into contiguous blocks of UTC hours and each population's demand in a block is its largest
hourly demand in it, so capacity sized on the blocks holds in every hour.
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InputError, Problem

HOURS = 24
REFERENCE_DAY = dt.datetime(2024, 5, 15, 12, tzinfo=dt.UTC)
"""Day on which time-zone offsets are taken (daylight saving as in mid-May)."""


def load_profile(path: str | Path) -> NDArray[np.float64]:
    """Read a 24-hour profile (CSV ``local_hour,multiplier``).

    Parameters
    ----------
    path : str or Path
        The profile file.

    Returns
    -------
    numpy.ndarray
        ``(24,)`` multipliers by local hour 0..23.

    Raises
    ------
    InputError
        When hours are missing or repeated, or a multiplier is negative or not a number.
    """
    source = str(path)
    try:
        table = pd.read_csv(path, encoding="utf-8-sig")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise InputError(
            [Problem(source, "", "", f"not a readable profile CSV ({exc})", "write local_hour,multiplier rows")]
        ) from None
    problems = []
    for column in ("local_hour", "multiplier"):
        if column not in table.columns:
            problems.append(Problem(source, "header", column, "required column is missing", "use columns local_hour,multiplier"))
    if problems:
        raise InputError(problems)
    hours = pd.to_numeric(table["local_hour"], errors="coerce")
    values = pd.to_numeric(table["multiplier"], errors="coerce")
    for k in range(len(table)):
        if pd.isna(values.iloc[k]) or values.iloc[k] < 0:
            problems.append(Problem(source, f"row {k + 1}", "multiplier", "must be a number >= 0", "fix the value"))
    if sorted(hours.dropna().astype(int).tolist()) != list(range(HOURS)):
        problems.append(Problem(source, "", "local_hour", "must list each hour 0..23 once", "write 24 rows"))
    if problems:
        raise InputError(problems)
    profile = np.zeros(HOURS)
    profile[hours.astype(int).to_numpy()] = values.to_numpy(float)
    return profile


def load_area_profiles(path: str | Path, value: str, areas: set[str]) -> dict[str, NDArray[np.float64]]:
    """Read 24-hour profiles by area (CSV ``area,local_hour,<value>``): each area lists every hour once.

    Parameters
    ----------
    path : str or Path
        The file.
    value : str
        The value column's name (e.g. ``gco2e_per_kwh``); values must be numbers >= 0.
    areas : set of str
        The areas the file may name (site ids and country codes); another is an error, not silently unused.

    Returns
    -------
    dict
        Area -> ``(24,)`` values by local hour 0..23.

    Raises
    ------
    InputError
        Every problem found, by row and field.
    """
    source = str(path)
    try:
        table = pd.read_csv(path, encoding="utf-8-sig", dtype={"area": str}, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise InputError(
            [Problem(source, "", "", f"not a readable CSV ({exc})", f"write area,local_hour,{value} rows")]
        ) from None
    missing = [c for c in ("area", "local_hour", value) if c not in table.columns]
    if missing:
        raise InputError([Problem(source, "header", c, "required column is missing", f"use columns area,local_hour,{value}")
                          for c in missing])  # fmt: skip
    if not len(table):
        raise InputError(
            [Problem(source, "", "", "the file has a header and no rows", f"give 24 rows (area,local_hour,{value}) per area")]
        )
    hours = pd.to_numeric(table["local_hour"], errors="coerce")
    values = pd.to_numeric(table[value], errors="coerce")
    problems = []
    unknown: dict[str, list[int]] = {}  # each unknown area once, with its rows
    for k, area in enumerate(table["area"].astype(str).tolist()):
        where = f"row {k + 2}"
        if area not in areas:
            unknown.setdefault(area, []).append(k + 2)
        hour = hours.iloc[k]
        if pd.isna(hour) or hour != int(hour) or not 0 <= hour < HOURS:
            problems.append(Problem(source, where, "local_hour", "must be a whole hour 0..23", "fix the value"))
        if pd.isna(values.iloc[k]) or values.iloc[k] < 0:
            problems.append(Problem(source, where, value, "must be a number >= 0", "fix the value"))
    for area, written in unknown.items():
        shown = ", ".join(str(r) for r in written[:3]) + (", ..." if len(written) > 3 else "")
        where = f"row {written[0]}" if len(written) == 1 else f"rows {shown} ({len(written)} rows)"
        problems.append(Problem(source, where, "area", f"'{area}' is no site id and no site's country code",
                                "name a site of the catalog or an ISO country code one of its sites has"))  # fmt: skip
    if problems:
        raise InputError(problems)
    profiles: dict[str, NDArray[np.float64]] = {}
    for name, rows in table.assign(hour=hours.astype(int), v=values).groupby("area", sort=True):
        if sorted(rows["hour"].tolist()) != list(range(HOURS)):
            problems.append(Problem(source, f"area '{name}'", "local_hour", "must list each hour 0..23 once", "write 24 rows"))
            continue
        profile = np.zeros(HOURS)
        profile[rows["hour"].to_numpy()] = rows["v"].to_numpy(float)
        profiles[str(name)] = profile
    if problems:
        raise InputError(problems)
    return profiles


@lru_cache(maxsize=1024)
def utc_offset_hours(timezone: str) -> float:
    """UTC offset of an IANA time zone on the reference day (0 for an unknown zone).

    Parameters
    ----------
    timezone : str
        IANA name, e.g. ``Europe/Berlin``.

    Returns
    -------
    float
        Offset. [h]
    """
    try:
        offset = REFERENCE_DAY.astimezone(ZoneInfo(timezone)).utcoffset()
    except (ZoneInfoNotFoundError, ValueError):
        return 0.0
    return 0.0 if offset is None else offset.total_seconds() / 3600.0


def hourly_multipliers(offsets_h: NDArray[np.float64], profile: NDArray[np.float64]) -> NDArray[np.float64]:
    """Profile multiplier in each UTC hour for places at the given UTC offsets.

    Parameters
    ----------
    offsets_h : numpy.ndarray
        ``(n,)`` UTC offsets. [h]
    profile : numpy.ndarray
        ``(24,)`` multipliers by local hour.

    Returns
    -------
    numpy.ndarray
        ``(n, 24)`` multiplier in UTC hours 0..23 (fractional offsets interpolate linearly).
    """
    local = (np.arange(HOURS)[None, :] + np.asarray(offsets_h, dtype=float)[:, None]) % HOURS
    low = np.floor(local).astype(int) % HOURS
    frac = local - np.floor(local)
    return np.asarray(profile[low] * (1 - frac) + profile[(low + 1) % HOURS] * frac)


def blocks(n_slices: int) -> list[NDArray[np.int64]]:
    """Split the 24 UTC hours into contiguous blocks.

    Parameters
    ----------
    n_slices : int
        Number of blocks (1 to 24).

    Returns
    -------
    list of numpy.ndarray
        UTC hours in each block.
    """
    return [b.astype(np.int64) for b in np.array_split(np.arange(HOURS), n_slices)]


def block_demand(hourly: NDArray[np.float64], n_slices: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Largest hourly demand in each block of hours, and each block's length.

    Parameters
    ----------
    hourly : numpy.ndarray
        ``(n, 24)`` demand in each UTC hour.
    n_slices : int
        Number of blocks.

    Returns
    -------
    tuple of numpy.ndarray
        ``(n, n_slices)`` block demand (max over the block) and ``(n_slices,)`` hours per block.
    """
    parts = blocks(n_slices)
    demand = np.column_stack([hourly[:, b].max(axis=1) for b in parts])
    return demand, np.array([float(len(b)) for b in parts])


def block_mean(hourly: NDArray[np.float64], n_slices: int) -> NDArray[np.float64]:
    """Mean of each block of hours (for prices).

    Parameters
    ----------
    hourly : numpy.ndarray
        ``(n, 24)`` values in each UTC hour.
    n_slices : int
        Number of blocks.

    Returns
    -------
    numpy.ndarray
        ``(n, n_slices)`` block means.
    """
    return np.column_stack([hourly[:, b].mean(axis=1) for b in blocks(n_slices)])


def site_offsets_h(lon_deg: NDArray[np.float64]) -> NDArray[np.float64]:
    """Solar time offset of a site from its longitude (sites carry no time zone). [h]"""
    return np.asarray(np.round(np.asarray(lon_deg, dtype=float) / 15.0))
