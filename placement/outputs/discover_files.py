"""A discovery's folder (``placement discover --out DIR``), written whole or not at all.

- ``discovered_sites.csv``: the proposals the plan opens, ranked (:data:`placement.analyses.discover.RANKED_COLUMNS`);
  ``discovered_sites.geojson`` the same as points;
- ``proposals.csv``: every city proposed, with its figures and whether the plan opened it;
- ``discover.json``: the proposals, the plan before and after (goodput, unserved share, $/M, $/h) and what is still
  unserved and why;
- ``map_discovered.png``: the catalog's sites, the proposals opened (sized by MW) and the demand unserved before;
- ``sites_discovered.csv`` and ``scenario_discovered.yaml``: the catalog with the proposals and the scenario that
  solves it (the plan's ``scenario.yaml`` is a copy: ``explain`` and ``diff`` rebuild it);
- ``plan/``: the plan with the discovered sites, an ordinary results folder (its ``plan.gpkg`` has a
  ``discovered_sites`` layer); ``baseline/``: the plan on the catalog as it is.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import geopandas as gpd
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from placement.analyses.discover import CATALOG_NAME, SCENARIO_NAME, Discovery
from placement.outputs import geojson as geo
from placement.outputs.png import save_png
from placement.outputs.qgis_style import COUNTRY_EDGE, COUNTRY_FILL, DISCOVERED_COLOUR
from placement.outputs.world_map import add_polygons, load_basemap
from placement.outputs.writer import write_folder, write_results
from placement.progress import Progress, quiet
from placement.results.folder import json_text, write_csv

PROPOSAL_COLUMNS = (
    "id", "name", "country_code", "continent", "lat", "lon", "mw_available", "power_price_usd_per_mwh", "pue",
    "capex_usd_per_mw", "carbon_intensity_g_per_kwh", "climate", "years_to_energise", "source",
)  # fmt: skip


def draw_discovered(discovery: Discovery, path: Path) -> Path:
    """``map_discovered.png``: the catalog's sites, the demand unserved before, the proposals opened (area ~ MW)."""
    fig, ax = plt.subplots(figsize=(14, 7))
    world = load_basemap()
    add_polygons(ax, world.geometry.to_numpy(), facecolors=COUNTRY_FILL, edgecolor=COUNTRY_EDGE, linewidth=0.3)
    sites = discovery.baseline.sites
    opened = sites["open"].astype(bool)
    ax.scatter(sites.loc[~opened, "lon"], sites.loc[~opened, "lat"], s=12, marker="^", facecolors="none",
               edgecolors="#6b6b6b", linewidths=0.6, label="catalog site, not opened", zorder=3)  # fmt: skip
    ax.scatter(sites.loc[opened, "lon"], sites.loc[opened, "lat"], s=22, c="#2b5c8a", edgecolors="black",
               linewidths=0.4, label="catalog site, open in the baseline", zorder=4)  # fmt: skip
    pops = discovery.baseline.populations
    short = pops[pops["unserved_tok_s"] > 1e-6 * pops["demand_tok_s"].clip(lower=1.0)]
    area = 6 + 80 * np.sqrt(short["unserved_tok_s"] / max(float(short["unserved_tok_s"].max()) if len(short) else 1.0, 1e-9))
    ax.scatter(short["lon"], short["lat"], s=area, marker="x", c="#c0392b", linewidths=1.0,
               label="demand unserved in the baseline (size ~ tok/s)", zorder=5)  # fmt: skip
    ranked = discovery.ranked
    if len(ranked):
        mw = ranked["mw_built"].to_numpy(float)
        ax.scatter(ranked["lon"], ranked["lat"], s=60 + 500 * mw / max(float(mw.max()), 1e-9), marker="*",
                   c=DISCOVERED_COLOUR, edgecolors="black", linewidths=0.6, label="discovered site worth building (area ~ MW)",
                   zorder=6)  # fmt: skip
        for row in ranked.head(15).itertuples():
            ax.annotate(f"{row.name} {row.mw_built:.0f} MW", (row.lon, row.lat), xytext=(5, 5), textcoords="offset points",
                        fontsize=7, zorder=7)  # fmt: skip
    head = discovery.headline()
    ax.set_title(
        f"where to build next: {head['proposals_opened']} of {head['proposals']} proposals worth building, "
        f"{head['mw_built']:,.0f} MW; unserved {head['unserved_share_before']:.1%} -> {head['unserved_share_after']:.1%}"
    )
    ax.set_xlim(-180, 180)
    ax.set_ylim(-60, 85)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    save_png(fig, path, dpi=110)
    plt.close(fig)
    return path


def write_discovery(
    discovery: Discovery, out_dir: str | Path, *, work: Path, maps: bool = True, progress: Progress = quiet
) -> Path:
    """Write a discovery's folder whole.

    Parameters
    ----------
    discovery : Discovery
        :func:`placement.analyses.discover.discover`.
    out_dir : str or Path
        The folder (replaced as a whole).
    work : Path
        The folder :func:`placement.analyses.discover.discover` wrote its catalog and scenario in.
    maps : bool, optional
        Draw the maps (``map_discovered.png`` and the plans' own).
    progress : callable, optional
        Receives a line per group of files.

    Returns
    -------
    Path
        The folder written.
    """

    def writer(folder: Path) -> None:
        ranked = discovery.ranked
        write_csv(ranked, folder / "discovered_sites.csv")
        points = pd.DataFrame(ranked.drop(columns=["lat", "lon"]))
        geometry = gpd.points_from_xy(ranked["lon"].astype(float), ranked["lat"].astype(float))
        geo.write_geojson(gpd.GeoDataFrame(points, geometry=geometry, crs=geo.WGS84), folder / "discovered_sites.geojson")
        proposals = discovery.proposals.reindex(columns=list(PROPOSAL_COLUMNS))
        write_csv(proposals.assign(opened=proposals["id"].isin(ranked["site_id"])), folder / "proposals.csv")
        (folder / "discover.json").write_text(json_text(discovery.headline()), encoding="utf-8")
        shutil.copyfile(work / CATALOG_NAME, folder / CATALOG_NAME)
        shutil.copyfile(work / SCENARIO_NAME, folder / SCENARIO_NAME)
        if maps:
            draw_discovered(discovery, folder / "map_discovered.png")
        progress("wrote discovered_sites.csv, proposals.csv, discover.json")
        write_results(discovery.plan, folder / "plan", maps=maps)
        write_results(discovery.baseline, folder / "baseline", maps=False)
        progress("wrote plan/ (with the discovered sites) and baseline/")

    return write_folder(out_dir, writer)
