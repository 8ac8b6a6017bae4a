"""Writing a plan to a results folder, whole or not at all.

Every file is first written into a fresh sibling folder; only when all of them are written is
it swapped in for the destination, so a failure leaves the previous results untouched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import geopandas as gpd
import pandas as pd

from placement._errors import InputError, Problem
from placement._paths import nearest_existing
from placement._process import Background
from placement.analyses.modes import cross_metro_links
from placement.outputs import geojson as geo
from placement.outputs.catchments import catchment_frame, write_catchments
from placement.outputs.failover_report import plan_protection
from placement.outputs.geopackage import GPKG_NAME, plan_layers, write_geopackage
from placement.outputs.network_layer import links_frame, write_network
from placement.outputs.qgis_project import QGZ_NAME, write_qgis_project
from placement.outputs.regional_maps import draw_regional_maps
from placement.outputs.report_html import draw_report_charts, render_report_html
from placement.outputs.report_md import render_markdown
from placement.outputs.webmap import write_webmap
from placement.outputs.world_map import draw_world_map, load_basemap
from placement.plan.record import Plan
from placement.progress import Progress, quiet
from placement.results.folder import ADEQUACY_CSV, write_csv, write_csv_chunks, write_json
from placement.results.record import ROW_COLUMNS, ROW_DIGITS, PlanResults

MARKERS = (
    "summary.json",
    "compare.csv",
    "diff.json",
    "failover_exposure.json",
    "frontier.csv",
    "discover.json",
    "alternatives.csv",
)

MAP_FILES = ("map.png", "map_<region>.png", "map.html")
"""The files ``maps=False`` (``solve --no-maps``) leaves out; every other file is written."""
TAIL_DIGITS = 6
"""Significant digits of ``tail_check.csv``'s figures (simulated: more would be noise)."""


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


def _write_all(plan: Plan, folder: Path, *, maps: bool, tail_check: pd.DataFrame | None, progress: Progress = quiet) -> None:
    """Every file of a plan: the writers take its results; its instance gives the network and the measured pings."""
    latency = plan.instance.latency
    links = links_frame(latency.round_trips if latency.kind == "graph" else None)  # the network of the round trips
    measured = latency.calibration.table if latency.calibration is not None else None
    cross_metro = cross_metro_links(plan) if plan.instance.cross_metro is not None else None
    _write_results(plan.results, folder, links=links, measured=measured, cross_metro=cross_metro, maps=maps,
                   tail_check=tail_check, progress=progress)  # fmt: skip


