"""A build-out year's failover files, written into its ``years/<year>/`` folder as a single-year N+1 plan writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from placement.analyses.buildout_failover import year_failover
from placement.buildout.solve import StochasticResult
from placement.outputs.plan_outputs import write_failover_rows
from placement.results.folder import write_csv


def write_year_failover(result: StochasticResult, y: int, scenario: int, folder: Path) -> None:
    """Write ``failover.csv``, ``failover_sites.csv`` and ``failover_scenarios.csv`` of year ``y`` (nothing without N+1).

    Parameters
    ----------
    result : StochasticResult
        The solved build-out.
    y, scenario : int
        Year index and demand scenario.
    folder : Path
        The year's folder.
    """
    tables = year_failover(result, y, scenario)
    if tables is None:
        return
    write_failover_rows(tables, folder)
    write_csv(tables.sites, folder / "failover_sites.csv")
    write_csv(tables.scenarios, folder / "failover_scenarios.csv")


def n_plus_one_lines(summary: dict[str, Any]) -> list[str]:
    """``report.md``'s N+1 section from ``summary.json``'s ``n_plus_one`` (none without N+1).

    Parameters
    ----------
    summary : dict
        The build-out's ``summary.json``.

    Returns
    -------
    list of str
        Markdown lines: what is guarded against, then a table of what the spares add each year.
    """
    added = summary.get("n_plus_one")
    if not added:
        return []
    domains = added["fault_domains"]
    lines = [
        "",
        f"## N+1 ({added['years_scenario']} demand)",
        "",
        f"Every year survives the loss of {added['losses']}"
        + (f" ({len(domains)} domains: {', '.join(domains[:8])}{', ...' if len(domains) > 8 else ''})" if domains else "")
        + ": the lost load re-routes inside its budgets onto spare nodes, bought in the year they are first needed and "
        "kept for their life (each year's failover*.csv in years/<year>/).",
        "",
        "| year | spare nodes bought | spare nodes in service | spare MW | $/h without | $/h with | $/h added |",
        "|---|---|---|---|---|---|---|",
    ]
    for y in added["years"]:
        lines.append(
            f"| {y['year']} | {y['spare_nodes_bought']:,} | {y['spare_nodes_in_service']:,} | {y['spare_mw']:,.2f} | "
            f"{y['usd_per_h_without']:,.0f} | {y['usd_per_h_with']:,.0f} | {y['added_usd_per_h']:,.0f} |"
        )
    lines += ["", f"Expected NPV added: ${added['expected_npv_added_usd'] / 1e6:,.2f} M."]
    return lines
