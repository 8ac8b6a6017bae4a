"""What-if variants side by side in one PNG: $/M goodput, MW by site, and a small map per variant.

The first variant is the reference: each other variant's map colours the sites that opened, closed,
or changed size or cost against it (:func:`placement.analyses.diff.site_changes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import geopandas as gpd
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from placement.analyses.diff import site_changes
from placement.outputs.diff_files import CHANGE_COLOURS
from placement.outputs.png import save_png
from placement.outputs.world_map import add_polygons, load_basemap
from placement.results.summary import PlanSummary

__all__ = ["draw_variants"]

VARIANT_COLOURS = ("#4a78b5", "#d1495b", "#66a182", "#e3a33b", "#8c6bb1", "#7f7f7f")


def _cost_bars(ax: Axes, summaries: Mapping[str, PlanSummary]) -> None:
    """$/M goodput of the plan and of each class, one bar per variant."""
    names = list(summaries)
    classes = [c.name for c in next(iter(summaries.values())).classes]
    groups = ["plan", *classes]
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        summary = summaries[name]
        per_class = {c.name: c.cost_per_million_goodput_tokens_usd for c in summary.classes}
        values = [summary.cost_per_million_goodput_tokens_usd, *(per_class.get(c) for c in classes)]
        heights = [np.nan if v is None else float(v) for v in values]
        x = np.arange(len(groups)) + (k - (len(names) - 1) / 2) * width
        bars = ax.bar(x, heights, width=width, color=VARIANT_COLOURS[k % len(VARIANT_COLOURS)], label=name)
        for bar, value in zip(bars, heights, strict=True):
            if np.isfinite(value):
                ax.annotate(f"{value:.3f}", (bar.get_x() + bar.get_width() / 2, value), ha="center", va="bottom", fontsize=6.5,
                            rotation=90)  # fmt: skip
    ax.set_xticks(np.arange(len(groups)), groups, fontsize=8)
    ax.set_yscale("log")
    top = np.nanmax([float(v) for v in ax.dataLim.get_points()[:, 1]])
    ax.set_ylim(top=top * 4)  # room for the labels
    ax.set_ylabel("$ per million goodput tokens (log)", fontsize=8)
    ax.set_title("$/M goodput: the plan and each class", fontsize=9.5)
    ax.legend(fontsize=7.5)


def _mw_bars(ax: Axes, sites: Mapping[str, pd.DataFrame]) -> None:
    """MW used at every site open in any variant, one bar per variant."""
    mw = pd.DataFrame({name: table.set_index("name")["mw_used"].astype(float) for name, table in sites.items()}).fillna(0.0)
    mw = mw[(mw > 0).any(axis=1)]
    mw = mw.loc[mw.max(axis=1).sort_values(ascending=False).index]
    width = 0.8 / max(len(mw.columns), 1)
    for k, name in enumerate(mw.columns):
        x = np.arange(len(mw)) + (k - (len(mw.columns) - 1) / 2) * width
        ax.bar(x, mw[name].to_numpy(), width=width, color=VARIANT_COLOURS[k % len(VARIANT_COLOURS)], label=name)
    ax.set_xticks(np.arange(len(mw)), mw.index.tolist(), rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("MW used", fontsize=8)
    ax.set_title("MW used at each site open in any variant", fontsize=9.5)


def _extent(sites: Mapping[str, pd.DataFrame]) -> tuple[float, float, float, float]:
    """West, east, south, north of every site open in any variant, with a margin. [degrees]"""
    opened = pd.concat([t[t["open"].astype(bool)] for t in sites.values()])
    lon, lat = opened["lon"].astype(float), opened["lat"].astype(float)
    return (max(lon.min() - 12, -180.0), min(lon.max() + 12, 180.0), max(lat.min() - 8, -60.0), min(lat.max() + 8, 85.0))


def _small_map(ax: Axes, table: pd.DataFrame, reference: pd.DataFrame | None, world: gpd.GeoDataFrame, title: str) -> None:
    """One variant's open sites (area ~ MW) and, against the reference, the sites that changed (coloured)."""
    add_polygons(ax, world.geometry.to_numpy(), facecolors="#eceae4", edgecolor="#b8b5ad", linewidth=0.3)
    opened = table[table["open"].astype(bool)]
    ax.scatter(opened["lon"], opened["lat"], s=10 + opened["mw_used"].astype(float), c="#9e9e9e", edgecolors="black",
               linewidths=0.5, zorder=3)  # fmt: skip
    if reference is not None:
        changed = site_changes(reference, table)
        for change, colour in CHANGE_COLOURS.items():
            rows = changed[changed["change"] == change]
            size = 10 + np.maximum(rows["mw_used_a"], rows["mw_used_b"]).astype(float)
            ax.scatter(rows["lon"], rows["lat"], s=size, c=colour, edgecolors="black", linewidths=0.6, zorder=4, label=change)
        for name, lon, lat in changed[changed["change"].isin(["opened", "closed"])][["name", "lon", "lat"]].itertuples(
            index=False
        ):
            ax.annotate(str(name), (lon, lat), xytext=(3, 3), textcoords="offset points", fontsize=6.5, zorder=5)
    ax.set_title(title, fontsize=8.5)
    ax.set_xticks([])
    ax.set_yticks([])


def draw_variants(
    summaries: Mapping[str, PlanSummary],
    sites: Mapping[str, pd.DataFrame],
    path: Path,
    *,
    basemap: gpd.GeoDataFrame | None = None,
) -> Path:
    """Variants side by side: $/M goodput bars, MW by site bars, and a small map per variant.

    Parameters
    ----------
    summaries : mapping of str to PlanSummary
        Each variant's figures, by name; the first is the reference.
    sites : mapping of str to pandas.DataFrame
        Each variant's site table, same names.
    path : Path
        PNG to write.
    basemap : geopandas.GeoDataFrame, optional
        Country polygons (default: the bundled Natural Earth file).

    Returns
    -------
    Path
        The file written.
    """
    names = list(summaries)
    world = load_basemap() if basemap is None else basemap
    fig = plt.figure(figsize=(4.6 * max(len(names), 3), 9.0), dpi=100)
    grid = fig.add_gridspec(2, len(names), height_ratios=[1.0, 1.25], hspace=0.42, wspace=0.2)
    _cost_bars(fig.add_subplot(grid[0, 0]), summaries)
    _mw_bars(fig.add_subplot(grid[0, 1:]), sites)
    west, east, south, north = _extent(sites)
    reference = sites[names[0]]
    for k, name in enumerate(names):
        ax = fig.add_subplot(grid[1, k])
        cost = summaries[name].cost_per_million_goodput_tokens_usd
        money = "" if cost is None else f": \\${cost:.3f}/M"
        _small_map(ax, sites[name], None if k == 0 else reference, world, f"{name}{money}")
        ax.set_xlim(west, east)
        ax.set_ylim(south, north)
        ax.set_aspect(1.0 / np.cos(np.radians((south + north) / 2)))
        if k == 1:
            ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(0.0, -0.02), ncol=4, frameon=False,
                      title=f"sites changed against {names[0]} (grey: open, unchanged)", title_fontsize=7.5)  # fmt: skip
    save_png(fig, path, bbox_inches="tight")
    plt.close(fig)
    return path
