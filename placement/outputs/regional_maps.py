"""Regional static maps (PNG): the world map's story, zoomed to each region that has open sites.

Every regional map uses the same scales as the others (marker area per MW, colour per $/M goodput),
so two regions can be compared by eye. Catchments (the land each open site serves) are shaded in
their site's colour.
"""

from __future__ import annotations

import math
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
from matplotlib.colors import Colormap, Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.typing import ColorType
from numpy.typing import ArrayLike, NDArray

from placement.outputs.classes import deadline_classes
from placement.outputs.png import save_png
from placement.outputs.world_map import (
    COST_COLUMN,
    NO_COST_COLOUR,
    add_outlines,
    add_polygons,
    cost_colours,
    cost_norm,
    draw_class_lines,
    draw_populations,
    finite_points,
    load_basemap,
)
from placement.results.record import PlanResults

__all__ = ["REGIONS", "Region", "draw_region", "draw_regional_maps", "draw_regional_maps_from_tables", "regions_with_open_sites"]

COST_CMAP = "viridis_r"
"""Colour map of $/M goodput (low cost yellow-green, high cost purple), as on the world map."""
CATCHMENT_CMAP = "Pastel1"
"""Tints that tell neighbouring catchments apart (they carry no value)."""
MARKER_AREA_MAX_PT2 = 900.0
"""Marker area of the largest open site. [points^2]"""
MARKER_AREA_MIN_PT2 = 30.0
"""Marker area of an open site with (almost) no MW. [points^2]"""


@dataclass(frozen=True)
class Region:
    """A rectangular map extent.

    Parameters
    ----------
    key : str
        File-name key (``map_<key>.png``).
    title : str
        Human-readable name.
    lon_min_deg, lon_max_deg, lat_min_deg, lat_max_deg : float
        Extent. [degrees]
    """

    key: str
    title: str
    lon_min_deg: float
    lon_max_deg: float
    lat_min_deg: float
    lat_max_deg: float

    def contains(self, lon_deg: pd.Series, lat_deg: pd.Series) -> pd.Series:
        """Whether each point lies inside the extent."""
        return lon_deg.between(self.lon_min_deg, self.lon_max_deg) & lat_deg.between(self.lat_min_deg, self.lat_max_deg)


REGIONS = (
    Region("north_america", "North America", -170.0, -50.0, 7.0, 72.0),
    Region("south_america", "South America", -95.0, -30.0, -57.0, 15.0),
    Region("europe", "Europe", -25.0, 45.0, 34.0, 71.0),
    Region("africa_middle_east", "Africa and the Middle East", -20.0, 65.0, -36.0, 40.0),
    Region("asia_pacific", "Asia-Pacific", 60.0, 180.0, -48.0, 56.0),
)
"""The regional zooms; a region is drawn only when it holds an open site."""


def regions_with_open_sites(sites: pd.DataFrame, regions: tuple[Region, ...] = REGIONS) -> list[Region]:
    """The regions that hold at least one open site.

    Parameters
    ----------
    sites : pandas.DataFrame
        The plan's site table (``open``, ``lon``, ``lat``).
    regions : tuple of Region, optional
        Candidate extents.

    Returns
    -------
    list of Region
        In the order given.
    """
    opened = sites[sites["open"].astype(bool)]
    return [r for r in regions if bool(r.contains(opened["lon"], opened["lat"]).any())]


