"""The rules guide's before-and-after table of the build-out, from two build-out folders: regenerated, not pasted.

Usage::

    placement solve buildout --out RULES
    placement init FREE --scenario buildout          # then add `availability: {enforce: false}` to FREE/scenario.yaml
    placement solve FREE/scenario.yaml --out NO_RULES
    .venv/bin/python scripts/rules_table.py NO_RULES RULES

Prints one Markdown row per folder: the expected net present cost (``summary.json``), $/M goodput each year of the
base demand scenario (``years.csv``), the nodes bought in China and in Hong Kong by part (``nodes_bought_by_country``,
weighted by the scenarios' probabilities), the share of the modelled demand left unserved over the years (``years.csv``)
and the share of demand with no site inside its TTFT objective on any permitted part, left out of the model
(``aggregation.unreachable_demand_share``).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

COUNTRIES = (("CN", "China"), ("HK", "Hong Kong"))


def _years(folder: Path) -> list[dict[str, str]]:
    with (folder / "years.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _bought(summary: dict[str, Any], country: str) -> str:
    """``b200 1,234 · b300 567``: the nodes bought there by part, probability-weighted; ``0`` for none."""
    parts = summary.get("nodes_bought_by_country", {}).get(country, {})
    return " · ".join(f"{part} {nodes:,.0f}" for part, nodes in parts.items() if nodes >= 0.5) or "0"


def header(years: list[str]) -> tuple[str, str]:
    """The table's two header lines, for the years of the horizon."""
    return (
        "| | expected NPV | " + " | ".join(f"$/M {y}" for y in years)
        + " | " + " | ".join(f"nodes bought in {name}" for _, name in COUNTRIES)
        + " | unserved, by year | demand out of reach |",
        "|---|---|" + "---|" * len(years) + "---|" * len(COUNTRIES) + "---|---|",
    )  # fmt: skip


def row(label: str, folder: Path) -> str:
    """One folder's row."""
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    years = _years(folder)
    cells = [label, f"${float(summary['expected_cost_usd']) / 1e9:,.1f} B"]
    cells += [f"{float(y['cost_per_million_goodput_tokens_usd']):.3f}" for y in years]
    cells += [_bought(summary, code) for code, _ in COUNTRIES]
    unserved = [float(y["unserved_share"]) * 100 for y in years]
    cells.append(f"{min(unserved):.1f}-{max(unserved):.1f} %")
    cells.append(f"{float(summary['aggregation']['unreachable_demand_share']) * 100:.1f} %")
    return "| " + " | ".join(cells) + " |"


def table(no_rules: Path, rules: Path) -> str:
    """The Markdown table: the build-out without the rules, then with them."""
    years = [y["year"] for y in _years(rules)]
    lines = [*header(years), row("no rules (`enforce: false`)", no_rules), row("the bundled rules", rules)]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    folders = [Path(a) for a in argv]
    if len(folders) != 2 or not all((f / "years.csv").is_file() and (f / "summary.json").is_file() for f in folders):
        print("usage: scripts/rules_table.py NO_RULES RULES  (build-out results folders, without the rules and with them)")
        return 2
    if [y["year"] for y in _years(folders[0])] != [y["year"] for y in _years(folders[1])]:
        print("the two build-outs cover different years: solve the same scenario with and without the rules")
        return 2
    print(table(*folders), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
