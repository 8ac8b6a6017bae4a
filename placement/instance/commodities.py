"""Commodities: each (population, class), or its regulated share, and the sites it may be served at.

The sites inside its objective that residency permits; interchangeable commodities merge into one model row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._process import release_rows
from placement._types import FloatArray, IntArray, OptionCodes
from placement.instance.pair_mask import PairMask
from placement.instance.record import flatten_sets, rung_index
from placement.profiles.build import ClassProfile
from placement.profiles.tiers import ProfileSets
from placement.profiles.ttft_budget import ttft_p99_ms
from placement.rules.residency import (
    CommoditySplit,
    Regime,
    regime_mask,
    residency_mask,
)
from placement.scenario.classes import WorkloadClass
from placement.scenario.sections import ResidencySection

ROWS_CHUNK = 4096
"""Commodities whose round trips are summed into their rows at a time: at full resolution all of them at once
would gather a (commodities x sites) array (~240 MB on ~300 sites, twice over) just to add it up."""


def commodity_options(
    sets: ProfileSets,
    rtt_ms: FloatArray,
    retrieval_extra: FloatArray,
    commodity_class: IntArray,
    commodity_population: IntArray,
) -> OptionCodes:
    """``(c, m)`` option (:func:`flatten_sets`) of every commodity at every site: its site's set, the loosest rung that fits.

    One set, one block of :data:`ROWS_CHUNK` populations and one class at a time: a (populations x sites) array per
    class at once was 2.5 GB of the 2,000-site world's peak.
    """
    flat, offset, _ = flatten_sets(sets.sets)
    n, m = rtt_ms.shape
    group = np.zeros(m, dtype=np.int64) if sets.site_set is None else sets.site_set
    # a byte per pair where the options fit in one (0.2 GB of the 2,000-site world's table)
    out = np.zeros((len(commodity_class), m), dtype=np.int8 if len(flat) <= np.iinfo(np.int8).max else np.int16)
    by_class = [np.flatnonzero(commodity_class == k) for k in range(len(sets.sets[0]) if sets.sets else 0)]
    by_class = [of[np.argsort(commodity_population[of], kind="stable")] for of in by_class]
    for g, rungs in enumerate(sets.sets):
        where = np.flatnonzero(group == g)
        every = len(where) == m
        for start in range(0, n, ROWS_CHUNK):
            stop = min(start + ROWS_CHUNK, n)
            rtt = rtt_ms[start:stop] if every else rtt_ms[start:stop][:, where]
            for k, of_class in enumerate(by_class[: len(rungs)]):
                populations = commodity_population[of_class]
                rows = of_class[np.searchsorted(populations, start) : np.searchsorted(populations, stop)]
                if len(rows) == 0:
                    continue
                extra = np.broadcast_to(retrieval_extra[k][None, where], rtt.shape)
                rung = offset[g, k] + rung_index(rungs, np.broadcast_to(k, rtt.shape), rtt, extra)
                chosen = rung[commodity_population[rows] - start]
                if every:
                    out[rows] = chosen
                else:
                    out[np.ix_(rows, where)] = chosen
            release_rows(rtt_ms, start, stop)  # a mapped table's pages go back as each block is done
    return out


def merge_commodities(
    allowed: PairMask,
    commodity_class: IntArray,
    commodity_slices: FloatArray,
    codes: OptionCodes | None = None,
) -> tuple[IntArray, IntArray]:
    """Group interchangeable commodities: same class, same allowed sites, same demand shape.

    Parameters
    ----------
    allowed : PairMask
        ``(c, m)`` allowed pairs.
    commodity_class : numpy.ndarray of int
        ``(c,)`` class of each commodity.
    commodity_slices : numpy.ndarray
        ``(c, T)`` demand per slice.
    codes : numpy.ndarray of int, optional
        ``(c, m)`` option of each pair (a rung of ``serving.node_ttft_ladder``, a site's KV tier): merged commodities
        run the same option at every allowed site.

    Returns
    -------
    tuple of numpy.ndarray
        ``row_of_commodity`` (``(c,)``, -1 for commodities with no allowed site) and the first
        commodity of each row.
    """
    row_of_commodity = np.full(len(commodity_class), -1, dtype=np.int64)
    rows: dict[bytes, int] = {}
    firsts: list[int] = []
    peaks = np.maximum(commodity_slices.max(axis=1), 1e-300)
    shapes = np.round(commodity_slices / peaks[:, None], 6)
    for c in np.flatnonzero(allowed.any_by_row()).tolist():
        key = int(commodity_class[c]).to_bytes(4, "little") + allowed.bits[c].tobytes() + shapes[c].tobytes()
        if codes is not None:
            key += codes[c][allowed.row(c)].tobytes()
        row = rows.setdefault(key, len(rows))
        if row == len(firsts):
            firsts.append(c)
        row_of_commodity[c] = row
    return row_of_commodity, np.array(firsts, dtype=np.int64)


def commodities(n_populations: int, n_classes: int) -> tuple[IntArray, IntArray]:
    """Population and class index of every commodity (one per population and class, population-major).

    Parameters
    ----------
    n_populations, n_classes : int
        Numbers of populations and classes.

    Returns
    -------
    tuple of numpy.ndarray
        ``commodity_population`` and ``commodity_class``, each ``(n_populations * n_classes,)``.
    """
    population = np.repeat(np.arange(n_populations, dtype=np.int64), n_classes)
    workload = np.tile(np.arange(n_classes, dtype=np.int64), n_populations)
    return population, workload


def commodity_within_budget(
    rtt_ms: FloatArray,
    profiles: list[ClassProfile],
    retrieval_extra: FloatArray,
    commodity_class: IntArray,
    commodity_population: IntArray,
    *,
    fixed_ms: FloatArray | None = None,
) -> PairMask:
    """Whether each commodity meets its class's p99 TTFT objective at each site, as bits.

    One class at a time, so that no (commodities x sites) TTFT table is held, nor the answer as bytes.

    Parameters
    ----------
    rtt_ms : numpy.ndarray
        ``(n, m)`` population-site round trips. [ms]
    profiles : list of ClassProfile
        Node-side TTFT, round trips and objective of each class.
    retrieval_extra : numpy.ndarray
        ``(k, m)`` remote retrieval round trip per class and site. [ms]
    commodity_class, commodity_population : numpy.ndarray of int
        Class and population of each commodity (:func:`commodities`, then the residency regimes' split).
    fixed_ms : numpy.ndarray, optional
        ``(k, m)`` the fixed TTFT of each class at each site where it differs by site (sites of several KV tiers);
        default each profile's. [ms]

    Returns
    -------
    PairMask
        ``(c, m)``.
    """
    within = PairMask.empty(len(commodity_class), rtt_ms.shape[1])
    inside = np.empty(rtt_ms.shape, dtype=bool)  # by population, one class at a time
    for k, profile in enumerate(profiles):
        for start in range(0, len(rtt_ms), ROWS_CHUNK):  # the TTFT table a chunk of populations at a time
            rows = slice(start, start + ROWS_CHUNK)
            if fixed_ms is None:
                ttft = ttft_p99_ms(rtt_ms[rows], profile, retrieval_extra_ms=retrieval_extra[k][None, :])
            else:
                ttft = (
                    profile.round_trips * np.asarray(rtt_ms[rows], dtype=float)
                    + fixed_ms[k][None, :]
                    + retrieval_extra[k][None, :]
                )
            inside[rows] = ttft <= profile.ttft_objective_ms
            release_rows(rtt_ms, start, start + ROWS_CHUNK)
        of_class = commodity_class == k
        within.bits[of_class] = PairMask.of(inside).bits[commodity_population[of_class]]
    return within


def commodity_demand(
    population_slices: FloatArray,
    population_mean: FloatArray,
    classes: list[WorkloadClass],
    commodity_population: IntArray,
    commodity_class: IntArray,
) -> tuple[FloatArray, FloatArray]:
    """Demand of every commodity per slice (flat for time-shiftable classes) and its daily mean.

    Parameters
    ----------
    population_slices : numpy.ndarray
        ``(n, T)`` demand of each population per slice. [tokens/s]
    population_mean : numpy.ndarray
        ``(n,)`` daily mean demand. [tokens/s]
    classes : list of WorkloadClass
        Classes (``share``, ``time_shiftable``).
    commodity_population, commodity_class : numpy.ndarray of int
        From :func:`commodities`.

    Returns
    -------
    tuple of numpy.ndarray
        ``(c, T)`` demand per slice and ``(c,)`` daily mean. [tokens/s]
    """
    shares = np.array([c.share for c in classes])[commodity_class]
    shiftable = np.array([c.time_shiftable for c in classes])[commodity_class]
    slices = population_slices[commodity_population] * shares[:, None]
    mean = population_mean[commodity_population] * shares
    slices[shiftable] = mean[shiftable, None]
    return slices, mean


def commodity_permitted(
    population_country: NDArray[np.str_],
    site_country: NDArray[np.str_],
    residency: ResidencySection,
    split: CommoditySplit,
    regimes: list[Regime],
) -> PairMask:
    """``(c, m)`` commodity-site pairs residency permits (the whole-country rules and the regimes), as bits.

    A commodity's row depends only on its population's country and its regime: each distinct pair of them is
    worked out once (a few hundred rows, not a (commodities x sites) byte table of 200 MB at 2,000 sites).
    """
    country = np.asarray(population_country, dtype=str)[split.population]
    keys = pd.MultiIndex.from_arrays([country, split.regime])
    codes, distinct = pd.factorize(keys)
    distinct_country = np.asarray(distinct.get_level_values(0), dtype=str)
    permitted = residency_mask(distinct_country, site_country, residency)
    if regimes:
        one_each = np.arange(len(distinct), dtype=np.int64)
        own = CommoditySplit(
            one_each, np.zeros(len(distinct), dtype=np.int64), np.asarray(distinct.get_level_values(1), dtype=np.int64),
            np.ones(len(distinct)),
        )  # fmt: skip
        permitted &= regime_mask(distinct_country, site_country, own, regimes)
    return PairMask(PairMask.of(permitted).bits[codes], permitted.shape[1])


def reach_fixed_ms(sets: ProfileSets, m: int) -> FloatArray | None:
    """``(k, m)`` each class's least fixed TTFT at each site's KV tier (any rung), or None with one set."""
    if sets.site_set is None:
        return None
    per_set = np.array([[min(p.fixed_ttft_ms for p in rungs) for rungs in group] for group in sets.sets])  # (G, k)
    return np.asarray(per_set[sets.site_set].T)
