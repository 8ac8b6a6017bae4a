"""Fit the latency model on measured round trips; print its error per source and distance band, old model beside it.

Usage: .venv/bin/python benchmarks/calibrate_latency.py [--no-write] [--maxiter N]

Data (``data/latency/``, sources and licences in ``data/SOURCES.md``):

- ``azure``: Microsoft's published P50 round trips between Azure regions (one provider's backbone).
- ``aws_gcp``: VM-to-VM pings between AWS and GCP regions' public IPs, Feb 2022.
- ``cloudping``: AWS inter-region median TCP round trips (year to April 2022), with Cape Town and Bahrain.
- ``ibm``: IBM Cloud's 13-city inter-region 30-day mean round trips (five weekly snapshots averaged).
- ``ripe``: RIPE Atlas country-pair mean round trips, 2025 (``rtt_avg`` weighted by ``rtt_cnt``; ``rtt_min`` is
  polluted by anycast). The per-country last-mile prior and the transit fit (3).

Three fits (loss: mean absolute log ratio, bounded Nelder-Mead from a fixed start for 1-2; 3 in ``transit_fit.py``):

1. ``backbone`` (provider DC<->DC): route factors, hop and fixed delay on Azure's training regions (the seeded
   30 % region hold-out of :mod:`placement.network.calibration`, unchanged).
2. ``internet`` (public DC<->DC; what ``placement rtt A B`` and the plan's paths use): the same four parameters on
   aws_gcp + cloudping + ibm together, with **leave-region-out cross-validation**: the world is cut into six
   regions (North America, South America, Europe, Africa + Middle East, Asia, Oceania); fold r is fitted on the
   pairs with no end in r and predicts the pairs with an end in r (a pair touching two regions is predicted by the
   first fold that holds it out). "held-out" below is those predictions; "fitted" is the final fit on every pair.

3. ``transit`` (a colocation, greenfield or hosting site on commodity transit; ``network: transit``): the
   inflation of the internet path by distance (non-increasing, never below 1) and by world region (only adding)
   on the RIPE country pairs, each modelled as the mean over its countries' largest cities plus one constant;
   leave-country-out (eight groups of countries; "held-out") and leave-region-out as above ("held-out region",
   harsher: the constant of RIPE's probes does not carry over between regions); see ``benchmarks/transit_fit.py``.
   Its p90 ratio per band is the 90th percentile of leave-country-out measured over predicted.

Coverage: the share of held-out measurements at or below the model's p90, per source and band, printed for the
cloud sources (backbone p90) and RIPE (transit p90), is the check that the p90 is a quantile.

Priors (not fitted, no data in the sources can tell them): the firewall round trip on links into China (no
mainland-China region in any source), the detour of a point off its hub, the border penalty of a country with no
hub. The p90/p50 ratio of each distance band is the 90th percentile of measured/modelled on the held-out predictions
(all cloud sources pooled), so about nine held-out paths in ten are at or below it. The last mile of each country comes from RIPE Atlas: country-pair
means are decomposed as ``rtt_avg(X, Y) ~ internet(X, Y) + e_X + e_Y`` (weighted least squares, internet round
trip between the countries' population-weighted centres). ``e_X`` is noisy (a large country's spread, domestic
backhaul to its international gateways and anycast all land in it; the fit's median residual is ~20 ms), so X's
last mile is ``e_X`` clipped to 2..40 ms and shrunk halfway to the median of its Natural Earth continent; a
country with fewer than 20 partner countries takes its continent's median (the world's where it has none).

The old model is the one on main before this change: the backbone graph with the Azure-fitted parameters applied to
every pair, without the restored overland links (``scope: regional`` in links.csv; a backbone never uses them, public
paths use them only when an end is in a country they join).

Writes ``data/network/calibrated.json`` (read by :mod:`placement.network.paths` as the default).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.optimize import minimize

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import transit_fit  # noqa: E402

from placement.network.calibration import (  # noqa: E402
    SPLIT_SEED,
    error_metrics,
    graph_predict,
    load_aws_gcp_pairs,
    load_azure_pairs,
    load_cloudping_pairs,
    load_ibm_pairs,
    load_pairs,
    load_ripe_country_pairs,
    split_regions,
)
from placement.network.countries import CITIES_CSV, continent_of_countries, country_of_points  # noqa: E402
from placement.network.load import (  # noqa: E402
    CALIBRATED_JSON,
    GraphLatencyParams,
    Network,
    default_network,
    global_network,
    params_dict,
)
from placement.network.paths import (  # noqa: E402
    BAND_EDGES_KM,
    Endpoints,
    PathExtras,
    PathType,
    RoundTrips,
    band_ratio,
    load_extras,
)
from placement.network.transit import TransitParams  # noqa: E402
from placement.network.world_regions import WORLD_REGIONS, region_index, world_region  # noqa: E402
from placement.world.cities import load_cities  # noqa: E402
from placement.world.geodesy import great_circle_km  # noqa: E402

OLD_PARAMS = GraphLatencyParams(
    route_factor_terrestrial=1.3209,
    route_factor_submarine=1.1757,
    hop_ms=1.6029,
    fixed_ms=5.5937,
    access_route_factor=1.3209,
    last_mile_ms=8.0,
)
"""The parameters committed on main before the public-internet fit (Azure only)."""

FIREWALL_MS = 25.0
LAST_MILE_MIN_MS, LAST_MILE_MAX_MS, MIN_PARTNERS = 2.0, 40.0, 20
DETOUR_MS = 3.0
BORDER_MS = 5.0
LOWER = np.array([1.0, 1.0, 0.0, 0.0])
UPPER = np.array([3.0, 2.0, 5.0, 15.0])
START = np.array([1.5, 1.2, 1.0, 2.0])
BACKBONE_START = np.array([1.5, 1.15, 0.5, 1.0])  # the start of the Azure-only fit on main, kept so it refits alike
HELD_BELOW = 1
SPREAD_FROM_BAND = 2
"""Transit's region spreads apply from 1,500 km (``transit_fit.fit_spread``: too few short pairs outside Europe)."""
"""Transit's p90 ratio under 500 km is the 0.5-1.5k band's (``transit_fit.p90_ratios``: too few, too noisy pairs)."""
PUBLIC = ("aws_gcp", "cloudping", "ibm")
BAND_NAMES = ("<0.5k", "0.5-1.5k", "1.5-4k", "4-8k", "8-12k", ">12k")


