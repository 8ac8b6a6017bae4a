"""A near-optimal alternatives run's folder, written whole or not at all.

- ``optimum/`` and ``alternative_01/`` ...: each design's ordinary results folder (none for an alternative the
  solver found no verified design for);
- ``alternatives.csv``: one row per design, the optimum first: ``design``, ``direction``, ``status``, ``usd_per_h``,
  ``cost_over_optimum`` (share), ``usd_per_million_goodput_tokens``, ``goodput_tok_s``, ``sites_open``, ``sites``
  (ids joined by ``;``), ``mw_used``, ``mw_in_<continent>`` for each continent of the catalog (``mw_in_europe``),
  ``mw_not_shared``
  (the share of the two designs' MW not at the same site: ``sum |MW - MW*| / (sum MW + sum MW*)``, 0 for the same
  design, 1 for designs sharing no site), ``sites_not_shared`` (``1 - |A & A*| / |A | A*|`` over open sites), both
  against the optimum, ``mw_not_shared_nearest`` (against the nearest design before it), ``same_as`` (the first
  design before it with the same MW at every site, if any) and ``plan`` (its results folder);
- ``alternative_sites.csv``: every candidate site (a row) against every design: the MW each uses there
  (``mw_<design>``), ``designs_open``, and its ``class``: ``must-have`` (every design with a plan opens it),
  ``choice`` (some do) or ``never`` (none);
- ``alternatives.png``: each design's cost over the optimum against its MW not shared, and the sites any design
  opens by design (MW);
- ``alternatives.geojson``: the candidate sites as points with their class, ``designs_open`` and MW by design (a map
  layer; written with ``--no-maps`` too, as a plan's GeoJSON layers are).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import PowerNorm

from placement.analyses.alternatives import Alternative, design_folder
from placement.outputs import geojson as geo
from placement.outputs.writer import write_folder, write_results
from placement.progress import Progress, quiet
from placement.results.folder import read_results_folder, write_csv
from placement.results.summary import PlanSummary

SITE_COLUMNS = ("site_id", "name", "country_code", "continent", "lat", "lon")
"""What ``alternative_sites.csv`` keeps of each site from ``sites.csv``."""

CLASSES = ("must-have", "choice", "never")


@dataclass(frozen=True)
class DesignRecord:
    """What the tables read of a design: its place, direction, status, and its plan's summary and sites.

    Parameters
    ----------
    index : int
        0 for the optimum, then 1, 2, ...
    direction : str
        Its direction (``optimum`` for the optimum).
    status : str
        The solver's status, or why there is no design.
    summary : PlanSummary or None
        Its plan's figures (None without a plan).
    sites : pandas.DataFrame or None
        Its ``sites.csv`` (None without a plan).
    """

    index: int
    direction: str
    status: str
    summary: PlanSummary | None
    sites: pd.DataFrame | None

    @property
    def folder(self) -> str:
        """The results folder under the run's folder."""
        return design_folder(self.index)

    @classmethod
    def of(cls, alternative: Alternative) -> DesignRecord:
        """A solved design's record."""
        plan = alternative.plan
        if plan is None:
            return cls(alternative.index, alternative.direction, alternative.status, None, None)
        return cls(alternative.index, alternative.direction, alternative.status, plan.summary, plan.sites)

    @classmethod
    def read(cls, index: int, direction: str, status: str, folder: Path | None) -> DesignRecord:
        """A design's record from its written results folder (None: no design)."""
        if folder is None:
            return cls(index, direction, status, None, None)
        results = read_results_folder(folder)
        return cls(index, direction, status, results.plan_summary(), results.sites)

    def mw_by_site(self) -> pd.Series:
        """MW used at each site (by site id; all 0 without a plan)."""
        if self.sites is None:
            return pd.Series(dtype=float)
        return pd.Series(self.sites["mw_used"].to_numpy(dtype=float), index=self.sites["site_id"].astype(str))

    def open_ids(self) -> frozenset[str]:
        """The ids of the sites it opens."""
        if self.sites is None:
            return frozenset()
        return frozenset(self.sites.loc[self.sites["open"].astype(bool), "site_id"].astype(str))


