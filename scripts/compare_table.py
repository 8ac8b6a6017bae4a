"""The commands guide's comparison of the optimum with the simple arrangements, from a compare folder: regenerated.

Usage::

    placement compare --out DIR          # the bundled world: about 15 s on 2 cores
    .venv/bin/python scripts/compare_table.py DIR

Prints one Markdown row per placement of ``DIR/compare.csv`` (the optimum, then nearest-metro, cheapest-power and
single-region): its $/M goodput, the share of demand it serves inside the objectives, goodput per MW, MW and sites.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

HEADER = (
    "| placement | $/M goodput | demand served inside the objectives | goodput per MW (tok/s) | MW used | sites open |",
    "|---|---|---|---|---|---|",
)


def row(record: dict[str, str]) -> str:
    """One placement's row, from its line of ``compare.csv``."""
    cost = record["cost_per_million_goodput_tokens_usd"]
    usd = f"${float(cost):.3f}" if cost else "nothing served"
    served, per_mw = float(record["served_share"]) * 100, float(record["tokens_per_s_per_mw"] or 0)
    sites = int(float(record["sites_open"]))
    return f"| {record['placement']} | {usd} | {served:.1f} % | {per_mw:,.0f} | {float(record['mw_used']):,.1f} | {sites} |"


def table(folder: Path) -> str:
    """The Markdown table of the folder's ``compare.csv``, its rows in order."""
    with (folder / "compare.csv").open(encoding="utf-8", newline="") as handle:
        records = list(csv.DictReader(handle))
    return "\n".join([*HEADER, *(row(r) for r in records)]) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not (Path(argv[0]) / "compare.csv").is_file():
        print("usage: scripts/compare_table.py DIR  (the folder of placement compare --out DIR)")
        return 2
    print(table(Path(argv[0])), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
