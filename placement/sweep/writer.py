"""The analysis files of a sweep folder: frontier, sensitivity and no-regret tables, charts and GeoJSON."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import pandas as pd

from placement.outputs import geojson as geo

if TYPE_CHECKING:
    pass

from typing import Any

from placement.outputs.writer import write_text_atomic
from placement.results.folder import csv_text
from placement.sweep.analysis import (
    no_regret,
    pareto_frontier,
    reference_cost,
    sensitivity,
    solved,
    ttft_axis,
)
from placement.sweep.plots import draw_frontier, draw_no_regret, draw_tornado, no_regret_frame
from placement.sweep.spec import PreparedSweep
from placement.world.catalog import load_catalog


def _write_csv(table: pd.DataFrame, path: Path) -> None:
    write_text_atomic(path, csv_text(table))


def _staged(path: Path) -> Path:
    return path.with_name(f".{path.stem}.new{path.suffix}")


def _write_frontier(out_dir: Path, prepared: PreparedSweep, results: pd.DataFrame) -> list[str]:
    axis = ttft_axis(prepared.axes)
    if axis is None:
        return ["frontier.png skipped: the sweep has no classes[i].ttft_p99_ms axis"]
    frontier = pareto_frontier(results, axis)
    if frontier.empty:
        return [f"frontier.png skipped: no case along {axis} was solved"]
    _write_csv(frontier, out_dir / "frontier.csv")
    staged = _staged(out_dir / "frontier.png")
    draw_frontier(results, frontier, axis, staged, others=[a for a in prepared.axes if a != axis])
    staged.replace(out_dir / "frontier.png")
    return [f"frontier: {len(frontier)} efficient cases along {axis}"]


def _write_sensitivity(out_dir: Path, prepared: PreparedSweep, results: pd.DataFrame) -> list[str]:
    table = sensitivity(results, prepared.axes, prepared.base_values)
    _write_csv(table, out_dir / "sensitivity.csv")
    if table.empty:
        return ["tornado.png skipped: no axis has two solved values"]
    reference, label = reference_cost(results, prepared.axes, prepared.base_values)
    staged = _staged(out_dir / "tornado.png")
    draw_tornado(table, reference, label, staged)
    staged.replace(out_dir / "tornado.png")
    top = table.iloc[0]
    return [f"sensitivity: {top['axis']} swings $/M goodput by {top['swing_usd_per_m']:+.3f} ({top['method']})"]


def _write_no_regret(
    out_dir: Path, prepared: PreparedSweep, results: pd.DataFrame, records: dict[str, dict[str, Any]]
) -> list[str]:
    table = no_regret(results, records, load_catalog(prepared.base.catalog_path))
    _write_csv(table, out_dir / "no_regret.csv")
    staged = _staged(out_dir / "no_regret.geojson")
    geo.write_geojson(no_regret_frame(table), staged)
    staged.replace(out_dir / "no_regret.geojson")
    n = len(solved(results))
    always = table[table["category"] == "no-regret"]
    staged = _staged(out_dir / "no_regret.png")
    draw_no_regret(table, staged, title=f"How often each site is open across {n} solved cases ({len(always)} in every one)")
    staged.replace(out_dir / "no_regret.png")
    return [f"no-regret sites (open in all {n} solved cases): {', '.join(always['name']) or 'none'}"]


def write_analysis(
    out_dir: Path, prepared: PreparedSweep, results: pd.DataFrame, records: dict[str, dict[str, Any]]
) -> list[str]:
    """Write the frontier, sensitivity and no-regret files; return one line about each.

    Only solved cases within the sweep's ``max_gap`` count.

    Parameters
    ----------
    out_dir : Path
        The sweep's results folder.
    prepared : PreparedSweep
        The sweep.
    results : pandas.DataFrame
        Its results table.
    records : dict
        Case id -> record.

    Returns
    -------
    list of str
        What was written or skipped, and why.
    """
    max_gap = prepared.spec.max_gap
    kept = solved(results, max_gap=max_gap)
    if kept.empty:
        return ["no case was solved: frontier, sensitivity and no-regret files not written"]
    loose = len(solved(results)) - len(kept)
    notes = [f"{loose} solved cases left out of the analysis: proven gap above max_gap {max_gap:g}"] if loose else []
    return [
        *notes,
        *_write_frontier(out_dir, prepared, kept),
        *_write_sensitivity(out_dir, prepared, kept),
        *_write_no_regret(out_dir, prepared, kept, records),
    ]
