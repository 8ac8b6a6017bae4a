"""The transit fit of ``calibrate_latency.py``: RIPE Atlas country pairs, leave-country-out, and the spread.

A RIPE country pair ``(X, Y)`` is a mean over pings between probes and anchors spread over both
countries, so it is modelled as the population-weighted mean over pairs of each country's largest
cities (:data:`CITIES_PER_COUNTRY`) of the transit round trip of :mod:`placement.network.transit`, plus
one constant ``C``:

``rtt_avg(X, Y) = mean over city pairs of max(backbone(x, y) x inflation(d, rx, ry), bound(d)) + C``

``C`` is what a country-pair mean of pings adds over one data-center path: probes spread over each
country rather than at its largest cities, the probes' own access, pings whose AS is registered in a
country it is not in, and the long tail a mean keeps. Fitted with the rest, it is not part of a transit
path (a plan's path is between two known points); it is why RIPE alone cannot say how much slower short
transit paths are, and so the shape is held to the physics: the inflation never below 1 and never
rising with distance, regions only adding to it (:mod:`placement.network.transit`).

Loss: the weighted mean absolute log ratio (smoothed), weights ``sqrt(log(1 + pings))``, L-BFGS-B within
the bounds, a small ridge on the region factors so a region without pairs keeps none. ``rtt_min`` is not
used (anycast pollutes it), nor pairs within one country (an AS's registration country is not where its
probes are: US-US averages 108 ms).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.optimize import linprog, minimize
from scipy.sparse import coo_matrix, hstack, identity, vstack

from placement.network.calibration import RIPE_CSV_GZ
from placement.network.countries import CITIES_CSV
from placement.network.great_circle import physics_bound_rtt_ms
from placement.network.paths import Endpoints, PathType, RoundTrips
from placement.network.transit import KNOTS_KM, TransitParams
from placement.network.world_regions import WORLD_REGIONS, region_index, world_region
from placement.world.cities import load_cities
from placement.world.geodesy import pairwise_km

FloatArray = NDArray[np.float64]

CITIES_PER_COUNTRY = 6
MIN_PINGS = 100
STEP_BOUNDS = (0.0, 1.0)  # increments of g from the far knot inward: g never negative, never rising with distance
ALPHA_BOUNDS = (0.0, 0.5)
CONSTANT_BOUNDS_MS = (0.0, 60.0)
ALPHA_RIDGE = 0.01
COUNTRY_FOLDS = 8


@dataclass
class RipePairs:
    """RIPE country pairs and, flattened, the city pairs each is averaged over."""

    pairs: pd.DataFrame  # cty1, cty2, rtt_cnt, rtt_avg, rtt_std, km (weighted), region1, region2 (of the centres)
    codes: list[str]
    pair: NDArray[np.intp]  # city pair -> country pair
    weight: FloatArray  # city pair weight (sums to 1 per country pair)
    backbone_ms: FloatArray
    km: FloatArray
    region_a: NDArray[np.intp]
    region_b: NDArray[np.intp]

    @property
    def measured(self) -> FloatArray:
        return np.asarray(self.pairs["rtt_avg"].to_numpy(float))

    @property
    def pair_regions(self) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        """Indices into :data:`WORLD_REGIONS` of each country pair's two centres."""
        order = {name: k for k, name in enumerate(WORLD_REGIONS)}
        return (
            np.asarray(self.pairs["region1"].map(order).to_numpy(), dtype=np.intp),
            np.asarray(self.pairs["region2"].map(order).to_numpy(), dtype=np.intp),
        )

    @property
    def pings_weight(self) -> FloatArray:
        return np.asarray(np.sqrt(np.log1p(self.pairs["rtt_cnt"].to_numpy(float))))

    def predict(self, transit: TransitParams, constant_ms: float) -> FloatArray:
        """Mean modelled round trip of each country pair: the transit paths' mean plus the constant. [ms]"""
        per_city = self.backbone_ms * transit.inflation(self.km, self.region_a, self.region_b)
        per_city = np.maximum(per_city, physics_bound_rtt_ms(self.km))
        return np.asarray(np.bincount(self.pair, self.weight * per_city, minlength=len(self.pairs)) + constant_ms)


