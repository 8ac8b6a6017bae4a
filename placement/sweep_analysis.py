"""What a sweep answers: the cost-latency frontier, which inputs matter, which sites are no-regret.

Every function takes the sweep's results table (one row per case, see
:func:`placement.sweep.results_table`); only solved cases (no ``error``, a finite $/M goodput)
count. The writers put CSV, PNG and GeoJSON files into the sweep's results folder.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from shapely import Point

from placement import geo
from placement.catalog import load_catalog
from placement.maps import load_basemap
from placement.outputs import write_text_atomic

if TYPE_CHECKING:
    from placement.sweep import PreparedSweep

COST = "cost_per_million_goodput_tokens_usd"
TTFT_AXIS = re.compile(r"^classes\[(\d+)\]\.ttft_p99_ms$")
MAX_LEVELS = 12
"""An axis with more distinct numeric values than this is treated as continuous (linear fit)."""


def solved(results: pd.DataFrame, *, max_gap: float = math.inf) -> pd.DataFrame:
    """The cases that were solved: no error, a finite $/M goodput and a proven gap within ``max_gap``.

    Parameters
    ----------
    results : pandas.DataFrame
        The results table.
    max_gap : float, optional
        Largest relative gap to keep (a case without a reported gap is kept).

    Returns
    -------
    pandas.DataFrame
        The rows that count.
    """
    cost = pd.to_numeric(results[COST], errors="coerce")
    gap = pd.to_numeric(results["gap"], errors="coerce").fillna(0.0)
    done: pd.DataFrame = results[(results["error"].fillna("") == "") & np.isfinite(cost) & (gap <= max_gap)]
    return done


# --- frontier --------------------------------------------------------------------------------


def ttft_axis(axes: list[str]) -> str | None:
    """The first axis that sets a class's p99 TTFT objective, if any."""
    return next((axis for axis in axes if TTFT_AXIS.match(axis)), None)


def pareto_frontier(results: pd.DataFrame, axis: str) -> pd.DataFrame:
    """Cases no other case beats on both a tighter TTFT objective and a lower $/M goodput.

    Parameters
    ----------
    results : pandas.DataFrame
        The results table.
    axis : str
        The TTFT objective's column (e.g. ``classes[0].ttft_p99_ms``). [ms]

    Returns
    -------
    pandas.DataFrame
        The efficient cases, by increasing TTFT objective (so decreasing cost).
    """
    done = solved(results).assign(_ttft=lambda t: pd.to_numeric(t[axis], errors="coerce")).dropna(subset=["_ttft"])
    ordered = done.sort_values(["_ttft", COST], kind="stable")
    keep, best = [], math.inf
    for index, cost in zip(ordered.index, ordered[COST].astype(float), strict=True):
        if cost < best - 1e-12:
            keep.append(index)
            best = cost
    return ordered.loc[keep].drop(columns="_ttft")


def _series(done: pd.DataFrame, axis: str, others: list[str], *, most: int = 30) -> list[pd.DataFrame]:
    """Cases that differ only in ``axis``, each group sorted along it (none when there are too many)."""
    if not others:
        return [done.sort_values(axis)] if len(done) > 1 else []
    keys = done[others].map(_level).astype(str).agg("|".join, axis=1)
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


# --- sensitivity -----------------------------------------------------------------------------


def _numeric(values: pd.Series) -> pd.Series | None:
    """The column as floats (booleans as 0/1), or None when it is categorical."""
    if all(isinstance(v, bool | np.bool_) for v in values):
        return values.astype(float)
    converted = pd.to_numeric(values, errors="coerce")
    return converted if converted.notna().all() else None


def _level(value: Any) -> float | str:
    """A hashable level of an axis value: numbers (and booleans) as floats, anything else as text."""
    if isinstance(value, bool | int | float | np.number):
        return float(value)
    return str(value)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float | np.number) and isinstance(b, int | float | np.number):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


