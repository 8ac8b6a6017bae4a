"""What a plan's files are written from: its results, and what the files need of its instance.

Light on purpose: the process that solves builds it, and hands it to :mod:`placement.outputs.plan_files` (here or in
a child on standby) without importing the drawing libraries.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from placement.analyses.modes import cross_metro_links
from placement.outputs.network_layer import links_frame
from placement.plan.record import Plan
from placement.results.folder import write_csv_chunks
from placement.results.record import ROW_COLUMNS, ROW_DIGITS, FailoverTables, PlanResults, no_failover_rows


def summary_json_dict(results: PlanResults) -> dict[str, Any]:
    """What ``summary.json`` holds: the plan's figures, its notes and the scenario's path.

    Parameters
    ----------
    results : PlanResults
        A solved plan's results.

    Returns
    -------
    dict
        JSON-ready (through :func:`placement.results.folder.write_json`).
    """
    record = {**results.summary.to_json_dict(), "notes": list(results.notes), "scenario_path": str(results.scenario_path)}
    if results.rule_price_headlines is not None:
        record["rule_prices"] = [h.to_json_dict() for h in results.rule_price_headlines]
    if results.arrangement is not None:
        record["arrangement"] = results.arrangement.to_json_dict()
    return record


@dataclass(frozen=True)
class PlanOutputs:
    """What a plan's files are written from: its results, and what they need of its instance.

    Parameters
    ----------
    results : PlanResults
        The plan's results.
    links : pandas.DataFrame
        The network of its round trips (:func:`placement.outputs.network_layer.links_frame`).
    measured : pandas.DataFrame or None
        The scenario's own pings, before and after calibration.
    cross_metro : pandas.DataFrame or None
        Which decode sites prefill where.
    maps : bool
        Draw the maps (:data:`MAP_FILES`).
    tail_check : pandas.DataFrame or None
        The plan's tail check.
    failover_rows : bool, optional
        Whether ``failover.csv`` is written with the other files (False: its caller writes it; see
        :meth:`without_failover_rows`).
    """

    results: PlanResults
    links: pd.DataFrame
    measured: pd.DataFrame | None
    cross_metro: pd.DataFrame | None
    maps: bool
    tail_check: pd.DataFrame | None
    failover_rows: bool = True

    def without_failover_rows(self) -> PlanOutputs:
        """The same outputs for another process: ``failover.csv``'s rows left to the caller.

        The rows are made from the solved model one loss at a time as the file is written (millions at full
        resolution), by a function that holds the model: it stays in the process that has the model, which writes
        ``failover.csv`` itself (:func:`write_failover_rows`) while the other files are written elsewhere.
        """
        failover = self.results.failover
        if failover is None:
            return self
        kept = replace(failover, row_chunks=no_failover_rows)
        return replace(self, results=replace(self.results, failover=kept), failover_rows=False)


def write_failover_rows(tables: FailoverTables, folder: Path) -> None:
    """Write ``failover.csv`` into ``folder``, one loss's rows at a time as they are made."""
    write_csv_chunks(tables.row_chunks(), folder / "failover.csv", columns=ROW_COLUMNS, digits=ROW_DIGITS)


def plan_outputs(plan: Plan, *, maps: bool, tail_check: pd.DataFrame | None) -> PlanOutputs:
    """What a plan's files are written from: its results, its network's links, its measured pings, its WAN links."""
    latency = plan.instance.latency
    links = links_frame(latency.round_trips if latency.kind == "graph" else None)  # the network of the round trips
    measured = latency.calibration.table if latency.calibration is not None else None
    cross_metro = cross_metro_links(plan) if plan.instance.cross_metro is not None else None
    return PlanOutputs(plan.results, links, measured, cross_metro, maps=maps, tail_check=tail_check)
