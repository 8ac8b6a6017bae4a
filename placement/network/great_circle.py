"""Round-trip time between places, first version: great circle, fiber speed, route inflation.

Every RTT produced here is at least the physics bound ``2 * d / (c / 1.468)``: light in fiber
covers about 204,190 km/s, so a round trip over a great-circle distance ``d`` takes at least
``d / 102.1`` ms. Real routes are longer than the great circle, so the model inflates the
distance by a route factor (>= 1) and adds a fixed equipment delay. A later version replaces
:func:`population_site_rtt_ms` with shortest paths over a graph of metros and long-haul links.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from placement.world.geodesy import pairwise_km

SPEED_OF_LIGHT_KM_PER_MS = 299.792458
"""Speed of light in vacuum. [km/ms]"""

FIBER_REFRACTIVE_INDEX = 1.468
"""Group index of standard single-mode fiber at 1550 nm."""

FIBER_KM_PER_MS = SPEED_OF_LIGHT_KM_PER_MS / FIBER_REFRACTIVE_INDEX
"""Speed of light in fiber, about 204.19. [km/ms]"""


@dataclass(frozen=True)
class LatencyParams:
    """Free parameters of the great-circle latency model.

    Parameters
    ----------
    route_factor : float
        Route length over great-circle distance (>= 1).
    fixed_ms : float
        Equipment and switching delay added to every path's round trip. [ms]
    access_ms : float
        Round trip of the user's access leg (last mile and metro aggregation). [ms]
    """

    route_factor: float = 1.5
    fixed_ms: float = 2.0
    access_ms: float = 8.0


def physics_bound_rtt_ms(distance_km: ArrayLike) -> NDArray[np.float64]:
    """Smallest possible round trip over a great-circle distance through fiber.

    Parameters
    ----------
    distance_km : array_like
        Great-circle distance. [km]

    Returns
    -------
    numpy.ndarray
        ``2 * d / (c / 1.468)``. [ms]
    """
    return np.asarray(2.0 * np.asarray(distance_km, dtype=float) / FIBER_KM_PER_MS)


def path_rtt_ms(distance_km: ArrayLike, params: LatencyParams) -> NDArray[np.float64]:
    """Data-center-to-data-center round trip over a great-circle distance.

    Parameters
    ----------
    distance_km : array_like
        Great-circle distance. [km]
    params : LatencyParams
        Route factor and fixed delay.

    Returns
    -------
    numpy.ndarray
        Round-trip time, never below :func:`physics_bound_rtt_ms`. [ms]
    """
    bound = physics_bound_rtt_ms(distance_km)
    return np.asarray(np.maximum(bound * params.route_factor + params.fixed_ms, bound))


def population_site_rtt_ms(
    pop_lat_deg: ArrayLike,
    pop_lon_deg: ArrayLike,
    site_lat_deg: ArrayLike,
    site_lon_deg: ArrayLike,
    params: LatencyParams,
) -> NDArray[np.float64]:
    """Round trip from each population's users to each site, access leg included.

    This is the one function the optimiser asks for network latency.

    Parameters
    ----------
    pop_lat_deg, pop_lon_deg : array_like
        Population points (``n``). [degrees]
    site_lat_deg, site_lon_deg : array_like
        Site points (``m``). [degrees]
    params : LatencyParams
        Model parameters.

    Returns
    -------
    numpy.ndarray
        ``(n, m)`` round-trip times. [ms]
    """
    distance_km = pairwise_km(pop_lat_deg, pop_lon_deg, site_lat_deg, site_lon_deg)
    return path_rtt_ms(distance_km, params) + params.access_ms
