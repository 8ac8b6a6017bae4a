"""Corrections a planner's own measurements make to the modelled round trips, by world-region pair.

:mod:`placement.network.measurements` fits them; :meth:`placement.network.paths.RoundTrips.rtt_ms`
applies them: the median of every public path between two regions is multiplied by that pair's
factor, and its p90 over p50 ratio by the pair's spread factor, and the result is never below the
physics bound. A pair with no measurement keeps the calibrated model (factor 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from placement._types import FloatArray
from placement.network.world_regions import WORLD_REGIONS, region_pair_key


@dataclass(frozen=True)
class RegionCorrections:
    """Measured over modelled, per unordered world-region pair (keys of :func:`region_pair_key`).

    Parameters
    ----------
    p50_factor : tuple of (str, float)
        Factor on the median round trip.
    p90_spread_factor : tuple of (str, float)
        Factor on the p90/p50 ratio (never below 1 after it is applied).
    """

    p50_factor: tuple[tuple[str, float], ...] = ()
    p90_spread_factor: tuple[tuple[str, float], ...] = ()

    def _matrix(self, table: tuple[tuple[str, float], ...]) -> FloatArray:
        values = dict(table)
        n = len(WORLD_REGIONS)
        out = np.ones((n, n))
        for i, a in enumerate(WORLD_REGIONS):
            for j, b in enumerate(WORLD_REGIONS):
                out[i, j] = values.get(region_pair_key(a, b), 1.0)
        return out

    def p50(self, region_a: ArrayLike, region_b: ArrayLike) -> FloatArray:
        """Factor on the median of each pair (broadcast region indices)."""
        return np.asarray(self._matrix(self.p50_factor)[np.asarray(region_a), np.asarray(region_b)])

    def spread(self, region_a: ArrayLike, region_b: ArrayLike) -> FloatArray:
        """Factor on the p90/p50 ratio of each pair (broadcast region indices)."""
        return np.asarray(self._matrix(self.p90_spread_factor)[np.asarray(region_a), np.asarray(region_b)])

    def __bool__(self) -> bool:
        """True if any pair is corrected."""
        return bool(self.p50_factor or self.p90_spread_factor)