def mw_not_shared(a: pd.Series, b: pd.Series) -> float:
    """The share of two designs' MW not at the same site: ``sum |a - b| / (sum a + sum b)`` (0: alike, 1: disjoint)."""
    a, b = a.align(b, fill_value=0.0)
    total = float(a.sum() + b.sum())
    return float(np.abs(a - b).sum() / total) if total > 0 else 0.0


def sites_not_shared(a: frozenset[str], b: frozenset[str]) -> float:
    """``1 - |a & b| / |a | b|`` over two designs' open sites (0: the same sites)."""
    union = a | b
    return 1.0 - len(a & b) / len(union) if union else 0.0


def _row(record: DesignRecord, before: list[DesignRecord], continents: list[str]) -> dict[str, Any]:
    """One design's row of ``alternatives.csv`` (``before``: the designs with a plan before it, the optimum first)."""
    row: dict[str, Any] = {"design": record.folder, "direction": record.direction, "status": record.status}
    s = record.summary
    if s is None or record.sites is None:
        return row
    sites = record.sites
    mw = record.mw_by_site()
    optimum = before[0] if before else record
    row.update(
        usd_per_h=s.objective_usd_per_h,
        cost_over_optimum=s.objective_usd_per_h / optimum.summary.objective_usd_per_h - 1 if optimum.summary else None,
        usd_per_million_goodput_tokens=s.cost_per_million_goodput_tokens_usd,
        goodput_tok_s=s.goodput_tok_s,
        sites_open=s.sites_open,
        sites=";".join(sorted(record.open_ids())),
        mw_used=float(mw.sum()),
    )
    by_continent = sites.groupby(sites["continent"].astype(str))["mw_used"].sum()
    for continent in continents:
        row[f"mw_in_{continent.lower().replace(' ', '_')}"] = float(by_continent.get(continent, 0.0))
    row["mw_not_shared"] = mw_not_shared(mw, optimum.mw_by_site())
    row["sites_not_shared"] = sites_not_shared(record.open_ids(), optimum.open_ids())
    distances = [mw_not_shared(mw, other.mw_by_site()) for other in before]
    row["mw_not_shared_nearest"] = min(distances) if distances else None
    same = [other.folder for other, d in zip(before, distances, strict=True) if d < 1e-9]
    row["same_as"] = same[0] if same else ""
    row["plan"] = record.folder
    return row


def alternatives_table(records: list[DesignRecord]) -> pd.DataFrame:
    """``alternatives.csv``: one row per design, in the order of their index."""
    ordered = sorted(records, key=lambda r: r.index)
    continents = sorted({str(c) for r in ordered if r.sites is not None for c in r.sites["continent"]})
    rows = []
    before: list[DesignRecord] = []
    for record in ordered:
        rows.append(_row(record, before, continents))
        if record.summary is not None:
            before.append(record)
    return pd.DataFrame(rows)


def site_classes(records: list[DesignRecord]) -> pd.DataFrame:
    """``alternative_sites.csv``: every candidate site, the MW each design uses there, and its class."""
    planned = [r for r in sorted(records, key=lambda r: r.index) if r.sites is not None]
    if not planned:
        return pd.DataFrame(columns=[*SITE_COLUMNS, "class", "designs_open"])
    first = planned[0].sites
    assert first is not None
    table = first[[c for c in SITE_COLUMNS if c in first.columns]].copy()
    table["site_id"] = table["site_id"].astype(str)
    opened = np.zeros(len(table), dtype=int)
    for record in planned:
        assert record.sites is not None
        sites = record.sites.set_index(record.sites["site_id"].astype(str))
        table[f"mw_{record.folder}"] = sites["mw_used"].reindex(table["site_id"]).fillna(0.0).to_numpy(dtype=float)
        opened += sites["open"].astype(bool).reindex(table["site_id"]).fillna(False).to_numpy(dtype=int)
    table.insert(
        len(SITE_COLUMNS), "class", np.where(opened == len(planned), "must-have", np.where(opened > 0, "choice", "never"))
    )
    table.insert(len(SITE_COLUMNS) + 1, "designs_open", opened)
    return table


