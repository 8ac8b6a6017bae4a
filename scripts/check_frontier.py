"""Check a frontier folder from its written files alone: every point's cap holds on its sites' energy and intensities.

For each row of ``DIR/frontier.csv``, the point's ``sites.csv`` is read and its yearly use recomputed from each
site's energy and its figure per kWh: emissions as ``sum(energy_mwh_per_year * gco2e_per_kwh) / 1000`` (tCO2e a year)
and water as ``sum(energy_mwh_per_year * water_l_per_kwh)`` (m3 a year). The check fails if the axis's use exceeds
the row's cap by more than a part in a million, or if either figure differs from what the row reports.

Usage::

    python scripts/check_frontier.py DIR
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

FIGURES = {
    "carbon": ("tco2e_per_year", "gco2e_per_kwh", 1e-3, "tCO2e"),
    "water": ("water_m3_per_year", "water_l_per_kwh", 1.0, "m3"),
}
"""Axis -> (the row's yearly figure, the site's figure per kWh, its unit change to a year's figure per MWh, unit)."""


def _recomputed(sites_csv: Path, per_kwh: str, scale: float) -> float | None:
    """A point's yearly use from its sites (None where a site that draws power lacks the figure)."""
    total = 0.0
    with sites_csv.open(encoding="utf-8", newline="") as handle:
        for site in csv.DictReader(handle):
            energy = float(site["energy_mwh_per_year"])
            if energy > 0 and not site.get(per_kwh):
                return None
            total += energy * float(site[per_kwh]) * scale if energy > 0 else 0.0
    return total


def check(folder: Path) -> list[str]:
    """One line per point (``ok`` or what is wrong)."""
    lines = []
    with (folder / "frontier.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            axis = row.get("axis") or "carbon"
            problems, said = [], ""
            for name, (column, per_kwh, scale, unit) in FIGURES.items():
                if not row.get(column):
                    if name == axis:
                        problems.append(f"the row has no {column}")
                    continue
                used = _recomputed(folder / row["plan"] / "sites.csv", per_kwh, scale)
                reported = float(row[column])
                if used is None:
                    problems.append(f"sites.csv lacks {per_kwh} at a site that draws power")
                    continue
                if abs(used - reported) > 1e-6 * max(reported, 1.0):
                    problems.append(f"sites.csv adds up to {used:,.1f} {unit}, the row says {reported:,.1f}")
                if name == axis:
                    said = f"recomputed {used:,.1f} {unit} a year"
                    if row["cap"] and used > float(row["cap"]) * (1 + 1e-6):
                        problems.append(f"{used:,.1f} {unit} over the cap of {float(row['cap']):,.1f}")
            state = "; ".join(problems) if problems else "ok"
            lines.append(f"{row['plan']}: {axis} cap {row['cap'] or 'none'}, {said}: {state}")
    return lines


def main() -> int:
    lines = check(Path(sys.argv[1]))
    print("\n".join(lines))
    return 0 if all(line.endswith(": ok") for line in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
