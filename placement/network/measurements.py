"""A planner's own round-trip measurements: read, checked, and turned into corrections of the model.

A network team's file (``latency.measurements: FILE`` in a scenario, ``placement rtt --measurements FILE``)
has one measured path per row:

``from``, ``to``
    A GeoNames city (``"Lagos"``, ``"Portland, US"``), ``lat,lon``, or the id of a site of the scenario's
    catalog. A site carries its catalog ``network``; a city or a coordinate is a host on transit.
``rtt_ms``
    The measured typical round trip (a median or a mean of pings). [ms]
``rtt_p90_ms`` (optional)
    The measured 90th percentile, where the tool gives one. [ms]
``samples`` (optional)
    How many pings the figures summarise; a row of fewer than :data:`FULL_SAMPLES` counts for less.
``path`` (optional)
    ``internet`` (blank: data center or host to data center) or ``access`` (users at ``from`` to a site at
    ``to``: real-user monitoring; their last mile included).

The corrections (:class:`~placement.network.corrections.RegionCorrections`) are per unordered pair of world
regions (:mod:`placement.network.world_regions`): the log of measured over modelled, averaged with weights
and shrunk toward no correction as if :data:`PRIOR_ROWS` rows had measured the model exactly, so one ping
moves a region pair little and fifty move it most of the way. The model's physics bound holds after a
correction (:meth:`~placement.network.paths.RoundTrips.rtt_ms`). The p90 is corrected alike from rows that
give one.

The report fits on the rows a deterministic hash does not hold out (one in :data:`HOLD_OUT_EVERY`) and
shows the error before and after on both, so a planner sees whether the corrections predict paths they
were not fitted on; the corrections a plan uses are then fitted on every row.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InputError, Problem
from placement._types import FloatArray
from placement._validate import Column, Table, missing_columns, numbers, raise_if, read_table, text
from placement.network.corrections import RegionCorrections
from placement.network.countries import country_of_points
from placement.network.paths import Endpoints, PathType, RoundTrips
from placement.network.places import resolve_places
from placement.network.world_regions import region_pair_key, world_region

PRIOR_ROWS = 5.0
"""The model counts as this many rows that measured it exactly (the shrinkage toward no correction)."""
FULL_SAMPLES = 10.0
"""A row summarising this many pings or more has weight 1; fewer: samples / this."""
HOLD_OUT_EVERY = 5
"""One row in this many (by a hash of ``from`` and ``to``) is held out of the report's fit."""
PATHS = ("internet", "access")

_COLUMNS = (
    Column("from", help="a GeoNames city, lat,lon or a site id"),
    Column("to", help="a GeoNames city, lat,lon or a site id"),
    Column("rtt_ms", "number", low=0.0, help="measured typical round trip [ms]"),
    Column("rtt_p90_ms", "number", required=False, low=0.0, may_be_absent=True, help="measured p90 round trip [ms]"),
    Column("samples", "number", required=False, low=1.0, may_be_absent=True, help="pings summarised"),
    Column("path", required=False, may_be_absent=True, help="internet (default) or access"),
)


@dataclass(frozen=True)
class Measurements:
    """A checked measurement file, one row per path, ends resolved.

    Parameters
    ----------
    source : str
        The file.
    rows : pandas.DataFrame
        ``row`` (where it is written), ``from``, ``to``, ``a_lat, a_lon, a_cc, a_transit``,
        ``b_lat, b_lon, b_cc, b_transit``, ``path``, ``rtt_ms``, ``rtt_p90_ms`` (NaN: not given),
        ``weight``, ``held_out``.
    """

    source: str
    rows: pd.DataFrame

    def __len__(self) -> int:
        """Number of measured paths."""
        return len(self.rows)


End = tuple[float, float, str, bool]
"""Coordinates, country and whether on transit of one end of a measured path."""


