"""Build ``data/energy/grid_mix_by_country.csv``: each country's electricity mix shares and carbon intensity.

Build-time tool only: it reads codecarbon's country energy mix (``energy/codecarbon_global_energy_mix_by_country.json``
in the shared data folder; upstream Our World in Data / Ember) and GeoNames' ISO alpha-2/alpha-3 table
(``data/cities/geonames_countries.csv``), and writes one row per country with a generation total: the year, the
carbon intensity and the shares of solar, wind, other low-carbon and fossil generation, and of coal, gas, oil,
nuclear, hydro and bioenergy. The hourly carbon shape of :mod:`placement.economics.footprint` reads the solar and fossil
shares; the grid's water per kWh (:mod:`placement.water`) the shares by source. Tests and the application never run it.

Usage (from the repository root)::

    .venv/bin/python scripts/build_grid_mix.py --shared ../shared/data
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT = REPO_ROOT / "data" / "energy" / "grid_mix_by_country.csv"
COLUMNS = (
    "country_code", "iso3", "year", "carbon_intensity_g_per_kwh", "total_twh",
    "solar_share", "wind_share", "other_low_carbon_share", "fossil_share",
    "coal_share", "gas_share", "oil_share", "nuclear_share", "hydro_share", "bio_share", "source",
)  # fmt: skip
SOURCES_TWH = {"coal": "coal_TWh", "gas": "gas_TWh", "oil": "oil_TWh", "nuclear": "nuclear_TWh",
               "hydro": "hydroelectricity_TWh", "bio": "biofuel_TWh"}  # fmt: skip
"""Generation by source, for the grid's water per kWh (:mod:`placement.water`)."""


def build(shared: Path) -> list[dict[str, str]]:
    """The table's rows, sorted by ISO alpha-2 code."""
    mix = json.loads((shared / "energy" / "codecarbon_global_energy_mix_by_country.json").read_text(encoding="utf-8"))
    with (REPO_ROOT / "data" / "cities" / "geonames_countries.csv").open(encoding="utf-8", newline="") as handle:
        iso2_of = {row["iso3"]: row["country_code"] for row in csv.DictReader(handle)}
    rows = []
    for iso3, figures in mix.items():
        total = float(figures.get("total_TWh") or 0.0)
        if iso3 not in iso2_of or total <= 0:
            continue
        solar, wind = float(figures.get("solar_TWh") or 0.0), float(figures.get("wind_TWh") or 0.0)
        fossil = float(figures.get("fossil_TWh") or 0.0)
        low = max(total - fossil - solar - wind, 0.0)
        rows.append({
            "country_code": iso2_of[iso3], "iso3": iso3, "year": str(figures["year"]),
            "carbon_intensity_g_per_kwh": f"{float(figures['carbon_intensity']):.1f}", "total_twh": f"{total:.2f}",
            "solar_share": f"{solar / total:.4f}", "wind_share": f"{wind / total:.4f}",
            "other_low_carbon_share": f"{low / total:.4f}", "fossil_share": f"{fossil / total:.4f}",
            **{f"{name}_share": f"{float(figures.get(key) or 0.0) / total:.4f}" for name, key in SOURCES_TWH.items()},
            "source": f"codecarbon 3.3.2 energy mix ({iso3} {figures['year']}; upstream OWID/Ember)",
        })  # fmt: skip
    return sorted(rows, key=lambda r: r["country_code"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, required=True, help="the shared data folder (../shared/data)")
    args = parser.parse_args()
    rows = build(args.shared)
    with OUT.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {len(rows)} countries to {OUT.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
