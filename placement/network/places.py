"""Place names to coordinates (GeoNames cities or ``lat,lon``), and the round-trip report between two places."""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InputError, Problem
from placement.network.countries import country_of_points
from placement.network.paths import Endpoints, PathType, RoundTrips
from placement.world.bundled import bundled_path
from placement.world.cities import load_cities
from placement.world.geodesy import LAT_LON_PATTERN

CITIES_CSV = bundled_path("cities", "geonames_cities15000.csv")
_LAT_LON = LAT_LON_PATTERN


@dataclass(frozen=True)
class Place:
    """A resolved place.

    Parameters
    ----------
    name : str
        City name as GeoNames spells it, or the coordinates as written.
    country_code : str
        ISO 3166-1 alpha-2 (for coordinates: the country they lie in, see
        :func:`placement.network.countries.country_of_points`).
    lat, lon : float
        Location. [degrees]
    note : str
        How the text was matched when that is not obvious (ambiguity, prefix match); else ''.
    """

    name: str
    country_code: str
    lat: float
    lon: float
    note: str = ""


def fold(text: str) -> str:
    """Accent-, case- and space-insensitive key: ``'  São  Paulo'`` → ``'sao paulo'``."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(stripped.casefold().split())


@lru_cache(maxsize=1)
def default_cities() -> pd.DataFrame:
    """The bundled GeoNames cities (``data/cities/geonames_cities15000.csv``), loaded once."""
    return load_cities(CITIES_CSV)


@lru_cache(maxsize=1)
def _default_keys() -> pd.Series:
    """The bundled cities' names folded (:func:`fold`), once: folding 30,000 names takes a tenth of a second."""
    return default_cities()["name"].map(fold)


@lru_cache(maxsize=1)
def _default_index() -> dict[str, NDArray[np.intp]]:
    """Row positions of the bundled cities by folded name: an exact name found without scanning the table."""
    rows: dict[str, list[int]] = {}
    for k, key in enumerate(_default_keys().tolist()):
        rows.setdefault(str(key), []).append(k)
    return {key: np.asarray(found, dtype=np.intp) for key, found in rows.items()}


def _parse_lat_lon(text: str) -> tuple[float, float] | None:
    match = _LAT_LON.match(text)
    return (float(match.group(1)), float(match.group(2))) if match else None


def _in_range(lat: float, lon: float) -> bool:
    return -90.0 <= lat <= 90.0 and -180.0 <= lon <= 180.0


def _coordinate_place(lat: float, lon: float, country_code: str) -> Place:
    return Place(name=f"{lat:g},{lon:g}", country_code=country_code, lat=lat, lon=lon)


def _from_coordinates(text: str, lat: float, lon: float) -> Place:
    if not _in_range(lat, lon):
        raise InputError(
            [
                Problem(
                    "place", repr(text), "", f"latitude {lat:g} / longitude {lon:g} out of range", "give lat,lon within ±90,±180"
                )
            ]
        )
    return _coordinate_place(lat, lon, str(country_of_points([lat], [lon])[0]))


def _split_country(text: str) -> tuple[str, str]:
    """``'Portland, US'`` → (``'Portland'``, ``'US'``); otherwise (text, '')."""
    head, _, tail = text.rpartition(",")
    if head and re.fullmatch(r"\s*[A-Za-z]{2}\s*", tail):
        return head, tail.strip().upper()
    return text, ""


def _place(best: dict[str, Any], candidates: int, text: str, how: str) -> Place:
    """The place of the best of ``candidates`` matches, with a note when the match was not unique or not exact."""
    others = candidates - 1
    note = ""
    if others or how != "exact":
        what = f"named {text!r}" if how == "exact" else f"whose name starts with {text!r}"
        note = f"{text!r} matched {best['name']} ({best['country_code']}, population {int(best['population']):,})" + (
            f", the most populous of {others + 1} places {what}" if others else f" by {how}"
        )
    return Place(
        name=str(best["name"]), country_code=str(best["country_code"]), lat=float(best["lat"]), lon=float(best["lon"]), note=note
    )


def _pick(matches: pd.DataFrame, text: str, how: str) -> Place:
    ranked = matches.sort_values(["population", "city_id"], ascending=[False, True], kind="stable")
    return _place({str(k): v for k, v in ranked.iloc[0].to_dict().items()}, len(ranked), text, how)


