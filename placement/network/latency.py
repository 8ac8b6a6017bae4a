"""The latency model of one scenario: built once, then passed to everything that needs a round trip.

A scenario's round trips come either from the metro graph (its hubs and links, which a scenario
may point at edited copies of, and the calibrated parameters) or from the great circle times a
route factor. :class:`LatencyModel` holds the one the scenario chose, so the solve, the retrieval
round trips, ``network.geojson`` and the web map all read the same network; nothing here falls
back to the bundled files.

Path types (:class:`placement.network.paths.PathType`): populations reach sites over ``access``
paths (public internet from the users' own country, their last mile included) and sites reach
each other over ``internet`` paths. Both are :meth:`placement.network.paths.RoundTrips.rtt_ms`,
the function ``placement rtt`` calls, so the CLI prints exactly what the plan budgets.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Literal

from placement._types import FloatArray
from placement.network import great_circle as gc
from placement.network.load import GraphLatencyParams, Network
from placement.network.measurements import CalibrationReport
from placement.network.paths import Endpoints, PathType, RoundTripQuantiles, RoundTrips


@dataclass(frozen=True, eq=False)
class LatencyModel:
    """Round trips of one scenario.

    Build it with :meth:`from_graph` or :meth:`from_great_circle`.

    Parameters
    ----------
    kind : {"graph", "great_circle"}
        Which model.
    network : Network or None
        Hubs and links (graph model only).
    graph_params : GraphLatencyParams or None
        Backbone graph parameters (graph model only).
    round_trips : RoundTrips or None
        The public-internet and access round trips over ``network`` (graph model only).
    great_circle_params : LatencyParams or None
        Route factor, fixed delay and access (great-circle model only).
    calibration : CalibrationReport or None
        The scenario's ``latency.measurements`` report (graph model only).
    """

    kind: Literal["graph", "great_circle"]
    network: Network | None = None
    graph_params: GraphLatencyParams | None = None
    round_trips: RoundTrips | None = None
    great_circle_params: gc.LatencyParams | None = None
    calibration: CalibrationReport | None = None

    @classmethod
    def from_graph(cls, round_trips: RoundTrips, *, calibration: CalibrationReport | None = None) -> LatencyModel:
        """The graph model; its hub-to-hub round trips are computed here, once.

        Parameters
        ----------
        round_trips : RoundTrips
            Network, backbone and internet parameters, last-mile priors (or the scenario's override),
            transit excess and any corrections from the planner's measurements.
        calibration : CalibrationReport, optional
            The before/after report of those measurements (``latency_measurements.csv``).

        Returns
        -------
        LatencyModel
            The model, with its shortest paths computed.
        """
        model = cls(
            "graph",
            network=round_trips.network,
            graph_params=round_trips.backbone,
            round_trips=round_trips,
            calibration=calibration,
        )
        model.hub_rtt_ms  # noqa: B018 -- build the graph and its shortest paths now, not inside a later step
        return model

    @classmethod
    def from_great_circle(cls, params: gc.LatencyParams) -> LatencyModel:
        """The great-circle model (distance times a route factor, plus fixed delays).

        Parameters
        ----------
        params : LatencyParams
            Route factor, fixed delay and the users' access delay.

        Returns
        -------
        LatencyModel
            The model.
        """
        return cls("great_circle", great_circle_params=params)

    def _graph(self) -> tuple[Network, GraphLatencyParams]:
        if self.network is None or self.graph_params is None:
            raise ValueError("a graph latency model needs a network and its parameters")
        return self.network, self.graph_params

    def _trips(self) -> RoundTrips:
        if self.round_trips is None:
            raise ValueError("a graph latency model needs its round trips")
        return self.round_trips

    def _great_circle(self) -> gc.LatencyParams:
        if self.great_circle_params is None:
            raise ValueError("a great-circle latency model needs its parameters")
        return self.great_circle_params

    @cached_property
    def hub_rtt_ms(self) -> FloatArray:
        """``(h, h)`` shortest public-internet round trips between hubs (graph model; read only). [ms]"""
        return self._trips().internet_hub_rtt_ms

    def population_site_rtt(self, populations: Endpoints, sites: Endpoints) -> RoundTripQuantiles:
        """Median and p90 round trips from users at each point to each site (``access`` path).

        Parameters
        ----------
        populations : Endpoints
            User points (``n``) with their countries.
        sites : Endpoints
            Sites (``m``) with their countries.

        Returns
        -------
        RoundTripQuantiles
            ``(n, m)`` p50 and p90 round trips, users' last mile included; the great-circle model has
            no spread, so its p90 is its p50. [ms]
        """
        if self.kind == "great_circle":
            p50 = gc.population_site_rtt_ms(
                populations.lat_deg, populations.lon_deg, sites.lat_deg, sites.lon_deg, self._great_circle()
            )
            return RoundTripQuantiles(p50, p50)
        return self._trips().rtt_ms(populations, sites, PathType.ACCESS)

    def site_site_rtt(self, a: Endpoints, b: Endpoints) -> RoundTripQuantiles:
        """Data-center-to-data-center round trips over the public internet (no last mile).

        Parameters
        ----------
        a : Endpoints
            The ``n`` row points.
        b : Endpoints
            The ``m`` column points.

        Returns
        -------
        RoundTripQuantiles
            ``(n, m)`` p50 and p90 round trips (equal for the great-circle model). [ms]
        """
        if self.kind == "great_circle":
            no_access = replace(self._great_circle(), access_ms=0.0)
            p50 = gc.population_site_rtt_ms(a.lat_deg, a.lon_deg, b.lat_deg, b.lon_deg, no_access)
            return RoundTripQuantiles(p50, p50)
        return self._trips().rtt_ms(a, b, PathType.INTERNET)
