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

from placement.network.great_circle import physics_bound_rtt_ms
from placement.network.load import GraphLatencyParams, Network, default_network, global_network
from placement.network.paths import backbone_rtt_ms
from placement.world.bundled import bundled_path
from placement.world.geodesy import pairwise_km

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
    """Data-center-to-data-center round trip of each pair over the backbone graph (default: bundled, no regional links). [ms]"""
    regions = sorted(set(pairs["a"]) | set(pairs["b"]))
    ends = pd.concat(
        [
            pairs[["a", "a_lat", "a_lon"]].set_axis(["r", "lat", "lon"], axis=1),
            pairs[["b", "b_lat", "b_lon"]].set_axis(["r", "lat", "lon"], axis=1),
        ]
    )
    first = ends.drop_duplicates("r").set_index("r").loc[regions]
    network = global_network(default_network()) if network is None else network  # a backbone: no regional corridors
    matrix = backbone_rtt_ms(first["lat"], first["lon"], first["lat"], first["lon"], params, network=network)
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


# ----------------------------------------------------------------------------- public-internet sources

AWS_GCP_CSV = bundled_path("latency", "aws_gcp_intercloud_ping_2022-02.csv")
AWS_GCP_LOCATIONS_CSV = bundled_path("latency", "aws_gcp_region_locations.csv")
CLOUDPING_JSON = bundled_path("latency", "cloudping_aws_interregion_median_rtt_2022.json")
IBM_MD = bundled_path("latency", "ibm_cloud_interregion_latency.md")
RIPE_CSV_GZ = bundled_path("latency", "ripe_atlas_country_pair_rtt_2025.csv.gz")

#: Rows of aws_gcp_region_locations.csv that are wrong upstream (data/SOURCES.md). "CLOUD:region" -> (lat, lon)
AWS_GCP_COORD_FIXES: dict[str, tuple[float, float]] = {
    "GCP:southamerica-east1": (-23.5, -46.8),  # São Paulo (upstream -23.04, 2.12 is in the Atlantic)
    "GCP:northamerica-northeast1": (45.5, -73.6),  # Montréal (upstream 50.84, -90.11 is in Ontario's north)
}

#: The 13 cities of IBM Cloud's inter-region table, as GeoNames names them (``Name, CC``).
IBM_CITIES = {
    "Dallas": "Dallas, US",
    "Toronto": "Toronto, CA",
    "Washington DC": "Washington, US",
    "Frankfurt": "Frankfurt am Main, DE",
    "London": "London, GB",
    "Madrid": "Madrid, ES",
    "Montreal": "Montréal, CA",
    "Chennai": "Chennai, IN",
    "Mumbai": "Mumbai, IN",
    "Osaka": "Osaka, JP",
    "Sydney": "Sydney, AU",
    "Tokyo": "Tokyo, JP",
    "Sao Paulo": "São Paulo, BR",
}

PAIR_COLUMNS = ["source", "a", "b", "a_lat", "a_lon", "b_lat", "b_lon", "rtt_ms"]