def _marker_area_pt2(mw: ArrayLike, mw_max: float) -> NDArray[np.float64]:
    """Marker area for a site's MW on the shared scale, never above the largest site's. [points^2]

    A plan that uses no MW (nothing served) has no scale: every marker gets the minimum area.
    """
    values: NDArray[np.float64] = np.nan_to_num(np.asarray(mw, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
    if not (math.isfinite(mw_max) and mw_max > 0):
        return np.full(values.shape, MARKER_AREA_MIN_PT2)
    area = MARKER_AREA_MIN_PT2 + values * (MARKER_AREA_MAX_PT2 / mw_max)
    return np.asarray(np.clip(area, MARKER_AREA_MIN_PT2, MARKER_AREA_MIN_PT2 + MARKER_AREA_MAX_PT2))


def _in_region(assignments: pd.DataFrame, region: Region) -> pd.DataFrame:
    """The assignments with an end in the region."""
    inside = region.contains(assignments["pop_lon"], assignments["pop_lat"]) | region.contains(
        assignments["site_lon"], assignments["site_lat"]
    )
    return assignments[inside]


def _draw_catchments(ax: Axes, catchments: gpd.GeoDataFrame | None) -> None:
    """Shade catchments in alternating tints (to tell neighbours apart) with dark outlines."""
    if catchments is None or catchments.empty:
        return
    palette = plt.get_cmap(CATCHMENT_CMAP)
    tints: list[ColorType] = [palette(k % palette.N) for k in range(len(catchments))]
    shapes = catchments.geometry.to_numpy()
    add_polygons(ax, shapes, facecolors=tints, alpha=0.35, zorder=1)
    add_outlines(ax, shapes, color="#555555", linewidth=0.7, alpha=0.8, zorder=1.5)
    for name, shape in zip(catchments["name"], catchments.geometry, strict=True):
        largest = max(shapely.get_parts(shape), key=lambda part: part.area)
        anchor = largest.representative_point()
        ax.annotate(f"served by {name}", (anchor.x, anchor.y), fontsize=6.5, style="italic", color="#444444",
                    ha="center", zorder=1.6, annotation_clip=True)  # fmt: skip


def _draw_sites(ax: Axes, sites: pd.DataFrame, region: Region, cmap: Colormap, norm: Normalize, mw_max: float) -> None:
    inside = finite_points(sites[region.contains(sites["lon"], sites["lat"])])
    is_open = inside["open"].astype(bool)
    closed, opened = inside[~is_open], inside[is_open]
    ax.scatter(closed["lon"], closed["lat"], s=22, marker="^", facecolors="none", edgecolors="#6b6b6b", linewidths=0.9, zorder=5)
    ax.scatter(
        opened["lon"],
        opened["lat"],
        s=_marker_area_pt2(opened["mw_used"], mw_max),
        c=cost_colours(opened, cmap, norm),
        edgecolors="black",
        linewidths=0.8,
        zorder=6,
    )
    for name, lon, lat, mw, cost in zip(opened["name"], opened["lon"], opened["lat"], opened["mw_used"], opened[COST_COLUMN],
                                        strict=True):  # fmt: skip
        figure = "no goodput" if not math.isfinite(cost) else f"${cost:.3f}/M" if cost < 1e4 else "a sliver of goodput"
        ax.annotate(
            f"{name}\n{mw:.1f} MW, {figure}",
            (lon, lat),
            xytext=(7, 5),
            textcoords="offset points",
            fontsize=7.5,
            zorder=5.5,
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.6},
        )


def _size_key_mw(mw_max: float) -> list[float]:
    """Two or three round MW values for the marker-size legend (none when no MW is used)."""
    if not (math.isfinite(mw_max) and mw_max > 0):
        return []
    top = 10 ** math.floor(math.log10(mw_max))
    top = max(v * top for v in (1, 2, 5) if v * top <= mw_max)
    return sorted({round(top / 10, 3), round(top / 2, 3), top} - {0.0})


def _legend(ax: Axes, mw_max: float, colours: dict[str, str], deadline: list[str]) -> None:
    handles: list[Line2D | Patch] = [
        Line2D([], [], marker="o", linestyle="", markerfacecolor="white", markeredgecolor="black",
               markersize=math.sqrt(float(_marker_area_pt2([mw], mw_max)[0])), label=f"open site using {mw:g} MW")
        for mw in _size_key_mw(mw_max)
    ]  # fmt: skip
    handles += [
        Line2D([], [], marker="o", linestyle="", markerfacecolor=NO_COST_COLOUR, markeredgecolor="black",
               label="open site serving no goodput (N+1 spare)"),
        Line2D([], [], marker="^", linestyle="", markerfacecolor="none", markeredgecolor="#6b6b6b",
               label="candidate site, not opened"),
        Line2D([], [], marker="o", linestyle="", color="#2b5c8a", alpha=0.6, label="user population served (area ~ demand)"),
        Line2D([], [], marker="x", linestyle="", color="#c0392b", label="population with no site inside its TTFT objective"),
        *(Line2D([], [], color=c, label=f"{name} (interactive): population -> its main site") for name, c in colours.items()),
        *([Line2D([], [], color="white", label=f"deadline classes ({', '.join(deadline)}) not drawn: see map.png's inset")]
          if deadline else []),
        Patch(facecolor="#fbb4ae", alpha=0.5, edgecolor="#555555",
              label="catchment: land whose users one site serves\n(labelled in italics; tints only tell neighbours apart)"),
    ]  # fmt: skip
    ax.legend(
        handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=3, fontsize=7.5, frameon=False, labelspacing=1.2
    )


def draw_region(
    plan_tables: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame],
    region: Region,
    path: Path,
    *,
    title: str,
    basemap: gpd.GeoDataFrame,
    catchments: gpd.GeoDataFrame | None = None,
) -> Path:
    """Draw one regional map.

    Parameters
    ----------
    plan_tables : tuple of pandas.DataFrame
        The plan's ``(sites, assignments, populations)`` tables (as in the CSV files).
    region : Region
        Extent to draw.
    path : Path
        PNG to write.
    title : str
        Title line (the region's figures are added below it).
    basemap : geopandas.GeoDataFrame
        Country polygons.
    catchments : geopandas.GeoDataFrame, optional
        Catchment polygons with ``cost_per_million_goodput_tokens_usd`` (see
        :mod:`placement.outputs.catchments`).

    Returns
    -------
    Path
        The file written.
    """
    sites, assignments, populations = plan_tables
    cmap, norm = plt.get_cmap(COST_CMAP), cost_norm(sites)
    mw = sites["mw_used"].to_numpy(float)
    mw_max = float(mw[np.isfinite(mw)].max(initial=0.0))
    fig, ax = plt.subplots(figsize=(11, 8), dpi=110)
    ax.set_facecolor("#dde9f2")
    add_polygons(ax, basemap.geometry.to_numpy(), facecolors="#f3f1ec", edgecolor="#b8b5ad", linewidth=0.5, zorder=0.5)
    _draw_catchments(ax, catchments)
    colours = draw_class_lines(ax, _in_region(assignments, region), linewidth=0.7, alpha=0.55)
    draw_populations(ax, populations)
    _draw_sites(ax, sites, region, cmap, norm, mw_max)
    _legend(ax, mw_max, colours, deadline_classes(assignments))
    _finish(fig, ax, region, title, sites, cmap, norm)
    save_png(fig, path, bbox_inches="tight")
    plt.close(fig)
    return path


