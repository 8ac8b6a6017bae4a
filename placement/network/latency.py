"""The latency model of one scenario: built once, then passed to everything that needs a round trip.

A scenario's round trips come either from the metro graph (its hubs and links, which a scenario
may point at edited copies of, and the calibrated parameters) or from the great circle times a
route factor. :class:`LatencyModel` holds the one the scenario chose, so the solve, the retrieval
round trips, ``network.geojson`` and the web map all read the same network; nothing here falls
back to the bundled files.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Literal

import geopandas as gpd
import numpy as np
from numpy.typing import ArrayLike, NDArray

from placement.network import graph
from placement.network import great_circle as gc

FloatArray = NDArray[np.float64]

LINK_FRAME_COLUMNS = ("a", "b", "kind", "length_km", "published_length_km", "great_circle_km", "rtt_ms", "cables", "source")


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
        Graph parameters; ``last_mile_ms`` is the users' last mile (graph model only).
    great_circle_params : LatencyParams or None
        Route factor, fixed delay and access (great-circle model only).
    """

    kind: Literal["graph", "great_circle"]
    network: graph.Network | None = None
    graph_params: graph.GraphLatencyParams | None = None
    great_circle_params: gc.LatencyParams | None = None

    @classmethod
    def from_graph(cls, network: graph.Network, params: graph.GraphLatencyParams) -> LatencyModel:
        """The graph model over ``network``; its hub-to-hub round trips are computed here, once.

        Parameters
        ----------
        network : Network
            Hubs and links.
        params : GraphLatencyParams
            Route factors, delays and the users' last mile.

        Returns
        -------
        LatencyModel
            The model, with its shortest paths computed.
        """
        model = cls("graph", network=network, graph_params=params)
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

    def _graph(self) -> tuple[graph.Network, graph.GraphLatencyParams]:
        if self.network is None or self.graph_params is None:
            raise ValueError("a graph latency model needs a network and its parameters")
        return self.network, self.graph_params

    def _great_circle(self) -> gc.LatencyParams:
        if self.great_circle_params is None:
            raise ValueError("a great-circle latency model needs its parameters")
        return self.great_circle_params

    @cached_property
    def hub_rtt_ms(self) -> FloatArray:
        """``(h, h)`` shortest-path round trips between hubs (graph model; read only). [ms]"""
        return graph.hub_rtt_matrix_ms(*self._graph())

    def population_site_rtt_ms(
        self, pop_lat_deg: ArrayLike, pop_lon_deg: ArrayLike, site_lat_deg: ArrayLike, site_lon_deg: ArrayLike
    ) -> FloatArray:
        """Round trip from users at each point to each site, their last mile included.

        Parameters
        ----------
        pop_lat_deg, pop_lon_deg : array_like
            User points (``n``). [degrees]
        site_lat_deg, site_lon_deg : array_like
            Sites (``m``). [degrees]

        Returns
        -------
        numpy.ndarray
            ``(n, m)`` round trips. [ms]
        """
        if self.kind == "great_circle":
            return gc.population_site_rtt_ms(pop_lat_deg, pop_lon_deg, site_lat_deg, site_lon_deg, self._great_circle())
        network, params = self._graph()
        return graph.population_site_rtt_ms(pop_lat_deg, pop_lon_deg, site_lat_deg, site_lon_deg, params, network=network)

    def site_site_rtt_ms(
        self, lat_a_deg: ArrayLike, lon_a_deg: ArrayLike, lat_b_deg: ArrayLike, lon_b_deg: ArrayLike
    ) -> FloatArray:
        """Data-center-to-data-center round trips (no last mile).

        Parameters
        ----------
        lat_a_deg, lon_a_deg : array_like
            The ``n`` row points. [degrees]
        lat_b_deg, lon_b_deg : array_like
            The ``m`` column points. [degrees]

        Returns
        -------
        numpy.ndarray
            ``(n, m)`` round trips. [ms]
        """
        if self.kind == "great_circle":
            no_access = replace(self._great_circle(), access_ms=0.0)
            return gc.population_site_rtt_ms(lat_a_deg, lon_a_deg, lat_b_deg, lon_b_deg, no_access)
        network, params = self._graph()
        return graph.site_site_rtt_ms(lat_a_deg, lon_a_deg, lat_b_deg, lon_b_deg, params, network=network)

    def links_frame(self) -> gpd.GeoDataFrame:
        """The links round trips are computed over, as LineStrings (none for the great-circle model).

        Returns
        -------
        geopandas.GeoDataFrame
            As :func:`placement.network.graph.links_frame`; empty (same columns) for the
            great-circle model, which has no links.
        """
        if self.kind == "great_circle":
            return gpd.GeoDataFrame({c: [] for c in LINK_FRAME_COLUMNS}, geometry=[], crs=graph.WGS84)
        network, params = self._graph()
        return graph.links_frame(network, params)
