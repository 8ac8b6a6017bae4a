"""Catchment cells: whole Voronoi cells kept uncut and dissolved as a coverage give the area the plain overlay gives."""

from __future__ import annotations

import numpy as np
import shapely

from placement.outputs.catchments import WORLD_BOX, _city_cells, _dissolve, nearest_city_cells


def _plain_cells(lon: np.ndarray, lat: np.ndarray, reach_deg: float) -> np.ndarray:
    """Every Voronoi cell cut to the world box and to its disc, one overlay each (no shortcut)."""
    points = shapely.points(np.column_stack([lon, lat]))
    diagram = shapely.voronoi_polygons(shapely.MultiPoint(np.column_stack([lon, lat])), extend_to=WORLD_BOX)
    voronoi = shapely.intersection(np.asarray(shapely.get_parts(diagram), dtype=object), WORLD_BOX)
    point_index, cell_index = shapely.STRtree(voronoi).query(points, predicate="within")
    cells = np.empty(len(lon), dtype=object)
    cells[point_index] = shapely.intersection(voronoi[cell_index], shapely.buffer(points[point_index], reach_deg, quad_segs=8))
    return cells


def _towns(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense clusters (whole cells) and scattered outliers (cells cut by the disc or the world box), in 6 groups."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform([-170, -80], [170, 80], size=(12, 2))
    clustered = centres[rng.integers(0, 12, 1500)] + rng.normal(0.0, 1.5, (1500, 2))
    scattered = rng.uniform([-179.9, -89.9], [179.9, 89.9], size=(200, 2))
    both = np.clip(np.round(np.vstack([clustered, scattered]), 6), [-179.99, -89.99], [179.99, 89.99])
    both = np.unique(both, axis=0)
    return both[:, 0], both[:, 1], rng.integers(0, 6, len(both))


def test_cells_cover_what_the_plain_overlay_covers() -> None:
    lon, lat, _ = _towns(1)
    cells, whole = _city_cells(lon, lat, reach_deg=5.0)
    plain = _plain_cells(lon, lat, 5.0)
    assert 0.3 < whole.mean() < 1.0  # both paths taken
    assert np.allclose(shapely.area(cells), shapely.area(plain), rtol=1e-9, atol=1e-12)
    assert np.all(shapely.area(shapely.symmetric_difference(cells, plain)) <= 1e-9 * np.maximum(shapely.area(plain), 1.0))
    assert list(shapely.area(nearest_city_cells(lon, lat, reach_deg=5.0))) == list(shapely.area(cells))


def test_dissolved_groups_equal_the_plain_union() -> None:
    lon, lat, group = _towns(2)
    cells, whole = _city_cells(lon, lat, reach_deg=5.0)
    plain = _plain_cells(lon, lat, 5.0)
    for g in range(6):
        mine = group == g
        fast, slow = _dissolve(cells[mine], whole[mine]), shapely.union_all(plain[mine])
        assert shapely.is_valid(fast)
        assert shapely.symmetric_difference(fast, slow).area <= 1e-9 * slow.area
