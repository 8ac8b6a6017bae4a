"""The one round-trip function: plan, ``placement rtt``, reports and maps all call :meth:`RoundTrips.rtt`.

Three path types (:class:`PathType`):

``backbone``
    Data center to data center over one provider's private backbone (the Azure fit). Each end
    reaches the graph at its nearest hubs, whatever their country; no firewall. Shown by
    ``placement rtt A B --path backbone``; the plan does not use it.
``internet``
    Data center to data center over the public internet, what the plan uses between its sites
    (retrieval stores) and ``placement rtt A B`` prints. Who carries the packets is the ends'
    connectivity (:attr:`Endpoints.on_transit`, a site's ``network`` column): between two cloud
    regions (``backbone`` sites) the provider's network carries them to its edge nearest the
    other end, the graph fitted on the cloud tables (AWS, GCP, IBM public IPs); if either end is
    on ``transit`` (colocation, greenfield, a hosting server) the path is that times the transit
    inflation of :mod:`placement.network.transit`, fitted on RIPE Atlas pings.
``access``
    A population's users to a site: the ``internet`` path from the users' point, with the site's
    connectivity, plus the users' last mile (a per-country prior from RIPE Atlas) at the user end
    only. Users reach a backbone site at the provider's nearest edge and a transit site over the
    public internet. This is what the plan budgets (``assignments.csv`` ``rtt_ms``) and what
    ``placement rtt A B --access`` prints.

Access legs follow connectivity, not the great circle: on ``internet`` and ``access`` paths a
point enters the graph at one of the :data:`~placement.network.graph.ACCESS_HUBS` nearest hubs
*of its own country*, so a city is never attached across a border (or a mountain range) to a
foreign hub it has no line to. A country with no hub uses its nearest hub, paying the border
penalty. A point farther than ``off_hub_km`` from its hub pays the detour to its exchange (the
regional network that backhauls a city not on a long-haul hub). Links that cross into a country
behind a national firewall carry ``firewall_ms`` (graph parameter).

Every pair has a median (p50) and a p90 round trip: the p90 is the p50 times its path class's ratio
for the distance band, the 90th percentile of held-out measured over modelled round trips (so about
nine measured paths in ten are at or below it); a transit path's ratio also carries a spread per world
region (:meth:`~placement.network.transit.TransitParams.p90_ratio`). A planner's own measurements
(:mod:`placement.network.measurements`) correct both by world-region pair
(:class:`~placement.network.corrections.RegionCorrections`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from enum import StrEnum
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike, NDArray

from placement._types import FloatArray
from placement.network.corrections import RegionCorrections
from placement.network.graph import (
    ACCESS_HUBS,
    access_rtt_ms,
    build_graph,
    fiber_rtt_ms,
    hub_rtt_matrix_ms,
    nearest_hub,
    nearest_hubs,
)
from placement.network.great_circle import physics_bound_rtt_ms
from placement.network.load import (
    CALIBRATED_JSON,
    GraphLatencyParams,
    Network,
    corridor_countries,
    default_network,
    default_params,
    global_network,
)
from placement.network.transit import TransitParams, load_transit
from placement.network.world_regions import region_index
from placement.world.geodesy import great_circle_km, pairwise_km, unit_vectors

BAND_EDGES_KM = (500.0, 1500.0, 4000.0, 8000.0, 12000.0)
"""Upper edges of the distance bands the error is reported in (and the p90 ratio fitted by). [km]"""


class PathType(StrEnum):
    """Which kind of path a round trip is over."""

    BACKBONE = "backbone"
    INTERNET = "internet"
    ACCESS = "access"


class Quantile(StrEnum):
    """Which round trip a TTFT budget uses."""

    P50 = "p50"
    P90 = "p90"


@dataclass(frozen=True)
class Endpoints:
    """Points with the country each lies in.

    Parameters
    ----------
    lat_deg, lon_deg : numpy.ndarray
        Coordinates (``n``). [degrees]
    country_code : numpy.ndarray of str
        ISO 3166-1 alpha-2 code of each point ('' if unknown: treated as a country with no hub).
    on_transit : numpy.ndarray of bool
        True where the point is a data center on commodity transit (colocation, greenfield, a
        hosting server), False where it is on a provider's backbone (a cloud region). Users are
        rows of ``access`` paths, where it is not read.
    """

    lat_deg: FloatArray
    lon_deg: FloatArray
    country_code: NDArray[np.str_]
    on_transit: NDArray[np.bool_]

    @classmethod
    def of(cls, lat_deg: ArrayLike, lon_deg: ArrayLike, country_code: ArrayLike, on_transit: ArrayLike = False) -> Endpoints:
        """Build from array-likes (scalars allowed; ``on_transit`` default: every point on a backbone)."""
        lat = np.atleast_1d(np.asarray(lat_deg, dtype=float))
        lon = np.atleast_1d(np.asarray(lon_deg, dtype=float))
        codes = np.atleast_1d(np.asarray(country_code, dtype=str))
        transit = np.broadcast_to(np.atleast_1d(np.asarray(on_transit, dtype=bool)), lat.shape).copy()
        return cls(lat, lon, np.broadcast_to(codes, lat.shape).astype(str), transit)

    @property
    def region(self) -> NDArray[np.intp]:
        """World-region index of each point (:mod:`placement.network.world_regions`)."""
        return region_index(self.lat_deg, self.lon_deg)

    def __len__(self) -> int:
        """Number of points."""
        return len(self.lat_deg)


@dataclass(frozen=True)
class PathExtras:
    """The parts of a public path that are not on the hub graph.

    Parameters
    ----------
    detour_ms : float
        Round trip from a point farther than ``off_hub_km`` from its hub to the exchange it is
        backhauled to. [ms]
    off_hub_km : float
        A point within this distance of its hub is on the hub. [km]
    border_ms : float
        Round trip added when a point has no hub in its country and enters at a foreign one. [ms]
    last_mile_default_ms : float
        Users' last mile where no country prior exists. [ms]
    last_mile_by_country : tuple of (str, float)
        Users' last mile per ISO alpha-2 country (RIPE Atlas prior). [ms]
    p90_ratio_by_band : tuple of float
        p90 over p50 round trip of a backbone path in each distance band (one more than
        :data:`BAND_EDGES_KM`).
    """

    detour_ms: float = 2.0
    off_hub_km: float = 50.0
    border_ms: float = 5.0
    last_mile_default_ms: float = 8.0
    last_mile_by_country: tuple[tuple[str, float], ...] = ()
    p90_ratio_by_band: tuple[float, ...] = (1.3, 1.2, 1.2, 1.15, 1.15, 1.15)

    def last_mile_ms(self, country_code: NDArray[np.str_], override_ms: float | None = None) -> FloatArray:
        """Users' last mile of each point's country (``override_ms`` for every country if given). [ms]"""
        if override_ms is not None:
            return np.full(len(country_code), float(override_ms))
        table = dict(self.last_mile_by_country)
        return np.array([table.get(str(c), self.last_mile_default_ms) for c in country_code], dtype=float)

    def p90_ratio(self, distance_km: ArrayLike, *, band: NDArray[np.int8] | None = None) -> FloatArray:
        """p90 over p50 ratio of a backbone path for each great-circle distance (``band``: its band, if known)."""
        return band_ratio(self.p90_ratio_by_band, distance_km, band=band)


def band_index(distance_km: ArrayLike) -> NDArray[np.int8]:
    """Each distance's band: how many of :data:`BAND_EDGES_KM` it reaches (as ``searchsorted(side="right")``).

    Counted edge by edge in one byte a figure: on a table of millions of pairs, several times quicker than a
    binary search per figure.
    """
    distance = np.asarray(distance_km, dtype=float)
    band = np.zeros(distance.shape, dtype=np.int8)
    for edge in BAND_EDGES_KM:
        band += distance >= edge
    return band


def band_ratio(ratio_by_band: tuple[float, ...], distance_km: ArrayLike, *, band: NDArray[np.int8] | None = None) -> FloatArray:
    """The figure of each distance's band (:data:`BAND_EDGES_KM`) from one figure per band (``band``: if known)."""
    index = band_index(distance_km) if band is None else band
    return np.asarray(np.asarray(ratio_by_band, dtype=float)[index])


