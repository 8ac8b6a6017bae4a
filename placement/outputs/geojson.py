"""GeoJSON for real-estate and network teams (RFC 7946: lon/lat WGS84, no ``crs`` member).

Geometry is built here from the plan's tables and nowhere else; files are written by
:mod:`placement.outputs.writer`.
"""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from numpy.typing import NDArray

from placement.outputs.finite import null_nonfinite

WGS84 = "EPSG:4326"
COORDINATE_DECIMALS = 5
"""About 1 m at the equator: enough for a metro, small files."""


Degrees = NDArray[np.float64]


def _lines(lon0: Degrees, lat0: Degrees, lon1: Degrees, lat1: Degrees) -> NDArray[np.object_]:
    """Population-to-site lines that do not wrap the long way round the antimeridian (one array call)."""
    lon1 = lon1 - 360.0 * (lon1 - lon0 > 180.0) + 360.0 * (lon0 - lon1 > 180.0)
    coords = np.stack([np.stack([lon0, lat0], axis=-1), np.stack([lon1, lat1], axis=-1)], axis=1)
    return np.asarray(shapely.linestrings(coords))


def _points(lon: pd.Series, lat: pd.Series) -> NDArray[np.object_]:
    return np.asarray(shapely.points(lon.to_numpy(float), lat.to_numpy(float)))


def sites_frame(sites: pd.DataFrame) -> gpd.GeoDataFrame:
    """Every candidate site as a point with its decision.

    Parameters
    ----------
    sites : pandas.DataFrame
        The plan's site table (``lat``, ``lon`` and figures).

    Returns
    -------
    geopandas.GeoDataFrame
        Points in WGS84.
    """
    geometry = _points(sites["lon"], sites["lat"])
    return gpd.GeoDataFrame(sites.drop(columns=["lat", "lon"]), geometry=geometry, crs=WGS84)


def assignments_frame(assignments: pd.DataFrame) -> gpd.GeoDataFrame:
    """Population-to-site lines with goodput, RTT and TTFT.

    Parameters
    ----------
    assignments : pandas.DataFrame
        The plan's assignment table.

    Returns
    -------
    geopandas.GeoDataFrame
        LineStrings in WGS84.
    """
    lon0, lat0, lon1, lat1 = assignments[["pop_lon", "pop_lat", "site_lon", "site_lat"]].to_numpy(float).T
    geometry = _lines(lon0, lat0, lon1, lat1)
    frame = assignments.drop(columns=["pop_lon", "pop_lat", "site_lon", "site_lat"])
    return gpd.GeoDataFrame(frame, geometry=geometry, crs=WGS84)


def populations_frame(populations: pd.DataFrame) -> gpd.GeoDataFrame:
    """Population points with demand, served goodput and main site.

    Parameters
    ----------
    populations : pandas.DataFrame
        The plan's population table.

    Returns
    -------
    geopandas.GeoDataFrame
        Points in WGS84.
    """
    geometry = _points(populations["lon"], populations["lat"])
    return gpd.GeoDataFrame(populations.drop(columns=["lat", "lon"]), geometry=geometry, crs=WGS84)


def write_geojson(frame: gpd.GeoDataFrame, path: Path) -> None:
    """Write RFC 7946 GeoJSON through GDAL (lon/lat, no ``crs`` member, rounded coordinates).

    Parameters
    ----------
    frame : geopandas.GeoDataFrame
        Features in WGS84.
    path : Path
        Destination file.
    """
    clean = frame.copy()
    for column in clean.columns:
        if column != "geometry" and pd.api.types.is_float_dtype(clean[column]):
            clean[column] = clean[column].round(6)
    clean = null_nonfinite(clean)  # JSON has no NaN: an undefined figure is null
    clean.to_file(
        path,
        driver="GeoJSON",
        engine="pyogrio",
        RFC7946="YES",
        COORDINATE_PRECISION=COORDINATE_DECIMALS,
        WRITE_NAME="NO",
        use_arrow=True,  # the same bytes as feature by feature, ~20 % faster at full resolution
    )
