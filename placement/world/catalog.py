"""The site catalog: one row per candidate site, from CSV or GeoJSON, checked row by row.

Every problem in the file (row, field, rule, fix) is gathered and raised together.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from placement._errors import InputError, Problem
from placement._validate import Column, Table, flags, missing_columns, numbers, raise_if, read_table, text, unique

COLUMNS: tuple[Column, ...] = (
    Column("id", help="unique site id"),
    Column("name", help="display name"),
    Column("lat", "number", low=-90.0, high=90.0, help="latitude, WGS84 [degrees]"),
    Column("lon", "number", low=-180.0, high=180.0, help="longitude, WGS84 [degrees]"),
    Column("mw_available", "number", low=0.0, help="facility power available, IT load x PUE [MW]"),
    Column("power_price_usd_per_mwh", "number", low=0.0, help="electricity price [USD/MWh]"),
    Column("pue", "number", low=1.0, high=3.0, help="power usage effectiveness"),
    Column("capex_usd_per_mw", "number", low=0.0, help="facility build cost per MW of IT load [USD/MW]"),
    Column(
        "fixed_cost_usd_per_h",
        "number",
        required=False,
        low=0.0,
        help="site fixed cost; blank: the scenario's",
        may_be_absent=True,
    ),
    Column(
        "carbon_intensity_g_per_kwh",
        "number",
        required=False,
        low=0.0,
        high=2000.0,
        help="grid carbon intensity [gCO2/kWh]",
        may_be_absent=True,
    ),
    Column(
        "climate",
        required=False,
        help="the site's climate class for its cooling water: cool, temperate, hot-humid or hot-dry (data/energy/"
        "cooling_wue.csv); blank: no water figure unless wue_l_per_kwh is given",
        may_be_absent=True,
    ),
    Column(
        "wue_l_per_kwh",
        "number",
        required=False,
        low=0.0,
        high=20.0,
        help="the site's own water usage effectiveness, litres consumed on site per kWh of IT energy; blank: by "
        "climate and sites.cooling",
        may_be_absent=True,
    ),
    Column(
        "water_stress",
        required=False,
        help="the site's basin water stress (WRI Aqueduct class: low, low-medium, medium-high, high, extremely-high, "
        "arid-low-water-use); blank: its country's (data/energy/water_stress_by_country.csv)",
        may_be_absent=True,
    ),
    Column("locked", "bool", required=False, help="true: the site must be open (existing capacity)", may_be_absent=True),
    Column(
        "discovered",
        "bool",
        required=False,
        help="true: a greenfield site placement discover proposed (not in the planner's catalog)",
        may_be_absent=True,
    ),
    Column(
        "years_to_energise",
        "number",
        required=False,
        low=0.0,
        high=50.0,
        help="years until the site's power could be energized (a discovered site's estimate) [years]",
        may_be_absent=True,
    ),
    Column("country_code", required=False, help="ISO 3166-1 alpha-2", may_be_absent=True),
    Column("country", required=False, may_be_absent=True),
    Column("continent", required=False, may_be_absent=True),
    Column("providers", required=False, may_be_absent=True),
    Column(
        "network",
        required=False,
        help="who carries the site's packets: backbone (a cloud region on its provider's backbone) or transit "
        "(colocation, greenfield); blank: backbone where providers names a cloud region, else transit",
        may_be_absent=True,
    ),
    Column(
        "kv_tier",
        required=False,
        help="the site's KV cache tier with serving.kv_cache: hbm, dram or nvme (data/serving/kv_tiers.csv); blank: the "
        "scenario's",
        may_be_absent=True,
    ),
    Column("grid_region", required=False, help="sites that fail together with their grid region", may_be_absent=True),
    Column("campus", required=False, help="sites that share a campus's substations and fibre", may_be_absent=True),
    Column("corridor", required=False, help="sites whose routes share one subsea or terrestrial corridor", may_be_absent=True),
    Column(
        "tier",
        required=False,
        help="the site's Uptime Institute tier, I-IV (or 1-4): its forced outages a year for placement adequacy; blank: "
        "the scenario's fault_tolerance.outages.site_tier",
        may_be_absent=True,
    ),
    Column(
        "outage_events_per_year",
        "number",
        required=False,
        low=0.0,
        high=365.0,
        help="the site's own forced outages a year, over its tier's; blank: by tier [1/year]",
        may_be_absent=True,
    ),
    Column(
        "outage_hours",
        "number",
        required=False,
        low=0.01,
        high=8760.0,
        help="the mean duration of one of the site's forced outages, over its tier's; blank: by tier [h]",
        may_be_absent=True,
    ),
    Column("source", required=False, help="where each figure comes from", may_be_absent=True),
)
"""The catalog's columns; a blank optional cell is '' (text), NaN (numbers) or false (``locked``)."""


