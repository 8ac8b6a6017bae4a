"""Check a frontier folder from its written files alone: every point's cap holds on its sites' energy and intensities.

For each row of ``DIR/frontier.csv`` with a cap, the point's ``sites.csv`` is read and its emissions recomputed as
``sum(energy_mwh_per_year * gco2e_per_kwh) / 1000`` (tCO2e a year); the check fails if any exceeds its cap by more than
a part in a million, or differs from the ``tco2e_per_year`` the row reports.

Usage::

    python scripts/check_frontier.py DIR
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path


def check(folder: Path) -> list[str]:
    """One line per point (``ok`` or what is wrong)."""
    lines = []
    with (folder / "frontier.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            with (folder / row["plan"] / "sites.csv").open(encoding="utf-8", newline="") as sites:
                tonnes = sum(float(s["energy_mwh_per_year"]) * float(s["gco2e_per_kwh"]) / 1000.0 for s in csv.DictReader(sites))
            reported = float(row["tco2e_per_year"])
            cap = float(row["cap"]) if row["cap"] else None
            problems = []
            if abs(tonnes - reported) > 1e-6 * max(reported, 1.0):
                problems.append(f"sites.csv adds up to {tonnes:,.1f} t, the row says {reported:,.1f}")
            if cap is not None and tonnes > cap * (1 + 1e-6):
                problems.append(f"{tonnes:,.1f} t over the cap of {cap:,.1f}")
            state = "; ".join(problems) if problems else "ok"
            lines.append(f"{row['plan']}: cap {row['cap'] or 'none'}, recomputed {tonnes:,.1f} tCO2e a year: {state}")
    return lines


def main() -> int:
    lines = check(Path(sys.argv[1]))
    print("\n".join(lines))
    return 0 if all(line.endswith(": ok") for line in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