def load_ripe_pairs(backbone: RoundTrips) -> RipePairs:
    """The RIPE country pairs between countries with cities, with the backbone round trips of their city pairs."""
    table = pd.read_csv(RIPE_CSV_GZ, keep_default_na=False)
    table["rtt_std"] = pd.to_numeric(table["rtt_std"], errors="coerce")
    table = table[(table["rtt_cnt"] >= MIN_PINGS) & (table["cty1"] != table["cty2"])]
    cities = load_cities(CITIES_CSV)
    cities = cities[cities["population"] > 0]
    top = cities.sort_values("population", ascending=False, kind="stable").groupby("country_code").head(CITIES_PER_COUNTRY)
    top = top[top["country_code"].isin(set(table["cty1"]) | set(table["cty2"]))].reset_index(drop=True)
    have = set(top["country_code"])
    table = table[table["cty1"].isin(have) & table["cty2"].isin(have)].reset_index(drop=True)
    lat, lon = top["lat"].to_numpy(float), top["lon"].to_numpy(float)
    points = Endpoints.of(lat, lon, top["country_code"].to_numpy(str))
    backbone_ms = backbone.rtt_ms(points, points, PathType.INTERNET).p50_ms
    km = pairwise_km(lat, lon, lat, lon)
    region = region_index(lat, lon)
    population = top["population"].to_numpy(float)
    rows = {c: np.flatnonzero(top["country_code"].to_numpy(str) == c) for c in have}
    pair, first, second, weight = [], [], [], []
    for k, (a, b) in enumerate(zip(table["cty1"], table["cty2"], strict=True)):
        i, j = rows[a], rows[b]
        w = np.outer(population[i], population[j])
        ii, jj = np.meshgrid(i, j, indexing="ij")
        pair.append(np.full(ii.size, k))
        first.append(ii.ravel())
        second.append(jj.ravel())
        weight.append((w / w.sum()).ravel())
    p, i1, i2, w = (np.concatenate(x) for x in (pair, first, second, weight))
    centre_lat = np.bincount(p, w * lat[i1]), np.bincount(p, w * lat[i2])
    centre_lon = np.bincount(p, w * lon[i1]), np.bincount(p, w * lon[i2])
    table = table.assign(
        km=np.bincount(p, w * km[i1, i2]),
        region1=world_region(centre_lat[0], centre_lon[0]),
        region2=world_region(centre_lat[1], centre_lon[1]),
    )
    return RipePairs(table, sorted(have), p, w, backbone_ms[i1, i2], km[i1, i2], region[i1], region[i2])


def _params(x: FloatArray, p90: tuple[float, ...] = TransitParams().p90_ratio_by_band) -> TransitParams:
    n = len(KNOTS_KM)
    log_inflation = np.cumsum(x[:n][::-1])[::-1]  # knot k: the sum of the steps from k outward
    alpha = x[n : n + len(WORLD_REGIONS)]
    return TransitParams(KNOTS_KM, tuple(float(v) for v in log_inflation), tuple(float(v) for v in alpha), p90)


def fit_transit(ripe: RipePairs, rows: NDArray[np.bool_]) -> tuple[TransitParams, float]:
    """Transit parameters and the country-pair constant fitted on ``ripe.pairs[rows]``. [ms]"""
    n, m = len(KNOTS_KM), len(WORLD_REGIONS)
    measured, weight = ripe.measured[rows], ripe.pings_weight[rows]

    def loss(x: FloatArray) -> float:
        log_ratio = np.log(ripe.predict(_params(x), float(x[-1]))[rows] / measured)
        smooth = np.sqrt(log_ratio * log_ratio + 1e-4)
        return float(np.sum(weight * smooth) / weight.sum() + ALPHA_RIDGE * np.sum(x[n : n + m] ** 2))

    start = np.r_[np.full(n, 0.02), np.zeros(m), 10.0]
    bounds = [STEP_BOUNDS] * n + [ALPHA_BOUNDS] * m + [CONSTANT_BOUNDS_MS]
    x = np.asarray(minimize(loss, start, method="L-BFGS-B", bounds=bounds).x)
    return _params(x), float(x[-1])


def country_group(code: str) -> int:
    """A country's fold of the leave-country-out split: a stable hash of its code, one of :data:`COUNTRY_FOLDS`."""
    return zlib.crc32(code.encode()) % COUNTRY_FOLDS