def old_network(network: Network) -> Network:
    """The network before this change: without the (regional) overland links it restores."""
    return global_network(network)


def _params(x: NDArray[np.float64], firewall_ms: float) -> GraphLatencyParams:
    """Graph parameters from the fitted vector (the access route factor is tied to the terrestrial one)."""
    x = np.clip(x, LOWER, UPPER)
    return GraphLatencyParams(
        route_factor_terrestrial=float(x[0]),
        route_factor_submarine=float(x[1]),
        hop_ms=float(x[2]),
        fixed_ms=float(x[3]),
        access_route_factor=float(x[0]),
        firewall_ms=firewall_ms,
    )


def internet_params(x: NDArray[np.float64]) -> GraphLatencyParams:
    return _params(x, FIREWALL_MS)


def backbone_params(x: NDArray[np.float64]) -> GraphLatencyParams:
    return _params(x, GraphLatencyParams().firewall_ms)


class Points:
    """The distinct endpoints of a pair table, with countries, and each pair's indices into them."""

    def __init__(self, pairs: pd.DataFrame) -> None:
        ends = pd.concat(
            [
                pairs[["a", "a_lat", "a_lon"]].set_axis(["r", "lat", "lon"], axis=1),
                pairs[["b", "b_lat", "b_lon"]].set_axis(["r", "lat", "lon"], axis=1),
            ]
        ).drop_duplicates("r")
        self.index = {r: k for k, r in enumerate(ends["r"])}
        lat, lon = ends["lat"].to_numpy(float), ends["lon"].to_numpy(float)
        self.endpoints = Endpoints.of(lat, lon, country_of_points(lat, lon))
        self.ia = pairs["a"].map(self.index).to_numpy()
        self.ib = pairs["b"].map(self.index).to_numpy()

    def predict(self, round_trips: RoundTrips, path: PathType) -> NDArray[np.float64]:
        matrix = round_trips.rtt_ms(self.endpoints, self.endpoints, path).p50_ms
        return np.asarray(matrix[self.ia, self.ib])


def log_loss(predicted: NDArray[np.float64], measured: NDArray[np.float64]) -> float:
    return float(np.mean(np.abs(np.log(predicted / measured))))


