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

from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from numpy.typing import NDArray
from shapely import MultiPoint
from shapely.geometry.base import BaseGeometry

from placement.outputs import geojson as geo
from placement.outputs.world_map import load_basemap
from placement.plan import Plan

WORLD_BOX = shapely.box(-180.0, -90.0, 180.0, 90.0)
REACH_DEG = 5.0
"""Default radius of land a city may claim. [degrees of arc, about 555 km]"""
SIMPLIFY_DEG = 0.02
"""Tolerance for simplifying catchment outlines (about 2 km). [degrees]"""

__all__ = ["catchment_frame", "land_geometry", "nearest_city_cells", "write_catchments", "write_network"]


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
    cells = np.full(len(lon_deg), shapely.Polygon(), dtype=object)
    if len(cells) == 0:
        return cells
    rounded = np.round(np.column_stack([lon_deg, lat_deg]), 6)
    distinct, first = np.unique(rounded, axis=0, return_index=True)
    points = shapely.points(distinct)
    if len(distinct) < 2:
        voronoi = np.array([WORLD_BOX], dtype=object)
    else:
        diagram = shapely.voronoi_polygons(MultiPoint(distinct), extend_to=WORLD_BOX)
        voronoi = shapely.intersection(np.asarray(shapely.get_parts(diagram), dtype=object), WORLD_BOX)
    point_index, cell_index = shapely.STRtree(voronoi).query(points, predicate="within")
    discs = shapely.buffer(points[point_index], reach_deg, quad_segs=8)
    cells[first[point_index]] = shapely.intersection(voronoi[cell_index], discs)
    return cells


def _served_cities(plan: Plan) -> pd.DataFrame:
    """Member cities with the main site of their population (cities of unserved populations dropped)."""
    cities = plan.instance.populations.cities
    main = plan.populations["main_site_id"].fillna("").astype(str).to_numpy()
    site = main[cities["population_index"].to_numpy()]
    frame = cities.assign(main_site_id=site)
    return frame[frame["main_site_id"] != ""]


def _site_properties(plan: Plan) -> pd.DataFrame:
    """Figures of each open site and of the populations whose main site it is."""
    opened = plan.sites[plan.sites["open"]]
    populations = plan.populations[plan.populations["main_site_id"].fillna("") != ""]
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
    plan: Plan,
    *,
    reach_deg: float = REACH_DEG,
    simplify_deg: float = SIMPLIFY_DEG,
    land: BaseGeometry | None = None,
) -> gpd.GeoDataFrame:
    """One catchment (multi)polygon per open site that is the main site of any population.

    Parameters
    ----------
    plan : Plan
        A solved plan.
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
    cities = _served_cities(plan)
    land = land_geometry() if land is None else land
    cells = nearest_city_cells(cities["lon"].to_numpy(float), cities["lat"].to_numpy(float), reach_deg=reach_deg)
    by_site = pd.Series(cells, index=cities["main_site_id"].to_numpy()).groupby(level=0)
    shapes = {site: shapely.union_all(group.to_numpy()) for site, group in by_site}
    properties = _site_properties(plan)
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


def write_network(links: gpd.GeoDataFrame, folder: Path) -> Path:
    """Write the latency graph's links as ``network.geojson`` (RFC 7946 LineStrings).

    Parameters
    ----------
    links : geopandas.GeoDataFrame
        The links of the scenario's latency model
        (:meth:`placement.network.latency.LatencyModel.links_frame`).
    folder : Path
        Results folder.

    Returns
    -------
    Path
        The file written.
    """
    path = Path(folder) / "network.geojson"
    geo.write_geojson(links, path)
    return path
