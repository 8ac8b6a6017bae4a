"""Path maths on the latency graph: link round trips, the graph, shortest paths between hubs, access legs.

An edge's round trip is its fiber length at the speed of light in fiber, both ways, plus a per-hop
equipment delay; its length is the published route length where one is known, else the great
circle times a route factor of its kind. Because every edge is at least as long as the great
circle between its ends, every path is too (triangle inequality), so no round trip can beat
:func:`placement.network.great_circle.physics_bound_rtt_ms`.

A point (a user population, a data center) reaches the graph at one of its nearest hubs over an
access leg: great circle times an access route factor, plus a last-mile constant for users only.
The round trips between points are :mod:`placement.network.paths`; the hubs, links and parameters
are loaded by :mod:`placement.network.load`.
"""

from __future__ import annotations

from functools import lru_cache

import networkx as nx
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from placement.network.great_circle import physics_bound_rtt_ms
from placement.network.load import GraphLatencyParams, Network
from placement.world.geodesy import great_circle_km, unit_vectors

FIREWALL_COUNTRIES = ("CN",)
"""Countries whose international traffic crosses a national firewall (mainland China; Hong Kong is not)."""
ACCESS_HUBS = 3
"""A point may enter the graph at any of this many nearest hubs."""
_CHUNK_ROWS = 8192
"""Points matched to hubs per block (bounds the ``points x hubs`` scratch matrix)."""


def fiber_rtt_ms(length_km: ArrayLike) -> NDArray[np.float64]:
    """Round trip over a fiber route of a given length, both ways at the speed of light in fiber.

    Parameters
    ----------
    length_km : array_like
        Route length. [km]

    Returns
    -------
    numpy.ndarray
        ``2 * length / (c / 1.468)``. [ms]
    """
    return physics_bound_rtt_ms(length_km)


def link_lengths_km(network: Network, params: GraphLatencyParams) -> NDArray[np.float64]:
    """Route length of every link: published, else great circle times its kind's route factor.

    Parameters
    ----------
    network : Network
        Hubs and links.
    params : GraphLatencyParams
        Route factors.

    Returns
    -------
    numpy.ndarray
        One length per link, never below its great circle. [km]
    """
    links = network.links
    factor = np.where(links["kind"].eq("submarine"), params.route_factor_submarine, params.route_factor_terrestrial)
    modelled = links["great_circle_km"].to_numpy(float) * factor
    return np.asarray(links["length_km"].fillna(pd.Series(modelled, index=links.index)).to_numpy(float))


def crosses_firewall(network: Network) -> NDArray[np.bool_]:
    """True for every link with exactly one end in a country of :data:`FIREWALL_COUNTRIES`."""
    country = network.hubs.set_index("hub_id")["country_code"]
    inside_a = country.loc[network.links["a"]].isin(FIREWALL_COUNTRIES).to_numpy()
    inside_b = country.loc[network.links["b"]].isin(FIREWALL_COUNTRIES).to_numpy()
    return np.asarray(inside_a != inside_b)


def link_rtt_ms(network: Network, params: GraphLatencyParams) -> NDArray[np.float64]:
    """Round trip of every link: fiber over its route length, one hop delay, and the firewall where it crosses one.

    Parameters
    ----------
    network : Network
        Hubs and links.
    params : GraphLatencyParams
        Route factors and hop delay.

    Returns
    -------
    numpy.ndarray
        One round trip per link. [ms]
    """
    firewall = np.where(crosses_firewall(network), params.firewall_ms, 0.0)
    return fiber_rtt_ms(link_lengths_km(network, params)) + params.hop_ms + firewall


@lru_cache(maxsize=8)
def build_graph(network: Network, params: GraphLatencyParams) -> nx.Graph:
    """The NetworkX graph: hub nodes, link edges weighted by ``rtt_ms``.

    Parameters
    ----------
    network : Network
        Hubs and links.
    params : GraphLatencyParams
        Parameters that set the edge weights.

    Returns
    -------
    networkx.Graph
        Nodes are hub ids (attributes ``name, lat, lon, kind``); edges carry ``rtt_ms``,
        ``length_km``, ``kind`` and ``cables``. Where a pair of hubs has both a terrestrial and
        a submarine link, the faster one is the edge. Cached per (network, params): do not modify.
    """
    graph = nx.Graph()
    for hub in network.hubs.itertuples(index=False):
        graph.add_node(hub.hub_id, name=hub.name, lat=hub.lat, lon=hub.lon, kind=hub.kind)
    lengths, rtts = link_lengths_km(network, params), link_rtt_ms(network, params)
    for link, length, rtt in zip(network.links.itertuples(index=False), lengths, rtts, strict=True):
        if graph.has_edge(link.a, link.b) and graph.edges[link.a, link.b]["rtt_ms"] <= rtt:
            continue  # a terrestrial and a submarine route between the same hubs: keep the faster
        graph.add_edge(link.a, link.b, rtt_ms=float(rtt), length_km=float(length), kind=link.kind, cables=link.cables)
    return graph


