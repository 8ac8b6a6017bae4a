"""Charts of a sweep: the $/M-goodput frontier against the TTFT objective, the tornado, no-regret sites."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import geopandas as gpd
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from shapely import Point

from placement.outputs import geojson as geo
from placement.outputs.world_map import load_basemap
from placement.sweep.analysis import COST, TTFT_AXIS, level_key, solved


def _series(done: pd.DataFrame, axis: str, others: list[str], *, most: int = 30) -> list[pd.DataFrame]:
    """Cases that differ only in ``axis``, each group sorted along it (none when there are too many)."""
    if not others:
        return [done.sort_values(axis)] if len(done) > 1 else []
    keys = done[others].map(level_key).astype(str).agg("|".join, axis=1)
    groups = [g.sort_values(axis) for _, g in done.groupby(keys) if len(g) > 1]
    return groups if len(groups) <= most else []


def draw_frontier(results: pd.DataFrame, frontier: pd.DataFrame, axis: str, path: Path, *, others: list[str]) -> None:
    """Every solved case and the Pareto frontier: $/M goodput against the p99 TTFT objective.

    Cases that differ only in the TTFT objective are joined by thin grey lines.

    Parameters
    ----------
    results, frontier : pandas.DataFrame
        The results table and :func:`pareto_frontier` of it.
    axis : str
        The TTFT objective's column.
    others : list of str
        The sweep's other axes.
    path : Path
        PNG to write.
    """
    done = solved(results)
    fig, ax = plt.subplots(figsize=(8, 5.2), dpi=110)
    points = ax.scatter(
        pd.to_numeric(done[axis]),
        done[COST],
        c=1.0 - done["unserved_share"].astype(float),
        cmap="viridis",
        vmin=0.0,
        vmax=1.0,
        s=36,
        alpha=0.8,
        edgecolors="none",
        label="case",
    )
    x, y = pd.to_numeric(frontier[axis]).to_numpy(float), frontier[COST].to_numpy(float)
    ax.step(x, y, where="post", color="#c0392b", linewidth=1.6, label="Pareto frontier")
    ax.scatter(x, y, s=80, facecolors="none", edgecolors="#c0392b", linewidths=1.5)
    for xi, yi, n in zip(x, y, frontier["sites_open"], strict=True):
        ax.annotate(f"{int(n)} site{'s' if n != 1 else ''}", (xi, yi), xytext=(5, 5), textcoords="offset points", fontsize=8)
    for group in _series(done, axis, others):
        ax.plot(pd.to_numeric(group[axis]), group[COST], color="#9e9e9e", linewidth=0.6, alpha=0.6, zorder=0)
    fig.colorbar(points, ax=ax).set_label("share of demand served inside the SLO")
    match = TTFT_AXIS.match(axis)
    ax.set_xlabel(f"p99 TTFT objective of class {match.group(1) if match else '?'} [ms] (tighter to the left)")
    ax.set_ylabel("$ per million goodput tokens")
    ax.set_title(f"Cost versus latency objective: {len(frontier)} efficient of {len(done)} solved cases")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def draw_tornado(table: pd.DataFrame, reference: float, label: str, path: Path) -> None:
    """Tornado chart: for each axis, $/M goodput at its low and high value around a reference.

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`sensitivity`.
    reference : float
        Where the bars start. [USD per million goodput tokens]
    label : str
        What the reference is.
    path : Path
        PNG to write.
    """
    rows = table.iloc[::-1]
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.55 * max(len(rows), 1)), dpi=110)
    y = np.arange(len(rows))
    for offset, side, colour in ((-0.17, "low", "#4a78b5"), (0.17, "high", "#e08a2c")):
        cost = rows[f"cost_{side}_usd_per_m"].to_numpy(float)
        ax.barh(y + offset, cost - reference, left=reference, color=colour, alpha=0.85, height=0.34, label=f"{side} value")
        for yi, ci, value in zip(y, cost, rows[f"{side}_value"], strict=True):
            ax.annotate(
                _short(value),
                (ci, yi + offset),
                xytext=(4 if ci >= reference else -4, 0),
                textcoords="offset points",
                ha="left" if ci >= reference else "right",
                va="center",
                fontsize=8,
            )
    ax.axvline(reference, color="black", linewidth=1.0)
    ax.set_yticks(y, [f"{a}\n({m})" for a, m in zip(rows["axis"], rows["method"], strict=True)], fontsize=8)
    ax.set_xlabel(f"$ per million goodput tokens (centre: {label}, {reference:.3f})")
    ax.set_title("Sensitivity of $/M goodput to each sweep axis")
    ax.legend(loc="best", fontsize=8)
    ax.margins(x=0.25)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def no_regret_frame(table: pd.DataFrame) -> gpd.GeoDataFrame:
    """The no-regret table as points in WGS84 (EPSG:4326)."""
    geometry = [Point(lon, lat) for lon, lat in zip(table["lon"], table["lat"], strict=True)]
    return gpd.GeoDataFrame(table.drop(columns=["lat", "lon"]), geometry=geometry, crs=geo.WGS84)


def draw_no_regret(table: pd.DataFrame, path: Path, *, title: str) -> None:
    """World map of how often each candidate site is open.

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`no_regret`.
    path : Path
        PNG to write.
    title : str
        Map title.
    """
    fig, ax = plt.subplots(figsize=(16, 7.4), dpi=110)
    load_basemap().plot(ax=ax, color="#eceae4", edgecolor="#b8b5ad", linewidth=0.4)
    never = table[table["open_count"] == 0]
    ax.scatter(never["lon"], never["lat"], s=18, marker="^", facecolors="none", edgecolors="#6b6b6b", linewidths=0.8, zorder=4)
    opened = table[table["open_count"] > 0]
    points = ax.scatter(
        opened["lon"],
        opened["lat"],
        s=30 + 250 * opened["open_share"],
        c=opened["open_share"],
        cmap="viridis",
        vmin=0.0,
        vmax=1.0,
        edgecolors="black",
        linewidths=0.8,
        zorder=5,
    )
    for row in opened[opened["open_share"] >= 0.5].itertuples():
        label = f"{row.name} {row.open_share:.0%}"
        ax.annotate(label, (row.lon, row.lat), xytext=(6, 6), textcoords="offset points", fontsize=7, zorder=6)
    fig.colorbar(points, ax=ax, shrink=0.6, pad=0.01).set_label("share of solved cases in which the site is open")
    ax.scatter([], [], s=18, marker="^", facecolors="none", edgecolors="#6b6b6b", label="never open")
    ax.scatter([], [], s=280, c="#fde725", edgecolors="black", label="open in every case (sites open in half or more are named)")
    ax.legend(loc="lower left", fontsize=8, framealpha=0.9)
    ax.set_xlim(-180, 180)
    ax.set_ylim(-58, 84)
    ax.set_xlabel("longitude [degrees]")
    ax.set_ylabel("latitude [degrees]")
    ax.set_title(title)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


def _short(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# --- no-regret sites -------------------------------------------------------------------------
