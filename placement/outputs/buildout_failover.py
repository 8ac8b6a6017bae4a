"""A build-out year's failover files, written into its ``years/<year>/`` folder as a single-year N+1 plan writes them."""

from __future__ import annotations

from pathlib import Path

from placement.analyses.buildout_failover import year_failover
from placement.buildout.solve import StochasticResult
from placement.results.folder import write_csv, write_csv_chunks
from placement.results.record import ROW_COLUMNS, ROW_DIGITS


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
    write_csv_chunks(tables.row_chunks(), folder / "failover.csv", columns=ROW_COLUMNS, digits=ROW_DIGITS)
    write_csv(tables.sites, folder / "failover_sites.csv")
    write_csv(tables.scenarios, folder / "failover_scenarios.csv")