def _at_base(done: pd.DataFrame, axes: list[str], base_values: dict[str, Any]) -> pd.Series:
    """Which cases have every one of ``axes`` at its base value."""
    mask = pd.Series(True, index=done.index)
    for axis in axes:
        base = base_values.get(axis)
        mask &= done[axis].map(lambda v, base=base: base is not None and _same(v, base))
    return mask


def _one_at_a_time(
    done: pd.DataFrame, axis: str, low: Any, high: Any, others: list[str], base_values: dict[str, Any]
) -> tuple[float, float] | None:
    """Cost at low and at high with every other axis at its base value, when the sweep has both cases."""
    at_base = done[_at_base(done, others, base_values)]
    costs = []
    for value in (low, high):
        rows = at_base[at_base[axis].map(lambda v, value=value: _same(v, value))]
        if rows.empty:
            return None
        costs.append(float(rows[COST].mean()))
    return costs[0], costs[1]


def _axis_swing(done: pd.DataFrame, axis: str, axes: list[str], base_values: dict[str, Any]) -> dict[str, Any] | None:
    column = done[axis].dropna()
    if column.nunique() < 2:
        return None
    numbers = _numeric(column)
    cost = done.loc[column.index, COST].astype(float)
    if numbers is not None and numbers.nunique() > MAX_LEVELS:
        slope, intercept = np.polyfit(numbers.to_numpy(float), cost.to_numpy(float), 1)
        low, high = float(numbers.min()), float(numbers.max())
        return {
            "low": low,
            "high": high,
            "cost_low": intercept + slope * low,
            "cost_high": intercept + slope * high,
            "method": "linear_fit",
        }
    levels = column.map(_level)
    means = cost.groupby(levels).mean()
    firsts = column.groupby(levels).first()
    if numbers is not None:
        order = numbers.to_numpy(float)
        low_level, high_level = levels.iloc[int(order.argmin())], levels.iloc[int(order.argmax())]
    else:
        low_level, high_level = means.idxmin(), means.idxmax()
    low, high = _plain(firsts.loc[low_level]), _plain(firsts.loc[high_level])
    others = [a for a in axes if a != axis]
    paired = _one_at_a_time(done, axis, low, high, others, base_values)
    if paired is not None:
        return {"low": low, "high": high, "cost_low": paired[0], "cost_high": paired[1], "method": "one_at_a_time"}
    return {
        "low": low,
        "high": high,
        "cost_low": means.loc[low_level],
        "cost_high": means.loc[high_level],
        "method": "main_effect",
    }


def sensitivity(results: pd.DataFrame, axes: list[str], base_values: dict[str, Any]) -> pd.DataFrame:
    """The swing of $/M goodput across each axis, largest first.

    Parameters
    ----------
    results : pandas.DataFrame
        The results table.
    axes : list of str
        The sweep's axes (columns of ``results``).
    base_values : dict
        Each axis's value in the base scenario (None when it has none).

    Returns
    -------
    pandas.DataFrame
        ``axis``, ``low_value``, ``high_value``, ``base_value``, ``cost_low_usd_per_m``,
        ``cost_high_usd_per_m``, ``swing_usd_per_m`` (high minus low), ``abs_swing_usd_per_m``,
        ``method`` and ``cases``. Low and high are the smallest and largest value of a numeric or
        boolean axis, and the cheapest and dearest value of a categorical one. Method, first that
        applies: ``linear_fit`` for a sampled continuous axis (more than :data:`MAX_LEVELS`
        values; least squares of $/M on the value over all solved cases, read at low and high);
        ``one_at_a_time`` when the sweep holds both cases with every other axis at its base value;
        otherwise ``main_effect``: the mean $/M over the cases at low and at high, the other axes
        averaged over the design.
    """
    done = solved(results)
    rows = []
    for axis in axes:
        swing = _axis_swing(done, axis, axes, base_values) if len(done) else None
        if swing is None:
            continue
        rows.append(
            {
                "axis": axis,
                "low_value": swing["low"],
                "high_value": swing["high"],
                "base_value": base_values.get(axis),
                "cost_low_usd_per_m": float(swing["cost_low"]),
                "cost_high_usd_per_m": float(swing["cost_high"]),
                "swing_usd_per_m": float(swing["cost_high"] - swing["cost_low"]),
                "method": swing["method"],
                "cases": int(done[axis].notna().sum()),
            }
        )
    table = pd.DataFrame(
        rows,
        columns=[
            "axis",
            "low_value",
            "high_value",
            "base_value",
            "cost_low_usd_per_m",
            "cost_high_usd_per_m",
            "swing_usd_per_m",
            "method",
            "cases",
        ],
    )
    table.insert(7, "abs_swing_usd_per_m", table["swing_usd_per_m"].abs())
    return table.sort_values("abs_swing_usd_per_m", ascending=False, kind="stable").reset_index(drop=True)


