"""The 24x7 guide's N+1 table, from N+1 results folders: regenerated, not pasted.

Usage::

    placement solve world-24x7 --out DIR1
    placement solve world_full-24x7 --out DIR2
    .venv/bin/python scripts/n_plus_one_table.py DIR1 DIR2

Prints one Markdown row per folder: the plan without N+1 ($/M), the protected plan (sites, nodes, unserved share, what
protection adds) and the share of served goodput protected, all from its ``summary.json`` (``n_plus_one_cost`` holds the
plan without N+1 the solve starts from). ``benchmarks/bench_speed.py --large`` times ``world_full-24x7``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HEADER = (
    "| scenario | without N+1 | N+1 | what N+1 adds | protected share of served goodput |",
    "|---|---|---|---|---|",
)


def row(summary: dict[str, Any]) -> str:
    """One folder's row, from its ``summary.json``."""
    cost = summary["n_plus_one_cost"]
    without, with_ = cost["usd_per_m_without"], cost["usd_per_m_with"]
    key = Path(summary["scenario_path"]).stem
    world = f"`{key}` ({summary['populations']:,} populations, {summary['sites_candidate']:,} sites)"
    protected = (
        f"{summary['sites_open']} sites, {summary['nodes']:,} nodes, {summary['mw_used']:,.0f} MW, "
        f"{summary['unserved_share'] * 100:.2f} % unserved"
    )
    adds = (
        f"+{(with_ / without - 1) * 100:.1f} % $/M: {cost['extra_nodes']:,} spare nodes, {cost['extra_mw']:,.0f} MW, "
        f"{cost['standby_sites']} standby sites"
    )
    share = summary["n_plus_one_protected_share"] * 100
    return f"| {world} | ${without:.3f}/M | ${with_:.3f}/M: {protected} | {adds} | {share:.1f} % |"


def table(folders: list[Path]) -> str:
    """The Markdown table of the folders' plans, one row each."""
    summaries = [json.loads((f / "summary.json").read_text(encoding="utf-8")) for f in folders]
    return "\n".join([*HEADER, *(row(s) for s in summaries)]) + "\n"


def main(argv: list[str]) -> int:
    folders = [Path(a) for a in argv]
    bad = [f for f in folders if not (f / "summary.json").is_file()]
    if not folders or bad:
        print("usage: scripts/n_plus_one_table.py DIR [DIR ...]  (results folders of N+1 plans: placement solve world-24x7)")
        return 2
    plain = [f for f in folders if not json.loads((f / "summary.json").read_text(encoding="utf-8")).get("n_plus_one_cost")]
    if plain:
        print(f"not an N+1 plan (no n_plus_one_cost in summary.json): {', '.join(map(str, plain))}")
        return 2
    print(table(folders), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