@lru_cache(maxsize=1)
def _default_columns() -> dict[str, NDArray[Any]]:
    cities = default_cities()
    return {c: cities[c].to_numpy() for c in ("city_id", "name", "country_code", "lat", "lon", "population")}


def _pick_default(rows: NDArray[np.intp], country: str, text: str) -> Place | None:
    """:func:`_pick` of the bundled cities at ``rows`` (in ``country`` when given), in microseconds; None if none."""
    columns = _default_columns()
    if country:
        rows = rows[columns["country_code"][rows] == country]
    if not len(rows):
        return None
    best = rows[np.lexsort((columns["city_id"][rows], -columns["population"][rows].astype(float)))[0]]
    return _place({c: v[best] for c, v in columns.items()}, len(rows), text, "exact")


def resolve_place(text: str, cities: pd.DataFrame | None = None) -> Place:
    """Resolve a city name (GeoNames, accent- and case-insensitive) or ``lat,lon`` to a place.

    A name shared by several cities takes the most populous one, and ``note`` says so. A name
    with no exact match is tried as the start of a longer name (``Frankfurt`` → ``Frankfurt am
    Main``). ``Name, CC`` restricts the search to one country.

    Parameters
    ----------
    text : str
        ``"Chicago"``, ``"Sao Paulo"``, ``"Portland, US"`` or ``"41.88,-87.63"``.
    cities : pandas.DataFrame, optional
        Columns ``city_id, name, country_code, lat, lon, population`` as from
        :func:`placement.world.cities.load_cities`; default the bundled GeoNames file.

    Returns
    -------
    Place
        Name, country, coordinates and a note on how it was matched.

    Raises
    ------
    InputError
        Unknown name (with close matches suggested) or coordinates out of range.
    """
    if not text.strip():
        raise InputError([Problem("place", repr(text), "", "is empty", 'give a city name ("Chicago", "Sao Paulo") or lat,lon')])
    coordinates = _parse_lat_lon(text)
    if coordinates is not None:
        return _from_coordinates(text, *coordinates)
    name, country = _split_country(text)
    found = _default_index().get(fold(name)) if cities is None else None
    if found is not None and (place := _pick_default(found, country, name.strip())) is not None:
        return place
    all_keys = _default_keys() if cities is None else cities["name"].map(fold)
    cities = default_cities() if cities is None else cities
    pool = cities[cities["country_code"].eq(country)] if country else cities
    keys = all_keys[cities["country_code"].eq(country)] if country else all_keys
    wanted = fold(name)
    exact = pool[keys.eq(wanted).to_numpy()]
    if len(exact):
        return _pick(exact, name.strip(), "exact")
    prefix = pool[keys.str.startswith(wanted + " ").to_numpy() | keys.str.startswith(wanted + "(").to_numpy()]
    if wanted and len(prefix):
        return _pick(prefix, name.strip(), "prefix")
    raise InputError([_unknown(text, name, country, pool, keys)])


def resolve_places(texts: Iterable[str]) -> dict[str, Place | InputError]:
    """Each distinct text resolved once (:func:`resolve_place`), the coordinates' countries in one spatial join.

    Parameters
    ----------
    texts : iterable of str
        City names or ``lat,lon``, repeats allowed.

    Returns
    -------
    dict of str to Place or InputError
        Per distinct text its place, or the error :func:`resolve_place` raises for it.
    """
    out: dict[str, Place | InputError] = {}
    coordinates: dict[str, tuple[float, float]] = {}
    for text in dict.fromkeys(texts):
        parsed = _parse_lat_lon(text) if text.strip() else None
        if parsed is not None and _in_range(*parsed):
            coordinates[text] = parsed
            continue
        try:
            out[text] = resolve_place(text)
        except InputError as error:
            out[text] = error
    if coordinates:
        lat, lon = (np.array(v, dtype=float) for v in zip(*coordinates.values(), strict=True))
        for (text, (a, b)), code in zip(coordinates.items(), country_of_points(lat, lon), strict=True):
            out[text] = _coordinate_place(a, b, str(code))
    return out


