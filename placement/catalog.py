"""The site catalog: one row per candidate site, from CSV or GeoJSON, checked row by row.

Every problem in the file (row, field, rule, fix) is gathered and raised together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from placement._errors import InputError, Problem


@dataclass(frozen=True)
class Column:
    """A catalog column and its rule."""

    name: str
    kind: str  # "text", "number", "bool"
    required: bool
    low: float | None = None
    high: float | None = None
    default: object = None
    help: str = ""


COLUMNS: tuple[Column, ...] = (
    Column("id", "text", True, help="unique site id"),
    Column("name", "text", True, help="display name"),
    Column("lat", "number", True, -90.0, 90.0, help="latitude, WGS84 [degrees]"),
    Column("lon", "number", True, -180.0, 180.0, help="longitude, WGS84 [degrees]"),
    Column("mw_available", "number", True, 0.0, None, help="facility power available, IT load x PUE [MW]"),
    Column("power_price_usd_per_mwh", "number", True, 0.0, None, help="electricity price [USD/MWh]"),
    Column("pue", "number", True, 1.0, 3.0, help="power usage effectiveness"),
    Column(
        "capex_usd_per_mw",
        "number",
        True,
        0.0,
        None,
        help="facility build cost per MW of IT load [USD/MW]",
    ),
    Column(
        "fixed_cost_usd_per_h",
        "number",
        False,
        0.0,
        None,
        np.nan,
        "site fixed cost; blank: the scenario's",
    ),
    Column(
        "carbon_intensity_g_per_kwh",
        "number",
        False,
        0.0,
        2000.0,
        np.nan,
        "grid carbon intensity [gCO2/kWh]",
    ),
    Column(
        "locked",
        "bool",
        False,
        default=False,
        help="true: the site must be open (existing capacity)",
    ),
    Column("country_code", "text", False, default="", help="ISO 3166-1 alpha-2"),
    Column("country", "text", False, default=""),
    Column("continent", "text", False, default=""),
    Column("providers", "text", False, default=""),
    Column("source", "text", False, default="", help="where each figure comes from"),
)

_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f", ""}


def _read_csv_text(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True, encoding="utf-8-sig")


def _read_geojson_text(path: Path, problems: list[Problem]) -> pd.DataFrame:
    source = str(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        problems.append(Problem(source, "", "", f"not valid JSON ({exc})", "export the catalog again as GeoJSON"))
        return pd.DataFrame()
    features = doc.get("features") if isinstance(doc, dict) else None
    if not isinstance(features, list):
        problems.append(
            Problem(
                source,
                "",
                "",
                "not a GeoJSON FeatureCollection",
                "give a FeatureCollection of Point features",
            )
        )
        return pd.DataFrame()
    rows: list[dict[str, str]] = []
    for k, feature in enumerate(features):
        props = (feature or {}).get("properties") or {}
        geometry = (feature or {}).get("geometry") or {}
        row = {key: "" if value is None else str(value) for key, value in props.items()}
        coords = geometry.get("coordinates")
        if geometry.get("type") == "Point" and isinstance(coords, list) and len(coords) >= 2:
            row["lon"], row["lat"] = str(coords[0]), str(coords[1])
        else:
            problems.append(
                Problem(
                    source,
                    f"feature {k + 1}",
                    "geometry",
                    "must be a Point [lon, lat]",
                    "give each site a Point geometry",
                )
            )
        rows.append(row)
    return pd.DataFrame(rows, dtype=str).fillna("")


def _where(path: Path, k: int) -> str:
    if path.suffix.lower() == ".csv":
        return f"row {k + 1} (line {k + 2})"
    return f"feature {k + 1}"


def _check_column(raw: pd.DataFrame, column: Column, path: Path, problems: list[Problem]) -> pd.Series:
    source = str(path)
    text = raw[column.name].astype(str).str.strip() if column.name in raw else pd.Series([""] * len(raw), index=raw.index)
    if column.kind == "text":
        if column.required:
            for k in np.flatnonzero(text.eq("").to_numpy()).tolist():
                problems.append(
                    Problem(
                        source,
                        _where(path, int(k)),
                        column.name,
                        "is empty",
                        f"give the {column.help}",
                    )
                )
        return text
    if column.kind == "bool":
        lowered = text.str.lower()
        for k in np.flatnonzero(~lowered.isin(_TRUE | _FALSE).to_numpy()).tolist():
            problems.append(
                Problem(
                    source,
                    _where(path, int(k)),
                    column.name,
                    f"must be true or false, got {text.iloc[k]!r}",
                    "write true or false",
                )
            )
        return lowered.isin(_TRUE)
    numbers = pd.to_numeric(text.where(text.ne("")), errors="coerce")
    bounds = (
        f"between {column.low:g} and {column.high:g}"
        if column.low is not None and column.high is not None
        else f">= {column.low:g}"
    )
    for row in range(len(raw)):
        value, written = numbers.iloc[row], text.iloc[row]
        where = _where(path, row)
        if written == "" or written.lower() in {"nan", "na", "null", "none"}:
            if column.required:
                problems.append(
                    Problem(
                        source,
                        where,
                        column.name,
                        f"is missing ({written or 'blank'})",
                        f"give the {column.help}",
                    )
                )
            continue
        if pd.isna(value) or not np.isfinite(value):
            problems.append(
                Problem(
                    source,
                    where,
                    column.name,
                    f"must be a finite number, got {written!r}",
                    f"give the {column.help}",
                )
            )
        elif (column.low is not None and value < column.low) or (column.high is not None and value > column.high):
            problems.append(
                Problem(
                    source,
                    where,
                    column.name,
                    f"must be {bounds}, got {written}",
                    f"give the {column.help}",
                )
            )
    return numbers.astype(float)


def _check_ids(ids: pd.Series, path: Path, problems: list[Problem]) -> None:
    first_seen: dict[str, int] = {}
    for k, value in enumerate(ids.tolist()):
        if value == "":
            continue
        if value in first_seen:
            problems.append(
                Problem(
                    str(path),
                    _where(path, k),
                    "id",
                    f"duplicate id {value!r} (first at {_where(path, first_seen[value])})",
                    "give every site a unique id",
                )
            )
        else:
            first_seen[value] = k


def load_catalog(path: str | Path) -> pd.DataFrame:
    """Read and check a site catalog.

    Parameters
    ----------
    path : str or Path
        A ``.csv`` file with a header row, or a ``.geojson`` / ``.json`` FeatureCollection of
        Points whose properties are the columns (lat/lon come from the geometry).

    Returns
    -------
    pandas.DataFrame
        One row per site with the columns of :data:`COLUMNS`, typed.

    Raises
    ------
    InputError
        Every problem in the file: row, field, rule and fix.
    """
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise InputError([Problem(source, "", "", "file not found", "check the path")])
    problems: list[Problem] = []
    if path.stat().st_size == 0:
        raise InputError([Problem(source, "", "", "the file is empty", "write a header row and one row per site")])
    if path.suffix.lower() == ".csv":
        try:
            raw = _read_csv_text(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise InputError(
                [
                    Problem(
                        source,
                        "",
                        "",
                        f"not a readable CSV ({exc})",
                        "save it as UTF-8 CSV with a header row",
                    )
                ]
            ) from None
    elif path.suffix.lower() in {".geojson", ".json"}:
        raw = _read_geojson_text(path, problems)
    else:
        raise InputError(
            [
                Problem(
                    source,
                    "",
                    "",
                    f"unknown catalog format {path.suffix!r}",
                    "use .csv or .geojson",
                )
            ]
        )
    raw.columns = [str(c).strip() for c in raw.columns]
    missing = [c.name for c in COLUMNS if c.required and c.name not in raw.columns]
    for name in missing:
        column = next(c for c in COLUMNS if c.name == name)
        problems.append(
            Problem(
                source,
                "header",
                name,
                "required column is missing",
                f"add a column '{name}' ({column.help})",
            )
        )
    if raw.empty and not missing:
        problems.append(Problem(source, "", "", "the catalog has no sites", "add one row per candidate site"))
    if problems:
        raise InputError(problems)
    table = pd.DataFrame({c.name: _check_column(raw, c, path, problems) for c in COLUMNS})
    _check_ids(table["id"], path, problems)
    if problems:
        raise InputError(problems)
    return table.reset_index(drop=True)
