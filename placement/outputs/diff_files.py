"""The files of a plan diff: ``diff.json``, ``diff.geojson`` and ``diff.png``, written whole or not at all."""

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
from matplotlib.lines import Line2D
from shapely import Point

from placement._errors import InputError, Problem
from placement.analyses.diff import PlanDiff
from placement.outputs.geojson import WGS84, unwrapped_lines, write_geojson
from placement.outputs.png import save_png
from placement.outputs.world_map import WORLD_LAT_DEG, WORLD_LON_DEG, _draw_basemap, load_basemap
from placement.outputs.writer import write_folder
from placement.results.folder import write_json

__all__ = ["CHANGE_COLOURS", "diff_frame", "draw_diff", "write_diff"]

CHANGE_COLOURS = {"opened": "#1a9850", "closed": "#d73027", "resized": "#fc8d59", "repriced": "#7b3294"}
"""Colour of each kind of site change on ``diff.png`` (the ``change`` property in ``diff.geojson``)."""
LEG_COLOURS = {"a": "#9e9e9e", "b": "#2166ac"}


def _moved_legs(moved: pd.DataFrame, side: str) -> pd.DataFrame:
    """One side's population-to-site lines of the moved pairs (pairs unserved on that side have none)."""
    legs = moved[moved[f"site_id_{side}"].notna()]
    figures = [
        "population_id",
        "population",
        "country_code",
        "class",
        "site_id",
        "site",
        "rtt_ms",
        "ttft_p99_ms",
        "goodput_tok_s",
    ]
    frame = pd.DataFrame({f: legs[f if f in legs else f"{f}_{side}"] for f in figures if f in legs or f"{f}_{side}" in legs})
    frame["kind"] = f"population served from here in plan {side.upper()}"
    frame["plan"] = side.upper()
    ends = np.column_stack([legs["pop_lon"], legs["pop_lat"], legs[f"site_lon_{side}"], legs[f"site_lat_{side}"]]).astype(float)
    return frame.assign(geometry=unwrapped_lines(*ends.T))


def diff_frame(diff: PlanDiff) -> gpd.GeoDataFrame:
    """Changed sites as points and moved populations' lines (to A's site and to B's) as one layer.

    Parameters
    ----------
    diff : PlanDiff
        From :func:`placement.analyses.diff.diff_plans`.

    Returns
    -------
    geopandas.GeoDataFrame
        WGS84 features; ``kind`` tells a site (its ``change``) from a line (its ``plan``, A or B).
    """
    sites = diff.sites.drop(columns=["lat", "lon"]).assign(kind="site")
    sites["geometry"] = [Point(lon, lat) for lon, lat in zip(diff.sites["lon"], diff.sites["lat"], strict=True)]
    parts = [sites] + [_moved_legs(diff.moved, side) for side in ("a", "b")]
    frame = pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) else sites
    return gpd.GeoDataFrame(frame, geometry="geometry", crs=WGS84)


def _segments(moved: pd.DataFrame, side: str) -> list[np.ndarray]:
    ends = moved[["pop_lon", "pop_lat", f"site_lon_{side}", f"site_lat_{side}"]].to_numpy(float)
    keep = np.isfinite(ends).all(axis=1) & (np.abs(ends[:, 2] - ends[:, 0]) <= 180.0)
    return list(ends[keep].reshape(-1, 2, 2))


def _extent(diff: PlanDiff) -> tuple[tuple[float, float], tuple[float, float]]:
    """The part of the world holding every change, with a margin (the whole world when nothing changed)."""
    lon = np.concatenate([diff.sites["lon"], diff.moved["pop_lon"], diff.moved["site_lon_a"], diff.moved["site_lon_b"]])
    lat = np.concatenate([diff.sites["lat"], diff.moved["pop_lat"], diff.moved["site_lat_a"], diff.moved["site_lat_b"]])
    lon, lat = lon[np.isfinite(lon.astype(float))].astype(float), lat[np.isfinite(lat.astype(float))].astype(float)
    if not len(lon):
        return WORLD_LON_DEG, WORLD_LAT_DEG
    west, east = max(lon.min() - 10, WORLD_LON_DEG[0]), min(lon.max() + 10, WORLD_LON_DEG[1])
    south, north = max(lat.min() - 8, WORLD_LAT_DEG[0]), min(lat.max() + 8, WORLD_LAT_DEG[1])
    return (west, east), (south, north)


LABELLED_SITES = 6
"""Only the sites whose $/h changed most are named on the map (``diff.json`` lists them all)."""


