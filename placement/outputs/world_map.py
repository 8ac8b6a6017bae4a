"""Static maps (PNG) on the bundled Natural Earth basemap.

Drawing is a few named steps (:func:`draw_world_map` calls them in order), each reading only the
columns it needs. Figures and artists are sized by the map, never by the data: one collection per
layer, a fixed figure size, limits set explicitly, and only finite values reach matplotlib (a
site with no goodput has no $/M and is drawn in a neutral colour).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import geopandas as gpd
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import shapely
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import Colormap, Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.path import Path as MplPath
from matplotlib.typing import ColorType
from numpy.typing import NDArray
from shapely.geometry.base import BaseGeometry

from placement.outputs.classes import DEADLINE_COLOUR, class_colours, deadline_classes
from placement.outputs.png import save_png
from placement.world.bundled import bundled_path

BASEMAP = bundled_path("geo", "naturalearth_lowres_countries_110m.geojson")
COST_COLUMN = "cost_per_million_goodput_tokens_usd"
COST_CMAP = "viridis_r"
"""Colour map of $/M goodput (low cost yellow-green, high cost purple)."""
NO_COST_COLOUR = "#bdbdbd"
"""Open sites without a finite $/M (no goodput on a partial plan)."""
WORLD_FIGSIZE_IN = (16.0, 7.4)
WORLD_LON_DEG = (-180.0, 180.0)
WORLD_LAT_DEG = (-58.0, 84.0)


def load_basemap(path: Path = BASEMAP) -> gpd.GeoDataFrame:
    """Natural Earth 1:110m country polygons.

    Parameters
    ----------
    path : Path, optional
        GeoJSON of country polygons.

    Returns
    -------
    geopandas.GeoDataFrame
        Countries in WGS84.
    """
    return gpd.read_file(path, engine="pyogrio")


def finite_points(frame: pd.DataFrame, lon: str = "lon", lat: str = "lat") -> pd.DataFrame:
    """The rows whose coordinates are finite (others cannot be drawn).

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows with coordinate columns.
    lon, lat : str, optional
        Column names. [degrees]

    Returns
    -------
    pandas.DataFrame
        The drawable rows.
    """
    coords = frame[[lon, lat]].to_numpy(float)
    drawable: pd.DataFrame = frame.loc[np.isfinite(coords).all(axis=1)]
    return drawable


def cost_norm(sites: pd.DataFrame) -> Normalize:
    """Colour scale of $/M goodput over the open sites with a finite value.

    Parameters
    ----------
    sites : pandas.DataFrame
        The plan's site table (``open``, ``cost_per_million_goodput_tokens_usd``).

    Returns
    -------
    matplotlib.colors.Normalize
        From the lowest finite $/M to the 95th percentile (0 to 1 when there is none); dearer sites take the
        top colour.
    """
    cost = sites.loc[sites["open"].astype(bool), COST_COLUMN].to_numpy(float)
    cost = cost[np.isfinite(cost)]
    # a site serving a sliver of goodput has an enormous $/M: the 95th percentile keeps the scale readable
    low, high = (float(cost.min()), float(np.percentile(cost, 95))) if len(cost) else (0.0, 1.0)
    return Normalize(vmin=low, vmax=high if high > low else low + 1e-6, clip=True)


def cost_colours(sites: pd.DataFrame, cmap: Colormap, norm: Normalize) -> NDArray[np.float64]:
    """RGBA colour of each site's $/M; the neutral colour where it is not finite.

    Parameters
    ----------
    sites : pandas.DataFrame
        Site rows (``cost_per_million_goodput_tokens_usd``).
    cmap : matplotlib.colors.Colormap
        Colour map.
    norm : matplotlib.colors.Normalize
        Scale (see :func:`cost_norm`).

    Returns
    -------
    numpy.ndarray
        ``(n, 4)`` colours.
    """
    cost = sites[COST_COLUMN].to_numpy(float)
    finite = np.isfinite(cost)
    colours = np.tile(np.asarray(matplotlib.colors.to_rgba(NO_COST_COLOUR)), (len(cost), 1))
    if finite.any():
        colours[finite] = cmap(norm(cost[finite]))
    return colours


def assignment_segments(assignments: pd.DataFrame) -> list[NDArray[np.float64]]:
    """Population-to-site lines that can be drawn on a flat map.

    Lines across the antimeridian (they would cross the world; the GeoJSON keeps them) and lines
    with a non-finite end are left out.

    Parameters
    ----------
    assignments : pandas.DataFrame
        Rows with ``pop_lon``, ``pop_lat``, ``site_lon``, ``site_lat``. [degrees]

    Returns
    -------
    list of numpy.ndarray
        ``(2, 2)`` lon/lat segments.
    """
    ends = assignments[["pop_lon", "pop_lat", "site_lon", "site_lat"]].to_numpy(float).reshape(-1, 4)
    keep = np.isfinite(ends).all(axis=1) & (np.abs(ends[:, 2] - ends[:, 0]) <= 180.0)
    return list(ends[keep].reshape(-1, 2, 2))


def draw_populations(ax: Axes, populations: pd.DataFrame) -> None:
    """Population points: served ones as dots sized by demand, unserved ones as red crosses.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Where to draw.
    populations : pandas.DataFrame
        The plan's population table (``lat``, ``lon``, ``demand_tok_s``, ``unserved_tok_s``).
    """
    populations = finite_points(populations)
    served = populations["unserved_tok_s"] <= 1e-6 * populations["demand_tok_s"].clip(lower=1.0)
    area = 4 + 60 * np.sqrt(populations["demand_tok_s"] / max(float(populations["demand_tok_s"].max()), 1e-9))
    ax.scatter(populations.loc[served, "lon"], populations.loc[served, "lat"], s=area[served], c="#2b5c8a",
               alpha=0.5, linewidths=0, zorder=3)  # fmt: skip
    ax.scatter(populations.loc[~served, "lon"], populations.loc[~served, "lat"], s=area[~served] + 10, marker="x",
               c="#c0392b", linewidths=1.2, zorder=4)  # fmt: skip


@dataclass(frozen=True)
class SiteStyle:
    """How open sites are drawn: colour scale of $/M and marker area per MW.

    Parameters
    ----------
    cmap : matplotlib.colors.Colormap
        Colour map of $/M goodput.
    norm : matplotlib.colors.Normalize
        Its scale.
    area_per_mw_pt2 : float
        Marker area per MW used, above a minimum of 30. [points^2/MW]
    """

    cmap: Colormap
    norm: Normalize
    area_per_mw_pt2: float

    @classmethod
    def for_sites(cls, sites: pd.DataFrame) -> SiteStyle:
        """The style of a plan's site table: the largest open site gets 930 points^2."""
        mw = sites.loc[sites["open"].astype(bool), "mw_used"].to_numpy(float)
        mw = mw[np.isfinite(mw)]
        return cls(plt.get_cmap(COST_CMAP), cost_norm(sites), 900.0 / max(float(mw.max()) if len(mw) else 1.0, 1e-9))