def fit(
    objective: Callable[[NDArray[np.float64]], float], maxiter: int, start: NDArray[np.float64] = START
) -> NDArray[np.float64]:
    result = minimize(
        objective,
        start,
        method="Nelder-Mead",
        bounds=list(zip(LOWER, UPPER, strict=True)),
        options={"xatol": 1e-3, "fatol": 1e-5, "maxiter": maxiter},
    )
    return np.asarray(result.x)


def fit_internet(
    pairs: pd.DataFrame, rows: NDArray[np.bool_], network: Network, extras: PathExtras, maxiter: int
) -> GraphLatencyParams:
    """The internet parameters fitted on ``pairs[rows]``."""
    sub = pairs[rows].reset_index(drop=True)
    points, measured = Points(sub), sub["rtt_ms"].to_numpy(float)

    def objective(x: NDArray[np.float64]) -> float:
        trips = RoundTrips(network, OLD_PARAMS, internet_params(x), extras)
        return log_loss(points.predict(trips, PathType.INTERNET), measured)

    return internet_params(fit(objective, maxiter))


def cross_validate(
    pairs: pd.DataFrame, network: Network, extras: PathExtras, maxiter: int
) -> tuple[NDArray[np.float64], NDArray[np.str_]]:
    """Leave-region-out predictions of every pair, and the region each pair was held out with."""
    region_a = world_region(pairs["a_lat"].to_numpy(float), pairs["a_lon"].to_numpy(float))
    region_b = world_region(pairs["b_lat"].to_numpy(float), pairs["b_lon"].to_numpy(float))
    predicted, fold = np.full(len(pairs), np.nan), np.full(len(pairs), "", dtype=object)
    points = Points(pairs)
    for region in WORLD_REGIONS:
        touches = (region_a == region) | (region_b == region)
        todo = touches & np.isnan(predicted)
        if not todo.any():
            continue
        params = fit_internet(pairs, ~touches, network, extras, maxiter)
        predicted[todo] = points.predict(RoundTrips(network, OLD_PARAMS, params, extras), PathType.INTERNET)[todo]
        fold[todo] = region
        print(f"  fold {region}: {todo.sum()} held-out pairs, fitted on {(~touches).sum()}", flush=True)
    return predicted, np.asarray(fold, dtype=str)


def band_of(km: NDArray[np.float64]) -> NDArray[np.intp]:
    return np.asarray(np.searchsorted(np.asarray(BAND_EDGES_KM), km, side="right"))


def band_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model, source, split and band: n, median and p90 absolute error, median signed error. [%]"""
    signed = 100.0 * (frame["predicted_ms"] - frame["rtt_ms"]) / frame["rtt_ms"]
    frame = frame.assign(signed=signed, absolute=signed.abs(), band=np.asarray(BAND_NAMES)[band_of(frame["km"].to_numpy())])
    grouped = frame.groupby(["model", "source", "split", "band"], sort=False)
    table = grouped.agg(
        n=("signed", "size"),
        median_abs_pct=("absolute", "median"),
        p90_abs_pct=("absolute", lambda s: float(np.percentile(s, 90))),
        median_signed_pct=("signed", "median"),
    )
    return table.reset_index()


def print_table(table: pd.DataFrame) -> None:
    order = {b: k for k, b in enumerate(BAND_NAMES)}
    table = table.sort_values(["source", "split", "band", "model"], key=lambda s: s.map(order) if s.name == "band" else s)
    print("| source | split | band | model | n | median abs | p90 abs | median signed |")
    print("|---|---|---|---|---|---|---|---|")
    for row in table.itertuples(index=False):
        print(
            f"| {row.source} | {row.split} | {row.band} | {row.model} | {row.n} | {row.median_abs_pct:.1f} % | "
            f"{row.p90_abs_pct:.1f} % | {row.median_signed_pct:+.1f} % |"
        )


def country_centres() -> pd.DataFrame:
    """Population-weighted centre of each country's GeoNames cities (``country_code, lat, lon``)."""
    cities = load_cities(CITIES_CSV)
    weights = cities["population"].astype(float)
    grouped = cities.assign(w=weights, wlat=cities["lat"] * weights, wlon=cities["lon"] * weights).groupby("country_code")
    sums = grouped[["w", "wlat", "wlon"]].sum()
    centres = pd.DataFrame({"lat": sums["wlat"] / sums["w"], "lon": sums["wlon"] / sums["w"]}).rename_axis("country_code")
    return centres.dropna()  # a country whose cities all have population 0 has no weighted centre