def _read_geojson(path: Path, problems: list[Problem]) -> Table:
    source = str(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        problems.append(Problem(source, "", "", f"not valid JSON ({exc})", "export the catalog again as GeoJSON"))
        return Table.of(source, pd.DataFrame())
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
        return Table.of(source, pd.DataFrame())
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
    return Table.of(source, pd.DataFrame(rows, dtype=str), (f"feature {k + 1}" for k in range(len(rows))))


def _check_column(table: Table, column: Column, problems: list[Problem]) -> pd.Series:
    if column.kind == "number":
        return numbers(table, column, problems)
    if column.kind == "bool":
        return flags(table, column, problems)
    return text(table, column, problems)


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
    if path.stat().st_size == 0:
        raise InputError([Problem(source, "", "", "the file is empty", "write a header row and one row per site")])
    problems: list[Problem] = []
    if path.suffix.lower() == ".csv":
        raw = read_table(path, fix="save it as UTF-8 CSV with a header row and one row per site")
    elif path.suffix.lower() in {".geojson", ".json"}:
        raw = _read_geojson(path, problems)
    else:
        raise InputError([Problem(source, "", "", f"unknown catalog format {path.suffix!r}", "use .csv or .geojson")])
    missing = missing_columns(raw, COLUMNS)
    problems += missing
    if not len(raw) and not missing:
        problems.append(Problem(source, "", "", "the catalog has no sites", "add one row per candidate site"))
    raise_if(problems)
    table = pd.DataFrame({c.name: _check_column(raw, c, problems) for c in COLUMNS})
    table["network"] = _site_network(raw, table, problems)
    table["kv_tier"] = _one_of(raw, table, "kv_tier", KV_TIERS, problems)
    table["climate"] = _one_of(raw, table, "climate", CLIMATES, problems)
    table["water_stress"] = _one_of(raw, table, "water_stress", WATER_STRESS_CLASSES, problems)
    table["tier"] = _one_of(raw, table, "tier", SITE_TIERS, problems)
    unique(raw, "id", problems, what="id", fix="give every site a unique id")
    raise_if(problems)
    return table.reset_index(drop=True)


SITE_TIERS = ("i", "ii", "iii", "iv", "1", "2", "3", "4")
"""What a site's ``tier`` may say (Uptime Institute tiers, roman or numeral; :mod:`placement.rules.outages`)."""

KV_TIERS = ("hbm", "dram", "nvme")
"""What a site's ``kv_tier`` may say: the tiers of ``data/serving/kv_tiers.csv`` (``prefix_cache.TIER_ORDER``)."""


CLIMATES = ("cool", "temperate", "hot-humid", "hot-dry")
"""What a site's ``climate`` may say: the classes of ``data/energy/cooling_wue.csv``."""

WATER_STRESS_CLASSES = ("low", "low-medium", "medium-high", "high", "extremely-high", "arid-low-water-use")
"""What a site's ``water_stress`` may say: WRI Aqueduct's baseline water stress classes."""


def _one_of(raw: Table, table: pd.DataFrame, column: str, allowed: tuple[str, ...], problems: list[Problem]) -> pd.Series:
    """A text column as written, lower case, each cell one of ``allowed`` or blank ('')."""
    written = table[column].str.strip().str.lower()
    bad = ~written.isin([*allowed, ""])
    problems.extend(
        raw.problem(
            int(k), column, f"must be one of {', '.join(allowed)}, got {table[column].iloc[k]!r}", "write one, or leave it blank"
        )
        for k in bad.to_numpy().nonzero()[0]
    )
    return written


SITE_NETWORKS = ("backbone", "transit")
"""What a site's ``network`` may say (:mod:`placement.network.paths`: the path class of its round trips)."""


def _site_network(raw: Table, table: pd.DataFrame, problems: list[Problem]) -> pd.Series:
    """Each site's connectivity: as written, else backbone for a cloud region (``providers``) and transit otherwise."""
    written = table["network"].str.strip().str.lower()
    bad = ~written.isin([*SITE_NETWORKS, ""])
    problems.extend(
        raw.problem(
            int(k),
            "network",
            f"must be backbone or transit, got {table['network'].iloc[k]!r}",
            "write backbone or transit, or leave it blank",
        )
        for k in bad.to_numpy().nonzero()[0]
    )
    by_kind = table["providers"].str.strip().ne("").map({True: "backbone", False: "transit"})
    return written.where(written.ne(""), by_kind)