class Entries(NamedTuple):
    """Where each point enters the graph: ``(n, k)`` hub indices and access-leg round trips (inf: no entry). [ms]"""

    hub: NDArray[np.intp]
    leg_ms: FloatArray


def _taken(entries: Entries, points: NDArray[np.intp] | slice) -> Entries:
    """The entries of some points only."""
    return Entries(entries.hub[points], entries.leg_ms[points])


class RoundTripQuantiles(NamedTuple):
    """Median and p90 round trips, same shape. [ms]"""

    p50_ms: FloatArray
    p90_ms: FloatArray


class PairPath(NamedTuple):
    """One pair's round trips and the hubs its median path passes."""

    rtt_ms: float
    rtt_p90_ms: float
    bound_ms: float
    path: list[str]


def backbone_rtt_ms(
    lat_a_deg: ArrayLike,
    lon_a_deg: ArrayLike,
    lat_b_deg: ArrayLike,
    lon_b_deg: ArrayLike,
    params: GraphLatencyParams,
    *,
    network: Network,
) -> FloatArray:
    """Data-center-to-data-center round trips over one provider's backbone (the ``backbone`` path; no last mile).

    ``rtt = row access leg + hub-to-hub shortest path + column access leg + fixed delay``, never below
    the physics bound. A row point may reach the graph through any of its :data:`ACCESS_HUBS` nearest
    hubs (whatever their country) and takes the quickest, so a city next to a border hub with no
    direct link is not routed round the world; a column point enters at its nearest hub.

    Parameters
    ----------
    lat_a_deg, lon_a_deg : array_like
        The ``n`` row points. [degrees]
    lat_b_deg, lon_b_deg : array_like
        The ``m`` column points. [degrees]
    params : GraphLatencyParams
        Backbone parameters (:func:`~placement.network.load.default_params` are the calibrated ones).
    network : Network
        Hubs and links (a backbone takes no regional links: pass
        :func:`~placement.network.load.global_network` of the scenario's network).

    Returns
    -------
    numpy.ndarray
        ``(n, m)`` round-trip times. [ms]
    """
    hubs_a, km_a = nearest_hubs(lat_a_deg, lon_a_deg, network, ACCESS_HUBS)
    hub_b, km_b = nearest_hub(lat_b_deg, lon_b_deg, network)
    leg_b = access_rtt_ms(km_b, params, last_mile=False) + params.fixed_ms
    to_b = hub_rtt_matrix_ms(network, params)[:, hub_b]
    rtt = np.full((hubs_a.shape[0], len(hub_b)), np.inf)
    for k in range(hubs_a.shape[1]):
        leg_a = access_rtt_ms(km_a[:, k], params, last_mile=False)
        rtt = np.minimum(rtt, to_b[hubs_a[:, k]] + leg_a[:, None])
    rtt = rtt + leg_b[None, :]
    bound = physics_bound_rtt_ms(pairwise_km(lat_a_deg, lon_a_deg, lat_b_deg, lon_b_deg))
    return np.asarray(np.maximum(rtt, bound))


