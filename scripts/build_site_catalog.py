"""Build ``data/sites/world_metros.csv`` and ``data/sites/world_sites.csv``.

Build-time tool only: it reads the shared data folder (cloud-region JSONs and the
codecarbon country energy mix), clusters provider regions into metros, joins the
hand-written per-metro figures in ``data/sites/metro_figures.csv`` and writes the
74-metro catalog deterministically.  It then adds the hand-written sites of
``data/sites/site_additions.csv`` (cloud regions that are not a metro of their own,
colocation metros and greenfield power sites), priced from
``data/sites/power_prices.csv`` and placed at GeoNames cities, and writes the
larger catalog.  Tests and the application never run it.

Usage (from the repository root)::

    .venv/bin/python scripts/build_site_catalog.py --shared ../shared/data
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PROVIDERS: tuple[str, ...] = ("aws", "azure", "gcp", "oci")
CLUSTER_RADIUS_KM = 100.0
EARTH_RADIUS_KM = 6371.0088

OUTPUT_COLUMNS: tuple[str, ...] = (
    "id",
    "name",
    "country_code",
    "country",
    "continent",
    "lat",
    "lon",
    "mw_available",
    "power_price_usd_per_mwh",
    "pue",
    "capex_usd_per_mw",
    "carbon_intensity_g_per_kwh",
    "climate",
    "locked",
    "providers",
    "network",
    "grid_region",
    "campus",
    "corridor",
    "source",
)

# Regions left out of the catalog entirely (key -> reason).
EXCLUDED: dict[str, str] = {
    "aws:us-gov-east-1": "GovCloud: restricted partition; coordinates are a US placeholder",
    "aws:us-gov-west-1": "GovCloud: restricted partition; coordinates are a US placeholder",
}

# Published coordinates that are state/country placeholders or point at a city other
# than the one the provider documents (key -> (lat, lon, location and basis)).
COORD_FIXES: dict[str, tuple[float, float, str]] = {
    "gcp:us-east4": (39.0438, -77.4874, "Ashburn, Virginia (GCP regions page)"),
    "gcp:us-central1": (41.2619, -95.8608, "Council Bluffs, Iowa (GCP regions page)"),
    "gcp:us-east1": (33.1960, -80.0131, "Moncks Corner, South Carolina (GCP regions page)"),
    "gcp:us-west1": (45.5946, -121.1787, "The Dalles, Oregon (GCP regions page)"),
    "gcp:europe-west1": (50.4491, 3.8185, "St. Ghislain, Belgium (GCP regions page)"),
    "gcp:europe-west4": (53.4386, 6.8355, "Eemshaven, Netherlands (GCP regions page)"),
    "gcp:europe-north1": (60.5697, 27.1981, "Hamina, Finland (GCP regions page)"),
    "azure:eastus": (39.0438, -77.4874, "Virginia only; generic state point -> N. Virginia hub"),
    "azure:francecentral": (48.8566, 2.3522, "Paris (Azure geographies page)"),
    "azure:francesouth": (43.2965, 5.3698, "Marseille (Azure geographies page)"),
    "azure:germanynorth": (52.5200, 13.4050, "Berlin (Azure geographies page)"),
    "azure:ukwest": (51.4816, -3.1791, "Cardiff (Azure geographies page)"),
    "azure:mexicocentral": (20.5888, -100.3899, "Queretaro State (Azure geographies page)"),
    "azure:jioindiawest": (22.4707, 70.0577, "Jamnagar (Azure geographies page)"),
    "azure:jioindiacentral": (21.1458, 79.0882, "Nagpur (Azure geographies page)"),
}

# Country name as spelled in the regions JSONs -> (ISO alpha-2, ISO alpha-3, continent).
COUNTRIES: dict[str, tuple[str, str, str]] = {
    "Australia": ("AU", "AUS", "Oceania"),
    "Bahrain": ("BH", "BHR", "Asia"),
    "Belgium": ("BE", "BEL", "Europe"),
    "Brazil": ("BR", "BRA", "South America"),
    "Canada": ("CA", "CAN", "North America"),
    "Chile": ("CL", "CHL", "South America"),
    "China": ("CN", "CHN", "Asia"),
    "Finland": ("FI", "FIN", "Europe"),
    "France": ("FR", "FRA", "Europe"),
    "Germany": ("DE", "DEU", "Europe"),
    "Hong Kong": ("HK", "HKG", "Asia"),
    "India": ("IN", "IND", "Asia"),
    "Indonesia": ("ID", "IDN", "Asia"),
    "Ireland": ("IE", "IRL", "Europe"),
    "Israel": ("IL", "ISR", "Asia"),
    "Italy": ("IT", "ITA", "Europe"),
    "Japan": ("JP", "JPN", "Asia"),
    "Malaysia": ("MY", "MYS", "Asia"),
    "Mexico": ("MX", "MEX", "North America"),
    "Netherlands": ("NL", "NLD", "Europe"),
    "Norway": ("NO", "NOR", "Europe"),
    "Poland": ("PL", "POL", "Europe"),
    "Qatar": ("QA", "QAT", "Asia"),
    "Saudi Arabia": ("SA", "SAU", "Asia"),
    "Singapore": ("SG", "SGP", "Asia"),
    "South Africa": ("ZA", "ZAF", "Africa"),
    "South Korea": ("KR", "KOR", "Asia"),
    "Spain": ("ES", "ESP", "Europe"),
    "Sweden": ("SE", "SWE", "Europe"),
    "Switzerland": ("CH", "CHE", "Europe"),
    "Taiwan": ("TW", "TWN", "Asia"),
    "United Arab Emirates": ("AE", "ARE", "Asia"),
    "United Kingdom": ("GB", "GBR", "Europe"),
    "United States": ("US", "USA", "North America"),
}

# Estimation rules, documented in data/SOURCES.md ("Site catalog").
MW_BY_TIER: dict[str, float] = {"T1": 500.0, "T2": 200.0, "T3": 80.0, "T4": 30.0}

# Cited MW rules (data/SOURCES.md, "mw_available"): basis -> (share of the published figure,
# whether the figure is IT load and so is multiplied by the metro's PUE, the rule's name).
MW_RULES: dict[str, tuple[float, bool, str]] = {
    "uc": (0.25, True, "0.25 x IT MW under construction x PUE"),
    "pipeline": (0.05, True, "0.05 x IT MW under construction and planned x PUE"),
    "campus": (0.25, True, "0.25 x announced campus IT MW x PUE"),
    "utility": (0.25, False, "0.25 x utility-committed facility MW"),
}
PUE_BY_CLIMATE: dict[str, float] = {
    "cool": 1.20,
    "temperate": 1.30,
    "hot-dry": 1.35,
    "hot-humid": 1.45,
}

FIGURE_COLUMNS: tuple[str, ...] = (
    "id",
    "name",
    "anchor",
    "climate",
    "mw_tier",
    "power_price_usd_per_mwh",
    "price_source",
    "capex_usd_per_mw",
    "capex_source",
    "note",
    "mw_figure",
    "mw_basis",
    "mw_source",
)


class CatalogError(RuntimeError):
    """Raised when the inputs cannot produce a complete, consistent catalog."""


@dataclass(frozen=True)
class Region:
    """One provider region after exclusions and coordinate fixes.

    Attributes
    ----------
    key : str
        ``provider:region-code``, e.g. ``aws:us-east-1``.
    country : str
        Country name as spelled in the regions JSON.
    lat, lon : float
        Coordinates in decimal degrees (WGS84).
    """

    key: str
    country: str
    lat: float
    lon: float


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Return the great-circle distance between two points.

    Parameters
    ----------
    lat1, lon1, lat2, lon2 : float
        Coordinates in decimal degrees.

    Returns
    -------
    float
        Distance in kilometres.
    """
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(h))