def _ends(texts: list[str], sites: pd.DataFrame | None) -> dict[str, End | InputError]:
    """Each distinct end once: a site id of the catalog first, then a place (:func:`resolve_places`)."""
    out: dict[str, End | InputError] = {}
    by_id = {} if sites is None else {str(row["id"]): row for row in sites.drop_duplicates("id").to_dict("records")}
    places = resolve_places(t for t in dict.fromkeys(texts) if t not in by_id)
    for written in dict.fromkeys(texts):
        if written in by_id:
            site = by_id[written]
            on_transit = str(site.get("network", "transit")) == "transit"
            out[written] = float(site["lat"]), float(site["lon"]), str(site["country_code"]), on_transit
            continue
        place = places[written]
        if isinstance(place, InputError):
            out[written] = place
            continue
        code = place.country_code or str(country_of_points(np.array([place.lat]), np.array([place.lon]))[0])
        out[written] = place.lat, place.lon, code, True
    return out


def _read_cells(path: Path, source: str) -> tuple[Table, dict[str, list[Any]], list[Problem]]:
    """The file's columns as plain lists (a row is read in microseconds), and the problems of its cells.

    Raises
    ------
    InputError
        The file is missing, lacks a required column or has no rows.
    """
    if not path.is_file():
        raise InputError([Problem(source, "", "", "file not found", "check the path (relative to the scenario file)")])
    table = read_table(path, fix="save it as UTF-8 CSV with a header row: from,to,rtt_ms[,rtt_p90_ms,samples,path]")
    problems = missing_columns(table, _COLUMNS)
    raise_if(problems)
    if not len(table):
        raise InputError([Problem(source, "", "", "the file has no rows", "add one row per measured path")])
    series = {c.name: (numbers(table, c, problems) if c.kind == "number" else text(table, c, problems)) for c in _COLUMNS}
    return table, {name: column.tolist() for name, column in series.items()}, problems


def _row_ends(
    cells: dict[str, list[Any]],
    k: int,
    resolved: dict[str, End | InputError],
    *,
    where: str,
    source: str,
    sites_given: bool,
    problems: list[Problem],
) -> list[End]:
    """The ends row ``k`` names that resolve; an end that names no known place is a problem."""
    ends = []
    for field in ("from", "to"):
        written = str(cells[field][k])
        if not written:
            continue
        end = resolved[written]
        if isinstance(end, InputError):
            fix = end.problems[0].fix + (", or a site id of the catalog" if sites_given else "")
            problems.append(Problem(source, where, field, f"{written!r}: {end.problems[0].rule}", fix))
        else:
            ends.append(end)
    return ends


def _row_figures(
    cells: dict[str, list[Any]], k: int, *, where: str, source: str, problems: list[Problem]
) -> tuple[str, float, float]:
    """Row ``k``'s path, round trip and p90 [ms]; an unknown path, a zero round trip or a p90 below it is a problem."""
    row_path = str(cells["path"][k]).lower() or "internet"
    if row_path not in PATHS:
        problems.append(Problem(source, where, "path", f"unknown path {row_path!r}", "write internet, access or leave it blank"))
    rtt, p90 = float(cells["rtt_ms"][k]), float(cells["rtt_p90_ms"][k])
    if rtt == 0.0:
        problems.append(Problem(source, where, "rtt_ms", "is 0", "give the measured round trip in ms"))
    if np.isfinite(p90) and np.isfinite(rtt) and p90 < rtt:
        problems.append(Problem(source, where, "rtt_p90_ms", f"{p90:g} is below rtt_ms {rtt:g}", "give the 90th percentile"))
    return row_path, rtt, p90