def cross_validate_transit(ripe: RipePairs, by: str = "country") -> tuple[FloatArray, NDArray[np.str_]]:
    """Held-out predictions of every pair: each fold is fitted on the pairs with neither end in it.

    ``by="country"``: the countries are cut into :data:`COUNTRY_FOLDS` groups by a hash of their code
    (leave-country-out: a pair is predicted by a fit that saw neither of its countries, but other countries
    of their regions, so the country-pair constant, a property of RIPE's probes, carries over).
    ``by="region"``: the six world regions (a pair's region is that of its countries' centres); harsher,
    because a region's factor and the constant are then fitted on other regions' probes. A pair touching two
    folds is predicted by the first fold that holds it out.
    """
    if by == "country":
        folds = [str(k) for k in range(COUNTRY_FOLDS)]
        group = {c: str(country_group(c)) for c in ripe.codes}
        side_a = ripe.pairs["cty1"].map(group).to_numpy(str)
        side_b = ripe.pairs["cty2"].map(group).to_numpy(str)
    else:
        folds = list(WORLD_REGIONS)
        side_a, side_b = ripe.pairs["region1"].to_numpy(str), ripe.pairs["region2"].to_numpy(str)
    predicted, fold = np.full(len(ripe.pairs), np.nan), np.full(len(ripe.pairs), "", dtype=object)
    for name in folds:
        touches = (side_a == name) | (side_b == name)
        todo = touches & np.isnan(predicted)
        if not todo.any():
            continue
        transit, constant = fit_transit(ripe, ~touches)
        predicted[todo] = ripe.predict(transit, constant)[todo]
        fold[todo] = name
        print(
            f"  transit fold {by} {name}: {int(todo.sum())} held-out pairs, fitted on {int((~touches).sum())}, "
            f"constant {constant:.1f} ms",
            flush=True,
        )
    return predicted, np.asarray(fold, dtype=str)


def p90_ratios(
    measured: FloatArray,
    predicted: FloatArray,
    band: NDArray[np.intp],
    n_bands: int,
    floor: tuple[float, ...] | None = None,
    held_below: int = 0,
) -> tuple[float, ...]:
    """The 90th percentile of measured over predicted in each band (pooled where a band has fewer than 20).

    Never below 1, nor below ``floor`` (one figure per band) where given. Bands below ``held_below`` take
    band ``held_below``'s figure (for transit: the RIPE pairs under 500 km are 77 neighbouring countries
    whose pings spread by ~90 % of their mean, the reason :data:`placement.network.transit.KNOTS_KM` has no
    knot below 1,000 km; their spread is the probes' access, not a data center's path).
    """
    ratio = measured / predicted
    pooled = float(np.percentile(ratio, 90))
    out = []
    for k in range(n_bands):
        r = ratio[band == k]
        value = float(np.percentile(r, 90)) if len(r) >= 20 else pooled
        out.append(round(max(value, 1.0, floor[k] if floor else 1.0), 3))
    return tuple(out[held_below] if k < held_below else v for k, v in enumerate(out))


SPREAD_TAU = 0.9
SPREAD_BOUNDS = (-0.5, 0.5)


