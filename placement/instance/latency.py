"""Round trips of an instance, from the scenario's latency model.

Each population's worst member round trip to every site, the remote retrieval stores, large tables mapped from
disk.
"""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InputError, Problem
from placement._process import release_rows
from placement._types import FloatArray, IntArray
from placement.network.latency import LatencyModel
from placement.network.load import HUBS_CSV, LINKS_CSV, default_network, load_network
from placement.network.measurements import calibrate, load_measurements
from placement.network.paths import Endpoints, Quantile, RoundTripQuantiles, round_trips
from placement.scenario.classes import WorkloadClass
from placement.scenario.load import Resolve
from placement.scenario.sections import LatencySection


def build_latency_model(
    spec: LatencySection, resolve: Resolve, *, sites: pd.DataFrame | None = None, source: str = "scenario"
) -> LatencyModel:
    """The scenario's latency model, built once: its network, parameters and shortest paths.

    Parameters
    ----------
    spec : LatencySection
        The scenario's ``latency`` section.
    resolve : callable
        Turns a path written in the scenario into a file (relative to the scenario's folder).
    sites : pandas.DataFrame, optional
        The catalog, so that ``latency.measurements`` may name sites by id.
    source : str, optional
        The scenario file, for error messages.

    Returns
    -------
    LatencyModel
        The great-circle model, or the graph over the scenario's ``latency.hubs``/``links``
        (the bundled files where the scenario names none) with the calibrated parameters, the
        users' last mile (the per-country priors, or the scenario's ``access_ms``) and the
        corrections of the planner's ``latency.measurements`` (with their before/after report).

    Raises
    ------
    InputError
        Every problem in the hubs, links and measurement files.
    """
    if spec.model == "great_circle":
        if spec.measurements is not None:
            rule = "corrects the graph model; the great_circle model has no paths to correct"
            raise InputError([Problem(source, "latency.measurements", "", rule, "set latency.model: graph, or remove it")])
        return LatencyModel.from_great_circle(spec.params())
    if spec.hubs is None and spec.links is None:
        network = default_network()
    else:
        network = load_network(resolve(spec.hubs) if spec.hubs else HUBS_CSV, resolve(spec.links) if spec.links else LINKS_CSV)
    trips = round_trips(network, last_mile_override_ms=spec.access_ms)
    if spec.measurements is None:
        return LatencyModel.from_graph(trips)
    report = calibrate(load_measurements(resolve(spec.measurements), sites=sites), trips)
    return LatencyModel.from_graph(replace(trips, corrections=report.corrections), calibration=report)


def endpoints(frame: pd.DataFrame) -> Endpoints:
    """Points of a city or site table (``lat``, ``lon``, ``country_code``; a site's ``network``: transit or backbone)."""
    on_transit = frame["network"].eq("transit").to_numpy(bool) if "network" in frame.columns else False
    return Endpoints.of(
        frame["lat"].to_numpy(float), frame["lon"].to_numpy(float), frame["country_code"].to_numpy(str), on_transit
    )


def worst_member_rtt_ms(cities: pd.DataFrame, sites: pd.DataFrame, latency: LatencyModel) -> RoundTripQuantiles:
    """Round trips to each site from the farthest member city of each population (conservative).

    Each member city is a user point of its own country (``access`` path, see
    :mod:`placement.network.paths`); a population takes, per site and per quantile, its worst member's.

    Parameters
    ----------
    cities : pandas.DataFrame
        Member cities (``lat``, ``lon``, ``country_code``, ``population_index``).
    sites : pandas.DataFrame
        Sites (``lat``, ``lon``, ``country_code``).
    latency : LatencyModel
        The scenario's latency model.

    Returns
    -------
    RoundTripQuantiles
        ``(n, m)`` worst member p50 and p90 round trips of each population to each site, users'
        last mile included. [ms]
    """
    cities = cities.sort_values("population_index", kind="stable")
    labels = cities["population_index"].to_numpy()
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    m = len(sites)
    dtype = np.float32 if len(starts) * m > FLOAT32_RTT_FROM else np.float64
    p50, p90 = _empty_table((len(starts), m), dtype), _empty_table((len(starts), m), dtype)
    site_points = endpoints(sites)

    def fill(span: tuple[int, int]) -> None:  # populations first..last-1, whole
        first, last = span
        rows = slice(int(starts[first]), int(starts[last]) if last < len(starts) else len(cities))
        rtt = latency.population_site_rtt(endpoints(cities.iloc[rows]), site_points)
        local = starts[first:last] - starts[first]
        one_each = len(local) == len(rtt.p50_ms)  # every population one city (full resolution): nothing to reduce
        p50[first:last] = _stored(rtt.p50_ms if one_each else np.maximum.reduceat(rtt.p50_ms, local, axis=0), dtype)
        p90[first:last] = _stored(rtt.p90_ms if one_each else np.maximum.reduceat(rtt.p90_ms, local, axis=0), dtype)
        for table in (p50, p90):  # a mapped table's written pages go to the file's cache, not held by the process
            release_rows(table, first, last)

    spans = _chunks(starts, RTT_CHUNK_CITIES)
    latency.population_site_rtt(endpoints(cities.iloc[:1]), site_points)  # the shared tables, built once
    # numpy lets go of the GIL in its array loops: two threads share the cores; each writes rows of its own
    with ThreadPoolExecutor(max_workers=min(RTT_THREADS, len(spans))) as pool:
        list(pool.map(fill, spans))
    for table in (p50, p90):
        table.flags.writeable = False
    return RoundTripQuantiles(p50, p90)