def _record(
    cells: dict[str, list[Any]],
    k: int,
    ends: tuple[End, End],
    *,
    where: str,
    path: str,
    rtt_ms: float,
    rtt_p90_ms: float,
) -> dict[str, Any]:
    """One row of :attr:`Measurements.rows`: its ends, figures, weight by samples and whether it is held out."""
    samples = float(cells["samples"][k])
    weight = 1.0 if not np.isfinite(samples) else min(1.0, samples / FULL_SAMPLES)
    (a_lat, a_lon, a_cc, a_transit), (b_lat, b_lon, b_cc, b_transit) = ends
    key = f"{cells['from'][k]}|{cells['to'][k]}".encode()
    return {
        "row": where,
        "from": str(cells["from"][k]),
        "to": str(cells["to"][k]),
        "a_lat": a_lat,
        "a_lon": a_lon,
        "a_cc": a_cc,
        "a_transit": a_transit,
        "b_lat": b_lat,
        "b_lon": b_lon,
        "b_cc": b_cc,
        "b_transit": b_transit,
        "path": path,
        "rtt_ms": rtt_ms,
        "rtt_p90_ms": rtt_p90_ms,
        "weight": weight,
        "held_out": zlib.crc32(key) % HOLD_OUT_EVERY == 0,
    }


def load_measurements(path: str | Path, *, sites: pd.DataFrame | None = None) -> Measurements:
    """Read and check a measurement file.

    Parameters
    ----------
    path : str or Path
        CSV with ``from, to, rtt_ms`` and optionally ``rtt_p90_ms, samples, path``.
    sites : pandas.DataFrame, optional
        The scenario's catalog (``id, lat, lon, country_code, network``), so ``from``/``to`` may be site ids.

    Returns
    -------
    Measurements
        The rows with their ends resolved.

    Raises
    ------
    InputError
        Every problem in the file: row, field, rule, fix (an unknown place with close names, a p90 below the
        typical round trip, an unknown path, a row from a place to itself).
    """
    path = Path(path)
    source = str(path)
    table, cells, problems = _read_cells(path, source)
    records = []
    written_ends = [str(v) for field in ("from", "to") for v in cells[field] if str(v)]
    resolved = _ends(written_ends, sites)  # each distinct place once, not once a row
    for k in range(len(table)):
        where = table.where(k)
        ends = _row_ends(cells, k, resolved, where=where, source=source, sites_given=sites is not None, problems=problems)
        row_path, rtt, p90 = _row_figures(cells, k, where=where, source=source, problems=problems)
        if len(ends) == 2 and ends[0][:2] == ends[1][:2]:
            problems.append(Problem(source, where, "to", "is the same place as from", "measure between two places"))
        if len(ends) == 2:
            records.append(_record(cells, k, (ends[0], ends[1]), where=where, path=row_path, rtt_ms=rtt, rtt_p90_ms=p90))
    raise_if(problems)
    return Measurements(source, pd.DataFrame(records))


def modelled(measurements: Measurements, round_trips: RoundTrips) -> tuple[FloatArray, FloatArray]:
    """The model's p50 and p90 of each measured path (exactly what a plan or ``placement rtt`` computes). [ms]

    Pair by pair (:meth:`RoundTrips.rtt_pairs_ms`, element by element the table a plan computes): the work grows
    with the rows, however many distinct places they measure.
    """
    rows = measurements.rows
    p50, p90 = np.zeros(len(rows)), np.zeros(len(rows))
    access = rows["path"].to_numpy(str) == "access"
    for path, mine in ((PathType.ACCESS, access), (PathType.INTERNET, ~access)):
        if not mine.any():
            continue
        ends = [
            Endpoints.of(
                rows[f"{side}_lat"].to_numpy(float)[mine],
                rows[f"{side}_lon"].to_numpy(float)[mine],
                rows[f"{side}_cc"].to_numpy(str)[mine],
                rows[f"{side}_transit"].to_numpy(bool)[mine],
            )
            for side in ("a", "b")
        ]
        quantiles = round_trips.rtt_pairs_ms(ends[0], ends[1], path)
        p50[mine], p90[mine] = quantiles.p50_ms, quantiles.p90_ms
    return p50, p90


