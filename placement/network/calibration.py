"""Measured round trips to calibrate and test the latency graph against: Azure's inter-region P50 RTTs.

Data: ``data/latency/azure_interregion_rtt_ms.csv`` (Microsoft's published P50 round trips between
Azure regions, CC-BY-4.0) and ``data/latency/azure_region_coordinates.json``. The matrix is
directional; a pair's round trip is the mean of the directions published.

Split (deterministic): the regions are sorted by name and a seeded 30 % of them
(``numpy.random.default_rng(SPLIT_SEED)``) are held out; every pair touching a held-out region is
held out, so the held-out error is the error at places the fit has never seen (new sites, new
populations). ``benchmarks/calibrate_latency.py`` fits the graph's parameters on the training pairs;
the tests recompute the held-out error from the data with the bundled parameters.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement.bundled import bundled_path
from placement.geodesy import pairwise_km
from placement.network.graph import GraphLatencyParams, Network, default_network, site_site_rtt_ms
from placement.network.great_circle import physics_bound_rtt_ms

MATRIX_CSV = bundled_path("latency", "azure_interregion_rtt_ms.csv")
COORDS_JSON = bundled_path("latency", "azure_region_coordinates.json")
SPLIT_SEED = 20240611
HELD_OUT_SHARE = 0.30

#: Coordinates in the JSON that are state or country placeholders or point at another city than the one
#: Microsoft documents (the corrections of scripts/build_site_catalog.py, plus two). code -> (lat, lon, why)
COORD_FIXES: dict[str, tuple[float, float, str]] = {
    "eastus": (39.0438, -77.4874, "Virginia only; generic state point -> N. Virginia (Ashburn)"),
    "francecentral": (48.8566, 2.3522, "Paris (Azure geographies page)"),
    "francesouth": (43.2965, 5.3698, "Marseille (Azure geographies page)"),
    "germanynorth": (52.5200, 13.4050, "Berlin (Azure geographies page)"),
    "ukwest": (51.4816, -3.1791, "Cardiff (Azure geographies page)"),
    "jioindiawest": (22.4707, 70.0577, "Jamnagar (Azure geographies page)"),
    "centralus": (41.5908, -93.6208, "Iowa state point -> Des Moines (Azure geographies page)"),
    "westcentralus": (41.1400, -104.8202, "Utah/Wyoming point -> Cheyenne, Wyoming (Azure geographies page)"),
}


def load_pairs() -> pd.DataFrame:
    """Unordered region pairs with coordinates and the mean published round trip.

    Returns
    -------
    pandas.DataFrame
        ``a``, ``b`` (region display names, ``a < b``), ``rtt_ms`` [ms], ``a_lat``, ``a_lon``,
        ``b_lat``, ``b_lon`` [degrees].
    """
    matrix = pd.read_csv(MATRIX_CSV, index_col=0)
    coords = json.loads(COORDS_JSON.read_text(encoding="utf-8"))
    by_name = {info["displayName"]: (code, info["lat"], info["lon"]) for code, info in coords.items()}
    for code, (lat, lon, _) in COORD_FIXES.items():
        by_name[coords[code]["displayName"]] = (code, lat, lon)
    long = matrix.rename_axis("source").reset_index().melt(id_vars="source", var_name="target", value_name="rtt_ms")
    long = long[long["source"] != long["target"]].dropna()
    long["a"] = long[["source", "target"]].min(axis=1)
    long["b"] = long[["source", "target"]].max(axis=1)
    pairs = long.groupby(["a", "b"])["rtt_ms"].mean().reset_index()
    for end in ("a", "b"):
        pairs[f"{end}_lat"] = pairs[end].map(lambda n: by_name[n][1])
        pairs[f"{end}_lon"] = pairs[end].map(lambda n: by_name[n][2])
    return pairs


def split_regions(pairs: pd.DataFrame) -> NDArray[np.bool_]:
    """True for training pairs: both ends outside a seeded 30 % of the regions."""
    regions = sorted(set(pairs["a"]) | set(pairs["b"]))
    rng = np.random.default_rng(SPLIT_SEED)
    held = set(rng.choice(regions, size=round(HELD_OUT_SHARE * len(regions)), replace=False).tolist())
    return np.asarray(~(pairs["a"].isin(held) | pairs["b"].isin(held)))


def graph_predict(pairs: pd.DataFrame, params: GraphLatencyParams, *, network: Network | None = None) -> NDArray[np.float64]:
    """Data-center-to-data-center round trip of each pair over the graph. [ms]"""
    regions = sorted(set(pairs["a"]) | set(pairs["b"]))
    ends = pd.concat(
        [
            pairs[["a", "a_lat", "a_lon"]].set_axis(["r", "lat", "lon"], axis=1),
            pairs[["b", "b_lat", "b_lon"]].set_axis(["r", "lat", "lon"], axis=1),
        ]
    )
    first = ends.drop_duplicates("r").set_index("r").loc[regions]
    network = default_network() if network is None else network
    matrix = site_site_rtt_ms(first["lat"], first["lon"], first["lat"], first["lon"], params, network=network)
    index = {r: k for k, r in enumerate(regions)}
    return np.asarray(matrix[pairs["a"].map(index).to_numpy(), pairs["b"].map(index).to_numpy()])


def naive_predict(pairs: pd.DataFrame, factor: float, fixed_ms: float) -> NDArray[np.float64]:
    """Great circle in fiber times one constant plus a fixed delay, never below the physics bound. [ms]"""
    km = pairwise_km(pairs["a_lat"], pairs["a_lon"], pairs["b_lat"], pairs["b_lon"]).diagonal()
    bound = physics_bound_rtt_ms(km)
    return np.asarray(np.maximum(bound * max(factor, 1.0) + max(fixed_ms, 0.0), bound))


def ape(predicted: NDArray[np.float64], measured: NDArray[np.float64]) -> NDArray[np.float64]:
    """Absolute percentage error of each prediction. [%]"""
    return np.asarray(100.0 * np.abs(predicted - measured) / measured)


def error_metrics(predicted: NDArray[np.float64], measured: NDArray[np.float64], train: NDArray[np.bool_]) -> dict[str, float]:
    """Median and p90 absolute percentage error on the training and the held-out pairs, and the pair counts.

    Parameters
    ----------
    predicted, measured : numpy.ndarray
        Round trip of each pair. [ms]
    train : numpy.ndarray of bool
        From :func:`split_regions`.

    Returns
    -------
    dict
        ``train_median_ape_pct``, ``train_p90_ape_pct``, ``held_out_median_ape_pct``,
        ``held_out_p90_ape_pct`` [%], ``n_train_pairs``, ``n_held_out_pairs``.
    """
    tr, ho = ape(predicted[train], measured[train]), ape(predicted[~train], measured[~train])
    return {
        "train_median_ape_pct": float(np.median(tr)),
        "train_p90_ape_pct": float(np.percentile(tr, 90)),
        "held_out_median_ape_pct": float(np.median(ho)),
        "held_out_p90_ape_pct": float(np.percentile(ho, 90)),
        "n_train_pairs": int(train.sum()),
        "n_held_out_pairs": int((~train).sum()),
    }