def _unknown(text: str, name: str, country: str, pool: pd.DataFrame, keys: pd.Series) -> Problem:
    wanted = fold(name)
    unique = sorted(set(keys.tolist()))
    close = difflib.get_close_matches(wanted, unique, n=5, cutoff=0.75)
    # Also match the start of longer names ("Frankfrut" -> "Frankfurt am Main").
    population = pool["population"].groupby(keys.to_numpy()).max()
    heads: dict[str, str] = {}
    for key in population.sort_values(ascending=False, kind="stable").index:
        heads.setdefault(str(key)[: len(wanted)], str(key))
    close += [heads[h] for h in difflib.get_close_matches(wanted, list(heads), n=5, cutoff=0.8) if heads[h] not in close]
    shown = []
    for key in close[:6]:
        rows = pool[keys.eq(key).to_numpy()]
        best = rows.iloc[int(np.argmax(rows["population"].to_numpy()))]
        shown.append(f"{best['name']} ({best['country_code']})")
    where = f" in {country}" if country else ""
    fix = (
        f"did you mean {', '.join(shown)}? Or give coordinates as lat,lon"
        if shown
        else "check the spelling, or give coordinates as lat,lon"
    )
    return Problem("place", repr(text), "", f"no city of 15,000+ people named {name.strip()!r}{where} in GeoNames", fix)


def rtt_report(
    from_text: str,
    to_text: str,
    *,
    path: PathType = PathType.INTERNET,
    site_network: str = "transit",
    cities: pd.DataFrame | None = None,
    round_trips: RoundTrips,
) -> dict[str, Any]:
    """Round trip between two named places, for ``placement rtt FROM TO``.

    The figure is :meth:`placement.network.paths.RoundTrips.rtt_ms`, the function the plan calls:
    with ``path=PathType.ACCESS`` it is exactly the round trip a plan budgets from users at FROM to a
    site at TO; with ``INTERNET`` (the default) the round trip the plan uses between sites at FROM
    and TO (data center to data center over the public internet); with ``BACKBONE`` one provider's
    private backbone.

    Parameters
    ----------
    from_text, to_text : str
        City names or ``lat,lon`` (see :func:`resolve_place`).
    path : PathType, optional
        ``internet`` (default), ``access`` (users at FROM, their last mile included) or ``backbone``.
    site_network : {"transit", "backbone"}, optional
        Who carries the data centers' packets (both ends of ``internet``, TO of ``access``):
        ``transit`` (default: a colocation or hosting site) or ``backbone`` (cloud regions).
    cities : pandas.DataFrame, optional
        City table; default the bundled GeoNames file.
    round_trips : RoundTrips
        The model (the ``rtt`` command passes the bundled network with the calibrated parameters).

    Returns
    -------
    dict
        ``from``, ``to`` (each ``name, country_code, lat, lon, note``), ``path_type``, ``access``,
        ``site_network``, ``rtt_ms`` (p50), ``rtt_p90_ms``, ``bound_ms``, ``path`` (hub names) and ``notes``.

    Raises
    ------
    InputError
        Either place cannot be resolved (both are checked and reported together).
    """
    places: list[Place] = []
    problems: list[Problem] = []
    for text in (from_text, to_text):
        try:
            places.append(resolve_place(text, cities))
        except InputError as error:
            problems.extend(error.problems)
    if problems:
        raise InputError(problems)
    a, b = places
    on_transit = site_network == "transit"
    result = round_trips.pair(place_endpoints(a, on_transit), place_endpoints(b, on_transit), path)
    return {
        "from": _place_dict(a),
        "to": _place_dict(b),
        "path_type": str(path),
        "access": path is PathType.ACCESS,
        "site_network": "backbone" if path is PathType.BACKBONE else site_network,
        "rtt_ms": round(result.rtt_ms, 2),
        "rtt_p90_ms": round(result.rtt_p90_ms, 2),
        "bound_ms": round(result.bound_ms, 2),
        "path": result.path,
        "notes": [p.note for p in places if p.note],
    }


def place_endpoints(place: Place, on_transit: bool = False) -> Endpoints:
    """A resolved place as one endpoint with its country (a data center on transit or on a backbone)."""
    return Endpoints.of(place.lat, place.lon, place.country_code, on_transit)


def _place_dict(place: Place) -> dict[str, Any]:
    return {"name": place.name, "country_code": place.country_code, "lat": place.lat, "lon": place.lon, "note": place.note}
