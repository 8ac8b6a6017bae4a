"""Write a larger catalog: data/sites/world_sites.csv plus greenfield candidates at large cities (placement.analyses.candidates).

Usage: .venv/bin/python scripts/build_candidate_sites.py [--total 2000] [--out data/sites/world_sites_2k.csv]

The catalog's 263 rows are copied as they are; the candidates follow, largest city first, each at least 50 km from
every other site, 30 MW, transit, its prices, PUE, capex and carbon those of its nearest catalog site (estimates,
written in its ``source``). Deterministic: the same cities and catalog give the same file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from placement.analyses.candidates import greenfield_candidates  # noqa: E402
from placement.world.catalog import load_catalog  # noqa: E402
from placement.world.cities import load_cities  # noqa: E402

CATALOG = REPO / "data" / "sites" / "world_sites.csv"
CITIES = REPO / "data" / "cities" / "geonames_cities15000.csv"


def build(total: int, *, catalog: Path = CATALOG, cities: Path = CITIES) -> pd.DataFrame:
    """The catalog's rows as written, then candidates up to ``total`` rows, in the catalog's columns."""
    raw = pd.read_csv(catalog, dtype=str, keep_default_na=False)
    extra = greenfield_candidates(load_cities(cities), load_catalog(catalog), count=max(total - len(raw), 0))
    extra = extra.astype(object).where(extra.notna(), "")
    extra["locked"] = "false"
    return pd.concat([raw, extra.reindex(columns=raw.columns, fill_value="")], ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--total", type=int, default=2000, help="sites in the catalog written")
    parser.add_argument("--out", type=Path, default=REPO / "data" / "sites" / "world_sites_2k.csv")
    args = parser.parse_args()
    table = build(args.total)
    table.to_csv(args.out, index=False, lineterminator="\n")
    print(f"{args.out}: {len(table)} sites ({(table['source'].str.contains('generated')).sum()} generated)")


if __name__ == "__main__":
    main()