def _pair_keys(rows: pd.DataFrame) -> NDArray[np.str_]:
    region_a = world_region(rows["a_lat"].to_numpy(float), rows["a_lon"].to_numpy(float))
    region_b = world_region(rows["b_lat"].to_numpy(float), rows["b_lon"].to_numpy(float))
    return np.asarray([region_pair_key(str(a), str(b)) for a, b in zip(region_a, region_b, strict=True)])


def _shrunk_mean_log(log_ratio: FloatArray, weight: FloatArray, keys: NDArray[np.str_]) -> dict[str, float]:
    out = {}
    for key in sorted(set(keys.tolist())):
        here = keys == key
        out[key] = float(np.exp(np.sum(weight[here] * log_ratio[here]) / (np.sum(weight[here]) + PRIOR_ROWS)))
    return out


def fit_corrections(
    measurements: Measurements,
    round_trips: RoundTrips,
    *,
    rows: NDArray[np.bool_] | None = None,
    uncorrected_ms: tuple[FloatArray, FloatArray] | None = None,
) -> RegionCorrections:
    """Corrections by world-region pair from the measured rows (``rows``: which; default all).

    Parameters
    ----------
    measurements : Measurements
        The planner's file.
    round_trips : RoundTrips
        The model to correct (without corrections of its own).
    rows : numpy.ndarray of bool, optional
        The rows to fit on.
    uncorrected_ms : tuple of numpy.ndarray, optional
        :func:`modelled` of ``round_trips`` without corrections, when the caller has it already. [ms]

    Returns
    -------
    RegionCorrections
        p50 factor per region pair measured; p90 spread factor per region pair where rows give a p90.
    """
    frame = measurements.rows
    use = np.ones(len(frame), dtype=bool) if rows is None else np.asarray(rows, dtype=bool)
    p50, p90 = uncorrected_ms or modelled(measurements, replace(round_trips, corrections=RegionCorrections()))
    keys, weight = _pair_keys(frame), frame["weight"].to_numpy(float)
    measured = frame["rtt_ms"].to_numpy(float)
    factor = _shrunk_mean_log(np.log(measured[use] / p50[use]), weight[use], keys[use])
    measured_p90 = frame["rtt_p90_ms"].to_numpy(float)
    spread_rows = use & np.isfinite(measured_p90)
    spread = _shrunk_mean_log(
        np.log((measured_p90[spread_rows] / measured[spread_rows]) / (p90[spread_rows] / p50[spread_rows])),
        weight[spread_rows],
        keys[spread_rows],
    )
    return RegionCorrections(tuple(sorted(factor.items())), tuple(sorted(spread.items())))


@dataclass(frozen=True)
class CalibrationReport:
    """Before and after error on a planner's measurements.

    Parameters
    ----------
    corrections : RegionCorrections
        Fitted on every row (what a plan uses).
    table : pandas.DataFrame
        Per region pair and split (``fitted``, ``held-out``, ``all``): ``n``, median signed and absolute
        error before and after [%], the share of measured round trips at or below the model's p90 before and after
        [%], and the factor.
    rows : pandas.DataFrame
        Each measured path with ``before_ms``, ``after_ms`` (held-out rows: from the fit without them).
    """

    corrections: RegionCorrections
    table: pd.DataFrame
    rows: pd.DataFrame


def _summary(frame: pd.DataFrame, group: str, split: str) -> dict[str, object]:
    before = 100.0 * (frame["before_ms"] - frame["rtt_ms"]) / frame["rtt_ms"]
    after = 100.0 * (frame["after_ms"] - frame["rtt_ms"]) / frame["rtt_ms"]
    return {
        "region_pair": group,
        "split": split,
        "n": len(frame),
        "before_median_signed_pct": round(float(before.median()), 1),
        "after_median_signed_pct": round(float(after.median()), 1),
        "before_median_abs_pct": round(float(before.abs().median()), 1),
        "after_median_abs_pct": round(float(after.abs().median()), 1),
        "before_covered_pct": round(100.0 * float((frame["rtt_ms"] <= frame["before_p90_ms"]).mean()), 1),
        "after_covered_pct": round(100.0 * float((frame["rtt_ms"] <= frame["after_p90_ms"]).mean()), 1),
    }