def _draw_sites(ax: Axes, sites: pd.DataFrame) -> None:
    for change, colour in CHANGE_COLOURS.items():
        rows = sites[sites["change"] == change]
        ax.scatter(rows["lon"], rows["lat"], s=70, c=colour, edgecolors="black", linewidths=0.7, zorder=6)
    top = sites.head(LABELLED_SITES)  # sorted by the size of the $/h change
    for name, lon, lat, mw_a, mw_b in zip(top["name"], top["lon"], top["lat"], top["mw_used_a"], top["mw_used_b"], strict=True):
        ax.annotate(f"{name}\n{mw_a:.1f} -> {mw_b:.1f} MW", (lon, lat), xytext=(5, 5), textcoords="offset points",
                    fontsize=7, zorder=7, bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.7, "lw": 0})  # fmt: skip


def draw_diff(diff: PlanDiff, path: Path, *, basemap: gpd.GeoDataFrame | None = None) -> None:
    """Map of what changed: sites coloured by change, moved populations' old (grey) and new (blue) lines.

    Parameters
    ----------
    diff : PlanDiff
        From :func:`placement.analyses.diff.diff_plans`.
    path : Path
        PNG to write.
    basemap : geopandas.GeoDataFrame, optional
        Country polygons (default: the bundled Natural Earth file).
    """
    fig, ax = plt.subplots(figsize=(13, 7), dpi=100)
    try:
        _draw_basemap(ax, load_basemap() if basemap is None else basemap)
        for side, style in (("a", "--"), ("b", "-")):
            ax.add_collection(LineCollection(_segments(diff.moved, side), colors=LEG_COLOURS[side], linewidths=0.6,
                                             linestyles=style, alpha=0.5, zorder=3))  # fmt: skip
        ax.scatter(diff.moved["pop_lon"], diff.moved["pop_lat"], s=8, c="#2b5c8a", zorder=4)
        _draw_sites(ax, diff.sites)
        handles = [Line2D([], [], marker="o", linestyle="", markerfacecolor=c, markeredgecolor="black", label=f"site {k}")
                   for k, c in CHANGE_COLOURS.items()]  # fmt: skip
        handles += [
            Line2D([], [], color=LEG_COLOURS["a"], linestyle="--", label="moved population -> its site in plan A"),
            Line2D([], [], color=LEG_COLOURS["b"], label="moved population -> its site in plan B"),
        ]
        ax.legend(handles=handles, loc="lower left", fontsize=8, framealpha=0.9)
        (west, east), (south, north) = _extent(diff)
        ax.set_xlim(west, east)
        ax.set_ylim(south, north)
        cost = diff.headline["cost_per_million_goodput_tokens_usd"]
        money = (
            ""
            if cost["a"] is None or cost["b"] is None
            else f": \\${cost['a']:.3f} -> \\${cost['b']:.3f} per million goodput tokens"
        )
        ax.set_title(
            f"{diff.folder_a.name} -> {diff.folder_b.name}{money}; {len(diff.sites)} sites changed, "
            f"{len(diff.moved)} (population, class) pairs moved",
            fontsize=10,
        )
        save_png(fig, path, bbox_inches="tight")
    finally:
        plt.close(fig)


def write_diff(diff: PlanDiff, out_dir: str | Path, *, maps: bool = True) -> Path:
    """Write ``diff.json``, ``diff.geojson`` and ``diff.png`` into ``out_dir``, whole or not at all.

    Parameters
    ----------
    diff : PlanDiff
        From :func:`placement.analyses.diff.diff_plans`.
    out_dir : str or Path
        Destination folder; an existing one must hold an earlier diff (or other placement results).
    maps : bool, optional
        Draw ``diff.png`` (False: only the JSON and GeoJSON).

    Returns
    -------
    Path
        The folder written.

    Raises
    ------
    InputError
        ``out_dir`` is one of the two plans' folders or holds one.
    """
    out = Path(out_dir).resolve()
    for plan in (diff.folder_a, diff.folder_b):
        if out == plan.resolve() or out in plan.resolve().parents:
            rule = f"it would replace {plan}, one of the plans compared"
            raise InputError([Problem(f"output folder {out}", "", "", rule, "choose another --out (default: out-diff/)")])

    def write(folder: Path) -> None:
        write_json(diff.to_json_dict(), folder / "diff.json")
        write_geojson(diff_frame(diff), folder / "diff.geojson")
        if maps:
            draw_diff(diff, folder / "diff.png")

    return write_folder(out_dir, write)
