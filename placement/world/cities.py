"""The GeoNames cities table: read, checked row by row, filtered by population and country.

Demand (:mod:`placement.world.demand`) and place names (:mod:`placement.network.places`) both read it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from placement._errors import InputError, Problem

CITY_COLUMNS = (
    "geonameid",
    "name",
    "countrycode",
    "latitude",
    "longitude",
    "population",
    "timezone",
)


def load_cities(path: str | Path, *, min_population: int = 0, countries: list[str] | None = None) -> pd.DataFrame:
    """Read a GeoNames cities CSV.

    Parameters
    ----------
    path : str or Path
        CSV with the columns ``geonameid, name, countrycode, latitude, longitude, population,
        timezone``.
    min_population : int, optional
        Keep cities with at least this many people.
    countries : list of str, optional
        ISO 3166-1 alpha-2 codes to keep.

    Returns
    -------
    pandas.DataFrame
        Columns ``city_id, name, country_code, lat, lon, population, timezone``.

    Raises
    ------
    InputError
        Missing columns, unreadable numbers or out-of-range coordinates, with row numbers.
    """
    path = Path(path)
    try:
        raw = pd.read_csv(path, dtype={"countrycode": str, "admin1code": str}, keep_default_na=False, encoding="utf-8-sig")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise InputError(
            [Problem(str(path), "", "", f"not a readable cities CSV ({exc})", "use the GeoNames cities layout")]
        ) from None
    problems = [
        Problem(str(path), "header", c, "required column is missing", "use the GeoNames cities layout")
        for c in CITY_COLUMNS
        if c not in raw.columns
    ]
    if problems:
        raise InputError(problems)
    table = pd.DataFrame(
        {
            "city_id": raw["geonameid"].astype(str),
            "name": raw["name"].astype(str),
            "country_code": raw["countrycode"].astype(str),
            "lat": pd.to_numeric(raw["latitude"], errors="coerce"),
            "lon": pd.to_numeric(raw["longitude"], errors="coerce"),
            "population": pd.to_numeric(raw["population"], errors="coerce"),
            "timezone": raw["timezone"].astype(str),
        }
    )
    bad = ~(table["lat"].between(-90, 90) & table["lon"].between(-180, 180) & (table["population"] >= 0))
    for k in np.flatnonzero(bad.to_numpy())[:20]:
        problems.append(
            Problem(
                str(path),
                f"row {k + 1} (line {k + 2})",
                "latitude/longitude/population",
                "must be numbers in range",
                "fix or remove the row",
            )
        )
    if problems:
        raise InputError(problems)
    keep = table["population"] >= min_population
    if countries:
        keep &= table["country_code"].isin([c.upper() for c in countries])
    return table[keep].reset_index(drop=True)