def reference_cost(results: pd.DataFrame, axes: list[str], base_values: dict[str, Any]) -> tuple[float, str]:
    """The tornado's centre: the base case's $/M goodput when the sweep has it, else the mean."""
    done = solved(results)
    base = done[_at_base(done, axes, base_values)]
    if len(base):
        return float(base[COST].mean()), "base case"
    return float(done[COST].mean()), "mean of solved cases"


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


def _short(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# --- no-regret sites -------------------------------------------------------------------------


def no_regret(results: pd.DataFrame, records: dict[str, dict[str, Any]], candidates: pd.DataFrame) -> pd.DataFrame:
    """How often each candidate site is open across the solved cases.

    Parameters
    ----------
    results : pandas.DataFrame
        The results table.
    records : dict
        Case id -> record with ``open_sites`` (id, name, lat, lon, MW used).
    candidates : pandas.DataFrame
        The base catalog (``id``, ``name``, ``lat``, ``lon``); sites that some case added are
        taken from the records.

    Returns
    -------
    pandas.DataFrame
        ``site_id``, ``name``, ``lat``, ``lon``, ``open_count``, ``open_share`` (of solved cases),
        ``mean_mw_used`` (over the cases where it is open), ``cases`` and ``category``:
        ``no-regret`` (open in every solved case), ``mostly`` (at least half), ``sometimes``, ``never``.
    """
    done = solved(results)
    rows: list[dict[Any, Any]] = candidates[["id", "name", "lat", "lon"]].to_dict("records")
    sites = {str(r["id"]): {"name": str(r["name"]), "lat": float(r["lat"]), "lon": float(r["lon"])} for r in rows}
    counts: dict[str, int] = dict.fromkeys(sites, 0)
    mw: dict[str, float] = dict.fromkeys(sites, 0.0)
    for cid in done["case_id"]:
        for site in records.get(cid, {}).get("open_sites") or []:
            sid = str(site["site_id"])
            sites.setdefault(sid, {"name": site["name"], "lat": site["lat"], "lon": site["lon"]})
            counts[sid] = counts.get(sid, 0) + 1
            mw[sid] = mw.get(sid, 0.0) + float(site.get("mw_used") or 0.0)
    n = len(done)
    table = pd.DataFrame(
        [
            {
                "site_id": sid,
                **info,
                "open_count": counts[sid],
                "open_share": counts[sid] / n if n else 0.0,
                "mean_mw_used": mw[sid] / counts[sid] if counts[sid] else 0.0,
                "cases": n,
            }
            for sid, info in sites.items()
        ],
        columns=["site_id", "name", "lat", "lon", "open_count", "open_share", "mean_mw_used", "cases"],
    )
    share = table["open_share"]
    table["category"] = np.where(
        (share >= 1.0) & (n > 0), "no-regret", np.where(share >= 0.5, "mostly", np.where(share > 0, "sometimes", "never"))
    )
    return table.sort_values(["open_share", "site_id"], ascending=[False, True], kind="stable").reset_index(drop=True)


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


# --- writing ---------------------------------------------------------------------------------


def _write_csv(table: pd.DataFrame, path: Path) -> None:
    write_text_atomic(path, table.to_csv(index=False, float_format="%.10g"))


def _staged(path: Path) -> Path:
    return path.with_name(f".{path.stem}.new{path.suffix}")


def _write_frontier(out_dir: Path, prepared: PreparedSweep, results: pd.DataFrame) -> list[str]:
    axis = ttft_axis(prepared.axes)
    if axis is None:
        return ["frontier.png skipped: the sweep has no classes[i].ttft_p99_ms axis"]
    frontier = pareto_frontier(results, axis)
    if frontier.empty:
        return [f"frontier.png skipped: no case along {axis} was solved"]
    _write_csv(frontier, out_dir / "frontier.csv")
    staged = _staged(out_dir / "frontier.png")
    draw_frontier(results, frontier, axis, staged, others=[a for a in prepared.axes if a != axis])
    staged.replace(out_dir / "frontier.png")
    return [f"frontier: {len(frontier)} efficient cases along {axis}"]


def _write_sensitivity(out_dir: Path, prepared: PreparedSweep, results: pd.DataFrame) -> list[str]:
    table = sensitivity(results, prepared.axes, prepared.base_values)
    _write_csv(table, out_dir / "sensitivity.csv")
    if table.empty:
        return ["tornado.png skipped: no axis has two solved values"]
    reference, label = reference_cost(results, prepared.axes, prepared.base_values)
    staged = _staged(out_dir / "tornado.png")
    draw_tornado(table, reference, label, staged)
    staged.replace(out_dir / "tornado.png")
    top = table.iloc[0]
    return [f"sensitivity: {top['axis']} swings $/M goodput by {top['swing_usd_per_m']:+.3f} ({top['method']})"]


def _write_no_regret(
    out_dir: Path, prepared: PreparedSweep, results: pd.DataFrame, records: dict[str, dict[str, Any]]
) -> list[str]:
    table = no_regret(results, records, load_catalog(prepared.base.catalog_path))
    _write_csv(table, out_dir / "no_regret.csv")
    staged = _staged(out_dir / "no_regret.geojson")
    geo.write_geojson(no_regret_frame(table), staged)
    staged.replace(out_dir / "no_regret.geojson")
    n = len(solved(results))
    always = table[table["category"] == "no-regret"]
    staged = _staged(out_dir / "no_regret.png")
    draw_no_regret(table, staged, title=f"How often each site is open across {n} solved cases ({len(always)} in every one)")
    staged.replace(out_dir / "no_regret.png")
    return [f"no-regret sites (open in all {n} solved cases): {', '.join(always['name']) or 'none'}"]


def write_analysis(
    out_dir: Path, prepared: PreparedSweep, results: pd.DataFrame, records: dict[str, dict[str, Any]]
) -> list[str]:
    """Write the frontier, sensitivity and no-regret files; return one line about each.

    Only solved cases within the sweep's ``max_gap`` count.

    Parameters
    ----------
    out_dir : Path
        The sweep's results folder.
    prepared : PreparedSweep
        The sweep.
    results : pandas.DataFrame
        Its results table.
    records : dict
        Case id -> record.

    Returns
    -------
    list of str
        What was written or skipped, and why.
    """
    max_gap = prepared.spec.max_gap
    kept = solved(results, max_gap=max_gap)
    if kept.empty:
        return ["no case was solved: frontier, sensitivity and no-regret files not written"]
    loose = len(solved(results)) - len(kept)
    notes = [f"{loose} solved cases left out of the analysis: proven gap above max_gap {max_gap:g}"] if loose else []
    return [
        *notes,
        *_write_frontier(out_dir, prepared, kept),
        *_write_sensitivity(out_dir, prepared, kept),
        *_write_no_regret(out_dir, prepared, kept, records),
    ]
