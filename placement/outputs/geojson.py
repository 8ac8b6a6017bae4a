"""GeoJSON for real-estate and network teams (RFC 7946: lon/lat WGS84, no ``crs`` member).

Geometry is built here from the plan's tables and nowhere else; files are written by
:mod:`placement.outputs.writer`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import cast

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from numpy.typing import NDArray

from placement.results.folder import null_nonfinite

WGS84 = "EPSG:4326"
COORDINATE_DECIMALS = 5
"""About 1 m at the equator: enough for a metro, small files."""


Degrees = NDArray[np.float64]


def unwrapped_lines(lon0: Degrees, lat0: Degrees, lon1: Degrees, lat1: Degrees) -> NDArray[np.object_]:
    """Population-to-site lines that do not wrap the long way round the antimeridian (one array call).

    Parameters
    ----------
    lon0, lat0, lon1, lat1 : numpy.ndarray
        The ends of each line. [degrees]

    Returns
    -------
    numpy.ndarray of shapely.LineString
        The far end shifted by 360 degrees where that makes the line shorter.
    """
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
    geometry = unwrapped_lines(lon0, lat0, lon1, lat1)
    frame = assignments.drop(columns=["pop_lon", "pop_lat", "site_lon", "site_lat"])
    return gpd.GeoDataFrame(frame, geometry=geometry, crs=WGS84)


def cross_metro_frame(links: pd.DataFrame, sites: pd.DataFrame) -> gpd.GeoDataFrame:
    """Decode-site-to-prefill-site lines of cross-metro prefill (``cross_metro_links.csv``), for network teams.

    Parameters
    ----------
    links : pandas.DataFrame
        :func:`placement.analyses.modes.cross_metro_links`.
    sites : pandas.DataFrame
        The plan's site table (``site_id``, ``lat``, ``lon``).

    Returns
    -------
    geopandas.GeoDataFrame
        LineStrings in WGS84, one per (decode site, prefill site, class).
    """
    at = sites.set_index("site_id")[["lon", "lat"]]
    decode, prefill = at.loc[links["decode_site_id"]].to_numpy(float), at.loc[links["prefill_site_id"]].to_numpy(float)
    geometry = unwrapped_lines(decode[:, 0], decode[:, 1], prefill[:, 0], prefill[:, 1])
    return gpd.GeoDataFrame(links.reset_index(drop=True), geometry=geometry, crs=WGS84)


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


def _json_values(values: pd.Series) -> list[str]:
    """One property column as JSON text per feature (floats rounded to 6 decimals, undefined as null)."""
    if pd.api.types.is_bool_dtype(values) and not values.hasnans:
        return cast(list[str], np.where(values.to_numpy(bool), "true", "false").tolist())
    if pd.api.types.is_integer_dtype(values) and not values.hasnans:
        return cast(list[str], values.to_numpy(np.int64).astype(str).tolist())
    if pd.api.types.is_float_dtype(values):
        numbers = np.round(values.to_numpy(dtype=float, na_value=np.nan), 6)
        text = numbers.astype(str)
        text[~np.isfinite(numbers)] = "null"
        return cast(list[str], text.tolist())
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    encoded = np.array([json.dumps(_plain(u), ensure_ascii=False) for u in uniques] + ["null"], dtype=object)
    return [str(v) for v in encoded[codes]]  # code -1 (missing) takes the last entry, null


def _plain(value: object) -> object:
    """A property value JSON can hold (numpy scalars as Python numbers; non-finite numbers as null)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _split_at_antimeridian(coords: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Two-point lines whose far end was unwrapped past +-180: the latitude where each crosses, and which do."""
    lon0, lat0, lon1, lat1 = coords[:, 0, 0], coords[:, 0, 1], coords[:, 1, 0], coords[:, 1, 1]
    crosses = (lon1 > 180.0) | (lon1 < -180.0)
    edge = np.where(lon1 > 180.0, 180.0, -180.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lat = lat0 + (lat1 - lat0) * (edge - lon0) / (lon1 - lon0)
    return np.round(lat, COORDINATE_DECIMALS), crosses


def _geometry_json(geometry: gpd.GeoSeries) -> list[str]:
    """RFC 7946 geometry text of points and two-point lines, lines crossing the antimeridian split in two."""
    rounded = shapely.transform(geometry.to_numpy(), lambda xy: np.round(xy, COORDINATE_DECIMALS))
    text = shapely.to_geojson(rounded).astype(object)
    lines = np.flatnonzero(shapely.get_type_id(rounded) == LINESTRING)
    if len(lines):
        coords = shapely.get_coordinates(rounded[lines]).reshape(-1, 2, 2)
        lat, crosses = _split_at_antimeridian(coords)
        for k in np.flatnonzero(crosses).tolist():
            (lon0, lat0), (lon1, lat1) = coords[k].tolist()
            edge = 180.0 if lon1 > 180.0 else -180.0
            parts = [[[lon0, lat0], [edge, lat[k]]], [[-edge, lat[k]], [round(lon1 - 2 * edge, COORDINATE_DECIMALS), lat1]]]
            text[lines[k]] = json.dumps({"type": "MultiLineString", "coordinates": parts}, separators=(",", ":"))
    return list(text)


LINESTRING = 1
"""shapely's type id of a LineString (``shapely.GeometryType.LINESTRING``)."""


def _write_points_and_lines(frame: gpd.GeoDataFrame, path: Path) -> None:
    """Write point and two-point line features as GeoJSON text, column by column.

    The content of GDAL's RFC 7946 writer (lon/lat rounded to 1e-5, no ``crs``, lines split at the
    antimeridian, floats rounded to 6 decimals, non-finite values null) in a fraction of its time: GDAL
    takes ~8 s for the ~250,000 lines of a full-resolution plan.
    """
    columns = [c for c in frame.columns if c != frame.geometry.name]
    keys = [json.dumps(str(column), ensure_ascii=False) + ": " for column in columns]
    with Path(path).open("w", encoding="utf-8") as out:
        out.write('{\n"type": "FeatureCollection",\n"features": [\n')
        for start in range(0, len(frame), WRITE_CHUNK):  # in chunks: the text of 250,000 features would hold ~400 MB
            chunk = frame.iloc[start : start + WRITE_CHUNK]
            parts = [[key + v for v in _json_values(chunk[column])] for key, column in zip(keys, columns, strict=True)]
            rows = zip(*parts, strict=True) if parts else iter([()] * len(chunk))
            for k, (properties, shape) in enumerate(zip(rows, _geometry_json(chunk.geometry), strict=True)):
                out.write(",\n" if start + k else "")
                out.write(f'{{ "type": "Feature", "properties": {{ {", ".join(properties)} }}, "geometry": {shape} }}')
        out.write("\n]\n}\n")


WRITE_CHUNK = 20_000
"""Features formatted at a time."""


def _is_points_and_two_point_lines(geometry: gpd.GeoSeries) -> bool:
    kinds = shapely.get_type_id(geometry.to_numpy())
    if not np.isin(kinds, [0, LINESTRING]).all() or geometry.isna().any():
        return False
    lines = geometry.to_numpy()[kinds == LINESTRING]
    return bool((shapely.get_num_coordinates(lines) == 2).all())


def write_geojson(frame: gpd.GeoDataFrame, path: Path) -> None:
    """Write RFC 7946 GeoJSON (lon/lat, no ``crs`` member, rounded coordinates).

    Points and two-point lines (sites, populations, assignments) are written column by column here;
    other geometry (catchments, network links) through GDAL, which also orients polygon rings.

    Parameters
    ----------
    frame : geopandas.GeoDataFrame
        Features in WGS84.
    path : Path
        Destination file.
    """
    if len(frame) and _is_points_and_two_point_lines(frame.geometry):
        _write_points_and_lines(frame, path)
        return
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