def _write_results(
    results: PlanResults,
    folder: Path,
    *,
    links: pd.DataFrame,
    measured: pd.DataFrame | None,
    cross_metro: pd.DataFrame | None,
    maps: bool,
    tail_check: pd.DataFrame | None,
    progress: Progress,
) -> None:
    # The slower half of the writing goes to forked children, shared out over the cores: without maps, the report's
    # charts from the start (with maps, the parent draws them while the map children draw); the GeoJSON layers; the
    # catchments, GeoPackage and QGIS project; the world map and web map in one child, the regional maps in another.
    drawn: list[Background[object]] = [] if maps else [Background(partial(draw_report_charts, results, folder))]
    summary = results.summary
    cost = summary.cost_per_million_goodput_tokens_usd
    title = f"{summary.scenario}: {summary.sites_open} sites, " + (
        f"${cost:.3f} per million goodput tokens" if cost is not None else "no goodput served"
    )
    drawn.append(Background(partial(_write_geojson_layers, results, folder, cross_metro, progress)))
    project = partial(_write_gis_project, results, folder, links=links, title=title, progress=progress)
    if maps:  # the catchments once, here: the GeoPackage, the maps and the web map draw the same
        catchments = catchment_frame(results)
        drawn += [
            Background(partial(project, catchments)),
            Background(partial(_draw_world_maps, results, folder, title, catchments, links, progress)),
            Background(partial(_draw_regional_maps, results, folder, catchments, progress)),
        ]
    else:  # the project's child cuts them itself while the parent writes the tables
        drawn.append(Background(partial(project, None)))
    shutil.copyfile(results.scenario_path, folder / "scenario.yaml")
    write_json(summary_json_dict(results), folder / "summary.json")
    write_csv(results.sites, folder / "sites.csv")
    write_csv(results.assignments, folder / "assignments.csv")
    write_csv(results.populations, folder / "populations.csv")
    members = results.members
    ids = results.populations["population_id"].to_numpy()[members["population_index"].to_numpy()]
    write_csv(members.assign(population_id=ids).drop(columns=["population_index"]), folder / "population_members.csv")
    if tail_check is not None:
        write_csv(tail_check, folder / "tail_check.csv", digits=TAIL_DIGITS)
    if results.rule_prices is not None:
        write_csv(results.rule_prices, folder / "rule_prices.csv")
    if results.adequacy is not None:
        write_csv(results.adequacy, folder / ADEQUACY_CSV)
    if measured is not None:  # the scenario's latency.measurements: before/after error on the planner's own pings
        write_csv(measured, folder / "latency_measurements.csv")
    if results.failover is not None:
        write_csv_chunks(results.failover.row_chunks(), folder / "failover.csv", columns=ROW_COLUMNS, digits=ROW_DIGITS)
        write_csv(results.failover.sites, folder / "failover_sites.csv")
        write_csv(results.failover.scenarios, folder / "failover_scenarios.csv")
    if cross_metro is not None:  # which decode sites prefill where: a network team's WAN links
        write_csv(cross_metro, folder / "cross_metro_links.csv")
    report = render_markdown(results.summary, results.sites, results.populations, results.notes,
                             protection=plan_protection(results))  # fmt: skip
    (folder / "report.md").write_text(report, encoding="utf-8")
    progress(f"wrote the tables: sites.csv, assignments.csv ({len(results.assignments):,} rows), populations.csv, "
             "summary.json, report.md")  # fmt: skip
    if maps:
        draw_report_charts(results, folder)  # while the children draw
    for child in drawn:
        child.result()  # raises what the child raised: the folder is then not swapped in
    render_report_html(results, folder)  # last: embeds map.png, map_*.png (when drawn) and the charts


def _write_geojson_layers(results: PlanResults, folder: Path, cross_metro: pd.DataFrame | None, progress: Progress) -> None:
    """The sites', assignments' and populations' GeoJSON layers (and the cross-metro links')."""
    geo.write_geojson(geo.sites_frame(results.sites), folder / "sites.geojson")
    geo.write_geojson(geo.assignments_frame(results.assignments), folder / "assignments.geojson")
    geo.write_geojson(geo.populations_frame(results.populations), folder / "populations.geojson")
    if cross_metro is not None:
        geo.write_geojson(geo.cross_metro_frame(cross_metro, results.sites), folder / "cross_metro_links.geojson")
    progress("wrote the GeoJSON layers: sites, assignments, populations")


def _write_gis_project(
    results: PlanResults,
    folder: Path,
    catchments: gpd.GeoDataFrame | None,
    *,
    links: pd.DataFrame,
    title: str,
    progress: Progress,
) -> None:
    """The catchments (cut here when not given), the network, ``plan.gpkg`` and ``plan.qgz``."""
    catchments = catchment_frame(results) if catchments is None else catchments
    write_catchments(catchments, folder)
    write_network(links, folder)
    layers = plan_layers(results, catchments=catchments, links=links, basemap=load_basemap())
    write_geopackage(layers, folder / GPKG_NAME)
    write_qgis_project(layers, folder / QGZ_NAME, title=title)
    progress("wrote the catchments, the network, plan.gpkg and plan.qgz")


def _draw_world_maps(
    results: PlanResults, folder: Path, title: str, catchments: gpd.GeoDataFrame, links: pd.DataFrame, progress: Progress
) -> None:
    """``map.png`` and ``map.html``."""
    draw_world_map(results.sites, results.assignments, results.populations, folder / "map.png", title=title,
                   catchments=catchments)  # fmt: skip
    write_webmap(results, folder / "map.html", catchments=catchments, links=links)
    progress("drew map.png and map.html")


def _draw_regional_maps(results: PlanResults, folder: Path, catchments: gpd.GeoDataFrame, progress: Progress) -> None:
    """``map_<region>.png``."""
    draw_regional_maps(results, folder, catchments=catchments)
    progress("drew the regional maps")