def load_regions(shared: Path) -> list[Region]:
    """Read the four provider JSONs, drop exclusions and apply coordinate fixes.

    Parameters
    ----------
    shared : Path
        The shared data folder holding ``regions/{provider}_regions.json``.

    Returns
    -------
    list of Region
        Regions sorted by key.

    Raises
    ------
    CatalogError
        If a file is missing or a fix/exclusion names a region that does not exist.
    """
    regions: list[Region] = []
    seen: set[str] = set()
    for provider in PROVIDERS:
        path = shared / "regions" / f"{provider}_regions.json"
        if not path.is_file():
            raise CatalogError(f"missing regions file: {path}")
        data: dict[str, dict[str, object]] = json.loads(path.read_text(encoding="utf-8"))
        for code, info in data.items():
            key = f"{provider}:{code}"
            seen.add(key)
            if key in EXCLUDED:
                continue
            lat, lon = float(str(info["latitude"])), float(str(info["longitude"]))
            if key in COORD_FIXES:
                lat, lon, _ = COORD_FIXES[key]
            regions.append(Region(key, str(info["country"]), lat, lon))
    unknown = (set(EXCLUDED) | set(COORD_FIXES)) - seen
    if unknown:
        raise CatalogError(f"exclusions/fixes name unknown regions: {sorted(unknown)}")
    return sorted(regions, key=lambda r: r.key)