def polygon_paths(geometries: Sequence[BaseGeometry]) -> tuple[list[MplPath], NDArray[np.intp]]:
    """One matplotlib path per polygon part (its exterior and holes, as geopandas draws it), and its geometry's index.

    Parameters
    ----------
    geometries : sequence of shapely geometries
        Polygons and multipolygons (other parts are skipped).

    Returns
    -------
    paths : list of matplotlib.path.Path
        Compound paths, in the order of the geometries and their parts.
    owner : numpy.ndarray
        Index into ``geometries`` of each path.
    """
    paths: list[MplPath] = []
    owner: list[int] = []
    # normalised as geopandas does: exteriors clockwise, holes anticlockwise, which matplotlib's non-zero fill needs
    for index, geometry in enumerate(shapely.normalize(np.asarray(geometries, dtype=object))):
        for part in shapely.get_parts(geometry):
            if part.geom_type != "Polygon" or part.is_empty:
                continue
            rings = [part.exterior, *part.interiors]
            paths.append(MplPath.make_compound_path(*(MplPath(np.asarray(r.coords)[:, :2], closed=True) for r in rings)))
            owner.append(index)
    return paths, np.asarray(owner, dtype=np.intp)


def add_polygons(
    ax: Axes,
    geometries: Sequence[BaseGeometry],
    *,
    facecolors: ColorType | list[ColorType],
    edgecolor: ColorType = "none",
    linewidth: float = 0.0,
    alpha: float | None = None,
    zorder: float = 1.0,
) -> PathCollection:
    """Fill polygons as one collection: what ``GeoDataFrame.plot`` draws, without its redraw of the figure.

    (geopandas asks the canvas to redraw after every ``.plot()``; on the Agg backend that renders the whole
    figure each time.)

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Where to draw.
    geometries : sequence of shapely geometries
        Polygons and multipolygons.
    facecolors : colour or list of colours
        One colour, or a list of one per geometry (its parts share it).
    edgecolor : colour, optional
        Outline colour (``"none"``: no outline).
    linewidth : float, optional
        Outline width. [points]
    alpha : float, optional
        Opacity.
    zorder : float, optional
        Drawing order.

    Returns
    -------
    matplotlib.collections.PathCollection
        The collection added.
    """
    paths, owner = polygon_paths(geometries)
    if isinstance(facecolors, list):
        facecolors = [facecolors[k] for k in owner]
    collection = PathCollection(
        paths, facecolors=facecolors, edgecolors=edgecolor, linewidths=linewidth, alpha=alpha, zorder=zorder
    )
    ax.add_collection(collection)
    return collection