def calibrate(measurements: Measurements, round_trips: RoundTrips) -> CalibrationReport:
    """Corrections from a planner's measurements and the before/after report (see the module docstring).

    Parameters
    ----------
    measurements : Measurements
        The planner's file.
    round_trips : RoundTrips
        The calibrated model (no corrections).

    Returns
    -------
    CalibrationReport
        Corrections fitted on every row, and the error table with a held-out split.
    """
    frame = measurements.rows.copy()
    held = frame["held_out"].to_numpy(bool)
    round_trips = replace(round_trips, corrections=RegionCorrections())
    before_p50, before_p90 = modelled(measurements, round_trips)
    split_fit = fit_corrections(measurements, round_trips, rows=~held, uncorrected_ms=(before_p50, before_p90))
    after_split = modelled(measurements, replace(round_trips, corrections=split_fit))
    final = fit_corrections(measurements, round_trips, uncorrected_ms=(before_p50, before_p90))
    after_all = modelled(measurements, replace(round_trips, corrections=final))
    frame = frame.assign(
        region_pair=_pair_keys(frame),
        before_ms=before_p50,
        before_p90_ms=before_p90,
        after_ms=np.where(held, after_split[0], after_all[0]),
        after_p90_ms=np.where(held, after_split[1], after_all[1]),
    )
    factors = dict(final.p50_factor)
    records = []
    for key, group in frame.groupby("region_pair", sort=True):
        for split, part in (("fitted", group[~group["held_out"]]), ("held-out", group[group["held_out"]])):
            if len(part):
                records.append({**_summary(part, str(key), split), "factor": round(factors.get(str(key), 1.0), 3)})
    for split, part in (("fitted", frame[~frame["held_out"]]), ("held-out", frame[frame["held_out"]])):
        if len(part):
            records.append({**_summary(part, "all", split), "factor": float("nan")})
    return CalibrationReport(final, pd.DataFrame(records), frame)


def with_measurements(round_trips: RoundTrips, measurements: Measurements) -> RoundTrips:
    """The model corrected by a planner's measurements (fitted on every row)."""
    return replace(round_trips, corrections=fit_corrections(measurements, round_trips))


def format_report(report: CalibrationReport, source: str) -> list[str]:
    """The report as lines of a table (``placement rtt --measurements``)."""
    lines = [
        f"{source}: {len(report.rows)} measured paths, corrections by world-region pair "
        f"(shrunk toward the model as if {PRIOR_ROWS:g} rows matched it; one row in {HOLD_OUT_EVERY} held out)",
        "| region pair | split | n | median signed before -> after | median abs before -> after | "
        "at or below p90 before -> after | factor |",
        "|---|---|---|---|---|---|---|",
    ]
    factors = report.table["factor"].to_numpy(float)
    for row, value in zip(report.table.itertuples(index=False), factors, strict=True):
        factor = "" if not np.isfinite(value) else f"{value:.3f}"
        lines.append(
            f"| {row.region_pair} | {row.split} | {row.n} | {row.before_median_signed_pct:+.1f} % -> "
            f"{row.after_median_signed_pct:+.1f} % | {row.before_median_abs_pct:.1f} % -> {row.after_median_abs_pct:.1f} % | "
            f"{row.before_covered_pct:.0f} % -> {row.after_covered_pct:.0f} % | {factor} |"
        )
    return lines


__all__ = [
    "CalibrationReport",
    "Measurements",
    "calibrate",
    "fit_corrections",
    "format_report",
    "load_measurements",
    "modelled",
    "with_measurements",
]
