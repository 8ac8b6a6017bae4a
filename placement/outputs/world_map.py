"""Static maps (PNG) on the bundled Natural Earth basemap."""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.colors import Normalize
from matplotlib.lines import Line2D

from placement.bundled import bundled_path

BASEMAP = bundled_path("geo", "naturalearth_lowres_countries_110m.geojson")


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


def _segments(assignments: pd.DataFrame) -> list[np.ndarray]:
    segments = []
    for lon0, lat0, lon1, lat1 in assignments[["pop_lon", "pop_lat", "site_lon", "site_lat"]].to_numpy(float).tolist():
        if abs(lon1 - lon0) > 180.0:
            continue  # drawn on a flat map it would cross the world; the GeoJSON keeps it
        segments.append(np.array([[lon0, lat0], [lon1, lat1]]))
    return segments


def draw_populations(ax: Axes, populations: pd.DataFrame) -> None:
    """Population points: served ones as dots sized by demand, unserved ones as red crosses.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Where to draw.
    populations : pandas.DataFrame
        The plan's population table (``lat``, ``lon``, ``demand_tok_s``, ``unserved_tok_s``).
    """
    served = populations["unserved_tok_s"] <= 1e-6 * populations["demand_tok_s"].clip(lower=1.0)
    area = 4 + 60 * np.sqrt(populations["demand_tok_s"] / max(float(populations["demand_tok_s"].max()), 1e-9))
    ax.scatter(populations.loc[served, "lon"], populations.loc[served, "lat"], s=area[served], c="#2b5c8a",
               alpha=0.5, linewidths=0, zorder=3)  # fmt: skip
    ax.scatter(populations.loc[~served, "lon"], populations.loc[~served, "lat"], s=area[~served] + 10, marker="x",
               c="#c0392b", linewidths=1.2, zorder=4)  # fmt: skip


def draw_world_map(
    sites: pd.DataFrame,
    assignments: pd.DataFrame,
    populations: pd.DataFrame,
    path: Path,
    *,
    title: str,
    basemap: gpd.GeoDataFrame | None = None,
) -> None:
    """World map: open sites sized by MW and coloured by $/M goodput, lines to their populations.

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
    """
    world = load_basemap() if basemap is None else basemap
    fig, ax = plt.subplots(figsize=(16, 7.4), dpi=110)
    world.plot(ax=ax, color="#eceae4", edgecolor="#b8b5ad", linewidth=0.4)
    ax.add_collection(LineCollection(_segments(assignments), colors="#4a78b5", linewidths=0.5, alpha=0.35, zorder=2))
    draw_populations(ax, populations)
    closed = sites[~sites["open"]]
    ax.scatter(
        closed["lon"],
        closed["lat"],
        s=18,
        marker="^",
        facecolors="none",
        edgecolors="#6b6b6b",
        linewidths=0.8,
        zorder=5,
    )
    opened = sites[sites["open"]]
    cost = opened["cost_per_million_goodput_tokens_usd"]
    norm = Normalize(vmin=float(cost.min()) if len(cost) else 0.0, vmax=float(cost.max()) if len(cost) else 1.0)
    mw_scale = 900.0 / max(float(opened["mw_used"].max()) if len(opened) else 1.0, 1e-9)
    points = ax.scatter(
        opened["lon"],
        opened["lat"],
        s=30 + opened["mw_used"] * mw_scale,
        c=cost,
        cmap="viridis_r",
        norm=norm,
        edgecolors="black",
        linewidths=0.8,
        zorder=6,
    )
    for _, row in opened.iterrows():
        ax.annotate(
            f"{row['name']}\n{row['mw_used']:.1f} MW",
            (row["lon"], row["lat"]),
            xytext=(6, 6),
            textcoords="offset points",
            fontsize=7,
            zorder=7,
        )
    colorbar = fig.colorbar(points, ax=ax, shrink=0.6, pad=0.01)
    colorbar.set_label("open site: $ per million goodput tokens")
    legend = [
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            markerfacecolor="#7fc97f",
            markeredgecolor="black",
            markersize=10,
            label="open site (area ~ MW used)",
        ),
        Line2D(
            [],
            [],
            marker="^",
            linestyle="",
            markerfacecolor="none",
            markeredgecolor="#6b6b6b",
            label="candidate site, not opened",
        ),
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            color="#2b5c8a",
            alpha=0.6,
            label="population served (area ~ demand)",
        ),
        Line2D(
            [],
            [],
            marker="x",
            linestyle="",
            color="#c0392b",
            label="population not served inside its TTFT objective",
        ),
        Line2D([], [], color="#4a78b5", label="population -> serving site"),
    ]
    ax.legend(handles=legend, loc="lower left", fontsize=8, framealpha=0.9)
    ax.set_xlim(-180, 180)
    ax.set_ylim(-58, 84)
    ax.set_xlabel("longitude [degrees]")
    ax.set_ylabel("latitude [degrees]")
    ax.set_title(title)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