def last_mile_priors(round_trips: RoundTrips) -> tuple[dict[str, float], float, dict[str, float]]:
    """Per-country last mile from RIPE Atlas (see the module docstring), the median, and the fit's residuals."""
    ripe = load_ripe_country_pairs()
    centres = country_centres()
    ripe = ripe[(ripe["cty1"] != ripe["cty2"]) & ripe["cty1"].isin(centres.index) & ripe["cty2"].isin(centres.index)]
    codes = sorted(set(ripe["cty1"]) | set(ripe["cty2"]))
    where = centres.loc[codes]
    points = Endpoints.of(where["lat"], where["lon"], np.asarray(codes))
    model = round_trips.rtt_ms(points, points, PathType.INTERNET).p50_ms
    index = {c: k for k, c in enumerate(codes)}
    ia, ib = ripe["cty1"].map(index).to_numpy(), ripe["cty2"].map(index).to_numpy()
    excess = ripe["rtt_avg"].to_numpy(float) - model[ia, ib]
    design = np.zeros((len(ripe), len(codes)))
    design[np.arange(len(ripe)), ia] = 1.0
    design[np.arange(len(ripe)), ib] = 1.0
    weight = np.sqrt(np.log1p(ripe["rtt_cnt"].to_numpy(float)))
    solution, *_ = np.linalg.lstsq(design * weight[:, None], excess * weight, rcond=None)
    partners = np.bincount(np.r_[ia, ib], minlength=len(codes))
    own = pd.Series(np.clip(solution, LAST_MILE_MIN_MS, LAST_MILE_MAX_MS), index=codes)[partners >= MIN_PARTNERS]
    continent = continent_of_countries()
    by_continent = own.groupby(own.index.map(lambda c: continent.get(c, ""))).median()
    median = float(own.median())
    prior = {}
    for code in codes:
        shrunk_to = float(by_continent.get(continent.get(code, ""), median))
        prior[code] = round(0.5 * float(own[code]) + 0.5 * shrunk_to if code in own.index else shrunk_to, 1)
    residual = excess - design @ solution
    fit = {"median_abs_residual_ms": round(float(np.median(np.abs(residual))), 1), "pairs": len(ripe)}
    return prior, round(median, 1), {**fit, "by_continent_ms": by_continent.round(1).to_dict()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-write", action="store_true", help="do not write data/network/calibrated.json")
    parser.add_argument("--maxiter", type=int, default=250, help="Nelder-Mead iterations per fit")
    args = parser.parse_args()

    network = default_network()
    extras = PathExtras(detour_ms=DETOUR_MS, border_ms=BORDER_MS)

    # 1. backbone on Azure's training regions (as before).
    azure = load_pairs()
    train = split_regions(azure)
    measured = azure["rtt_ms"].to_numpy(float)
    backbone = backbone_params(
        fit(
            lambda x: log_loss(graph_predict(azure[train], backbone_params(x), network=global_network(network)), measured[train]),
            args.maxiter,
            BACKBONE_START,
        )
    )
    backbone_metrics = error_metrics(graph_predict(azure, backbone, network=global_network(network)), measured, train)
    print(f"backbone (Azure): {params_dict(backbone)}", flush=True)

    # 2. internet on the public sources, leave-region-out.
    public = pd.concat([load_aws_gcp_pairs(), load_cloudping_pairs(), load_ibm_pairs()], ignore_index=True)
    public_measured = public["rtt_ms"].to_numpy(float)
    print("internet: leave-region-out cross-validation", flush=True)
    held_out, public_fold = cross_validate(public, network, extras, args.maxiter)
    internet = fit_internet(public, np.ones(len(public), dtype=bool), network, extras, args.maxiter)
    print(f"internet (public): {params_dict(internet)}", flush=True)
    km_public = great_circle_km(public["a_lat"], public["a_lon"], public["b_lat"], public["b_lon"])
    public_band = band_of(km_public)
    n_bands = len(BAND_EDGES_KM) + 1
    extras = replace(extras, p90_ratio_by_band=transit_fit.p90_ratios(public_measured, held_out, public_band, n_bands))
    trips = RoundTrips(network, backbone, internet, extras)

    prior, prior_median, prior_fit = last_mile_priors(trips)
    extras = replace(extras, last_mile_default_ms=prior_median, last_mile_by_country=tuple(sorted(prior.items())))
    trips = RoundTrips(network, backbone, internet, extras)

    # 3. transit on the RIPE Atlas country pairs: leave-country-out (the held-out figures, p90 ratios and
    # coverage), and leave-region-out beside it.
    ripe = transit_fit.load_ripe_pairs(trips)
    ripe_measured, ripe_band = ripe.measured, band_of(ripe.pairs["km"].to_numpy(float))
    print(f"transit: {len(ripe.pairs)} RIPE country pairs, leave-country-out cross-validation", flush=True)
    ripe_held, ripe_fold = transit_fit.cross_validate_transit(ripe, by="country")
    print("transit: leave-region-out cross-validation", flush=True)
    ripe_held_region, ripe_fold_region = transit_fit.cross_validate_transit(ripe, by="region")
    transit, constant_ms = transit_fit.fit_transit(ripe, np.ones(len(ripe.pairs), dtype=bool))
    floor = extras.p90_ratio_by_band  # a transit path is no less spread than a backbone one
    ripe_ra, ripe_rb = ripe.pair_regions
    band_q, region_spread = transit_fit.fit_spread(
        ripe_measured, ripe_held, ripe_band, ripe_ra, ripe_rb, n_bands, floor, HELD_BELOW, SPREAD_FROM_BAND
    )
    transit = replace(
        transit, p90_ratio_by_band=band_q, region_log_spread=region_spread, spread_from_km=BAND_EDGES_KM[SPREAD_FROM_BAND - 1]
    )
    trips = RoundTrips(network, backbone, internet, extras, transit=transit)
    ripe_fitted = ripe.predict(transit, constant_ms)
    inflation = np.round(np.exp(transit.log_inflation), 3)
    print(f"transit: inflation {dict(zip(transit.knots_km, inflation, strict=True))}; country-pair constant {constant_ms:.1f} ms")

    # 4. the table: every source, old and new, fitted and held out.
    everything = pd.concat([load_azure_pairs(), public], ignore_index=True)
    points = Points(everything)
    km = great_circle_km(everything["a_lat"], everything["a_lon"], everything["b_lat"], everything["b_lon"])
    old = RoundTrips(old_network(network), OLD_PARAMS, OLD_PARAMS, extras)
    azure_held = ~np.r_[train, np.ones(len(public), dtype=bool)] & everything["source"].eq("azure").to_numpy()
    new_internet = points.predict(trips, PathType.INTERNET)
    held_internet = np.r_[np.full(len(azure), np.nan), held_out]
    frames = []
    for model, predicted, split in (
        ("old", points.predict(old, PathType.BACKBONE), np.where(azure_held, "held-out", "fitted")),
        ("new internet", new_internet, np.where(everything["source"].isin(PUBLIC), "fitted", "not fitted")),
        ("new internet", held_internet, np.full(len(everything), "held-out")),
        ("new backbone", points.predict(trips, PathType.BACKBONE), np.where(azure_held, "held-out", "fitted")),
    ):
        frame = everything.assign(predicted_ms=predicted, km=km, model=model, split=split).dropna(subset=["predicted_ms"])
        if model == "old":
            frame = frame.assign(split=np.where(frame["source"].eq("azure"), frame["split"], "not fitted"))
        if model == "new backbone":
            frame = frame[frame["source"].eq("azure")]
        frames.append(frame)
    ripe_frame = pd.DataFrame({"source": "ripe", "rtt_ms": ripe_measured, "km": ripe.pairs["km"].to_numpy(float)})
    before = load_extras(CALIBRATED_JSON) if CALIBRATED_JSON.exists() else PathExtras()
    main_internet = ripe.predict(TransitParams(), 0.0)  # what `placement rtt` printed before: the cloud path
    for model, predicted, split in (
        ("old internet", main_internet, "not fitted"),
        ("new transit", ripe_fitted, "fitted"),
        ("new transit", ripe_held, "held-out"),
        ("new transit", ripe_held_region, "held-out region"),
    ):
        frames.append(ripe_frame.assign(predicted_ms=predicted, model=model, split=split))
    table = band_table(pd.concat(frames, ignore_index=True))
    print_table(table)

    # 5. does the p90 cover? Held-out predictions times the ratios fitted on the other folds.
    public_covered = transit_fit.held_out_coverage(public_measured, held_out, public_band, public_fold, n_bands)
    band_only_covered = transit_fit.held_out_coverage(ripe_measured, ripe_held, ripe_band, ripe_fold, n_bands, floor, HELD_BELOW)
    ripe_covered = transit_fit.held_out_spread_coverage(
        ripe_measured, ripe_held, ripe_band, ripe_ra, ripe_rb, ripe_fold, n_bands, floor, HELD_BELOW, SPREAD_FROM_BAND
    )
    coverage = pd.concat(
        [
            coverage_rows("public (cloud)", "new internet", public_measured, public_band, public_covered),
            coverage_rows(
                "ripe",
                "old internet",
                ripe_measured,
                ripe_band,
                ripe_measured <= main_internet * band_ratio(before.p90_ratio_by_band, ripe.pairs["km"]),
            ),
            coverage_rows("ripe", "band only", ripe_measured, ripe_band, band_only_covered),
            coverage_rows("ripe", "new transit", ripe_measured, ripe_band, ripe_covered),
            coverage_rows(
                "ripe",
                "new transit, region folds",
                ripe_measured,
                ripe_band,
                transit_fit.held_out_spread_coverage(
                    ripe_measured,
                    ripe_held_region,
                    ripe_band,
                    ripe_ra,
                    ripe_rb,
                    ripe_fold_region,
                    n_bands,
                    floor,
                    HELD_BELOW,
                    SPREAD_FROM_BAND,
                ),
            ),
        ],
        ignore_index=True,
    )
    print("\nshare of measured round trips at or below the p90 (held out: each fold's ratios fitted on the other folds)")
    print(coverage.to_string(index=False))
    by_region = region_coverage(
        {
            "ripe, band only": (band_only_covered, ripe_ra, ripe_rb),
            "ripe, band and region": (ripe_covered, ripe_ra, ripe_rb),
            "public (cloud), backbone p90": (public_covered, *public_regions(public)),
        }
    )
    print("\nheld-out coverage by world region (pairs with an end there) [%]")
    print(by_region.to_string(index=False))
    spread = pd.DataFrame({"band": np.asarray(BAND_NAMES)[ripe_band], "cv": ripe.pairs["rtt_std"] / ripe_measured})
    print("\nRIPE within-pair spread (rtt_std / rtt_avg, median per band; pings, not pairs):")
    print(spread.groupby("band", sort=False)["cv"].median().round(3).to_string())
    bound_ok = bool((new_internet >= 2 * km / 204.19 - 1e-9).all()) and bool((ripe_fitted >= 2 * ripe.km.min() / 204.19).all())
    print(f"\nnothing below the physics bound: {bound_ok}")
    print(f"p90/p50 ratio by band, backbone: {dict(zip(BAND_NAMES, extras.p90_ratio_by_band, strict=True))}")
    print(f"p90/p50 ratio by band, transit: {dict(zip(BAND_NAMES, transit.p90_ratio_by_band, strict=True))}")
    print(f"region spreads, transit p90: {dict(zip(WORLD_REGIONS, np.round(np.exp(transit.region_log_spread), 3), strict=True))}")
    print(f"region factors, transit: {dict(zip(WORLD_REGIONS, np.round(np.exp(transit.region_log_factor), 3), strict=True))}")
    print(f"last-mile prior: median {prior_median} ms over {len(prior)} countries; RIPE fit {prior_fit}")
    moscow_beijing = trips.pair(Endpoints.of(55.7558, 37.6173, "RU"), Endpoints.of(39.9042, 116.4074, "CN"), PathType.INTERNET)
    print(f"Moscow-Beijing internet: {moscow_beijing.rtt_ms:.1f} ms via {' > '.join(moscow_beijing.path)}")

    if not args.no_write:
        regions = sorted(set(azure["a"]) | set(azure["b"]))
        held = sorted(set(regions) - set(azure.loc[train, "a"]) - set(azure.loc[train, "b"]))
        record = {
            "model": "graph latency (placement.network.graph, placement.network.paths, placement.network.transit)",
            "generated_by": "benchmarks/calibrate_latency.py",
            "data": {
                "backbone": "data/latency/azure_interregion_rtt_ms.csv (Microsoft, CC-BY-4.0)",
                "internet": "data/latency/aws_gcp_intercloud_ping_2022-02.csv, cloudping_aws_interregion_median_rtt_2022.json, "
                "ibm_cloud_interregion_latency.md",
                "transit": "data/latency/ripe_atlas_country_pair_rtt_2025.csv.gz (RIPE NCC): transit inflation and spread",
                "last_mile": "data/latency/ripe_atlas_country_pair_rtt_2025.csv.gz (RIPE NCC)",
            },
            "split": {
                "backbone": {
                    "rule": "hold out every pair touching a seeded 30% of Azure regions",
                    "seed": SPLIT_SEED,
                    "held_out_regions": held,
                },
                "internet": "leave-region-out over six world regions (benchmarks/calibrate_latency.py)",
                "transit": f"leave-country-out, {transit_fit.COUNTRY_FOLDS} groups of countries by a hash of their code, "
                "RIPE country pairs (benchmarks/transit_fit.py); leave-region-out reported beside it",
            },
            "loss": "mean absolute log ratio, bounded Nelder-Mead (graph), L-BFGS-B (transit)",
            "priors": {"firewall_ms": FIREWALL_MS, "detour_ms": DETOUR_MS, "border_ms": BORDER_MS},
            "params": {k: round(v, 4) for k, v in params_dict(backbone).items()},
            "internet_params": {k: round(v, 4) for k, v in params_dict(internet).items()},
            "transit": {
                "knots_km": list(transit.knots_km),
                "log_inflation": [round(v, 4) for v in transit.log_inflation],
                "region_log_factor": {r: round(v, 4) for r, v in zip(WORLD_REGIONS, transit.region_log_factor, strict=True)},
                "p90_ratio_by_band": list(transit.p90_ratio_by_band),
                "region_log_spread": {r: v for r, v in zip(WORLD_REGIONS, transit.region_log_spread, strict=True)},
                "spread_from_km": transit.spread_from_km,
                "country_pair_constant_ms": round(constant_ms, 2),
            },
            "extras": {
                "detour_ms": extras.detour_ms,
                "off_hub_km": extras.off_hub_km,
                "border_ms": extras.border_ms,
                "last_mile_default_ms": extras.last_mile_default_ms,
                "last_mile_by_country": dict(extras.last_mile_by_country),
                "p90_ratio_by_band": list(extras.p90_ratio_by_band),
            },
            "metrics": {
                "graph": backbone_metrics,
                "bands": table.round(2).to_dict(orient="records"),
                "coverage": coverage.round(3).to_dict(orient="records"),
                "coverage_by_region": by_region.round(3).to_dict(orient="records"),
            },
        }
        CALIBRATED_JSON.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {CALIBRATED_JSON.relative_to(REPO)}")


def public_regions(public: pd.DataFrame) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Indices into :data:`WORLD_REGIONS` of each cloud pair's two ends."""
    return region_index(public["a_lat"], public["a_lon"]), region_index(public["b_lat"], public["b_lon"])


def region_coverage(covered: dict[str, tuple[NDArray[np.bool_], NDArray[np.intp], NDArray[np.intp]]]) -> pd.DataFrame:
    """Per model and world region: pairs with an end in the region and the share covered by the p90. [%]"""
    rows = []
    for model, (hit, region_a, region_b) in covered.items():
        for k, region in enumerate(WORLD_REGIONS):
            touches = (region_a == k) | (region_b == k)
            if touches.any():
                rows.append(
                    {"model": model, "region": region, "n": int(touches.sum()), "covered_pct": 100.0 * float(hit[touches].mean())}
                )
    return pd.DataFrame(rows)


def coverage_rows(
    source: str, model: str, measured: NDArray[np.float64], band: NDArray[np.intp], covered: NDArray[np.bool_]
) -> pd.DataFrame:
    """Per band and overall: pairs and the share of measured round trips at or below the p90. [%]"""
    names = np.asarray(BAND_NAMES)[band]
    rows = [
        {
            "source": source,
            "model": model,
            "band": b,
            "n": int((names == b).sum()),
            "covered_pct": 100.0 * float(covered[names == b].mean()),
        }
        for b in BAND_NAMES
        if (names == b).any()
    ]
    rows.append(
        {"source": source, "model": model, "band": "all", "n": len(measured), "covered_pct": 100.0 * float(covered.mean())}
    )
    return pd.DataFrame(rows)


if __name__ == "__main__":
    main()