def _finish(fig: Figure, ax: Axes, region: Region, title: str, sites: pd.DataFrame, cmap: Colormap, norm: Normalize) -> None:
    inside = sites[region.contains(sites["lon"], sites["lat"]) & sites["open"].astype(bool)]
    share = float(inside["goodput_share"].sum())
    ax.set_xlim(region.lon_min_deg, region.lon_max_deg)
    ax.set_ylim(region.lat_min_deg, region.lat_max_deg)
    ax.set_aspect(1.0 / math.cos(math.radians((region.lat_min_deg + region.lat_max_deg) / 2)))
    ax.set_xlabel("longitude [degrees]", fontsize="small")
    ax.set_ylabel("latitude [degrees]", fontsize="small")
    ax.set_title(
        f"{title}\n{region.title}: {len(inside)} open sites, {inside['mw_used'].sum():.1f} MW, "
        f"{inside['nodes'].sum():,} nodes, {share:.0%} of the plan's goodput",
        fontsize=10,
    )
    mappable = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
    bar = fig.colorbar(mappable, ax=ax, shrink=0.6, pad=0.01)
    bar.set_label("open site: $ per million goodput tokens\n(all-in $/h / tokens delivered inside the SLO)")


def draw_regional_maps(
    results: PlanResults, folder: Path, *, catchments: gpd.GeoDataFrame | None, basemap: gpd.GeoDataFrame | None = None
) -> list[Path]:
    """Write ``map_<region>.png`` for every region with an open site.

    Parameters
    ----------
    results : PlanResults
        A solved plan's results.
    folder : Path
        Results folder.
    catchments : geopandas.GeoDataFrame or None
        Catchments to shade (:func:`placement.outputs.catchments.catchment_frame`, computed once
        by the results writer); None: none.
    basemap : geopandas.GeoDataFrame, optional
        Country polygons (default: the bundled Natural Earth file).

    Returns
    -------
    list of Path
        The files written, in the order of :data:`REGIONS`.
    """
    return draw_regional_maps_from_tables(
        (results.sites, results.assignments, results.populations),
        Path(folder),
        title=results.summary.scenario,
        catchments=catchments,
        basemap=basemap,
    )


def draw_regional_maps_from_tables(
    plan_tables: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame],
    folder: Path,
    *,
    title: str,
    catchments: gpd.GeoDataFrame | None = None,
    basemap: gpd.GeoDataFrame | None = None,
) -> list[Path]:
    """Write ``map_<region>.png`` for every region with an open site, from the plan's tables.

    Parameters
    ----------
    plan_tables : tuple of pandas.DataFrame
        ``(sites, assignments, populations)`` as in ``sites.csv``, ``assignments.csv`` and
        ``populations.csv``.
    folder : Path
        Results folder.
    title : str
        First title line of every map.
    catchments : geopandas.GeoDataFrame, optional
        Catchment polygons to shade.
    basemap : geopandas.GeoDataFrame, optional
        Country polygons (default: the bundled Natural Earth file).

    Returns
    -------
    list of Path
        The files written.
    """
    basemap = load_basemap() if basemap is None else basemap
    sites = plan_tables[0]
    return [
        draw_region(
            plan_tables, region, Path(folder) / f"map_{region.key}.png", title=title, basemap=basemap, catchments=catchments
        )
        for region in regions_with_open_sites(sites)
    ]
