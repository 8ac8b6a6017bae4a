"""A plan's headline figures as a Markdown table, from its results folder: for the pages that quote one plan.

Usage::

    placement solve world_full --out DIR
    .venv/bin/python scripts/plan_figures.py DIR

Prints the figures ``summary.json`` holds: the model's size (candidate sites, populations, feasible pairs), how the
solve ended (status, what stopped it, the gap and its basis, the proven bound, the solver's own account), the plan
(cost, $/M goodput, sites, nodes, MW, unserved share). Run times are the benchmarks' (``benchmarks/bench_speed.py``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """(figure, value) pairs, in the order printed."""
    gap = summary.get("gap")
    return [
        ("scenario", str(summary["scenario"])),
        ("candidate sites", f"{summary['sites_candidate']:,}"),
        ("populations (cities)", f"{summary['populations']:,} ({summary['cities']:,})"),
        ("feasible pairs", f"{summary['feasible_pairs']:,}"),
        ("status, stopped by", f"{summary['status']}, {summary['stopped_by']}"),
        ("gap", "" if gap is None else f"{gap * 100:.2f} % against the {summary.get('gap_basis', '')} model".replace("_", " ")),
        ("cost", f"${summary['objective_usd_per_h']:,.0f}/h (bound ${summary['best_bound_usd_per_h']:,.0f}/h)"),
        ("cost per million goodput tokens", f"${summary['cost_per_million_goodput_tokens_usd']:.3f}"),
        ("sites open, nodes, MW", f"{summary['sites_open']}, {summary['nodes']:,}, {summary['mw_used']:,.1f} MW"),
        ("unserved", f"{summary['unserved_share'] * 100:.2f} % of demand"),
        ("the solver's account", str(summary["solver_message"])),
    ]


def table(summary: dict[str, Any]) -> str:
    """The Markdown table."""
    lines = ["| figure | value |", "|---|---|", *(f"| {name} | {value} |" for name, value in rows(summary))]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not (Path(argv[0]) / "summary.json").is_file():
        print("usage: scripts/plan_figures.py DIR  (a results folder: placement solve ... --out DIR)")
        return 2
    print(table(json.loads((Path(argv[0]) / "summary.json").read_text(encoding="utf-8"))), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
