"""What commodity transit adds to a round trip that a cloud provider's backbone does not pay.

A site on transit (a colocation hall or a greenfield campus buying IP transit, a hosting server) reaches the
world over the public internet: hot-potato hand-offs between networks, exchange points off the great
circle, regions whose traffic is carried through another continent's exchanges. A cloud region rides its
provider's backbone to the provider's edge nearest the other end (cold potato). The backbone path is the
graph model fitted on the cloud tables (:mod:`placement.network.paths`, ``internet`` parameters); a
transit path is that path times

``inflation(d, a, b) = exp(g(d) + alpha[region_a] + alpha[region_b])``

with ``g`` interpolated in ``log d`` between knots (flat outside them), never negative and never rising
with distance (a detour is a larger share of a short path; long-haul cables are the same for everybody),
and ``alpha`` per world region (:mod:`placement.network.world_regions`), never negative (0: the
best-connected regions). So a transit path is never faster than the backbone path between the same points.

Its p90 is the p50 times ``q[band] x exp(s[region_a] + s[region_b])``: a ratio per distance band and a
log spread per world region (signed: Europe's dense exchanges spread less than the world's paths, Asia's
and Oceania's more), never below the backbone's ratio of the band.

Fitted by ``benchmarks/calibrate_latency.py`` (``benchmarks/transit_fit.py``) on the RIPE Atlas country
pairs with leave-country-out cross-validation (leave-region-out reported beside it); ``q`` and ``s`` are
a 0.9-quantile regression of the held-out log ratios of measured over modelled (under 500 km the
0.5-1.5k band's ``q``: too few, too noisy pairs; under 1,500 km no region spread: too few pairs outside
Europe), the region spreads weighted to a mean of 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from placement._types import FloatArray
from placement.network.world_regions import WORLD_REGIONS

KNOTS_KM = (1000.0, 2500.0, 6000.0, 10000.0, 16000.0)
"""Distances at which the transit inflation is fitted (interpolated in log distance between them). [km]

No knot below 1,000 km: the RIPE pairs closer than that are 77 neighbouring countries whose pings
spread by ~90 % of their mean (``rtt_std``), too few and too noisy to say what transit adds to a
short path, so ``g`` is held at its 1,000 km value below it.
"""


@dataclass(frozen=True)
class TransitParams:
    """The transit inflation over the backbone path, and its spread.

    Parameters
    ----------
    knots_km : tuple of float
        Distances of the inflation figures (ascending). [km]
    log_inflation : tuple of float
        ``g`` at each knot (0: the backbone's round trip).
    region_log_factor : tuple of float
        ``alpha`` of each of :data:`~placement.network.world_regions.WORLD_REGIONS` (0: no added inflation).
    p90_ratio_by_band : tuple of float
        p90 over p50 round trip of a transit path in each distance band
        (:data:`placement.network.paths.BAND_EDGES_KM`), for regions of spread 0.
    region_log_spread : tuple of float
        ``s`` of each world region: the log of what a path with an end there multiplies the band's ratio
        by (0: the band's figure).
    spread_from_km : float
        Paths shorter than this take their band's ratio alone (too few measured short paths outside
        Europe to say a region's spread). [km]
    """

    knots_km: tuple[float, ...] = KNOTS_KM
    log_inflation: tuple[float, ...] = (0.0,) * len(KNOTS_KM)
    region_log_factor: tuple[float, ...] = (0.0,) * len(WORLD_REGIONS)
    p90_ratio_by_band: tuple[float, ...] = (1.3, 1.3, 1.3, 1.2, 1.2, 1.2)
    region_log_spread: tuple[float, ...] = (0.0,) * len(WORLD_REGIONS)
    spread_from_km: float = 1500.0

    def __post_init__(self) -> None:
        if len(self.log_inflation) != len(self.knots_km):
            raise ValueError("transit: one inflation figure per knot")
        if len(self.region_log_factor) != len(WORLD_REGIONS):
            raise ValueError(f"transit: one region factor per world region ({len(WORLD_REGIONS)})")
        if len(self.region_log_spread) != len(WORLD_REGIONS):
            raise ValueError(f"transit: one region spread per world region ({len(WORLD_REGIONS)})")
        if list(self.knots_km) != sorted(self.knots_km):
            raise ValueError("transit: knots must ascend")

    def log_inflation_at(self, distance_km: ArrayLike) -> FloatArray:
        """``g(d)``: interpolated in log distance, flat outside the knots."""
        log_km = np.log(np.maximum(np.asarray(distance_km, dtype=float), 1.0))
        return np.asarray(np.interp(log_km, np.log(self.knots_km), self.log_inflation))

    def inflation(self, distance_km: ArrayLike, region_a: ArrayLike, region_b: ArrayLike) -> FloatArray:
        """Transit over backbone round trip of each pair (broadcast).

        Parameters
        ----------
        distance_km : array_like
            Great-circle distance of each pair. [km]
        region_a, region_b : array_like of int
            Indices into :data:`~placement.network.world_regions.WORLD_REGIONS` of each end.

        Returns
        -------
        numpy.ndarray
            ``exp(g(d) + alpha_a + alpha_b)``, at least 1 for fitted parameters.
        """
        alpha = np.asarray(self.region_log_factor, dtype=float)
        return np.asarray(np.exp(self.log_inflation_at(distance_km) + alpha[np.asarray(region_a)] + alpha[np.asarray(region_b)]))

    def p90_ratio(self, band_ratio: ArrayLike, distance_km: ArrayLike, region_a: ArrayLike, region_b: ArrayLike) -> FloatArray:
        """p90 over p50 of each pair: its band's ratio times the two regions' spreads (broadcast).

        Parameters
        ----------
        band_ratio : array_like
            :attr:`p90_ratio_by_band` of each pair's distance band.
        distance_km : array_like
            Great-circle distance of each pair (under :attr:`spread_from_km`: no region spread). [km]
        region_a, region_b : array_like of int
            Indices into :data:`~placement.network.world_regions.WORLD_REGIONS` of each end.

        Returns
        -------
        numpy.ndarray
            ``q[band] x exp(s_a + s_b)``, at least 1.
        """
        spread = np.asarray(self.region_log_spread, dtype=float)
        log_spread = spread[np.asarray(region_a)] + spread[np.asarray(region_b)]
        log_spread = np.where(np.asarray(distance_km, dtype=float) >= self.spread_from_km, log_spread, 0.0)
        return np.asarray(np.maximum(np.asarray(band_ratio, dtype=float) * np.exp(log_spread), 1.0))


def load_transit(path: str | Path) -> TransitParams:
    """The transit parameters (``transit``) of a calibration file; the defaults (no inflation) where absent.

    Parameters
    ----------
    path : str or Path
        JSON written by ``benchmarks/calibrate_latency.py``.

    Returns
    -------
    TransitParams
        Knots, inflation, region factors, p90 ratios and region spreads.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8")).get("transit")
    if not data:
        return TransitParams()
    regions = data["region_log_factor"]
    spread = data.get("region_log_spread", {})
    return TransitParams(
        knots_km=tuple(float(k) for k in data["knots_km"]),
        log_inflation=tuple(float(g) for g in data["log_inflation"]),
        region_log_factor=tuple(float(regions.get(name, 0.0)) for name in WORLD_REGIONS),
        p90_ratio_by_band=tuple(float(r) for r in data["p90_ratio_by_band"]),
        region_log_spread=tuple(float(spread.get(name, 0.0)) for name in WORLD_REGIONS),
        spread_from_km=float(data.get("spread_from_km", TransitParams.spread_from_km)),
    )
