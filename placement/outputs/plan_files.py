"""The files of one solved plan, written into a folder: tables, layers, GIS project, maps and report.

:func:`write_plan_files` is what :func:`placement.outputs.writer.write_results` runs in the folder it stages: here in
the caller, or in a child on standby (:func:`placement.outputs.writer.standby_writer`) that imported this module and
read the basemap while the plan was solved. This module imports the drawing libraries (matplotlib, the map and
chart modules); the writer that stages folders does not, so a process that solves does not wait on them.
"""

from __future__ import annotations

import functools
import shutil
from functools import partial
from pathlib import Path

import geopandas as gpd
import pandas as pd

from placement._process import Background
from placement.outputs import geojson as geo
from placement.outputs.catchments import catchment_frame, write_catchments
from placement.outputs.failover_report import plan_protection
from placement.outputs.geopackage import GPKG_NAME, plan_layers, write_geopackage
from placement.outputs.network_layer import write_network
from placement.outputs.plan_outputs import PlanOutputs, summary_json_dict, write_failover_rows
from placement.outputs.qgis_project import QGZ_NAME, write_qgis_project
from placement.outputs.regional_maps import draw_regional_maps
from placement.outputs.report_html import draw_report_charts, render_report_html
from placement.outputs.report_md import render_markdown
from placement.outputs.webmap import write_webmap
from placement.outputs.world_map import draw_world_map, load_basemap
from placement.progress import Progress
from placement.results.folder import ADEQUACY_CSV, write_csv, write_json
from placement.results.record import PlanResults

TAIL_DIGITS = 6
"""Significant digits of ``tail_check.csv``'s figures (simulated: more would be noise)."""


def prepare() -> None:
    """Read the basemap now: a child on standby does it while the plan is solved (the imports above are done too)."""
    basemap()


@functools.cache
def basemap() -> gpd.GeoDataFrame:
    """The bundled Natural Earth countries, read once per process: the GIS project and every map draw them unchanged."""
    return load_basemap()


def write_plan_files(outputs: PlanOutputs, folder: Path, progress: Progress) -> None:
    """Write every file of a plan into ``folder`` (a staging folder: the caller swaps it in).

    Parameters
    ----------
    outputs : PlanOutputs
        The plan's results and what its files need of its instance.
    folder : Path
        An empty folder.
    progress : callable
        Receives a line as each group of files is written.
    """
    results, links, cross_metro, maps = outputs.results, outputs.links, outputs.cross_metro, outputs.maps
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
    if outputs.tail_check is not None:
        write_csv(outputs.tail_check, folder / "tail_check.csv", digits=TAIL_DIGITS)
    if results.rule_prices is not None:
        write_csv(results.rule_prices, folder / "rule_prices.csv")
    if results.adequacy is not None:
        write_csv(results.adequacy, folder / ADEQUACY_CSV)
    if outputs.measured is not None:  # the scenario's latency.measurements: before/after error on the planner's own pings
        write_csv(outputs.measured, folder / "latency_measurements.csv")
    if results.failover is not None:
        if outputs.failover_rows:
            write_failover_rows(results.failover, folder)
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
    layers = plan_layers(results, catchments=catchments, links=links, basemap=basemap())
    write_geopackage(layers, folder / GPKG_NAME)
    write_qgis_project(layers, folder / QGZ_NAME, title=title)
    progress("wrote the catchments, the network, plan.gpkg and plan.qgz")


def _draw_world_maps(
    results: PlanResults, folder: Path, title: str, catchments: gpd.GeoDataFrame, links: pd.DataFrame, progress: Progress
) -> None:
    """``map.png`` and ``map.html``."""
    draw_world_map(results.sites, results.assignments, results.populations, folder / "map.png", title=title,
                   basemap=basemap(), catchments=catchments)  # fmt: skip
    write_webmap(results, folder / "map.html", catchments=catchments, links=links, basemap=basemap())
    progress("drew map.png and map.html")


def _draw_regional_maps(results: PlanResults, folder: Path, catchments: gpd.GeoDataFrame, progress: Progress) -> None:
    """``map_<region>.png``."""
    draw_regional_maps(results, folder, catchments=catchments, basemap=basemap())
    progress("drew the regional maps")