def cluster(regions: Sequence[Region], radius_km: float) -> list[list[Region]]:
    """Group regions into metros by single linkage within one country.

    Two regions are linked when they are in the same country and at most
    ``radius_km`` apart; metros are the connected components.

    Parameters
    ----------
    regions : sequence of Region
        Regions to group.
    radius_km : float
        Linkage distance in kilometres.

    Returns
    -------
    list of list of Region
        Clusters, each sorted by key, ordered by their first key.
    """
    parent = list(range(len(regions)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(regions):
        for j in range(i + 1, len(regions)):
            b = regions[j]
            if a.country == b.country and haversine_km(a.lat, a.lon, b.lat, b.lon) <= radius_km:
                parent[find(j)] = find(i)
    groups: dict[int, list[Region]] = {}
    for i, r in enumerate(regions):
        groups.setdefault(find(i), []).append(r)
    return sorted((sorted(g, key=lambda r: r.key) for g in groups.values()), key=lambda g: g[0].key)


def read_figures(path: Path) -> list[dict[str, str]]:
    """Read the hand-written per-metro figures.

    Parameters
    ----------
    path : Path
        ``data/sites/metro_figures.csv``.

    Returns
    -------
    list of dict
        One dict per metro row.

    Raises
    ------
    CatalogError
        On a wrong header, a duplicate id/anchor or an unknown tier/climate.
    """
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != FIGURE_COLUMNS:
            raise CatalogError(f"{path}: header must be {','.join(FIGURE_COLUMNS)}")
        rows = list(reader)
    for col in ("id", "anchor"):
        values = [r[col] for r in rows]
        dupes = sorted({v for v in values if values.count(v) > 1})
        if dupes:
            raise CatalogError(f"{path}: duplicate {col}: {dupes}")
    for r in rows:
        if r["climate"] not in PUE_BY_CLIMATE:
            raise CatalogError(f"{path}: bad climate in row {r['id']}")
        cited = bool(r["mw_figure"] or r["mw_basis"] or r["mw_source"])
        if cited and not (r["mw_figure"].replace(".", "", 1).isdigit() and r["mw_basis"] in MW_RULES and r["mw_source"]):
            raise CatalogError(f"{path}: row {r['id']} needs mw_figure, mw_basis in {tuple(MW_RULES)} and mw_source")
        if cited == (r["mw_tier"] in MW_BY_TIER) or (r["mw_tier"] and r["mw_tier"] not in MW_BY_TIER):
            raise CatalogError(f"{path}: row {r['id']} needs either an mw_tier (T1-T4) or a cited mw_figure, not both")
        if float(r["power_price_usd_per_mwh"]) <= 0 or float(r["capex_usd_per_mw"]) <= 0:
            raise CatalogError(f"{path}: non-positive price/capex in row {r['id']}")
    return rows


def metro_mw(fig: dict[str, str]) -> tuple[float, str]:
    """Return a metro's MW of facility power and the ``mw:`` part of its ``source``.

    Parameters
    ----------
    fig : dict
        One row of :func:`read_figures`.

    Returns
    -------
    tuple of (float, str)
        ``mw_available`` (a tier's MW, or the cited rule's result rounded to 10 MW, at least 10)
        and ``mw: estimate Tn`` or ``mw: <source> -> <rule> = <MW>``.
    """
    if not fig["mw_figure"]:
        return MW_BY_TIER[fig["mw_tier"]], f"mw: estimate {fig['mw_tier']}"
    share, it_load, rule = MW_RULES[fig["mw_basis"]]
    pue = PUE_BY_CLIMATE[fig["climate"]] if it_load else 1.0
    mw = max(10.0, 10.0 * math.floor(share * float(fig["mw_figure"]) * pue / 10.0 + 0.5))
    pue_text = f" {pue:.2f}" if it_load else ""
    return mw, f"mw: {fig['mw_source']} -> {rule}{pue_text} = {mw:.0f}"


def load_carbon(shared: Path) -> dict[str, tuple[float, int]]:
    """Read codecarbon's carbon intensity by ISO3 country.

    Parameters
    ----------
    shared : Path
        The shared data folder.

    Returns
    -------
    dict
        ISO3 -> (gCO2/kWh, data year).
    """
    path = shared / "energy" / "codecarbon_global_energy_mix_by_country.json"
    data: dict[str, dict[str, object]] = json.loads(path.read_text(encoding="utf-8"))
    return {k: (float(str(v["carbon_intensity"])), int(str(v["year"]))) for k, v in data.items()}


LBS_PER_MWH_TO_G_PER_KWH = 0.45359237
"""1 lb/MWh is 0.45359237 g/kWh."""


def load_us_states(shared: Path) -> dict[str, tuple[float, int]]:
    """Read EPA eGRID's CO2e output emission rate by US state (via codecarbon).

    Parameters
    ----------
    shared : Path
        The shared data folder.

    Returns
    -------
    dict
        Two-letter state code -> (gCO2e/kWh, data year).
    """
    path = shared / "energy" / "codecarbon_egrid2023_us_state_emissions_lbs_per_mwh.json"
    data: dict[str, dict[str, object]] = json.loads(path.read_text(encoding="utf-8"))
    year = int(str(data["_source"]["year"]))
    return {
        str(v["regionCode"]): (float(str(v["emissions"])) * LBS_PER_MWH_TO_G_PER_KWH, year)
        for k, v in data.items()
        if not k.startswith("_")
    }


def read_us_cities(path: Path) -> list[tuple[str, float, float]]:
    """The bundled GeoNames cities of the US: (state code, lat, lon) each."""
    with path.open(newline="", encoding="utf-8") as fh:
        return [
            (r["admin1code"], float(r["latitude"]), float(r["longitude"])) for r in csv.DictReader(fh) if r["countrycode"] == "US"
        ]


def with_us_states(
    rows: list[dict[str, str]], us_cities: Sequence[tuple[str, float, float]], states: dict[str, tuple[float, int]]
) -> list[dict[str, str]]:
    """US sites at their state's eGRID intensity instead of the national figure: the state of the nearest US city.

    Parameters
    ----------
    rows : list of dict
        Catalog rows.
    us_cities : sequence of tuple
        Output of :func:`read_us_cities`.
    states : dict
        Output of :func:`load_us_states`.

    Returns
    -------
    list of dict
        The rows, US rows with ``carbon_intensity_g_per_kwh`` and the ``source``'s carbon part replaced.
    """
    out = []
    for row in rows:
        if row["country_code"] != "US":
            out.append(row)
            continue
        lat, lon = float(row["lat"]), float(row["lon"])
        state = min(us_cities, key=lambda c: haversine_km(lat, lon, c[1], c[2]))[0]
        if state not in states:
            raise CatalogError(f"{row['id']}: eGRID has no emission rate for state {state}")
        intensity, year = states[state]
        source = re.sub(
            r"carbon: codecarbon USA \d{4}", f"carbon: EPA eGRID{year} {state} (STC2ERTA, via codecarbon)", row["source"]
        )
        out.append({**row, "carbon_intensity_g_per_kwh": f"{intensity:.1f}", "source": source})
    return out


def build_rows(
    clusters: Iterable[list[Region]],
    figures: Sequence[dict[str, str]],
    carbon: dict[str, tuple[float, int]],
) -> list[dict[str, str]]:
    """Join clusters with figures and carbon intensity into output rows.

    Parameters
    ----------
    clusters : iterable of list of Region
        Output of :func:`cluster`.
    figures : sequence of dict
        Output of :func:`read_figures`; each row's ``anchor`` names one member region.
    carbon : dict
        Output of :func:`load_carbon`.

    Returns
    -------
    list of dict
        Rows keyed by :data:`OUTPUT_COLUMNS`, sorted by id.

    Raises
    ------
    CatalogError
        If a metro lacks figures, a figure row matches no metro, an anchor is
        shared by two metros, or a country is unknown.
    """
    by_anchor = {f["anchor"]: f for f in figures}
    used: set[str] = set()
    rows: list[dict[str, str]] = []
    missing: list[str] = []
    for members in clusters:
        keys = [m.key for m in members]
        hits = [by_anchor[k] for k in keys if k in by_anchor]
        if len(hits) != 1:
            missing.append(f"{keys} ({len(hits)} figure rows)")
            continue
        fig = hits[0]
        used.add(fig["anchor"])
        country = members[0].country
        if country not in COUNTRIES:
            raise CatalogError(f"unknown country {country!r} for metro {fig['id']}")
        iso2, iso3, continent = COUNTRIES[country]
        if iso3 not in carbon:
            raise CatalogError(f"codecarbon has no carbon intensity for {iso3}")
        intensity, year = carbon[iso3]
        lat = sum(m.lat for m in members) / len(members)
        lon = sum(m.lon for m in members) / len(members)
        fixed = ",".join(m.key for m in members if m.key in COORD_FIXES)
        mw, mw_source = metro_mw(fig)
        source = "; ".join(
            s
            for s in (
                f"price: {fig['price_source']}",
                mw_source,
                f"pue: estimate climate {fig['climate']}",
                f"capex: {fig['capex_source']}",
                f"carbon: codecarbon {iso3} {year}",
                f"coords: corrected for {fixed}" if fixed else "",
                fig["note"],
            )
            if s
        )
        rows.append(
            {
                "id": fig["id"],
                "name": fig["name"],
                "country_code": iso2,
                "country": country,
                "continent": continent,
                "lat": f"{lat:.4f}",
                "lon": f"{lon:.4f}",
                "mw_available": f"{mw:.0f}",
                "power_price_usd_per_mwh": f"{float(fig['power_price_usd_per_mwh']):.1f}",
                "pue": f"{PUE_BY_CLIMATE[fig['climate']]:.2f}",
                "capex_usd_per_mw": f"{float(fig['capex_usd_per_mw']):.0f}",
                "carbon_intensity_g_per_kwh": f"{intensity:.1f}",
                "climate": fig["climate"],
                "locked": "false",
                "providers": ";".join(keys),
                "network": "backbone",  # a cloud region: its provider's backbone carries the packets
                "source": source,
            }
        )
    if missing:
        raise CatalogError("metros without exactly one figure row:\n  " + "\n  ".join(missing))
    stale = sorted(set(by_anchor) - used)
    if stale:
        raise CatalogError(f"figure rows whose anchor is in no metro: {stale}")
    return sorted(rows, key=lambda r: r["id"])


DOMAIN_COLUMNS: tuple[str, ...] = ("site_id", "grid_region", "campus", "corridor")


def read_domains(path: Path) -> dict[str, dict[str, str]]:
    """The hand-written fault-domain groups per site (``data/sites/fault_domains.csv``), by site id.

    Raises
    ------
    CatalogError
        If the header is not :data:`DOMAIN_COLUMNS` or a site is listed twice.
    """
    rows = _read_table(path, DOMAIN_COLUMNS)
    by_id: dict[str, dict[str, str]] = {}
    for row in rows:
        if row["site_id"] in by_id:
            raise CatalogError(f"{path}: site {row['site_id']} listed twice")
        by_id[row["site_id"]] = {k: row[k] for k in DOMAIN_COLUMNS[1:]}
    return by_id


def with_domains(rows: Sequence[dict[str, str]], domains: dict[str, dict[str, str]]) -> list[dict[str, str]]:
    """The rows with their fault-domain columns (empty for a site the table does not list)."""
    return [{**row, **domains.get(row["id"], dict.fromkeys(DOMAIN_COLUMNS[1:], ""))} for row in rows]


def write_csv(rows: Sequence[dict[str, str]], path: Path) -> None:
    """Write the catalog with a fixed column order and ``\\n`` line endings.

    Parameters
    ----------
    rows : sequence of dict
        Output of :func:`build_rows`.
    path : Path
        Destination CSV.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=OUTPUT_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


# --- The larger catalog: metros plus hand-written additions ------------------------------------

ADDITION_COLUMNS: tuple[str, ...] = (
    "id",
    "name",
    "kind",
    "geonameid",
    "lat",
    "lon",
    "climate",
    "mw",
    "mw_source",
    "price_area",
    "providers",
    "note",
)
KINDS: tuple[str, ...] = ("cloud-region", "colo", "greenfield")
GREENFIELD_MW = 200.0  # tier G: a new high-voltage connection beside generation (data/SOURCES.md)
MAX_CAMPUS_OFFSET_KM = 100.0  # an explicit campus point must be this close to its GeoNames city

# ISO alpha-2 -> (country name, ISO alpha-3, continent) for the countries of the additions.
COUNTRY_INFO: dict[str, tuple[str, str, str]] = {
    "AO": ("Angola", "AGO", "Africa"),
    "AR": ("Argentina", "ARG", "South America"),
    "AT": ("Austria", "AUT", "Europe"),
    "AU": ("Australia", "AUS", "Oceania"),
    "AZ": ("Azerbaijan", "AZE", "Asia"),
    "BD": ("Bangladesh", "BGD", "Asia"),
    "BE": ("Belgium", "BEL", "Europe"),
    "BG": ("Bulgaria", "BGR", "Europe"),
    "BR": ("Brazil", "BRA", "South America"),
    "CA": ("Canada", "CAN", "North America"),
    "CD": ("DR Congo", "COD", "Africa"),
    "CI": ("Ivory Coast", "CIV", "Africa"),
    "CL": ("Chile", "CHL", "South America"),
    "CM": ("Cameroon", "CMR", "Africa"),
    "CN": ("China", "CHN", "Asia"),
    "CO": ("Colombia", "COL", "South America"),
    "CR": ("Costa Rica", "CRI", "North America"),
    "CZ": ("Czechia", "CZE", "Europe"),
    "DE": ("Germany", "DEU", "Europe"),
    "DJ": ("Djibouti", "DJI", "Africa"),
    "DK": ("Denmark", "DNK", "Europe"),
    "DO": ("Dominican Republic", "DOM", "North America"),
    "DZ": ("Algeria", "DZA", "Africa"),
    "EC": ("Ecuador", "ECU", "South America"),
    "EE": ("Estonia", "EST", "Europe"),
    "EG": ("Egypt", "EGY", "Africa"),
    "ES": ("Spain", "ESP", "Europe"),
    "ET": ("Ethiopia", "ETH", "Africa"),
    "FI": ("Finland", "FIN", "Europe"),
    "FR": ("France", "FRA", "Europe"),
    "GB": ("United Kingdom", "GBR", "Europe"),
    "GE": ("Georgia", "GEO", "Asia"),
    "GH": ("Ghana", "GHA", "Africa"),
    "GR": ("Greece", "GRC", "Europe"),
    "GT": ("Guatemala", "GTM", "North America"),
    "HR": ("Croatia", "HRV", "Europe"),
    "HU": ("Hungary", "HUN", "Europe"),
    "ID": ("Indonesia", "IDN", "Asia"),
    "IL": ("Israel", "ISR", "Asia"),
    "IN": ("India", "IND", "Asia"),
    "IS": ("Iceland", "ISL", "Europe"),
    "IT": ("Italy", "ITA", "Europe"),
    "JO": ("Jordan", "JOR", "Asia"),
    "JP": ("Japan", "JPN", "Asia"),
    "KE": ("Kenya", "KEN", "Africa"),
    "KH": ("Cambodia", "KHM", "Asia"),
    "KR": ("South Korea", "KOR", "Asia"),
    "KW": ("Kuwait", "KWT", "Asia"),
    "KZ": ("Kazakhstan", "KAZ", "Asia"),
    "LK": ("Sri Lanka", "LKA", "Asia"),
    "LT": ("Lithuania", "LTU", "Europe"),
    "LU": ("Luxembourg", "LUX", "Europe"),
    "LV": ("Latvia", "LVA", "Europe"),
    "MA": ("Morocco", "MAR", "Africa"),
    "MN": ("Mongolia", "MNG", "Asia"),
    "MX": ("Mexico", "MEX", "North America"),
    "MY": ("Malaysia", "MYS", "Asia"),
    "MZ": ("Mozambique", "MOZ", "Africa"),
    "NG": ("Nigeria", "NGA", "Africa"),
    "NO": ("Norway", "NOR", "Europe"),
    "NP": ("Nepal", "NPL", "Asia"),
    "NZ": ("New Zealand", "NZL", "Oceania"),
    "OM": ("Oman", "OMN", "Asia"),
    "PA": ("Panama", "PAN", "North America"),
    "PE": ("Peru", "PER", "South America"),
    "PH": ("Philippines", "PHL", "Asia"),
    "PK": ("Pakistan", "PAK", "Asia"),
    "PR": ("Puerto Rico", "PRI", "North America"),
    "PT": ("Portugal", "PRT", "Europe"),
    "PY": ("Paraguay", "PRY", "South America"),
    "RO": ("Romania", "ROU", "Europe"),
    "RS": ("Serbia", "SRB", "Europe"),
    "RU": ("Russia", "RUS", "Europe"),
    "RW": ("Rwanda", "RWA", "Africa"),
    "SA": ("Saudi Arabia", "SAU", "Asia"),
    "SE": ("Sweden", "SWE", "Europe"),
    "SN": ("Senegal", "SEN", "Africa"),
    "TH": ("Thailand", "THA", "Asia"),
    "TN": ("Tunisia", "TUN", "Africa"),
    "TR": ("Turkey", "TUR", "Asia"),
    "TW": ("Taiwan", "TWN", "Asia"),
    "TZ": ("Tanzania", "TZA", "Africa"),
    "UA": ("Ukraine", "UKR", "Europe"),
    "UG": ("Uganda", "UGA", "Africa"),
    "US": ("United States", "USA", "North America"),
    "UY": ("Uruguay", "URY", "South America"),
    "UZ": ("Uzbekistan", "UZB", "Asia"),
    "VN": ("Vietnam", "VNM", "Asia"),
    "ZA": ("South Africa", "ZAF", "Africa"),
    "ZM": ("Zambia", "ZMB", "Africa"),
}

# Facility capex per MW of IT load by country group (USD, rounded; data/SOURCES.md "Site catalog").
CAPEX_GROUPS: tuple[tuple[float, str, frozenset[str]], ...] = (
    (
        11_700_000.0,
        "C&W DC Development Cost Guide 2025 US 19-market avg (published avg; no market figure used)",
        frozenset({"US"}),
    ),
    (14_100_000.0, "estimate (anchored to T&T 2025-26 Osaka 14.1 USD/W)", frozenset({"JP"})),
    (10_500_000.0, "estimate (anchored to T&T 2023 Jakarta 10.5 USD/W)", frozenset({"ID"})),
    (10_000_000.0, "estimate (anchored to T&T 2023 Kuala Lumpur 10.0 USD/W)", frozenset({"MY"})),
    (11_000_000.0, "estimate (regional anchor)", frozenset({"CA"})),
    (11_500_000.0, "estimate (regional anchor)", frozenset({"AU", "NZ", "KR", "TW", "IL"})),
    (
        10_500_000.0,
        "estimate (regional anchor)",
        frozenset({"GB", "BE", "LU", "DE", "FR", "AT", "DK", "FI", "NO", "SE", "IS", "IT"}),
    ),
    (10_000_000.0, "estimate (regional anchor)", frozenset({"ES", "PT"})),
    (
        9_500_000.0,
        "estimate (regional anchor)",
        frozenset({"CZ", "HU", "RO", "BG", "RS", "HR", "EE", "LV", "LT", "GR"}),
    ),
    (8_500_000.0, "estimate (regional anchor)", frozenset({"TR", "UA", "RU", "GE", "AZ", "KZ", "UZ", "MN"})),
    (10_000_000.0, "estimate (regional anchor)", frozenset({"SA", "KW", "OM", "JO"})),
    (
        10_000_000.0,
        "estimate (regional anchor)",
        frozenset({"EG", "NG", "GH", "CI", "SN", "MA", "DZ", "TN", "KE", "UG", "RW", "TZ", "ET", "DJ", "ZM", "MZ", "ZA"})
        | frozenset({"AO", "CD", "CM"}),
    ),
    (
        9_500_000.0,
        "estimate (regional anchor)",
        frozenset({"MX", "GT", "CR", "PA", "DO", "PR", "CO", "PE", "EC", "AR", "UY", "PY", "BR", "CL"}),
    ),
    (9_500_000.0, "estimate (regional anchor)", frozenset({"TH", "VN", "PH", "KH"})),
    (7_500_000.0, "estimate (regional anchor)", frozenset({"IN", "CN", "PK", "BD", "LK", "NP"})),
)


@dataclass(frozen=True)
class City:
    """A GeoNames city (``data/cities/geonames_cities15000.csv``)."""

    name: str
    country_code: str
    lat: float
    lon: float


def _read_table(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != columns:
            raise CatalogError(f"{path}: header must be {','.join(columns)}")
        return list(reader)


def read_cities(path: Path) -> dict[str, City]:
    """Read the bundled GeoNames cities, keyed by geonameid.

    Parameters
    ----------
    path : Path
        ``data/cities/geonames_cities15000.csv``.

    Returns
    -------
    dict
        geonameid -> :class:`City`.
    """
    with path.open(newline="", encoding="utf-8") as fh:
        return {
            r["geonameid"]: City(r["name"], r["countrycode"], float(r["latitude"]), float(r["longitude"]))
            for r in csv.DictReader(fh)
        }


def read_prices(path: Path) -> dict[str, tuple[float, str]]:
    """Read power prices by area (ISO alpha-2, or ``US-TX``-style state/province codes).

    Parameters
    ----------
    path : Path
        ``data/sites/power_prices.csv``.

    Returns
    -------
    dict
        area -> (USD/MWh, source).
    """
    rows = _read_table(path, ("area", "power_price_usd_per_mwh", "source"))
    prices = {r["area"]: (float(r["power_price_usd_per_mwh"]), r["source"]) for r in rows}
    if len(prices) != len(rows) or any(p <= 0 or not s for p, s in prices.values()):
        raise CatalogError(f"{path}: duplicate area, non-positive price or empty source")
    return prices


def read_additions(path: Path) -> list[dict[str, str]]:
    """Read the hand-written additions and check each row's kind, climate, MW and citation.

    Parameters
    ----------
    path : Path
        ``data/sites/site_additions.csv``.

    Returns
    -------
    list of dict
        One dict per added site.

    Raises
    ------
    CatalogError
        Listing every bad row.
    """
    rows = _read_table(path, ADDITION_COLUMNS)
    ids = [r["id"] for r in rows]
    bad = [f"duplicate id {i}" for i in sorted({i for i in ids if ids.count(i) > 1})]
    for r in rows:
        tier = r["mw"] in MW_BY_TIER or r["mw"] == "G"
        if r["kind"] not in KINDS or r["climate"] not in PUE_BY_CLIMATE:
            bad.append(f"{r['id']}: kind must be one of {KINDS}, climate one of {tuple(PUE_BY_CLIMATE)}")
        if not tier and not (r["mw"].isdigit() and r["mw_source"]):
            bad.append(f"{r['id']}: mw must be a tier (T1-T4, G) or a cited number of MW with mw_source")
        if bool(r["lat"]) != bool(r["lon"]):
            bad.append(f"{r['id']}: give both lat and lon or neither")
    if bad:
        raise CatalogError(f"{path}:\n  " + "\n  ".join(bad))
    return rows


def capex_for(country_code: str) -> tuple[float, str]:
    """Return the capex rule for a country: (USD per MW of IT load, source)."""
    for usd, source, members in CAPEX_GROUPS:
        if country_code in members:
            return usd, source
    raise CatalogError(f"no capex group for country {country_code}")


def _place(row: dict[str, str], cities: dict[str, City]) -> tuple[City, float, float, str]:
    if row["geonameid"] not in cities:
        raise CatalogError(f"{row['id']}: geonameid {row['geonameid']} is not in the bundled cities")
    city = cities[row["geonameid"]]
    if not row["lat"]:
        return city, city.lat, city.lon, f"coords: GeoNames {row['geonameid']} {city.name}"
    lat, lon = float(row["lat"]), float(row["lon"])
    offset = haversine_km(lat, lon, city.lat, city.lon)
    if offset > MAX_CAMPUS_OFFSET_KM:
        raise CatalogError(f"{row['id']}: campus point is {offset:.0f} km from GeoNames {city.name}")
    return city, lat, lon, f"coords: campus point {offset:.0f} km from GeoNames {row['geonameid']} {city.name}"


def _mw(row: dict[str, str]) -> tuple[float, str]:
    if row["mw"] == "G":
        return GREENFIELD_MW, "mw: estimate G"
    if row["mw"] in MW_BY_TIER:
        return MW_BY_TIER[row["mw"]], f"mw: estimate {row['mw']}"
    return float(row["mw"]), f"mw: {row['mw_source']}"


def _price(row: dict[str, str], country_code: str, prices: dict[str, tuple[float, str]]) -> tuple[float, str]:
    area = row["price_area"]
    if area not in prices or area.split("-")[0] != country_code:
        raise CatalogError(f"{row['id']}: price area {area!r} is not in the price table for country {country_code}")
    return prices[area]


def build_additions(
    additions: Sequence[dict[str, str]],
    prices: dict[str, tuple[float, str]],
    cities: dict[str, City],
    carbon: dict[str, tuple[float, int]],
) -> list[dict[str, str]]:
    """Turn the hand-written additions into catalog rows.

    Parameters
    ----------
    additions : sequence of dict
        Output of :func:`read_additions`.
    prices : dict
        Output of :func:`read_prices`.
    cities : dict
        Output of :func:`read_cities`.
    carbon : dict
        Output of :func:`load_carbon`.

    Returns
    -------
    list of dict
        Rows keyed by :data:`OUTPUT_COLUMNS`, in input order.
    """
    rows: list[dict[str, str]] = []
    for a in additions:
        city, lat, lon, coords = _place(a, cities)
        if city.country_code not in COUNTRY_INFO:
            raise CatalogError(f"{a['id']}: no country entry for {city.country_code}")
        country, iso3, continent = COUNTRY_INFO[city.country_code]
        if iso3 not in carbon:
            raise CatalogError(f"codecarbon has no carbon intensity for {iso3}")
        mw, mw_source = _mw(a)
        price, price_source = _price(a, city.country_code, prices)
        capex, capex_source = capex_for(city.country_code)
        intensity, year = carbon[iso3]
        parts = (
            f"kind: {a['kind']}",
            coords,
            f"price: {price_source}",
            mw_source,
            f"pue: estimate climate {a['climate']}",
            f"capex: {capex_source}",
            f"carbon: codecarbon {iso3} {year}",
            f"note: {a['note']}" if a["note"] else "",
        )
        rows.append(
            {
                "id": a["id"],
                "name": a["name"],
                "country_code": city.country_code,
                "country": country,
                "continent": continent,
                "lat": f"{lat:.4f}",
                "lon": f"{lon:.4f}",
                "mw_available": f"{mw:.0f}",
                "power_price_usd_per_mwh": f"{price:.1f}",
                "pue": f"{PUE_BY_CLIMATE[a['climate']]:.2f}",
                "capex_usd_per_mw": f"{capex:.0f}",
                "carbon_intensity_g_per_kwh": f"{intensity:.1f}",
                "climate": a["climate"],
                "locked": "false",
                "providers": a["providers"],
                "network": "backbone" if a["kind"] == "cloud-region" else "transit",  # colocation, greenfield: transit
                "source": "; ".join(p for p in parts if p),
            }
        )
    return rows


def build_world(metros: Sequence[dict[str, str]], added: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    """Join the metros (figures unchanged, ``kind: cloud-metro``) and the additions, sorted by id.

    Raises
    ------
    CatalogError
        If an added id is also a metro id.
    """
    clash = sorted({m["id"] for m in metros} & {a["id"] for a in added})
    if clash:
        raise CatalogError(f"added sites reuse metro ids: {clash}")
    tagged = [{**m, "source": f"kind: cloud-metro; {m['source']}"} for m in metros]
    return sorted([*tagged, *added], key=lambda r: r["id"])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the build.

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments (defaults to ``sys.argv[1:]``).

    Returns
    -------
    int
        Process exit code (0 on success, 1 on a catalog error).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--figures", type=Path, default=REPO_ROOT / "data" / "sites" / "metro_figures.csv")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "data" / "sites" / "world_metros.csv")
    parser.add_argument("--radius-km", type=float, default=CLUSTER_RADIUS_KM)
    sites = REPO_ROOT / "data" / "sites"
    parser.add_argument("--additions", type=Path, default=sites / "site_additions.csv")
    parser.add_argument("--prices", type=Path, default=sites / "power_prices.csv")
    parser.add_argument("--cities", type=Path, default=REPO_ROOT / "data" / "cities" / "geonames_cities15000.csv")
    parser.add_argument("--world-out", type=Path, default=sites / "world_sites.csv")
    parser.add_argument("--domains", type=Path, default=sites / "fault_domains.csv")
    args = parser.parse_args(argv)
    try:
        regions = load_regions(args.shared)
        clusters = cluster(regions, args.radius_km)
        carbon = load_carbon(args.shared)
        rows = build_rows(clusters, read_figures(args.figures), carbon)
        added = build_additions(read_additions(args.additions), read_prices(args.prices), read_cities(args.cities), carbon)
        world = build_world(rows, added)
        us_cities, states = read_us_cities(args.cities), load_us_states(args.shared)
        rows, world = with_us_states(rows, us_cities, states), with_us_states(world, us_cities, states)
        domains = read_domains(args.domains)
        rows, world = with_domains(rows, domains), with_domains(world, domains)
    except CatalogError as exc:
        print(f"build_site_catalog: error: {exc}", file=sys.stderr)
        return 1
    write_csv(rows, args.out)
    print(f"wrote {len(rows)} metros from {len(regions)} regions to {args.out}")
    write_csv(world, args.world_out)
    print(f"wrote {len(world)} sites ({len(rows)} metros + {len(added)} additions) to {args.world_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