def add_outlines(
    ax: Axes, geometries: Sequence[BaseGeometry], *, color: ColorType, linewidth: float, alpha: float, zorder: float
) -> LineCollection:
    """Draw the rings of polygons as lines (what ``GeoSeries.boundary.plot`` draws), as one collection.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Where to draw.
    geometries : sequence of shapely geometries
        Polygons and multipolygons.
    color : colour
        Line colour.
    linewidth : float
        Line width. [points]
    alpha : float
        Opacity.
    zorder : float
        Drawing order.

    Returns
    -------
    matplotlib.collections.LineCollection
        The collection added.
    """
    paths, _ = polygon_paths(geometries)
    rings = [ring for path in paths for ring in path.to_polygons(closed_only=False)]
    collection = LineCollection(rings, colors=color, linewidths=linewidth, alpha=alpha, zorder=zorder)
    ax.add_collection(collection)
    return collection


def geographic_aspect(frame: gpd.GeoDataFrame) -> float:
    """The aspect ``GeoDataFrame.plot`` gives a map in degrees: ``1 / cos(mid-latitude of the frame's bounds)``."""
    _, south, _, north = frame.total_bounds
    return float(1.0 / np.cos(np.mean([south, north]) * np.pi / 180.0))


def _draw_basemap(ax: Axes, world: gpd.GeoDataFrame) -> None:
    add_polygons(ax, world.geometry.to_numpy(), facecolors="#eceae4", edgecolor="#b8b5ad", linewidth=0.4)
    ax.set_aspect(geographic_aspect(world))


def main_assignments(assignments: pd.DataFrame) -> pd.DataFrame:
    """Each (population, class)'s main assignment: the site carrying most of its goodput.

    Parameters
    ----------
    assignments : pandas.DataFrame
        The plan's assignment table.

    Returns
    -------
    pandas.DataFrame
        One row per served (population, class).
    """
    ranked = assignments.sort_values("goodput_tok_s", ascending=False, kind="mergesort")
    main: pd.DataFrame = ranked.drop_duplicates(["population_id", "class"])
    return main


def draw_class_lines(ax: Axes, assignments: pd.DataFrame, *, linewidth: float = 0.5, alpha: float = 0.45) -> dict[str, str]:
    """Each population's line to its main site, one colour per interactive class; deadline classes left out.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Where to draw.
    assignments : pandas.DataFrame
        The plan's assignment table (or the rows to draw).
    linewidth, alpha : float, optional
        Line width [points] and opacity.

    Returns
    -------
    dict of str to str
        The colour of each class drawn (for the legend).
    """
    colours = class_colours(assignments)
    main = main_assignments(assignments)
    for name, colour in colours.items():
        segments = assignment_segments(main[main["class"] == name])
        ax.add_collection(LineCollection(segments, colors=colour, linewidths=linewidth, alpha=alpha, zorder=2))
    return colours


