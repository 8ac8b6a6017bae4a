"""Catchments: the land each open site serves, as polygons (GeoJSON for planners' GIS tools).

A catchment is built from the member cities of the populations a site serves. Every city gets the
part of the map closer to it than to any other city (a Voronoi cell in lon/lat degrees), cut to a
disc of ``reach_deg`` around the city (so empty deserts and oceans do not join a catchment) and to
land (the Natural Earth countries). The cells are dissolved by each population's *main* site (the
site that carries most of its goodput; a population split between sites counts once, for its main
site). Unserved cities belong to no catchment: they show as holes.

The polygons are a picture of the decision, not an input to it: the optimiser works on the
population-to-site round trips, not on these shapes.
"""

from __future__ import annotations

import math
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from numpy.typing import NDArray
from shapely import MultiPoint
from shapely.geometry.base import BaseGeometry

from placement._cache import cached
from placement.outputs import geojson as geo
from placement.outputs.world_map import load_basemap
from placement.results.record import PlanResults

WORLD_BOX = shapely.box(-180.0, -90.0, 180.0, 90.0)
REACH_DEG = 5.0
"""Default radius of land a city may claim. [degrees of arc, about 555 km]"""
SIMPLIFY_DEG = 0.02
"""Tolerance for simplifying catchment outlines (about 2 km). [degrees]"""
DISC_QUAD_SEGS = 8
"""Segments per quarter circle of the disc a cell is cut to (a 32-gon)."""

__all__ = ["catchment_frame", "land_geometry", "nearest_city_cells", "write_catchments"]


def land_geometry(basemap: gpd.GeoDataFrame | None = None) -> BaseGeometry:
    """The union of the country polygons.

    Parameters
    ----------
    basemap : geopandas.GeoDataFrame, optional
        Country polygons in WGS84 (default: the bundled Natural Earth 1:110m countries).

    Returns
    -------
    shapely.geometry.base.BaseGeometry
        Land as one (multi)polygon.
    """
    world = load_basemap() if basemap is None else basemap
    return shapely.union_all(shapely.make_valid(world.geometry.to_numpy()))


def nearest_city_cells(lon_deg: NDArray[np.float64], lat_deg: NDArray[np.float64], *, reach_deg: float) -> NDArray[np.object_]:
    """The area nearer to each point than to any other, cut to a disc around the point.

    Parameters
    ----------
    lon_deg, lat_deg : numpy.ndarray
        Point coordinates. [degrees]
    reach_deg : float
        Radius of the disc each cell is cut to. [degrees]

    Returns
    -------
    numpy.ndarray of shapely geometries
        One polygon per point, in input order (points at the same place share one cell: the
        first gets it, the others are empty).
    """
    return _city_cells(lon_deg, lat_deg, reach_deg=reach_deg)[0]


def _voronoi_cells(distinct: NDArray[np.float64]) -> tuple[NDArray[np.object_], NDArray[np.bool_]]:
    """Voronoi cells of distinct points (any order), cut to the world box; and which needed no cut."""
    if len(distinct) < 2:
        return np.array([WORLD_BOX], dtype=object), np.zeros(1, dtype=bool)
    diagram = shapely.voronoi_polygons(MultiPoint(distinct), extend_to=WORLD_BOX)
    voronoi = np.asarray(shapely.get_parts(diagram), dtype=object)
    west, south, east, north = shapely.bounds(voronoi).T
    inside = (west >= -180.0) & (south >= -90.0) & (east <= 180.0) & (north <= 90.0)
    voronoi[~inside] = shapely.intersection(voronoi[~inside], WORLD_BOX)  # only the outer ring of cells reaches past it
    return voronoi, inside


def _farthest_vertex_deg(polygons: NDArray[np.object_], centres: NDArray[np.float64]) -> NDArray[np.float64]:
    """Distance from each polygon's centre to its farthest vertex (lon/lat treated as a plane). [degrees]"""
    coords, owner = shapely.get_coordinates(polygons, return_index=True)
    farthest = np.zeros(len(polygons))
    np.maximum.at(farthest, owner, np.hypot(*(coords - centres[owner]).T))
    return farthest


def _city_cells(
    lon_deg: NDArray[np.float64], lat_deg: NDArray[np.float64], *, reach_deg: float
) -> tuple[NDArray[np.object_], NDArray[np.bool_]]:
    """:func:`nearest_city_cells`, and which cells are whole Voronoi cells (no cut by the disc or the world box).

    A cell whose farthest vertex lies inside the disc polygon's inscribed circle is inside the disc (both are
    convex), so it is kept whole rather than intersected: the same area, and whole cells of one diagram share
    their edges exactly, so they dissolve as a coverage (:func:`_dissolve`).
    """
    cells = np.full(len(lon_deg), shapely.Polygon(), dtype=object)
    whole = np.zeros(len(lon_deg), dtype=bool)
    if len(cells) == 0:
        return cells, whole
    rounded = np.round(np.column_stack([lon_deg, lat_deg]), 6)
    distinct, first = np.unique(rounded, axis=0, return_index=True)
    points = shapely.points(distinct)
    voronoi, unclipped = _voronoi_cells(np.asarray(distinct, dtype=float))
    point_index, cell_index = shapely.STRtree(voronoi).query(points, predicate="within")
    own = voronoi[cell_index]
    inscribed_deg = reach_deg * math.cos(math.pi / (4 * DISC_QUAD_SEGS)) * (1.0 - 1e-9)  # the 4·q-gon's inner radius
    inside = unclipped[cell_index] & (_farthest_vertex_deg(own, distinct[point_index]) < inscribed_deg)
    discs = shapely.buffer(points[point_index[~inside]], reach_deg, quad_segs=DISC_QUAD_SEGS)
    own[~inside] = shapely.intersection(own[~inside], discs)
    cells[first[point_index]], whole[first[point_index]] = own, inside
    return cells, whole


