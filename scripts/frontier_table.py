"""The carbon-and-water guide's frontier table, from two frontier folders: regenerated, not pasted.

Usage::

    placement frontier --axis carbon --points 6 --out DIR1
    placement frontier --axis carbon --points 6 --allow-unserved --out DIR2
    .venv/bin/python scripts/frontier_table.py DIR1 DIR2

Prints one Markdown row per point, side by side: the frontier at equal service (its cap, $/M and unserved share) and
the one that may leave demand unserved (its cap, $/M, unserved share, the cost of demand with each unserved token
valued at ``objective.unserved_usd_per_million``, and what the tokens dropped cost the uncapped plan), all from each
folder's ``frontier.csv``. The equal-service frontier ends at the least use a plan serving as much reaches, so it may
have fewer points: its cells are then blank.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

HEADER = (
    "| point | cap ({unit}) | $/M at equal service | unserved | cap ({unit}), `--allow-unserved` | $/M | unserved "
    "| $/M of demand, unserved at ${value:g} | $/M of the tokens dropped |",
    "|---|---|---|---|---|---|---|---|---|",
)
UNITS = {"carbon": "tCO2e", "water": "m3"}


def read(folder: Path) -> list[dict[str, str]]:
    """A frontier folder's rows, as written."""
    with (folder / "frontier.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _number(text: str, digits: int) -> str:
    return "" if text == "" else f"{float(text):,.{digits}f}"


def _share(text: str) -> str:
    return "" if text == "" else f"{float(text) * 100:.2f} %"


def _cap(text: str, least: bool) -> str:
    if text == "":
        return "none"
    return _number(text, 0) + (" (the least at equal service)" if least else "")


def table(equal: list[dict[str, str]], free: list[dict[str, str]]) -> str:
    """The Markdown table: a row per point of the longer frontier."""
    axis = (free or equal)[0]["axis"]
    value = float((free or equal)[0]["unserved_usd_per_million"])
    lines = [HEADER[0].format(unit=UNITS.get(axis, axis), value=value), HEADER[1]]
    for k in range(max(len(equal), len(free))):
        a = equal[k] if k < len(equal) else None
        b = free[k] if k < len(free) else None
        left = (
            [
                _cap(a["cap"], k == len(equal) - 1 and k > 0),
                _number(a["usd_per_million_goodput_tokens"], 3),
                _share(a["unserved_share"]),
            ]
            if a is not None
            else ["", "", ""]
        )
        right = (
            [
                _cap(b["cap"], False),
                _number(b["usd_per_million_goodput_tokens"], 3),
                _share(b["unserved_share"]),
                _number(b["usd_per_million_with_unserved_value"], 2),
                _number(b["usd_per_million_dropped"], 1),
            ]
            if b is not None
            else ["", "", "", "", ""]
        )
        lines.append("| " + " | ".join([str(k), *left, *right]) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    folders = [Path(a) for a in argv]
    if len(folders) != 2 or not all((f / "frontier.csv").is_file() for f in folders):
        print("usage: scripts/frontier_table.py DIR DIR2  (placement frontier folders, the second run with --allow-unserved)")
        return 2
    equal, free = read(folders[0]), read(folders[1])
    if {r["axis"] for r in equal} != {r["axis"] for r in free}:
        print("the two frontiers cap different axes: run both with the same --axis")
        return 2
    print(table(equal, free), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