def _draw_catchments(ax: Axes, catchments: gpd.GeoDataFrame | None) -> None:
    """Catchments (the land each open site serves) as faint tints with outlines, unlabelled at world scale."""
    if catchments is None or catchments.empty:
        return
    shapes = catchments.geometry.to_numpy()
    palette = plt.get_cmap("Pastel1")
    add_polygons(ax, shapes, facecolors=[palette(k % palette.N) for k in range(len(shapes))], alpha=0.45, zorder=1)
    add_outlines(ax, shapes, color="#8a8a8a", linewidth=0.4, alpha=0.8, zorder=1.2)


DEADLINE_INSET = (0.0, 0.0, 0.27, 0.4)
"""Where the deadline-flow inset sits on the world map (axes fraction: x, y, width, height), over the South Pacific."""


def draw_deadline_flows(ax: Axes, sites: pd.DataFrame, assignments: pd.DataFrame, world: gpd.GeoDataFrame) -> None:
    """Deadline classes' flows: each population's line to its main site, sites sized by the deadline goodput they take.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Where to draw (a small world map).
    sites, assignments : pandas.DataFrame
        The plan's tables.
    world : geopandas.GeoDataFrame
        Country polygons.
    """
    late = assignments[assignments["class"].isin(deadline_classes(assignments))]
    add_polygons(ax, world.geometry.to_numpy(), facecolors="#eceae4", edgecolor="none", zorder=0.5)
    ax.add_collection(LineCollection(assignment_segments(main_assignments(late)), colors=DEADLINE_COLOUR, linewidths=0.3,
                                     alpha=0.35, zorder=2))  # fmt: skip
    by_site = late.groupby("site_id", sort=False)["goodput_tok_s"].sum().sort_values(ascending=False)
    placed = finite_points(sites.set_index(sites["site_id"].astype(str)).reindex(by_site.index).assign(tok_s=by_site))
    total = max(float(by_site.sum()), 1e-9)
    ax.scatter(placed["lon"], placed["lat"], s=8 + 250 * placed["tok_s"] / total, c=DEADLINE_COLOUR, edgecolors="black",
               linewidths=0.5, zorder=3)  # fmt: skip
    for name, lon, lat, tok_s in placed.head(4)[["name", "lon", "lat", "tok_s"]].itertuples(index=False):
        ax.annotate(f"{name} {tok_s / total:.0%}", (lon, lat), xytext=(3, 3), textcoords="offset points", fontsize=6, zorder=4)
    names = ", ".join(deadline_classes(assignments))
    ax.set_title(f"deadline classes ({names}): flows to {len(by_site)} sites (area ~ share)", fontsize=7)
    ax.set_xlim(*WORLD_LON_DEG)
    ax.set_ylim(*WORLD_LAT_DEG)
    ax.set_aspect(geographic_aspect(world))
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_facecolor("white")


def _draw_sites(ax: Axes, sites: pd.DataFrame, style: SiteStyle) -> None:
    """Candidate sites as hollow triangles, open sites as discs sized by MW and coloured by $/M."""
    sites = finite_points(sites)
    is_open = sites["open"].astype(bool)
    closed, opened = sites[~is_open], sites[is_open]
    ax.scatter(closed["lon"], closed["lat"], s=18, marker="^", facecolors="none", edgecolors="#6b6b6b",
               linewidths=0.8, zorder=5)  # fmt: skip
    area = 30 + np.nan_to_num(opened["mw_used"].to_numpy(float)) * style.area_per_mw_pt2
    ax.scatter(opened["lon"], opened["lat"], s=area, c=cost_colours(opened, style.cmap, style.norm),
               edgecolors="black", linewidths=0.8, zorder=6)  # fmt: skip
    labelled = opened.nlargest(WORLD_LABELS_MAX, "mw_used") if len(opened) > WORLD_LABELS_MAX else opened
    for name, lon, lat, mw in zip(labelled["name"], labelled["lon"], labelled["lat"], labelled["mw_used"], strict=True):
        ax.annotate(f"{name}\n{mw:.1f} MW", (lon, lat), xytext=(6, 6), textcoords="offset points", fontsize=7, zorder=7)


