"""Six world regions for latency: what transit inflation, its spread and a planner's corrections are keyed by.

A coarse latitude/longitude rule, not political borders: routes follow the cable landings and the
exchange points of a region, so a point's region is where it is, not which country claims it. The
six are North America (with Central America and the Caribbean north of 12°N), South America,
Europe, Africa with the Middle East, Asia, and Oceania.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

WORLD_REGIONS = ("north_america", "south_america", "europe", "africa_middle_east", "asia", "oceania")
"""The regions, in the order their indices refer to."""


def world_region(lat_deg: ArrayLike, lon_deg: ArrayLike) -> NDArray[np.str_]:
    """The region of each point (one of :data:`WORLD_REGIONS`).

    Parameters
    ----------
    lat_deg, lon_deg : array_like
        Coordinates. [degrees]

    Returns
    -------
    numpy.ndarray of str
        Region names, the shape of the inputs (at least 1-d).
    """
    lat = np.atleast_1d(np.asarray(lat_deg, dtype=float))
    lon = np.atleast_1d(np.asarray(lon_deg, dtype=float))
    conditions = [
        (lon < -30) & (lat > 12),
        lon < -30,
        (lon < 45) & (lat > 35),
        lon < 60,
        (lat > -10) | (lon < 110),
    ]
    return np.asarray(np.select(conditions, list(WORLD_REGIONS[:5]), default=WORLD_REGIONS[5]))


def region_index(lat_deg: ArrayLike, lon_deg: ArrayLike) -> NDArray[np.intp]:
    """Index into :data:`WORLD_REGIONS` of each point's region."""
    names = world_region(lat_deg, lon_deg)
    order = {name: k for k, name in enumerate(WORLD_REGIONS)}
    return np.asarray([order[str(n)] for n in names], dtype=np.intp)


def region_pair_key(region_a: str, region_b: str) -> str:
    """The unordered pair as one key, ``"europe|north_america"`` (names sorted)."""
    first, second = sorted((region_a, region_b))
    return f"{first}|{second}"
