"""The alternatives guide's table and site classes, from an alternatives folder: regenerated, not pasted.

Usage::

    placement alternatives --count 5 --slack 0.02 --no-maps --out DIR   # the bundled world: minutes on 2 cores
    .venv/bin/python scripts/alternatives_table.py DIR

Prints one Markdown row per design of ``DIR/alternatives.csv`` (the optimum first): its direction, status, cost and
how far over the optimum, $/M goodput, sites, and how much of its MW sits elsewhere than the optimum's and than the
nearest design before it; then the sites every design opens (must-have), some do (choice) and none does (never), from
``DIR/alternative_sites.csv``. A time-limited search's designs depend on the machine and its load.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

HEADER = (
    "| design | direction | status | $/h | over the optimum | $/M | sites | MW not shared (optimum) | (nearest before) |",
    "|---|---|---|---|---|---|---|---|---|",
)
CLASSES = ("must-have", "choice", "never")
"""The site classes of ``alternative_sites.csv``, in the order printed."""


def _share(value: object) -> str:
    return "" if pd.isna(value) else f"{float(value) * 100:.0f} %"  # type: ignore[arg-type]


def row(design: pd.Series) -> str:
    """One design's row, from its line of ``alternatives.csv``."""
    optimum = design["design"] == "optimum"
    over = "" if optimum or pd.isna(design["cost_over_optimum"]) else f"{design['cost_over_optimum'] * 100:+.2f} %"
    cost = "" if pd.isna(design["usd_per_h"]) else f"{design['usd_per_h']:,.0f}"
    per_m = design["usd_per_million_goodput_tokens"]
    same = f" (same as {design['same_as']})" if isinstance(design.get("same_as"), str) and design["same_as"] else ""
    return (
        f"| {design['design']}{same} | {'' if optimum else design['direction']} | {design['status']} | {cost} | {over} "
        f"| {'' if pd.isna(per_m) else f'{per_m:.3f}'} | {int(design['sites_open'])} "
        f"| {'' if optimum else _share(design['mw_not_shared'])} | {'' if optimum else _share(design['mw_not_shared_nearest'])} |"
    )


def classes(sites: pd.DataFrame) -> list[str]:
    """One line per site class: how many sites, and their ids."""
    lines = []
    for name in CLASSES:
        ids = sorted(sites.loc[sites["class"] == name, "site_id"].astype(str))
        lines.append(f"**{name.capitalize()}** ({len(ids)}): {', '.join(ids) if ids else 'none'}.")
    return lines


def table(folder: Path) -> str:
    """The Markdown this script prints for an alternatives folder."""
    designs = pd.read_csv(folder / "alternatives.csv", keep_default_na=False, na_values=[""])
    sites = pd.read_csv(folder / "alternative_sites.csv", keep_default_na=False)
    lines = [*HEADER, *(row(d) for _, d in designs.iterrows()), "", "\n\n".join(classes(sites))]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not (Path(argv[0]) / "alternatives.csv").is_file():
        print("usage: scripts/alternatives_table.py DIR  (placement alternatives ... --out DIR)")
        return 2
    print(table(Path(argv[0])), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
