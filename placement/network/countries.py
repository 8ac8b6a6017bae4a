"""The country a point lies in, for points that come without one (coordinates typed at the CLI, cloud regions).

Populations carry their cities' ISO codes and sites carry the catalog's, so this is needed only at the
edge: ``placement rtt "lat,lon" ...`` and the calibration data. A point within :data:`IN_CITY_KM` of a
GeoNames city takes that city's country (1:110m polygons are too coarse for city states: Singapore lies
inside Malaysia's). Any other point takes the country of the bundled
Natural Earth 1:110m polygon that contains it; a polygon's ISO 3166-1 alpha-2 code is the most common
code of the GeoNames cities inside it (Natural Earth's ``iso_a3`` is ``-99`` for France and Norway, and
alpha-3 is not what the rest of the project uses). A point in no polygon (small islands and city states
such as Singapore, Bahrain or Hong Kong are below 1:110m; coastal points just off the coarse coastline)
takes the country of its nearest GeoNames city.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import geopandas as gpd
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from shapely import points

from placement.world.bundled import bundled_path
from placement.world.cities import load_cities
from placement.world.geodesy import great_circle_km, unit_vectors

if TYPE_CHECKING:
    from scipy.spatial import cKDTree

COUNTRIES_GEOJSON = bundled_path("geo", "naturalearth_lowres_countries_110m.geojson")
CITIES_CSV = bundled_path("cities", "geonames_cities15000.csv")
WGS84 = "EPSG:4326"
IN_CITY_KM = 15.0
"""A point this close to a city's centre is in that city's country."""


@lru_cache(maxsize=1)
def _cities() -> pd.DataFrame:
    return load_cities(CITIES_CSV)


@lru_cache(maxsize=1)
def _polygons() -> gpd.GeoDataFrame:
    """Natural Earth countries with the alpha-2 code most common among the cities inside each."""
    countries = gpd.read_file(COUNTRIES_GEOJSON)[["name", "continent", "geometry"]].to_crs(WGS84)
    cities = _cities()
    located = gpd.GeoDataFrame(
        cities[["country_code"]], geometry=points(cities["lon"].to_numpy(float), cities["lat"].to_numpy(float)), crs=WGS84
    )
    joined = gpd.sjoin(located, countries, predicate="within", how="inner")
    code = joined.groupby("index_right")["country_code"].agg(lambda s: str(s.value_counts().index[0]))
    return countries.assign(country_code=code.reindex(countries.index).fillna("")).query("country_code != ''")


@lru_cache(maxsize=1)
def _city_tree() -> cKDTree:
    """The cities' unit vectors in a k-d tree: the nearest in chord is the nearest over the great circle."""
    from scipy.spatial import cKDTree  # here: a plan's points come with their countries, and the import costs 0.2 s

    cities = _cities()
    return cKDTree(unit_vectors(cities["lat"].to_numpy(float), cities["lon"].to_numpy(float)))


def _nearest_city(lat: NDArray[np.float64], lon: NDArray[np.float64]) -> tuple[NDArray[np.str_], NDArray[np.float64]]:
    """Country code of each point's nearest GeoNames city, and the distance to it (a tree: any number of points). [km]"""
    cities = _cities()
    city_lat, city_lon = cities["lat"].to_numpy(float), cities["lon"].to_numpy(float)
    nearest = np.asarray(_city_tree().query(unit_vectors(lat, lon))[1], dtype=np.intp)
    km = great_circle_km(lat, lon, city_lat[nearest], city_lon[nearest])
    return np.asarray(cities["country_code"].to_numpy(str)[nearest]), np.asarray(km, dtype=float)


def country_of_points(lat_deg: ArrayLike, lon_deg: ArrayLike) -> NDArray[np.str_]:
    """ISO 3166-1 alpha-2 code of the country each point lies in.

    Parameters
    ----------
    lat_deg, lon_deg : array_like
        Points (``n``). [degrees]

    Returns
    -------
    numpy.ndarray of str
        One code per point: its city's when it lies in one, else the Natural Earth polygon's that
        contains it, else its nearest GeoNames city's.
    """
    lat, lon = np.atleast_1d(np.asarray(lat_deg, dtype=float)), np.atleast_1d(np.asarray(lon_deg, dtype=float))
    located = gpd.GeoDataFrame(geometry=points(lon, lat), crs=WGS84)
    joined = gpd.sjoin(located, _polygons()[["country_code", "geometry"]], predicate="within", how="left")
    inside = joined[~joined.index.duplicated()]["country_code"].reindex(range(len(lat)))
    city_code, city_km = _nearest_city(lat, lon)
    codes = np.where((city_km <= IN_CITY_KM) | inside.isna().to_numpy(), city_code, inside.fillna("").to_numpy(str))
    return np.asarray(codes, dtype=str)


def continent_of_countries() -> dict[str, str]:
    """Natural Earth continent of every ISO alpha-2 country that has a 1:110m polygon.

    Returns
    -------
    dict of str to str
        ``{"DE": "Europe", "IN": "Asia", ...}``; countries below 1:110m (Singapore, Bahrain) are absent.
    """
    polygons = _polygons()
    return dict(zip(polygons["country_code"].astype(str), polygons["continent"].astype(str), strict=True))
