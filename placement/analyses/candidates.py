"""Greenfield candidate sites generated from the cities table: many more places a real-estate team might build.

A catalog lists the metros a planner knows; a larger search adds candidates where people are. The generator takes
the largest cities, in order, outside the countries the catalog leaves out (comprehensive US sanctions), that are
at least ``spacing_km`` from every catalog site and every candidate taken
before (so each is a metro of its own), until it has ``count``. Each gets ``mw`` of power, is reached over transit,
and takes its power price, PUE, facility capex and grid carbon intensity from the nearest catalog site (estimates,
said so in its ``source``). The same inputs give the same candidates, in the same order, on any machine.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement.network.countries import continent_of_countries
from placement.world.geodesy import unit_vectors

EARTH_RADIUS_KM = 6371.0088
"""Mean Earth radius (IUGG), as :mod:`placement.world.geodesy` uses. [km]"""

LEFT_OUT = frozenset({"BY", "CU", "IR", "KP", "SY", "VE"})
"""Countries under comprehensive US sanctions, left out of the catalog too (data/SOURCES.md, "The larger catalog")."""

COPIED = ("power_price_usd_per_mwh", "pue", "capex_usd_per_mw", "carbon_intensity_g_per_kwh", "climate")
"""The catalog columns a candidate takes from its nearest catalog site."""


def greenfield_candidates(
    cities: pd.DataFrame, sites: pd.DataFrame, *, count: int, spacing_km: float = 50.0, mw: float = 30.0
) -> pd.DataFrame:
    """Up to ``count`` greenfield candidates at the largest cities, spaced apart and from the catalog's sites.

    Parameters
    ----------
    cities : pandas.DataFrame
        :func:`placement.world.cities.load_cities` (``city_id``, ``name``, ``country_code``, ``lat``, ``lon``,
        ``population``).
    sites : pandas.DataFrame
        The catalog (:func:`placement.world.catalog.load_catalog`): the sites to keep clear of and to copy prices from.
    count : int
        Candidates wanted (fewer when the cities run out first).
    spacing_km : float, optional
        Least distance from every catalog site and every other candidate (a metro of its own). [km]
    mw : float, optional
        Power of each candidate. [MW]

    Returns
    -------
    pandas.DataFrame
        Rows in the catalog's columns, largest city first; ``id`` is ``gf-<city_id>``. No candidate is in a
        country of :data:`LEFT_OUT`.
    """
    eligible = cities[~cities["country_code"].isin(LEFT_OUT)]
    order = eligible.sort_values(["population", "city_id"], ascending=[False, True], kind="stable")
    points = unit_vectors(order["lat"].to_numpy(float), order["lon"].to_numpy(float))
    catalog = unit_vectors(sites["lat"].to_numpy(float), sites["lon"].to_numpy(float))
    near = np.cos(spacing_km / EARTH_RADIUS_KM)  # a dot product above this is nearer than spacing_km
    clear = (points @ catalog.T).max(axis=1, initial=-1.0) < near
    picked = order.iloc[spaced_picks(points, clear, count=count, near_cos=near)].reset_index(drop=True)
    nearest = np.argmax(unit_vectors(picked["lat"].to_numpy(float), picked["lon"].to_numpy(float)) @ catalog.T, axis=1)
    return _rows(picked, sites.iloc[nearest].reset_index(drop=True), mw)


def spaced_picks(points: NDArray[np.float64], eligible: NDArray[np.bool_], *, count: int, near_cos: float) -> list[int]:
    """Indices of up to ``count`` eligible points, in order, each farther than the spacing from those picked before.

    Parameters
    ----------
    points : numpy.ndarray
        ``(n, 3)`` unit vectors, in the order of preference.
    eligible : numpy.ndarray of bool
        ``(n,)`` points that may be picked.
    count : int
        Picks at most.
    near_cos : float
        The cosine of the spacing's angle: a dot product at least this is too near.

    Returns
    -------
    list of int
        The picks, in order.
    """
    taken: list[int] = []
    chosen = np.zeros((0, 3))
    for k in np.flatnonzero(eligible).tolist():
        if len(taken) >= count:
            break
        if len(chosen) and float((chosen @ points[k]).max()) >= near_cos:
            continue
        taken.append(k)
        chosen = np.vstack([chosen, points[k]])
    return taken


def _rows(cities: pd.DataFrame, nearest: pd.DataFrame, mw: float) -> pd.DataFrame:
    """The candidates as catalog rows: the city's place, the nearest site's prices, the source of each figure."""
    continent = continent_of_countries()
    codes = cities["country_code"].astype(str)
    fallback = nearest["continent"].astype(str)  # a country below Natural Earth's 1:110m: its nearest site's
    frame = pd.DataFrame(
        {
            "id": "gf-" + cities["city_id"].astype(str),
            "name": cities["name"].astype(str),
            "country_code": codes,
            "continent": [continent.get(c, f) for c, f in zip(codes, fallback, strict=True)],
            "lat": cities["lat"].to_numpy(float).round(4),
            "lon": cities["lon"].to_numpy(float).round(4),
            "mw_available": float(mw),
            **{column: nearest[column].to_numpy() for column in COPIED if column in nearest.columns},
            "locked": False,
            "network": "transit",
        }
    )
    frame["source"] = [
        f"kind: greenfield candidate (generated, placement.analyses.candidates); coords: GeoNames {g} {n}; "
        f"mw: {mw:g} (estimate); "
        f"price, pue, capex, carbon, climate: as the nearest catalog site {s} (estimates)"
        for g, n, s in zip(cities["city_id"], cities["name"], nearest["id"], strict=True)
    ]
    return frame


def with_candidates(
    cities: pd.DataFrame, sites: pd.DataFrame, *, total: int, spacing_km: float = 50.0, mw: float = 30.0
) -> pd.DataFrame:
    """The catalog with greenfield candidates added up to ``total`` sites (the catalog itself when it has that many).

    Parameters
    ----------
    cities, sites : pandas.DataFrame
        As :func:`greenfield_candidates`.
    total : int
        Sites wanted in all.
    spacing_km, mw : float, optional
        As :func:`greenfield_candidates`.

    Returns
    -------
    pandas.DataFrame
        The catalog's rows, then the candidates', in the catalog's columns.
    """
    if total <= len(sites):
        return sites.copy()
    extra = greenfield_candidates(cities, sites, count=total - len(sites), spacing_km=spacing_km, mw=mw)
    return pd.concat([sites, extra], ignore_index=True)[list(sites.columns)]