WORLD_LABELS_MAX = 40
"""Open sites named on the world map at most (the largest by MW): past that the names overprint each other; the
regional maps and ``sites.csv`` name every one."""


def _draw_colorbar(fig: Figure, ax: Axes, style: SiteStyle) -> None:
    bar = fig.colorbar(plt.cm.ScalarMappable(norm=style.norm, cmap=style.cmap), ax=ax, shrink=0.6, pad=0.01, extend="max")
    bar.set_label("open site: $ per million goodput tokens")


def _draw_legend(ax: Axes, colours: dict[str, str], *, deadline: bool) -> None:
    handles = [
        Line2D([], [], marker="o", linestyle="", markerfacecolor="#7fc97f", markeredgecolor="black", markersize=10,
               label="open site (area ~ MW used)"),
        Line2D([], [], marker="o", linestyle="", markerfacecolor=NO_COST_COLOUR, markeredgecolor="black",
               label="open site serving no goodput (N+1 spare)"),
        Line2D([], [], marker="^", linestyle="", markerfacecolor="none", markeredgecolor="#6b6b6b",
               label="candidate site, not opened"),
        Line2D([], [], marker="o", linestyle="", color="#2b5c8a", alpha=0.6, label="population served (area ~ demand)"),
        Line2D([], [], marker="x", linestyle="", color="#c0392b", label="population not served inside its TTFT objective"),
        Patch(facecolor="#fbb4ae", alpha=0.5, edgecolor="#8a8a8a", label="catchment: land whose users one site serves"),
    ]  # fmt: skip
    handles += [
        Line2D([], [], color=c, label=f"{name} (interactive): population -> its main site") for name, c in colours.items()
    ]
    if deadline:
        handles.append(Line2D([], [], color=DEADLINE_COLOUR, label="deadline classes: in the inset (lower left), not on the map"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=3, fontsize=8, frameon=False)


def _frame_world(ax: Axes, title: str) -> None:
    ax.set_xlim(*WORLD_LON_DEG)
    ax.set_ylim(*WORLD_LAT_DEG)
    ax.set_xlabel("longitude [degrees]", fontsize="small")
    ax.set_ylabel("latitude [degrees]", fontsize="small")
    ax.set_title(title)


def draw_world_map(
    sites: pd.DataFrame,
    assignments: pd.DataFrame,
    populations: pd.DataFrame,
    path: Path,
    *,
    title: str,
    basemap: gpd.GeoDataFrame | None = None,
    catchments: gpd.GeoDataFrame | None = None,
) -> None:
    """World map: open sites sized by MW and coloured by $/M goodput, interactive classes' lines and catchments.

    Each interactive class's populations are joined to their main site in the class's colour; deadline
    classes (objective over a minute), which go wherever power is cheapest, are drawn in an inset of
    their own so they do not hide the interactive catchments.

    Parameters
    ----------
    sites, assignments, populations : pandas.DataFrame
        The plan's tables.
    path : Path
        PNG to write.
    title : str
        Map title.
    basemap : geopandas.GeoDataFrame, optional
        Country polygons (default: the bundled Natural Earth file).
    catchments : geopandas.GeoDataFrame, optional
        Catchment polygons to shade (:func:`placement.outputs.catchments.catchment_frame`).
    """
    style = SiteStyle.for_sites(sites)
    world = load_basemap() if basemap is None else basemap
    deadline = bool(deadline_classes(assignments))
    fig, ax = plt.subplots(figsize=WORLD_FIGSIZE_IN, dpi=110)
    try:
        _draw_basemap(ax, world)
        _draw_catchments(ax, catchments)
        colours = draw_class_lines(ax, assignments)
        draw_populations(ax, populations)
        _draw_sites(ax, sites, style)
        _draw_colorbar(fig, ax, style)
        _draw_legend(ax, colours, deadline=deadline)
        if deadline:
            draw_deadline_flows(ax.inset_axes(DEADLINE_INSET), sites, assignments, world)
        _frame_world(ax, title)
        save_png(fig, path, bbox_inches="tight")
    finally:
        plt.close(fig)
