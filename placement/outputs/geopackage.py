"""``plan.gpkg``: every layer of a plan in one GeoPackage, each with its QGIS style in ``layer_styles``.

Layers (EPSG:4326): ``countries`` (the Natural Earth basemap), ``catchments``, ``network``, ``assignments``,
``populations``, ``sites``, and where the plan has them ``discovered_sites`` (``placement discover``) and
``failover_sites`` (N+1). Each layer's style (:mod:`placement.outputs.qgis_style`) is a row of the ``layer_styles``
table, the convention QGIS reads when it opens a GeoPackage layer (``useAsDefault``), registered in
``gpkg_contents`` as an attributes table so GDAL lists it too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import geopandas as gpd
import pandas as pd

from placement.outputs import geojson as geo
from placement.outputs.qgis_style import (
    LayerStyle,
    assignments_style,
    catchments_style,
    countries_style,
    discovered_style,
    failover_style,
    network_style,
    populations_style,
    sites_style,
)
from placement.results.record import PlanResults

GPKG_NAME = "plan.gpkg"


@dataclass(frozen=True)
class StyledLayer:
    """A layer of ``plan.gpkg`` and its style.

    Parameters
    ----------
    frame : geopandas.GeoDataFrame
        The features (EPSG:4326).
    style : LayerStyle
        Its QGIS style (``style.layer`` is the layer's name).
    """

    frame: gpd.GeoDataFrame
    style: LayerStyle

    @property
    def name(self) -> str:
        """The layer's name in the GeoPackage."""
        return self.style.layer


def plan_layers(
    results: PlanResults, *, catchments: gpd.GeoDataFrame, links: gpd.GeoDataFrame, basemap: gpd.GeoDataFrame
) -> list[StyledLayer]:
    """The plan's layers, bottom first (the order QGIS draws them in ``plan.qgz``).

    Parameters
    ----------
    results : PlanResults
        The plan's results.
    catchments, links : geopandas.GeoDataFrame
        Its catchments and the latency graph's links (as written to GeoJSON).
    basemap : geopandas.GeoDataFrame
        Natural Earth countries.

    Returns
    -------
    list of StyledLayer
        Layers with features (an empty one is left out: QGIS cannot tell an empty layer's geometry).
    """
    countries = gpd.GeoDataFrame(basemap[["name", "geometry"]], geometry="geometry", crs=basemap.crs).to_crs(geo.WGS84)
    layers = [
        StyledLayer(countries, countries_style()),
        StyledLayer(catchments.to_crs(geo.WGS84), catchments_style()),
        StyledLayer(links.to_crs(geo.WGS84), network_style()),
        StyledLayer(geo.assignments_frame(results.assignments), assignments_style(results.assignments)),
        StyledLayer(geo.populations_frame(results.populations), populations_style(results.populations)),
        StyledLayer(geo.sites_frame(results.sites), sites_style(results.sites)),
    ]
    discovered = discovered_frame(results.sites)
    if discovered is not None:
        layers.append(StyledLayer(discovered, discovered_style(discovered)))
    if results.failover is not None:
        layers.append(StyledLayer(failover_frame(results.failover.sites, results.sites), failover_style()))
    return [layer for layer in layers if len(layer.frame)]


def discovered_frame(sites: pd.DataFrame) -> gpd.GeoDataFrame | None:
    """The plan's discovered sites (catalog ``discovered`` true), with ``mw_built``; None when it has none."""
    if "discovered" not in sites.columns or not sites["discovered"].astype(bool).any():
        return None
    chosen = sites[sites["discovered"].astype(bool)]
    frame = geo.sites_frame(chosen)
    frame["mw_built"] = chosen["mw_used"].to_numpy(float)
    return frame


def failover_frame(failover_sites: pd.DataFrame, sites: pd.DataFrame) -> gpd.GeoDataFrame:
    """Each site that takes load when another fails: the most it takes in any loss and slice, and from how many."""
    taken = failover_sites.groupby("site_id").agg(
        moved_in_tok_s_max=("moved_in_tok_s", "max"), losses=("failed", "nunique"), nodes=("nodes", "max")
    )
    placed = sites.set_index(sites["site_id"].astype(str))[["name", "lat", "lon"]].join(taken, how="inner")
    return gpd.GeoDataFrame(
        placed.reset_index(names="site_id").drop(columns=["lat", "lon"]),
        geometry=gpd.points_from_xy(placed["lon"], placed["lat"]),
        crs=geo.WGS84,
    )


def write_geopackage(layers: Sequence[StyledLayer], path: Path) -> Path:
    """Write the layers and their styles as one GeoPackage.

    Parameters
    ----------
    layers : sequence of StyledLayer
        :func:`plan_layers`.
    path : Path
        The file (written whole: the results folder is staged and swapped in by its writer).

    Returns
    -------
    Path
        The file written.
    """
    for k, layer in enumerate(layers):  # NaN is NULL in SQLite; GeoPackage 1.2, which every GDAL 3 and QGIS 3 reads
        options = {"dataset_options": {"VERSION": "1.2"}} if k == 0 else {}
        layer.frame.to_file(path, layer=layer.name, driver="GPKG", engine="pyogrio", **options)
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE IF NOT EXISTS layer_styles (id INTEGER PRIMARY KEY AUTOINCREMENT, f_table_catalog TEXT(256), "
            "f_table_schema TEXT(256), f_table_name TEXT(256), f_geometry_column TEXT(256), styleName TEXT(30), "
            "styleQML TEXT, styleSLD TEXT, useAsDefault BOOLEAN, description TEXT, owner TEXT(30), ui TEXT(30), "
            "update_time DATETIME DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))"
        )
        db.executemany(
            "INSERT INTO layer_styles (f_table_catalog, f_table_schema, f_table_name, f_geometry_column, styleName, "
            "styleQML, styleSLD, useAsDefault, description, owner, ui) VALUES ('', '', ?, 'geom', ?, ?, '', 1, ?, '', '')",
            [(layer.name, layer.name, layer.style.qml(), layer.style.description) for layer in layers],
        )
        db.execute(
            "INSERT OR REPLACE INTO gpkg_contents (table_name, data_type, identifier, description, last_change) "
            "VALUES ('layer_styles', 'attributes', 'layer_styles', 'QGIS layer styles', strftime('%Y-%m-%dT%H:%M:%fZ','now'))"
        )
    return path