def _dissolve(cells: NDArray[np.object_], whole: NDArray[np.bool_]) -> BaseGeometry:
    """The union of cells: whole Voronoi cells as a coverage (edges matched, no overlay), then the cut ones."""
    merged = shapely.coverage_union_all(cells[whole]) if whole.any() else shapely.Polygon()
    return shapely.union_all(np.concatenate([[merged], cells[~whole]]))


def _served_cities(results: PlanResults) -> pd.DataFrame:
    """Member cities with the main site of their population (cities of unserved populations dropped)."""
    cities = results.members
    main = results.populations["main_site_id"].fillna("").astype(str).to_numpy()
    site = main[cities["population_index"].to_numpy()]
    frame = cities.assign(main_site_id=site)
    return frame[frame["main_site_id"] != ""]


def _site_properties(results: PlanResults) -> pd.DataFrame:
    """Figures of each open site and of the populations whose main site it is."""
    opened = results.sites[results.sites["open"]]
    populations = results.populations[results.populations["main_site_id"].fillna("") != ""]
    ranked = populations.sort_values("demand_tok_s", ascending=False)
    grouped = ranked.groupby("main_site_id")
    served = pd.DataFrame(
        {
            "populations_served": grouped.size(),
            "people_served": grouped["people"].sum(),
            "population_demand_tok_s": grouped["demand_tok_s"].sum(),
            "largest_populations": grouped["name"].agg(lambda names: "; ".join(str(n) for n in names.head(5))),
        }
    )
    frame = pd.DataFrame(
        {
            "site_id": opened["site_id"].astype(str),
            "name": opened["name"],
            "goodput_tok_s": opened["goodput_tok_s"],
            "goodput_share": opened["goodput_share"],
            "mw_used": opened["mw_used"],
            "mw_available": opened["mw_available"],
            "nodes": opened["nodes"],
            "cost_usd_per_h": opened["cost_usd_per_h"],
            "cost_per_million_goodput_tokens_usd": opened["cost_per_million_goodput_tokens_usd"],
        }
    )
    return frame.join(served, on="site_id")


def catchment_frame(
    results: PlanResults,
    *,
    reach_deg: float = REACH_DEG,
    simplify_deg: float = SIMPLIFY_DEG,
    land: BaseGeometry | None = None,
) -> gpd.GeoDataFrame:
    """One catchment (multi)polygon per open site that is the main site of any population.

    Parameters
    ----------
    results : PlanResults
        A solved plan's results (its tables and member cities).
    reach_deg : float, optional
        Radius of land a member city may claim. [degrees]
    simplify_deg : float, optional
        Outline simplification tolerance. [degrees]; the outlines are then snapped to the
        GeoJSON coordinate grid (:data:`placement.outputs.geojson.COORDINATE_DECIMALS`), so rounding on
        writing cannot collapse a ring.
    land : shapely geometry, optional
        Land to clip to (default: :func:`land_geometry` of the bundled basemap).

    Returns
    -------
    geopandas.GeoDataFrame
        ``site_id, name, goodput_tok_s, goodput_share, mw_used, mw_available, nodes,
        cost_usd_per_h, cost_per_million_goodput_tokens_usd, populations_served, people_served,
        population_demand_tok_s, largest_populations`` and the geometry, in WGS84.
    """
    cities = _served_cities(results)
    land = land_geometry() if land is None else land
    lon_deg, lat_deg = cities["lon"].to_numpy(float), cities["lat"].to_numpy(float)
    # the cells depend on where the served cities are, not on which site serves them: a what-if reuses them
    cells, whole = cached(
        "city-cells", {"lon_deg": lon_deg, "lat_deg": lat_deg, "reach_deg": reach_deg},
        lambda: _city_cells(lon_deg, lat_deg, reach_deg=reach_deg),
    )  # fmt: skip
    site_of = cities["main_site_id"].to_numpy()
    shapes = {site: _dissolve(cells[site_of == site], whole[site_of == site]) for site in np.unique(site_of)}
    properties = _site_properties(results)
    properties = properties[properties["site_id"].isin(list(shapes))].reset_index(drop=True)
    raw = np.array([shapes[s] for s in properties["site_id"]], dtype=object)
    clipped = shapely.simplify(shapely.intersection(raw, land), simplify_deg)
    clipped = shapely.set_precision(shapely.make_valid(clipped), 10.0**-geo.COORDINATE_DECIMALS)
    polygons = np.array([_polygonal(g) for g in clipped], dtype=object)
    frame = gpd.GeoDataFrame(properties, geometry=polygons, crs=geo.WGS84)
    return frame[~frame.geometry.is_empty].reset_index(drop=True)


def _polygonal(geometry: BaseGeometry) -> BaseGeometry:
    """Keep the polygons of a geometry (a clip may leave stray lines or points)."""
    parts = [p for p in shapely.get_parts(geometry) if p.geom_type in ("Polygon", "MultiPolygon") and not p.is_empty]
    if not parts:
        return shapely.MultiPolygon()
    return shapely.MultiPolygon([q for p in parts for q in shapely.get_parts(p)])


def write_catchments(catchments: gpd.GeoDataFrame, folder: Path) -> Path:
    """Write ``catchments.geojson`` (RFC 7946) into a results folder.

    Parameters
    ----------
    catchments : geopandas.GeoDataFrame
        From :func:`catchment_frame` (computed once per plan by the results writer).
    folder : Path
        Results folder.

    Returns
    -------
    Path
        The file written.
    """
    path = Path(folder) / "catchments.geojson"
    geo.write_geojson(catchments, path)
    return path
