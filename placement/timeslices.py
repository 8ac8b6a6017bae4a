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
