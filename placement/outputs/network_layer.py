"""The latency graph as a map layer: hubs as points, links as LineStrings, and ``network.geojson``.

Geometry is built here, at the edge; :mod:`placement.network` computes round trips on arrays only.
"""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd
import numpy as np

from placement.network.graph import link_lengths_km, link_rtt_ms
from placement.network.load import GraphLatencyParams, Network
from placement.network.paths import RoundTrips
from placement.outputs import geojson as geo

LINK_FRAME_COLUMNS = ("a", "b", "kind", "length_km", "published_length_km", "great_circle_km", "rtt_ms", "cables", "source")


def hubs_frame(network: Network) -> gpd.GeoDataFrame:
    """Hubs as points, ready for GeoJSON.

    Parameters
    ----------
    network : Network
        Hubs and links.

    Returns
    -------
    geopandas.GeoDataFrame
        ``hub_id, name, country_code, kind`` and Point geometry in WGS84.
    """
    hubs = network.hubs
    geometry = gpd.points_from_xy(hubs["lon"].to_numpy(float), hubs["lat"].to_numpy(float))
    return gpd.GeoDataFrame(hubs.drop(columns=["lat", "lon"]), geometry=geometry, crs=geo.WGS84)


def graph_links_frame(network: Network, params: GraphLatencyParams) -> gpd.GeoDataFrame:
    """Links as LineStrings (shifted across the antimeridian), ready for GeoJSON.

    Parameters
    ----------
    network : Network
        Hubs and links.
    params : GraphLatencyParams
        Parameters for the modelled lengths and round trips.

    Returns
    -------
    geopandas.GeoDataFrame
        ``a, b, kind, length_km`` (as modelled), ``published_length_km``, ``great_circle_km``,
        ``rtt_ms``, ``cables``, ``source`` and LineString geometry in WGS84.
    """
    links, hubs = network.links, network.hubs.set_index("hub_id")
    ends = np.column_stack(
        [hubs.loc[links["a"], "lon"], hubs.loc[links["a"], "lat"], hubs.loc[links["b"], "lon"], hubs.loc[links["b"], "lat"]]
    ).astype(float)
    frame = links.rename(columns={"length_km": "published_length_km"}).assign(
        length_km=link_lengths_km(network, params), rtt_ms=link_rtt_ms(network, params)
    )
    geometry = geo.unwrapped_lines(ends[:, 0], ends[:, 1], ends[:, 2], ends[:, 3])
    return gpd.GeoDataFrame(frame[list(LINK_FRAME_COLUMNS)], geometry=geometry, crs=geo.WGS84)


def links_frame(round_trips: RoundTrips | None) -> gpd.GeoDataFrame:
    """The links a scenario's round trips are computed over, as LineStrings (none for the great-circle model).

    Parameters
    ----------
    round_trips : RoundTrips or None
        The graph latency model's round trips (``LatencyModel.round_trips``); None for the great-circle
        model, which has no links.

    Returns
    -------
    geopandas.GeoDataFrame
        As :func:`graph_links_frame` over the round trips' network with its public-internet parameters;
        empty (same columns) without round trips.
    """
    if round_trips is None:
        return gpd.GeoDataFrame({c: [] for c in LINK_FRAME_COLUMNS}, geometry=[], crs=geo.WGS84)
    return graph_links_frame(round_trips.network, round_trips.internet)


def write_network(links: gpd.GeoDataFrame, folder: Path) -> Path:
    """Write the latency graph's links as ``network.geojson`` (RFC 7946 LineStrings).

    Parameters
    ----------
    links : geopandas.GeoDataFrame
        The links of the scenario's latency model (:func:`links_frame`).
    folder : Path
        Results folder.

    Returns
    -------
    Path
        The file written.
    """
    path = Path(folder) / "network.geojson"
    geo.write_geojson(links, path)
    return path