@dataclass(frozen=True)
class _Ends:
    """One side's points shaped to broadcast: rows of a table (``column=False``), its columns, or aligned pairs."""

    points: Endpoints
    column: bool | None = None

    def shaped(self, values: NDArray[Any]) -> NDArray[Any]:
        """``values`` (one per point) as a column ``(n, 1)``, a row ``(1, m)`` or as they are (pairs)."""
        if self.column is None:
            return values
        return values[None, :] if self.column else values[:, None]

    @property
    def region(self) -> NDArray[np.intp]:
        """World-region index of each point, shaped."""
        return self.shaped(self.points.region)

    @property
    def on_transit(self) -> NDArray[np.bool_]:
        """Whether each point is on commodity transit, shaped."""
        return self.shaped(self.points.on_transit)


@dataclass(frozen=True, eq=False)
class RoundTrips:
    """Round trips of every path type over one network.

    Parameters
    ----------
    network : Network
        Hubs and links.
    backbone : GraphLatencyParams
        Parameters of a provider's backbone (fitted on Azure).
    internet : GraphLatencyParams
        Parameters of public-internet paths (fitted on public measurements).
    extras : PathExtras
        Detour, border, last-mile priors and p90 ratios.
    last_mile_override_ms : float or None
        One last mile for every country (a scenario's ``latency.access_ms``); None: the priors. [ms]
    transit : TransitParams
        How much longer a transit path is than a backbone one, and its spread (:mod:`placement.network.transit`).
    corrections : RegionCorrections
        A planner's measured corrections by world-region pair (none: the calibrated model).
    """

    network: Network
    backbone: GraphLatencyParams
    internet: GraphLatencyParams
    extras: PathExtras = field(default_factory=PathExtras)
    last_mile_override_ms: float | None = None
    transit: TransitParams = field(default_factory=TransitParams)
    corrections: RegionCorrections = field(default_factory=RegionCorrections)

    @cached_property
    def internet_hub_rtt_ms(self) -> FloatArray:
        """``(h, h)`` shortest public-internet round trips between hubs, regional links included (no fixed delay). [ms]"""
        return hub_rtt_matrix_ms(self.network, self.internet)

    @cached_property
    def transit_hub_rtt_ms(self) -> FloatArray:
        """``(h, h)`` the same without regional links: transit between countries no regional link joins. [ms]"""
        return hub_rtt_matrix_ms(global_network(self.network), self.internet)

    @cached_property
    def corridor_countries(self) -> frozenset[str]:
        """Countries whose traffic may use the regional links."""
        return corridor_countries(self.network)

    def _on_corridor(self, points: Endpoints) -> NDArray[np.bool_]:
        return np.isin(points.country_code, sorted(self.corridor_countries))

    @cached_property
    def _hub_country(self) -> NDArray[np.str_]:
        return np.asarray(self.network.hubs["country_code"].to_numpy(str))

    def entries(self, points: Endpoints) -> Entries:
        """Where each point enters the public graph: its nearest own-country hubs, else its nearest hub abroad.

        Parameters
        ----------
        points : Endpoints
            Points with countries.

        Returns
        -------
        Entries
            ``(n, k)`` hub indices and leg round trips (access route factor, detour off a hub, border
            penalty abroad); ``inf`` where a country has fewer than ``k`` hubs. [ms]
        """
        k = ACCESS_HUBS
        hub_index = np.zeros((len(points), k), dtype=np.intp)
        foreign = np.zeros(len(points), dtype=bool)
        count = np.zeros(len(points), dtype=np.intp)
        vectors = unit_vectors(points.lat_deg, points.lon_deg)
        for country in np.unique(points.country_code):
            rows = np.flatnonzero(points.country_code == country)
            candidates = np.flatnonzero(self._hub_country == country)
            if not len(candidates):
                candidates, foreign[rows] = np.arange(len(self._hub_country)), True
            take = min(k, len(candidates)) if not foreign[rows[0]] else 1
            order = np.argsort(-(vectors[rows] @ self.network.hub_vectors[candidates].T), axis=1)[:, :take]
            hub_index[rows, :take], count[rows] = candidates[order], take
        hub_lat, hub_lon = self.network.hubs["lat"].to_numpy(float), self.network.hubs["lon"].to_numpy(float)
        km = great_circle_km(points.lat_deg[:, None], points.lon_deg[:, None], hub_lat[hub_index], hub_lon[hub_index])
        hub_km = np.where(np.arange(k)[None, :] < count[:, None], km, np.inf)
        return Entries(hub_index, self._leg_ms(hub_km, foreign))

    def _leg_ms(self, hub_km: FloatArray, foreign: NDArray[np.bool_]) -> FloatArray:
        finite = np.where(np.isfinite(hub_km), hub_km, 0.0)
        leg = fiber_rtt_ms(finite * self.internet.access_route_factor)
        leg = leg + np.where(finite > self.extras.off_hub_km, self.extras.detour_ms, 0.0)
        leg = leg + np.where(foreign, self.extras.border_ms, 0.0)[:, None]
        return np.asarray(np.where(np.isfinite(hub_km), leg, np.inf))

    def _public_p50_ms(self, a: Endpoints, b: Endpoints) -> FloatArray:
        entry_a, entry_b = self.entries(a), self.entries(b)
        regional = self._on_corridor(a)[:, None] | self._on_corridor(b)[None, :]
        if not regional.any():
            return self._entry_to_entry_ms(entry_a, entry_b, self.transit_hub_rtt_ms)
        if regional.all():
            return self._entry_to_entry_ms(entry_a, entry_b, self.internet_hub_rtt_ms)
        # Transit everywhere, then the regional links where an end may take them: every column for a row on a
        # corridor, the corridor columns for the others (element by element the same figures as a full table).
        rtt = self._entry_to_entry_ms(entry_a, entry_b, self.transit_hub_rtt_ms)
        rows_on, cols_on = self._on_corridor(a), self._on_corridor(b)
        for rows, cols in ((np.flatnonzero(rows_on), slice(None)), (np.flatnonzero(~rows_on), np.flatnonzero(cols_on))):
            if len(rows):
                part = self._entry_to_entry_ms(_taken(entry_a, rows), _taken(entry_b, cols), self.internet_hub_rtt_ms)
                rtt[rows[:, None], np.arange(rtt.shape[1])[cols][None, :]] = part
        return rtt

    def _entry_to_entry_ms(self, entry_a: Entries, entry_b: Entries, hubs: FloatArray) -> FloatArray:
        """Quickest combination of entry hubs: leg + hub-to-hub + leg + the fixed delay. [ms]

        Through the hubs: first each row point's quickest way to every hub (its own legs, ``(n, h)``), then each
        column point's entries into that, so the ``(n, m)`` table is gathered once per column entry rather than
        once per pair of entries. The same figures to the last bit: adding a leg after the minimum over the
        other side's entries is the minimum of the sums, as rounding is monotone.
        """
        to_hub = np.full((entry_a.hub.shape[0], hubs.shape[1]), np.inf)
        for ka in range(entry_a.hub.shape[1]):
            to_hub = np.minimum(to_hub, hubs[entry_a.hub[:, ka]] + entry_a.leg_ms[:, ka, None])
        rtt = np.full((entry_a.hub.shape[0], entry_b.hub.shape[0]), np.inf)
        through = np.empty_like(rtt)  # one (n, m) temporary, filled in place: a third of the time of fresh ones
        for kb in range(entry_b.hub.shape[1]):
            np.take(to_hub, entry_b.hub[:, kb], axis=1, out=through)
            through += entry_b.leg_ms[None, :, kb]
            np.minimum(rtt, through, out=rtt)
        rtt += self.internet.fixed_ms
        return rtt

    def rtt_ms(self, a: Endpoints, b: Endpoints, path: PathType) -> RoundTripQuantiles:
        """``(n, m)`` median and p90 round trips from each row point to each column point.

        Parameters
        ----------
        a : Endpoints
            Row points (users for ``access``).
        b : Endpoints
            Column points (data centers).
        path : PathType
            ``backbone``, ``internet`` or ``access`` (see the module docstring).

        Returns
        -------
        RoundTripQuantiles
            ``p50_ms`` and ``p90_ms``, both never below the physics bound over the great circle. [ms]
        """
        km = pairwise_km(a.lat_deg, a.lon_deg, b.lat_deg, b.lon_deg)
        if path is PathType.BACKBONE:
            backbone = global_network(self.network)  # a provider's backbone does not take the regional corridors
            p50 = backbone_rtt_ms(a.lat_deg, a.lon_deg, b.lat_deg, b.lon_deg, self.backbone, network=backbone)
            p50 = np.maximum(p50, physics_bound_rtt_ms(km))
            return RoundTripQuantiles(np.asarray(p50), np.asarray(p50 * self.extras.p90_ratio(km)))
        return self._quantiles(self._public_p50_ms(a, b), km, _Ends(a, column=False), _Ends(b, column=True), path)

    def rtt_pairs_ms(self, a: Endpoints, b: Endpoints, path: PathType) -> RoundTripQuantiles:
        """``(n,)`` median and p90 round trips of the pairs ``(a[i], b[i])``: element ``i`` of :meth:`rtt_ms`'s table.

        For many pairs of many distinct places (a planner's measurement file), where the table of every point to
        every point would be mostly unused.

        Parameters
        ----------
        a, b : Endpoints
            The pairs' ends, of equal length.
        path : PathType
            ``internet`` or ``access``.

        Returns
        -------
        RoundTripQuantiles
            ``p50_ms`` and ``p90_ms`` of each pair, shape ``(n,)``. [ms]
        """
        if path is PathType.BACKBONE:
            raise ValueError("rtt_pairs_ms takes internet or access paths; use rtt_ms for the backbone")
        km = great_circle_km(a.lat_deg, a.lon_deg, b.lat_deg, b.lon_deg)
        entry_a, entry_b = self.entries(a), self.entries(b)
        regional = self._on_corridor(a) | self._on_corridor(b)
        p50 = np.full(len(a), np.inf)
        for ka in range(entry_a.hub.shape[1]):
            for kb in range(entry_b.hub.shape[1]):
                hub_a, hub_b = entry_a.hub[:, ka], entry_b.hub[:, kb]
                hub_ms = np.where(regional, self.internet_hub_rtt_ms[hub_a, hub_b], self.transit_hub_rtt_ms[hub_a, hub_b])
                p50 = np.minimum(p50, entry_a.leg_ms[:, ka] + hub_ms + entry_b.leg_ms[:, kb])
        p50 = p50 + self.internet.fixed_ms
        return self._quantiles(np.asarray(p50), km, _Ends(a), _Ends(b), path)

    def _quantiles(self, p50: FloatArray, km: FloatArray, a: _Ends, b: _Ends, path: PathType) -> RoundTripQuantiles:
        """The public path's p50 and p90 from its hub-graph median: transit, last mile, corrections, physics bound."""
        bound = physics_bound_rtt_ms(km)
        on_transit = b.on_transit if path is PathType.ACCESS else a.on_transit | b.on_transit
        on_transit = np.broadcast_to(on_transit, p50.shape)
        band = band_index(km)
        backbone_ratio = self.extras.p90_ratio(km, band=band)
        ratio = backbone_ratio
        if on_transit.any():
            p50 = np.where(on_transit, p50 * self.transit.inflation(km, a.region, b.region), p50)
            transit_ratio = self.transit.p90_ratio(
                band_ratio(self.transit.p90_ratio_by_band, km, band=band), km, a.region, b.region
            )
            ratio = np.where(on_transit, np.maximum(transit_ratio, backbone_ratio), ratio)
        if path is PathType.ACCESS:
            # The transit spread was measured between RIPE probes and already holds their access networks'
            # spread; the users' last mile keeps the spread it had, so only the network part takes it.
            last_mile = np.broadcast_to(
                a.shaped(self.extras.last_mile_ms(a.points.country_code, self.last_mile_override_ms)), p50.shape
            )
            ratio = (p50 * ratio + last_mile * backbone_ratio) / np.maximum(p50 + last_mile, 1e-9)
            p50 = p50 + last_mile
        if self.corrections:
            p50 = p50 * self.corrections.p50(a.region, b.region)
            ratio = np.maximum(ratio * self.corrections.spread(a.region, b.region), 1.0)
        p50 = np.maximum(p50, bound)
        return RoundTripQuantiles(np.asarray(p50), np.asarray(p50 * ratio))

    def pair(self, a: Endpoints, b: Endpoints, path: PathType) -> PairPath:
        """One pair's round trips (exactly :meth:`rtt_ms`) and the hub names along its median path.

        Parameters
        ----------
        a, b : Endpoints
            One point each.
        path : PathType
            The path type.

        Returns
        -------
        PairPath
            ``rtt_ms``, ``rtt_p90_ms``, ``bound_ms`` [ms] and the hubs passed.
        """
        quantiles = self.rtt_ms(a, b, path)
        bound = float(physics_bound_rtt_ms(great_circle_km(a.lat_deg[0], a.lon_deg[0], b.lat_deg[0], b.lon_deg[0])))
        return PairPath(float(quantiles.p50_ms[0, 0]), float(quantiles.p90_ms[0, 0]), bound, self._hub_path(a, b, path))

    def _hub_path(self, a: Endpoints, b: Endpoints, path: PathType) -> list[str]:
        params = self.backbone if path is PathType.BACKBONE else self.internet
        regional = path is not PathType.BACKBONE and bool(self._on_corridor(a)[0] or self._on_corridor(b)[0])
        network = self.network if regional else global_network(self.network)
        hubs = self.internet_hub_rtt_ms if regional else self.transit_hub_rtt_ms
        if path is PathType.BACKBONE:  # as backbone_rtt_ms: any of a's nearest hubs, b's nearest hub
            hubs_a, km_a = nearest_hubs(a.lat_deg, a.lon_deg, network, ACCESS_HUBS)
            (hub_b,), _ = nearest_hub(b.lat_deg, b.lon_deg, network)
            legs = access_rtt_ms(km_a[0], params, last_mile=False)
            hub_a = int(hubs_a[0, int(np.argmin(hub_rtt_matrix_ms(network, params)[hubs_a[0], hub_b] + legs))])
        else:
            entry_a, entry_b = self.entries(a), self.entries(b)
            total = entry_a.leg_ms[0][:, None] + hubs[np.ix_(entry_a.hub[0], entry_b.hub[0])]
            total = total + entry_b.leg_ms[0][None, :]
            ka, kb = np.unravel_index(int(np.argmin(total)), total.shape)
            hub_a, hub_b = int(entry_a.hub[0, ka]), int(entry_b.hub[0, kb])
        ids, names = self.network.hub_ids, self.network.hub_names
        nodes: list[str] = nx.dijkstra_path(build_graph(network, params), ids[hub_a], ids[hub_b], weight="rtt_ms")
        by_id = dict(zip(ids, names, strict=True))
        return [by_id[n] for n in nodes]


