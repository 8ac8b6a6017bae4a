"""What a sweep answers: the cost-latency frontier, which inputs matter, which sites are no-regret.

Every function takes the sweep's results table (one row per case, see
:func:`placement.sweep.run.results_table`); only solved cases (no ``error``, a finite $/M goodput)
count. The writers put CSV, PNG and GeoJSON files into the sweep's results folder.
"""

from __future__ import annotations

import math
import re
from typing import Any

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pandas as pd

from placement.sweep.spec import plain_scalar

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


# --- sensitivity -----------------------------------------------------------------------------


def _numeric(values: pd.Series) -> pd.Series | None:
    """The column as floats (booleans as 0/1), or None when it is categorical."""
    if all(isinstance(v, bool | np.bool_) for v in values):
        return values.astype(float)
    converted = pd.to_numeric(values, errors="coerce")
    return converted if converted.notna().all() else None


def level_key(value: Any) -> float | str:
    """A hashable level of an axis value: numbers (and booleans) as floats, anything else as text."""
    if isinstance(value, bool | int | float | np.number):
        return float(value)
    return str(value)


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
    levels = column.map(level_key)
    means = cost.groupby(levels).mean()
    firsts = column.groupby(levels).first()
    if numbers is not None:
        order = numbers.to_numpy(float)
        lowlevel_key, highlevel_key = levels.iloc[int(order.argmin())], levels.iloc[int(order.argmax())]
    else:
        lowlevel_key, highlevel_key = means.idxmin(), means.idxmax()
    low, high = plain_scalar(firsts.loc[lowlevel_key]), plain_scalar(firsts.loc[highlevel_key])
    others = [a for a in axes if a != axis]
    paired = _one_at_a_time(done, axis, low, high, others, base_values)
    if paired is not None:
        return {"low": low, "high": high, "cost_low": paired[0], "cost_high": paired[1], "method": "one_at_a_time"}
    return {
        "low": low,
        "high": high,
        "cost_low": means.loc[lowlevel_key],
        "cost_high": means.loc[highlevel_key],
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


# --- writing ---------------------------------------------------------------------------------