def check_output_folder(out_dir: str | Path, *, results_markers: tuple[str, ...] | None = MARKERS) -> Path:
    """Check, before anything is solved, that a results folder can be written at ``out_dir``.

    A results folder is written into a sibling staging folder and swapped in (see
    :func:`write_folder`), so the place that must be writable is the nearest existing folder
    on the way to ``out_dir``'s parent. It is probed by creating and removing an empty folder there,
    which fails on a read-only file system or without permission, for root too.

    Parameters
    ----------
    out_dir : str or Path
        The destination the user gave (``--out``).
    results_markers : tuple of str or None, optional
        Files that mark an existing folder as results this program may replace (default :data:`MARKERS`:
        ``summary.json``, ``compare.csv``, ``diff.json`` or ``failover_exposure.json``); None leaves that check to
        the caller (a sweep folder has its own marker).

    Returns
    -------
    Path
        The destination, absolute.

    Raises
    ------
    InputError
        Naming the path, what is wrong with it and the fix.
    """
    out = Path(out_dir).resolve()
    source = f"output folder {out}"
    fix = "choose another --out: a new folder, or an old results folder, in a folder you can write to"
    if out.exists() and not out.is_dir():
        raise InputError([Problem(source, "", "", "it is a file, not a folder", fix)])
    markers = results_markers or ()
    foreign = out.is_dir() and any(out.iterdir()) and not any((out / name).exists() for name in markers)
    if results_markers is not None and foreign:
        rule = f"it exists, is not empty and is not a placement results folder (no {' or '.join(markers)})"
        raise InputError([Problem(source, "", "", rule + "; nothing in it is overwritten", fix)])
    base = nearest_existing(out.parent)  # staging and the swap happen beside out_dir
    if not base.is_dir():
        raise InputError([Problem(source, "", "", f"it would be inside {base}, which is a file, not a folder", fix)])
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".placement-write-check-", dir=base))
    except OSError as exc:
        raise InputError([Problem(source, "", "", f"{base} cannot be written to ({exc.strerror})", fix)]) from None
    return out


def write_folder(out_dir: str | Path, writer: Callable[[Path], None]) -> Path:
    """Write a results folder whole or not at all.

    Parameters
    ----------
    out_dir : str or Path
        Destination folder. It is replaced as a whole; an existing folder that does not hold
        placement results (none of :data:`MARKERS`) is refused.
    writer : callable
        Writes every file into the folder it is given.

    Returns
    -------
    Path
        The folder written.

    Raises
    ------
    InputError
        If the destination exists and is not a results folder, or cannot be written
        (:func:`check_output_folder`).
    """
    out = check_output_folder(out_dir)  # again: the folder may have changed while the plan was solved
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    try:
        writer(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    retired = None
    if out.exists():
        retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        out.rename(retired / "results")
    staging.rename(out)
    if retired is not None:
        shutil.rmtree(retired, ignore_errors=True)
    return out


def write_text_atomic(path: Path, text: str) -> None:
    """Write one file whole or not at all (temporary file, then rename).

    Parameters
    ----------
    path : Path
        Destination.
    text : str
        Content.
    """
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with open(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    # mkstemp makes the file private (0600): give it the mode any other file written here gets (0666 less the umask)
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(temporary, 0o666 & ~mask)
    Path(temporary).replace(path)


def write_results(
    plan: Plan,
    out_dir: str | Path,
    *,
    maps: bool = True,
    tail_check: pd.DataFrame | None = None,
    progress: Progress = quiet,
) -> Path:
    """Write every result file of a plan into ``out_dir``, atomically.

    Parameters
    ----------
    plan : Plan
        A solved plan.
    out_dir : str or Path
        Destination folder. It is replaced as a whole; an existing folder that does not hold
        placement results (no ``summary.json``) is refused rather than overwritten.
    maps : bool, optional
        Draw the maps (:data:`MAP_FILES`); False leaves them out (scripted runs), every other
        file is written as usual.
    tail_check : pandas.DataFrame, optional
        The plan's tail check (:func:`placement.analyses.tail.check_tail`), written as ``tail_check.csv`` with
        the other files, so it is swapped in with them or not at all.
    progress : callable, optional
        Receives a line as each group of files is written (tables, GeoJSON, maps, report).

    Returns
    -------
    Path
        The folder written.

    Raises
    ------
    InputError
        If the destination exists and is not a results folder, or cannot be written.
    """
    return write_folder(out_dir, lambda folder: _write_all(plan, folder, maps=maps, tail_check=tail_check, progress=progress))