def draw_alternatives(table: pd.DataFrame, sites: pd.DataFrame, path: Path) -> Path:
    """``alternatives.png``: cost over the optimum against MW not shared; the MW of the sites any design opens."""
    used = sites[sites["class"] != "never"]
    height_in = max(5.0, 0.14 * len(used) + 1.5)  # a readable row per site any design opens
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, height_in), gridspec_kw={"width_ratios": [1, 1.3]})
    found = table[table["usd_per_h"].notna()] if "usd_per_h" in table.columns else table.iloc[0:0]
    left.scatter(found["mw_not_shared"], 100 * found["cost_over_optimum"], color="#2b6a99")
    named: dict[tuple[float, float], list[str]] = {}  # designs at the same point share one label
    for row in found.to_dict("records"):
        point = (round(float(row["mw_not_shared"]), 6), round(100 * float(row["cost_over_optimum"]), 6))
        named.setdefault(point, []).append(f"{row['design']} ({row['direction']})")
    for point, names in named.items():
        left.annotate("\n".join(names), point, textcoords="offset points", xytext=(5, 4), fontsize=7)
    left.set_xlabel("MW not shared with the optimum (share of both designs' MW)")
    left.set_ylabel("cost over the optimum [%]")
    left.set_title("near-optimal alternatives")
    left.grid(True, alpha=0.3)
    columns = [c for c in sites.columns if c.startswith("mw_")]
    if len(used) and columns:
        grid = used[columns].to_numpy(dtype=float)
        image = right.imshow(grid, aspect="auto", cmap="Blues", norm=PowerNorm(0.5))  # small sites stay visible
        right.set_yticks(range(len(used)), [f"{s} ({c})" for s, c in zip(used["site_id"], used["class"], strict=True)],
                         fontsize=7)  # fmt: skip
        right.set_xticks(range(len(columns)), [c.removeprefix("mw_") for c in columns], rotation=45, ha="right", fontsize=7)
        fig.colorbar(image, ax=right, label="MW (square-root scale)")
    right.set_title("MW at each site any design opens")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_tables(records: list[DesignRecord], folder: Path, progress: Progress = quiet) -> pd.DataFrame:
    """``alternatives.csv``, ``alternative_sites.csv``, ``alternatives.png`` and ``alternatives.geojson``."""
    table = alternatives_table(records)
    write_csv(table, folder / "alternatives.csv")
    sites = site_classes(records)
    write_csv(sites, folder / "alternative_sites.csv")
    draw_alternatives(table, sites, folder / "alternatives.png")
    if len(sites):
        geo.write_geojson(geo.sites_frame(sites), folder / "alternatives.geojson")
    counts = sites["class"].value_counts() if len(sites) else pd.Series(dtype=int)
    progress(
        "wrote alternatives.csv, alternative_sites.csv, alternatives.png and alternatives.geojson: "
        + ", ".join(f"{int(counts.get(c, 0))} {c}" for c in CLASSES)
    )
    return table


def write_alternatives(alternatives: Iterable[Alternative], out_dir: str | Path, *, maps: bool = False,
                       progress: Progress = quiet) -> Path:  # fmt: skip
    """Solve the designs (as the iterable yields them) and write the run's folder whole.

    Parameters
    ----------
    alternatives : iterable of Alternative
        :func:`placement.analyses.alternatives.near_optimal_alternatives`: each plan is written as it comes.
    out_dir : str or Path
        The run's folder (replaced as a whole).
    maps : bool, optional
        Draw each design's maps.
    progress : callable, optional
        Receives a line per file.

    Returns
    -------
    Path
        The folder written.
    """

    def writer(folder: Path) -> None:
        records = []
        for alternative in alternatives:
            if alternative.plan is not None:
                write_results(alternative.plan, folder / alternative.folder, maps=maps)
            records.append(DesignRecord.of(alternative))
        write_tables(records, folder, progress)

    return write_folder(out_dir, writer)