def _unordered(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    """Mean round trip per unordered pair of ``source_region``/``target_region`` rows (``rtt_ms``)."""
    frame = frame[frame["from"] != frame["to"]].dropna(subset=["rtt_ms"])
    a, b = frame[["from", "to"]].min(axis=1), frame[["from", "to"]].max(axis=1)
    pairs = frame.assign(a=a, b=b).groupby(["a", "b"])["rtt_ms"].mean().reset_index()
    return pairs.assign(source=source)


def _with_coordinates(pairs: pd.DataFrame, where: dict[str, tuple[float, float]]) -> pd.DataFrame:
    for end in ("a", "b"):
        pairs[f"{end}_lat"] = pairs[end].map(lambda r: where[r][0])
        pairs[f"{end}_lon"] = pairs[end].map(lambda r: where[r][1])
    return pairs[PAIR_COLUMNS].reset_index(drop=True)


def aws_gcp_locations() -> dict[str, tuple[float, float]]:
    """``CLOUD:region`` -> (lat, lon) of the AWS and GCP regions, the two upstream errors corrected."""
    table = pd.read_csv(AWS_GCP_LOCATIONS_CSV)
    rows = table[["cloud", "region", "latitude", "longitude"]].to_numpy()
    where = {f"{c}:{r}": (float(la), float(lo)) for c, r, la, lo in rows}
    return {**where, **AWS_GCP_COORD_FIXES}


def load_aws_gcp_pairs() -> pd.DataFrame:
    """AWS/GCP VM-to-VM pings between public IPs, Feb 2022: median of a pair's runs (mean of 5 pings each). [ms]"""
    runs = pd.read_csv(AWS_GCP_CSV)
    frame = pd.DataFrame(
        {
            "from": runs["from_cloud"] + ":" + runs["from_region"],
            "to": runs["to_cloud"] + ":" + runs["to_region"],
            "rtt_ms": runs["avgrtt"].astype(float),
        }
    )
    frame = frame.assign(a=frame[["from", "to"]].min(axis=1), b=frame[["from", "to"]].max(axis=1))
    frame = frame[frame["a"] != frame["b"]]
    pairs = frame.groupby(["a", "b"])["rtt_ms"].median().reset_index().assign(source="aws_gcp")
    return _with_coordinates(pairs, aws_gcp_locations())


def load_cloudping_pairs() -> pd.DataFrame:
    """cloudping.co AWS inter-region median round trips (year to April 2022), mean of both directions. [ms]"""
    matrix = json.loads(CLOUDPING_JSON.read_text(encoding="utf-8"))
    frame = pd.DataFrame(
        [{"from": f"AWS:{s}", "to": f"AWS:{t}", "rtt_ms": float(v)} for s, row in matrix.items() for t, v in row.items()]
    )
    return _with_coordinates(_unordered(frame, "cloudping"), aws_gcp_locations())


def _ibm_tables(text: str) -> list[pd.DataFrame]:
    """Every ``### Inter-region latency`` table of the IBM page as a square frame. [ms]"""
    tables = []
    for block in text.split("### Inter-region latency")[1:]:
        lines = [ln for ln in block.splitlines() if ln.startswith("|")]
        header = [c.strip() for c in lines[0].strip("|").split("|")][1:]
        rows = {}
        for line in lines[2 : 2 + len(header)]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0].strip("*")] = pd.to_numeric(pd.Series(cells[1:], index=header), errors="coerce")
        tables.append(pd.DataFrame(rows).T)
    return tables


def load_ibm_pairs() -> pd.DataFrame:
    """IBM Cloud inter-region 30-day mean round trips, mean over both directions and the dated snapshots. [ms]"""
    from placement.network.places import resolve_place

    frames = [
        t.rename_axis("from").reset_index().melt(id_vars="from", var_name="to", value_name="rtt_ms")
        for t in _ibm_tables(IBM_MD.read_text(encoding="utf-8"))
    ]
    pairs = _unordered(pd.concat(frames), "ibm")
    where = {}
    for name, query in IBM_CITIES.items():
        place = resolve_place(query)
        where[name] = (place.lat, place.lon)
    return _with_coordinates(pairs, where)


def load_azure_pairs() -> pd.DataFrame:
    """Azure's published P50 inter-region round trips (:func:`load_pairs`) with the common columns. [ms]"""
    return load_pairs().assign(source="azure")[PAIR_COLUMNS]


def load_ripe_country_pairs(min_count: int = 100) -> pd.DataFrame:
    """RIPE Atlas country-pair mean round trips (``rtt_avg``; ``rtt_min`` is polluted by anycast).

    Parameters
    ----------
    min_count : int, optional
        Drop pairs with fewer pings.

    Returns
    -------
    pandas.DataFrame
        ``cty1, cty2, rtt_cnt, rtt_avg`` (alpha-2; ``cty1 <= cty2``). [ms]
    """
    table = pd.read_csv(RIPE_CSV_GZ, keep_default_na=False)
    table = table[table["rtt_cnt"] >= min_count]
    return table[["cty1", "cty2", "rtt_cnt", "rtt_avg"]].reset_index(drop=True)