@lru_cache(maxsize=8)
def hub_rtt_matrix_ms(network: Network, params: GraphLatencyParams) -> NDArray[np.float64]:
    """Shortest-path round trip between every pair of hubs (Dijkstra from every hub).

    Parameters
    ----------
    network : Network
        Hubs and links.
    params : GraphLatencyParams
        Parameters that set the edge weights.

    Returns
    -------
    numpy.ndarray
        ``(h, h)`` round trips in hub index order, without the per-path fixed delay. Cached per
        (network, params): read only. [ms]
    """
    graph = build_graph(network, params)
    index = {h: k for k, h in enumerate(network.hub_ids)}
    matrix = np.full((len(index), len(index)), np.inf)
    for source, lengths in nx.all_pairs_dijkstra_path_length(graph, weight="rtt_ms"):
        row = matrix[index[source]]
        for target, rtt in lengths.items():
            row[index[target]] = rtt
    matrix.setflags(write=False)
    return matrix


def nearest_hub(lat_deg: ArrayLike, lon_deg: ArrayLike, network: Network) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """The hub closest (great circle) to each point.

    Parameters
    ----------
    lat_deg, lon_deg : array_like
        Points (``n``). [degrees]
    network : Network
        Hubs.

    Returns
    -------
    tuple of numpy.ndarray
        Hub index of each point, and the great-circle distance to it. [km]
    """
    lat, lon = np.atleast_1d(np.asarray(lat_deg, dtype=float)), np.atleast_1d(np.asarray(lon_deg, dtype=float))
    points = unit_vectors(lat, lon)
    index = np.empty(len(points), dtype=np.intp)
    for start in range(0, len(points), _CHUNK_ROWS):
        block = points[start : start + _CHUNK_ROWS]
        index[start : start + len(block)] = np.argmax(block @ network.hub_vectors.T, axis=1)
    hub_lat, hub_lon = network.hubs["lat"].to_numpy(float), network.hubs["lon"].to_numpy(float)
    return index, great_circle_km(lat, lon, hub_lat[index], hub_lon[index])


def nearest_hubs(
    lat_deg: ArrayLike, lon_deg: ArrayLike, network: Network, k: int
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """The ``k`` hubs closest (great circle) to each point.

    Parameters
    ----------
    lat_deg, lon_deg : array_like
        Points (``n``). [degrees]
    network : Network
        Hubs.
    k : int
        Hubs per point.

    Returns
    -------
    tuple of numpy.ndarray
        ``(n, k)`` hub indices, nearest first, and great-circle distances to them. [km]
    """
    lat, lon = np.atleast_1d(np.asarray(lat_deg, dtype=float)), np.atleast_1d(np.asarray(lon_deg, dtype=float))
    k = min(k, len(network.hubs))
    points = unit_vectors(lat, lon)
    index = np.empty((len(points), k), dtype=np.intp)
    for start in range(0, len(points), _CHUNK_ROWS):
        similarity = points[start : start + _CHUNK_ROWS] @ network.hub_vectors.T
        top = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(similarity, top, axis=1), axis=1)
        index[start : start + len(top)] = np.take_along_axis(top, order, axis=1)
    hub_lat, hub_lon = network.hubs["lat"].to_numpy(float), network.hubs["lon"].to_numpy(float)
    return index, great_circle_km(lat[:, None], lon[:, None], hub_lat[index], hub_lon[index])


def access_rtt_ms(distance_km: ArrayLike, params: GraphLatencyParams, *, last_mile: bool) -> NDArray[np.float64]:
    """Round trip of the leg from a point to its hub.

    Parameters
    ----------
    distance_km : array_like
        Great circle from the point to its hub. [km]
    params : GraphLatencyParams
        Access route factor and last-mile delay.
    last_mile : bool
        Add the user's last mile (users: yes; data centers: no).

    Returns
    -------
    numpy.ndarray
        Round trip. [ms]
    """
    leg = fiber_rtt_ms(np.asarray(distance_km, dtype=float) * params.access_route_factor)
    return leg + (params.last_mile_ms if last_mile else 0.0)