def _empty_table(shape: tuple[int, int], dtype: type) -> NDArray[Any]:
    """A table to fill: in memory, or above :data:`MAPPED_RTT_FROM` cells mapped from an unnamed temporary file.

    Mapped (see :func:`mapped_from_disk`), the figures go to the file as they are computed, not copied there after.
    """
    if shape[0] * shape[1] <= MAPPED_RTT_FROM:
        return np.empty(shape, dtype=dtype)
    with tempfile.TemporaryFile(prefix="placement-rtt-") as handle:
        handle.truncate(shape[0] * shape[1] * np.dtype(dtype).itemsize)
        return np.memmap(handle, dtype=dtype, mode="r+", shape=shape)  # the map keeps the file open


RTT_CHUNK_CITIES = 1024
"""Member cities whose round trips to every site are computed at a time: each of the latency model's temporaries is
then ``1024 x sites`` figures (16 MB on 2,000 sites) rather than every city's (0.5 GB)."""


RTT_THREADS = 2
"""Chunks computed at once (the machines this runs on have two cores; the results do not depend on it)."""


FLOAT32_RTT_FROM = 16_000_000
"""Populations x sites above which round trips are kept in float32 (each table 64 MB rather than 128 at that size),
rounded up so that no pair looks nearer than it is: 34,000 cities on 2,000 sites hold 0.27 GB a table, not 0.54."""


def _chunks(starts: IntArray, size: int) -> list[tuple[int, int]]:
    """``(first, last)`` ranges of groups (each beginning at ``starts``) holding about ``size`` rows at a time."""
    out, first = [], 0
    while first < len(starts):
        end = np.searchsorted(starts, starts[first] + size, side="left")
        last = max(int(end), first + 1)
        out.append((first, last))
        first = last
    return out


def _stored(values: FloatArray, dtype: type) -> NDArray[np.floating]:
    """Round trips in the table's type: float32 rounded up (never below the float64 figure), or as they are."""
    if dtype is np.float64:
        return values
    down = values.astype(np.float32)
    np.nextafter(down, np.float32(np.inf), out=down, where=down < values)
    return down


MAPPED_RTT_FROM = FLOAT32_RTT_FROM
"""Populations x sites above which the round-trip tables, once the model is built, are kept in a temporary file and
mapped back (0.27 GB each at 2,000 sites and 34,000 populations)."""


def mapped_from_disk(table: FloatArray) -> FloatArray:
    """A large table moved to an unnamed temporary file and mapped back read-only (a small or mapped one as it is).

    :func:`worst_member_rtt_ms` writes a large table into its file as it computes it; this maps one that came
    otherwise.

    The solve never reads the round trips (its pairs carry their own); the plan's tables read them afterwards, a
    page at a time. Mapped from a file, the pages are the system's to drop and read again, not the process's
    to hold through the solve: on ``world_2k`` that is 0.54 GB less at the solve's peak. The file has no name
    and goes when the table does. (Where the temporary folder is a RAM disk, ``TMPDIR`` can point elsewhere.)

    Parameters
    ----------
    table : numpy.ndarray
        The table, contiguous.

    Returns
    -------
    numpy.ndarray
        The same figures: a read-only :class:`numpy.memmap` above :data:`MAPPED_RTT_FROM` cells, else ``table``.
    """
    if table.size <= MAPPED_RTT_FROM or isinstance(table, np.memmap):
        return table
    mapped = _empty_table(table.shape, table.dtype.type)
    mapped[:] = table
    release_rows(mapped)
    mapped.flags.writeable = False
    return mapped


def retrieval_extra_ms(
    classes: list[WorkloadClass], sites: pd.DataFrame, latency: LatencyModel, *, source: str, quantile: Quantile = Quantile.P50
) -> FloatArray:
    """Round trip from each site to each class's remote retrieval store (0 where it is local). [ms]

    Parameters
    ----------
    classes : list of WorkloadClass
        The workload classes (``retrieval_store_site``).
    sites : pandas.DataFrame
        The sites.
    latency : LatencyModel
        The scenario's latency model (data center to data center over the public internet).
    source : str
        The scenario file, for error messages.
    quantile : Quantile, optional
        Which round trip the budget uses (``latency.quantile``).

    Returns
    -------
    numpy.ndarray
        ``(k, m)`` extra retrieval time per class and site. [ms]

    Raises
    ------
    InputError
        If a class names a retrieval store that is not a site of the catalog.
    """
    extra = np.zeros((len(classes), len(sites)))
    ids = sites["id"].tolist()
    problems = []
    for k, workload in enumerate(classes):
        store = workload.retrieval_store_site
        if store is None:
            continue
        if store not in ids:
            problems.append(
                Problem(source, f"classes[{k}].retrieval_store_site", "", f"unknown site {store!r}", "use a catalog id")
            )
            continue
        j = ids.index(store)
        trips = latency.site_site_rtt(endpoints(sites), endpoints(sites.iloc[j : j + 1]))
        extra[k] = (trips.p90_ms if quantile is Quantile.P90 else trips.p50_ms)[:, 0]
        extra[k, j] = 0.0
    if problems:
        raise InputError(problems)
    return extra


def site_rtt_ms(sites: pd.DataFrame, latency: LatencyModel, quantile: Quantile) -> FloatArray:
    """``(m, m)`` round trip between every two sites (data center to data center) at the budget's quantile. [ms]"""
    trips = latency.site_site_rtt(endpoints(sites), endpoints(sites))
    out = np.array(trips.p90_ms if quantile is Quantile.P90 else trips.p50_ms, dtype=float)
    np.fill_diagonal(out, 0.0)
    return out