def load_extras(path: str | Path) -> PathExtras:
    """The off-graph parts of public paths from a calibration file (defaults where absent).

    Parameters
    ----------
    path : str or Path
        JSON with an ``extras`` object (``benchmarks/calibrate_latency.py`` writes it).

    Returns
    -------
    PathExtras
        Detour, border, last-mile priors and p90 ratios.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8")).get("extras", {})
    defaults = PathExtras()
    return PathExtras(
        detour_ms=float(data.get("detour_ms", defaults.detour_ms)),
        off_hub_km=float(data.get("off_hub_km", defaults.off_hub_km)),
        border_ms=float(data.get("border_ms", defaults.border_ms)),
        last_mile_default_ms=float(data.get("last_mile_default_ms", defaults.last_mile_default_ms)),
        last_mile_by_country=tuple(sorted((str(k), float(v)) for k, v in data.get("last_mile_by_country", {}).items())),
        p90_ratio_by_band=tuple(float(v) for v in data.get("p90_ratio_by_band", defaults.p90_ratio_by_band)),
    )


def load_internet_params(path: str | Path) -> GraphLatencyParams:
    """Public-internet graph parameters (``internet_params``) from a calibration file (defaults where absent)."""
    data = json.loads(Path(path).read_text(encoding="utf-8")).get("internet_params", {})
    known = {f.name for f in fields(GraphLatencyParams)}
    return GraphLatencyParams(**{k: float(v) for k, v in data.items() if k in known})


def round_trips(network: Network, *, last_mile_override_ms: float | None = None) -> RoundTrips:
    """Round trips over ``network`` with the bundled calibrated parameters.

    Parameters
    ----------
    network : Network
        Hubs and links (the bundled ones or a scenario's).
    last_mile_override_ms : float or None, optional
        One users' last mile for every country; None: the RIPE Atlas priors. [ms]

    Returns
    -------
    RoundTrips
        The model the plan and ``placement rtt`` share.
    """
    return RoundTrips(
        network,
        default_params(),
        _calibrated_internet(),
        _calibrated_extras(),
        last_mile_override_ms=last_mile_override_ms,
        transit=_calibrated_transit(),
    )


@lru_cache(maxsize=1)
def _calibrated_transit() -> TransitParams:
    return load_transit(CALIBRATED_JSON) if CALIBRATED_JSON.exists() else TransitParams()


@lru_cache(maxsize=1)
def _calibrated_internet() -> GraphLatencyParams:
    return load_internet_params(CALIBRATED_JSON) if CALIBRATED_JSON.exists() else GraphLatencyParams()


@lru_cache(maxsize=1)
def _calibrated_extras() -> PathExtras:
    return load_extras(CALIBRATED_JSON) if CALIBRATED_JSON.exists() else PathExtras()


@lru_cache(maxsize=1)
def default_round_trips() -> RoundTrips:
    """The bundled network with the calibrated parameters and the RIPE last-mile priors (``placement rtt``)."""
    return round_trips(default_network())
