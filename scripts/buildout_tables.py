"""The build-out guide's two tables, from a build-out's results folder: regenerated, not pasted.

Usage::

    placement solve buildout --out DIR
    .venv/bin/python scripts/buildout_tables.py DIR

Prints, as Markdown: the adopted plan year by year in the base demand scenario (``years.csv``), each demand scenario's
net present cost under the stochastic and the mean-value plan (``scenarios.csv``), the value of the stochastic
solution with the bound (``summary.json``), every demand scenario's last year (``years_scenarios.csv``) and which
accelerators carry each class's tokens year by year (``class_accelerators.csv``). ``docs/guides/buildout.md`` shows
this output for the bundled build-out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

NODES_PREFIX = "nodes_"
SHARE_SHOWN = 0.005
"""Least share of a class's tokens an accelerator must carry to be named in the table of parts by class."""


def _nodes_text(row: pd.Series, accelerators: list[str]) -> str:
    """``h100-sxm 6,000 · b200 47,888``: the accelerators in service that year, in the horizon's order."""
    counts = [(name, int(row[NODES_PREFIX + name])) for name in accelerators]
    return " · ".join(f"{name} {n:,}" for name, n in counts if n > 0) or "none"


def _accelerators(table: pd.DataFrame) -> list[str]:
    """The accelerators a table counts nodes of (its ``nodes_<accelerator>`` columns), in its order."""
    return [c.removeprefix(NODES_PREFIX) for c in table.columns if c.startswith(NODES_PREFIX)]


def years_table(years: pd.DataFrame) -> list[str]:
    """The adopted plan's years (``years.csv``) as Markdown rows."""
    accelerators = _accelerators(years)
    lines = [
        "| year | $/M goodput | goodput tok/s | unserved | MW used | MW reserved | sites | nodes in service |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, r in years.iterrows():
        lines.append(
            f"| {int(r['year'])} | {r['cost_per_million_goodput_tokens_usd']:.3f} | {r['goodput_tok_s'] / 1e6:.1f} M "
            f"| {r['unserved_share'] * 100:.1f} % | {r['mw_used']:,.0f} | {r['mw_reserved']:,.0f} | {int(r['sites_open'])} "
            f"| {_nodes_text(r, accelerators)} |"
        )
    return lines


def scenarios_table(scenarios: pd.DataFrame, summary: dict[str, Any]) -> list[str]:
    """Each demand scenario's costs (``scenarios.csv``), and the expected costs of both plans (``summary.json``)."""
    lines = [
        "| scenario | probability | NPV of cost, stochastic plan | NPV of cost, mean-value plan | unserved, last year "
        "| $/M, last year |",
        "|---|---|---|---|---|---|",
    ]
    for _, r in scenarios.iterrows():
        lines.append(
            f"| {r['scenario']} | {r['probability']:.2f} | ${r['npv_cost_usd'] / 1e9:,.2f} B "
            f"| ${r['mean_value_plan_npv_cost_usd'] / 1e9:,.2f} B | {r['unserved_share_last_year'] * 100:.1f} % "
            f"| {r['cost_per_million_goodput_tokens_usd_last_year']:.2f} |"
        )
    expected = float(summary["expected_cost_usd"])
    eev = float(summary["mean_value_plan_expected_cost_usd"])
    lines.append(f"| **expected** | | **${expected / 1e9:,.2f} B** | **${eev / 1e9:,.2f} B (EEV)** | | |")
    return lines


def last_year_table(by_scenario: pd.DataFrame) -> list[str]:
    """Each demand scenario's last year under the adopted plan (``years_scenarios.csv``) as Markdown rows."""
    accelerators = _accelerators(by_scenario)
    last = by_scenario[by_scenario["year"] == by_scenario["year"].max()]
    lines = [
        "| scenario | $/M goodput | unserved | MW used | MW reserved | nodes in service |",
        "|---|---|---|---|---|---|",
    ]
    for _, r in last.iterrows():
        lines.append(
            f"| {r['scenario']} | {r['cost_per_million_goodput_tokens_usd']:.3f} | {r['unserved_share'] * 100:.1f} % "
            f"| {r['mw_used']:,.0f} | {r['mw_reserved']:,.0f} | {_nodes_text(r, accelerators)} |"
        )
    return lines


def class_parts_table(shares: pd.DataFrame) -> list[str]:
    """Which accelerators carry each class's tokens, year by year (``class_accelerators.csv``), as Markdown rows."""
    classes = list(dict.fromkeys(shares["class"]))
    lines = ["| year | " + " | ".join(classes) + " |", "|---|" + "---|" * len(classes)]
    for year, rows in shares.groupby("year", sort=True):
        cells = []
        for name in classes:
            mine = rows[(rows["class"] == name) & (rows["share_of_class_tokens"] >= SHARE_SHOWN)]
            parts = [f"{a} {v * 100:.0f} %" for a, v in zip(mine["accelerator"], mine["share_of_class_tokens"], strict=True)]
            cells.append(" · ".join(parts) or "none")
        lines.append(f"| {int(year)} | " + " | ".join(cells) + " |")
    return lines


def headline(summary: dict[str, Any]) -> str:
    """The value of the stochastic solution, the mean-value problem, the bound and the plan adopted."""
    vss = float(summary["value_of_stochastic_solution_usd"])
    eev = float(summary["mean_value_plan_expected_cost_usd"])
    return (
        f"**Value of the stochastic solution: ${vss / 1e9:,.2f} B** ({vss / eev * 100:.1f} % of EEV); the mean-value problem "
        f"itself costs ${float(summary['mean_value_problem_usd']) / 1e9:,.2f} B; the proven bound "
        f"${float(summary['lower_bound_usd']) / 1e9:,.2f} B, gap {float(summary['gap']) * 100:.2f} %; "
        f"the adopted plan is the {str(summary['adopted_plan']).upper()} plan."
    )


def tables(folder: Path) -> str:
    """The Markdown this script prints for a build-out's results folder."""
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    years = pd.read_csv(folder / "years.csv")
    scenarios = pd.read_csv(folder / "scenarios.csv", keep_default_na=False)
    base = f"Demand scenario `{summary['years_scenario']}`, the adopted plan:"
    parts = [base, "", *years_table(years), "", *scenarios_table(scenarios, summary), "", headline(summary)]
    by_scenario = pd.read_csv(folder / "years_scenarios.csv", keep_default_na=False)
    last = int(by_scenario["year"].max())
    parts += ["", f"Every demand scenario in {last}, the adopted plan:", "", *last_year_table(by_scenario)]
    shares = pd.read_csv(folder / "class_accelerators.csv")
    parts += ["", f"Which accelerators carry each class's tokens, demand scenario `{summary['years_scenario']}`:", ""]
    parts += class_parts_table(shares)
    return "\n".join(parts) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not (Path(argv[0]) / "years.csv").is_file():
        print("usage: scripts/buildout_tables.py DIR  (a build-out's results folder: placement solve buildout --out DIR)")
        return 2
    print(tables(Path(argv[0])), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