def fit_spread(
    measured: FloatArray,
    predicted: FloatArray,
    band: NDArray[np.intp],
    region_a: NDArray[np.intp],
    region_b: NDArray[np.intp],
    n_bands: int,
    floor: tuple[float, ...],
    held_below: int = 0,
    spread_from_band: int = 0,
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The p90 of transit paths by band and region: a 0.9-quantile regression of ``log(measured / predicted)``.

    ``log p90/p50 = q[band] + s[region_a] + s[region_b]``, fitted by minimising the pinball loss (a linear
    program, HiGHS): about nine pairs in ten lie at or below it, in each band and each region, where a ratio
    per band alone covered 95 % of Europe's pairs and 84 % of Oceania's. ``s`` is signed, within
    :data:`SPREAD_BOUNDS`, and weighted to a mean of 0 over the pairs' ends (else ``q`` and ``s`` trade a
    constant); no pair's ratio is below ``floor`` (the backbone's ratio: a transit path is no less spread), and
    bands below ``held_below`` take band ``held_below``'s ``q`` (see :func:`p90_ratios`). Pairs in bands below
    ``spread_from_band`` take no region term: under 1,500 km the RIPE pairs are mostly European (18 of 552
    touch North America), too few elsewhere to say a region's spread, so a short path's ratio is its band's.

    Returns
    -------
    tuple
        ``(p90_ratio_by_band, region_log_spread)``: ``exp(q)`` per band, ``s`` per world region.
    """
    fitted = band >= held_below  # the bands held below copy a fitted band's q: their pairs do not set it
    measured, predicted, band, region_a, region_b = (x[fitted] for x in (measured, predicted, band, region_a, region_b))
    y = np.log(measured / predicted)
    n, m = len(y), len(WORLD_REGIONS)
    rows = np.arange(n)
    column = band
    in_band = coo_matrix((np.ones(n), (rows, column)), shape=(n, n_bands))
    regional = (band >= spread_from_band).astype(float)
    ends = coo_matrix((regional, (rows, region_a)), shape=(n, m)) + coo_matrix((regional, (rows, region_b)), shape=(n, m))
    # Variables: q (bands), s (regions), then each pair's excess above the quantile and shortfall below it.
    fit_rows = hstack([in_band, ends, identity(n), -identity(n)])
    ends_per_region = np.asarray(ends.sum(axis=0)).ravel()
    mean_zero = coo_matrix(np.r_[np.zeros(n_bands), ends_per_region, np.zeros(2 * n)][None, :])
    cost = np.r_[np.zeros(n_bands + m), np.full(n, SPREAD_TAU / n), np.full(n, (1 - SPREAD_TAU) / n)]
    bounds = [(float(np.log(max(floor[k], 1.0))), None) for k in range(n_bands)]
    bounds += [SPREAD_BOUNDS if ends_per_region[r] else (0.0, 0.0) for r in range(m)] + [(0.0, None)] * (2 * n)
    equality = vstack([fit_rows, mean_zero]).tocsr()
    # Each pair's ratio at least its band's floor: the spread a plan is given is the one fitted.
    at_least_floor = -hstack([in_band, ends, coo_matrix((n, 2 * n))]).tocsr()
    log_floor = np.log(np.maximum(np.asarray(floor, dtype=float), 1.0))[band]
    result = linprog(cost, A_ub=at_least_floor, b_ub=-log_floor, A_eq=equality, b_eq=np.r_[y, 0.0], bounds=bounds, method="highs")
    if not result.success:
        raise RuntimeError(f"transit spread: {result.message}")
    q = np.exp(result.x[:n_bands])
    q[:held_below] = q[held_below]
    spread = result.x[n_bands : n_bands + m]
    return tuple(round(float(v), 3) for v in q), tuple(round(float(v), 4) for v in spread)


def held_out_spread_coverage(
    measured: FloatArray,
    predicted: FloatArray,
    band: NDArray[np.intp],
    region_a: NDArray[np.intp],
    region_b: NDArray[np.intp],
    fold: NDArray[np.str_],
    n_bands: int,
    floor: tuple[float, ...],
    held_below: int = 0,
    spread_from_band: int = 0,
) -> NDArray[np.bool_]:
    """Whether each measured value is at or below its held-out transit p90 (:func:`fit_spread` on the other folds).

    A region no training pair touches (a leave-region-out fold) gets spread 0: the band's figure.
    """
    covered = np.zeros(len(measured), dtype=bool)
    for name in np.unique(fold):
        here = fold == name
        q, s = fit_spread(
            measured[~here],
            predicted[~here],
            band[~here],
            region_a[~here],
            region_b[~here],
            n_bands,
            floor,
            held_below,
            spread_from_band,
        )
        regional = band[here] >= spread_from_band
        log_spread = np.where(regional, np.asarray(s)[region_a[here]] + np.asarray(s)[region_b[here]], 0.0)
        ratio = np.asarray(q)[band[here]] * np.exp(log_spread)
        covered[here] = measured[here] <= predicted[here] * np.maximum(ratio, np.asarray(floor)[band[here]])
    return covered


def held_out_coverage(
    measured: FloatArray,
    predicted: FloatArray,
    band: NDArray[np.intp],
    fold: NDArray[np.str_],
    n_bands: int,
    floor: tuple[float, ...] | None = None,
    held_below: int = 0,
) -> NDArray[np.bool_]:
    """Whether each measured value is at or below its held-out p90: fold r's ratios come from the other folds."""
    covered = np.zeros(len(measured), dtype=bool)
    for region in np.unique(fold):
        here = fold == region
        ratios = np.asarray(p90_ratios(measured[~here], predicted[~here], band[~here], n_bands, floor, held_below))
        covered[here] = measured[here] <= predicted[here] * ratios[band[here]]
    return covered
