"""Check a build-out results folder from its files alone (no import of placement).

    python scripts/check_buildout.py OUT

Checks: no site-year uses more MW than energized; no site's MW reserved go down or back to 0; no open site
goes back to 0 MW used; every year has its $/M goodput; VSS >= 0; the fleet holds more than one accelerator
generation; every year and scenario of ``years_scenarios.csv`` is within the whole-plan carbon and water caps of
``summary.json``. Prints one line per check and exits 1 if any fails.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

import pandas as pd

GENERATIONS = {
    "h100-sxm": "hopper",
    "h200": "hopper",
    "b200": "blackwell",
    "gb200": "blackwell",
    "gb200-nvl72": "blackwell",
    "b300": "blackwell-ultra",
    "gb300-nvl72": "blackwell-ultra",
    "mi300x": "cdna3",
    "mi325x": "cdna3",
    "mi355x": "cdna4",
}


def _series_back_to_zero(values: list[float]) -> bool:
    return any(v > 1e-9 and any(w <= 1e-9 for w in values[k + 1 :]) for k, v in enumerate(values))


def checks(out: Path) -> list[tuple[str, bool, str]]:
    table = pd.read_csv(out / "buildout_scenarios.csv") if (out / "buildout_scenarios.csv").exists() else None
    table = table if table is not None else pd.read_csv(out / "buildout.csv").assign(scenario="base")
    summary = json.loads((out / "summary.json").read_text())
    site_year = (
        table.groupby(["scenario", "site_id", "year"])
        .agg(mw_used=("mw_used", "sum"), mw_available=("mw_available", "first"), mw_reserved=("mw_reserved", "first"))
        .reset_index()
    )
    over = site_year[site_year["mw_used"] > site_year["mw_available"] * (1 + 1e-9) + 1e-6]
    results = [("no site-year uses more MW than energized", over.empty, f"{len(over)} site-years over")]
    reserved_back, used_back = [], []
    for (scenario, site), rows in site_year.groupby(["scenario", "site_id"]):
        years = sorted(table["year"].unique())
        rows = rows.set_index("year").reindex(years)
        reserved = rows["mw_reserved"].fillna(0.0).tolist()
        used = rows["mw_used"].fillna(0.0).tolist()
        if any(b < a - 1e-6 for a, b in itertools.pairwise(reserved)) or _series_back_to_zero(reserved):
            reserved_back.append(f"{scenario}/{site}")
        if _series_back_to_zero(used):
            used_back.append(f"{scenario}/{site}")
    results.append(("no site's MW reserved go down or back to 0", not reserved_back, ", ".join(reserved_back[:10])))
    results.append(("no site goes back to 0 MW used", not used_back, ", ".join(used_back[:10])))
    missing = [y["year"] for y in summary["years"] if not isinstance(y["cost_per_million_goodput_tokens_usd"], float | int)]
    bad = [
        y["year"]
        for y in summary["years"]
        if y["year"] not in missing and not math.isfinite(y["cost_per_million_goodput_tokens_usd"])
    ]
    results.append(("every year has its $/M goodput", not missing and not bad, f"missing: {missing + bad}"))
    vss = summary["value_of_stochastic_solution_usd"]
    results.append(("VSS >= 0", vss >= 0, f"VSS = {vss:,.0f} USD"))
    used = table[table["nodes"] > 0]["accelerator"].unique().tolist()
    generations = sorted({GENERATIONS.get(a, a) for a in used if a != "none"})
    results.append(("the fleet holds more than one accelerator generation", len(generations) > 1, f"{used} -> {generations}"))
    results.append(_within_caps(out, summary))
    return results


CAP_COLUMNS = {"carbon": "tco2e_per_year", "water": "water_m3_per_year"}
"""The whole-plan caps and the column of ``years_scenarios.csv`` each limits."""


def _within_caps(out: Path, summary: dict[str, object]) -> tuple[str, bool, str]:
    caps = [c for c in summary.get("caps", []) if c["cap"] in CAP_COLUMNS]  # type: ignore[attr-defined]
    if not caps:
        return ("every year and scenario within the plan's caps", True, "no whole-plan cap")
    years = pd.read_csv(out / "years_scenarios.csv")
    over = []
    for cap in caps:
        used = years[CAP_COLUMNS[cap["cap"]]]
        broken = years[used > cap["limit_per_year"] * (1 + 1e-6) + 1e-6]
        over += [f"{cap['cap']} {r.year} {r.scenario}" for r in broken.itertuples()]
    return ("every year and scenario within the plan's caps", not over, ", ".join(over[:10]) or "within")


def main() -> int:
    out = Path(sys.argv[1])
    ok = True
    for name, passed, detail in checks(out):
        ok &= passed
        print(f"{'PASS' if passed else 'FAIL'}  {name}  ({detail})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
