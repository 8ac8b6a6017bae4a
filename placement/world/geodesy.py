"""Great-circle geometry on a spherical Earth, vectorised over numpy arrays."""

from __future__ import annotations

import re

import numpy as np
from numpy.typing import ArrayLike, NDArray

EARTH_RADIUS_KM = 6371.0088
"""Mean Earth radius (IUGG). [km]"""


def great_circle_km(lat1_deg: ArrayLike, lon1_deg: ArrayLike, lat2_deg: ArrayLike, lon2_deg: ArrayLike) -> NDArray[np.float64]:
    """Great-circle distance by the haversine formula, broadcasting its arguments.

    Parameters
    ----------
    lat1_deg, lon1_deg : array_like
        First points. [degrees]
    lat2_deg, lon2_deg : array_like
        Second points. [degrees]

    Returns
    -------
    numpy.ndarray
        Distances, in the broadcast shape of the inputs. [km]
    """
    lat1, lon1, lat2, lon2 = (np.radians(np.asarray(a, dtype=float)) for a in (lat1_deg, lon1_deg, lat2_deg, lon2_deg))
    half_dlat = (lat2 - lat1) / 2.0
    half_dlon = (lon2 - lon1) / 2.0
    h = np.sin(half_dlat) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin(half_dlon) ** 2
    return np.asarray(2.0 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0))))


def pairwise_km(lat_a_deg: ArrayLike, lon_a_deg: ArrayLike, lat_b_deg: ArrayLike, lon_b_deg: ArrayLike) -> NDArray[np.float64]:
    """Distance matrix between two point sets.

    Parameters
    ----------
    lat_a_deg, lon_a_deg : array_like
        The ``n`` row points. [degrees]
    lat_b_deg, lon_b_deg : array_like
        The ``m`` column points. [degrees]

    Returns
    -------
    numpy.ndarray
        ``(n, m)`` great-circle distances. [km]
    """
    lat_a = np.asarray(lat_a_deg, dtype=float)[:, None]
    lon_a = np.asarray(lon_a_deg, dtype=float)[:, None]
    lat_b = np.asarray(lat_b_deg, dtype=float)[None, :]
    lon_b = np.asarray(lon_b_deg, dtype=float)[None, :]
    return great_circle_km(lat_a, lon_a, lat_b, lon_b)


def unit_vectors(lat_deg: ArrayLike, lon_deg: ArrayLike) -> NDArray[np.float64]:
    """Points as unit vectors in Earth-centred coordinates (for clustering across the date line).

    Parameters
    ----------
    lat_deg, lon_deg : array_like
        Points. [degrees]

    Returns
    -------
    numpy.ndarray
        ``(n, 3)`` unit vectors.
    """
    lat = np.radians(np.asarray(lat_deg, dtype=float))
    lon = np.radians(np.asarray(lon_deg, dtype=float))
    return np.column_stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)])


def lat_lon_from_vectors(
    vectors: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Latitude and longitude of (not necessarily unit) Earth-centred vectors.

    Parameters
    ----------
    vectors : numpy.ndarray
        ``(n, 3)`` vectors.

    Returns
    -------
    tuple of numpy.ndarray
        Latitudes and longitudes. [degrees]
    """
    x, y, z = vectors[:, 0], vectors[:, 1], vectors[:, 2]
    lat = np.degrees(np.arctan2(z, np.hypot(x, y)))
    lon = np.degrees(np.arctan2(y, x))
    return lat, lon


LAT_LON_PATTERN = re.compile(r"^\s*([-+]?\d+(?:\.\d*)?|[-+]?\.\d+)\s*[,;\s]\s*([-+]?\d+(?:\.\d*)?|[-+]?\.\d+)\s*$")
"""``lat,lon`` as people write it: ``"-33.87,151.21"``, ``"40.71, -74.01"``, ``"51.5 -0.12"``."""


def is_lat_lon(text: str) -> bool:
    """True if ``text`` is a coordinate pair as :data:`LAT_LON_PATTERN` reads it (range not checked)."""
    return LAT_LON_PATTERN.match(text) is not None
