"""Maps draw polygons as matplotlib collections: the picture geopandas drew, without its redraws of the figure."""

from __future__ import annotations

import io
from pathlib import Path

import geopandas as gpd
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
import shapely
from matplotlib.figure import Figure
from PIL import Image

from placement.outputs import regional_maps
from placement.outputs.world_map import add_outlines, add_polygons, geographic_aspect, load_basemap
from placement.plan.solve import run
from placement.scenario.load import load_scenario
from tests.conftest import write_scenario


def _pixels(fig: Figure) -> np.ndarray:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=60)
    plt.close(fig)
    return np.asarray(Image.open(buffer).convert("RGB")).astype(int)


def _holed() -> gpd.GeoDataFrame:
    ring = shapely.Polygon([(0, 0), (10, 0), (10, 10), (0, 10)], [[(3, 3), (7, 3), (7, 7), (3, 7)]])
    islands = shapely.MultiPolygon([shapely.box(12, 0, 14, 2), shapely.box(12, 5, 15, 9)])
    return gpd.GeoDataFrame({"k": [0, 1]}, geometry=[ring, islands], crs="EPSG:4326")


@pytest.mark.parametrize("frame", [_holed(), load_basemap()], ids=["holes-and-parts", "basemap"])
def test_collections_draw_what_geopandas_draws(frame: gpd.GeoDataFrame) -> None:
    tints = [(0.9, 0.2, 0.2, 1.0), (0.2, 0.2, 0.9, 1.0)] * (len(frame) // 2) + [(0.9, 0.2, 0.2, 1.0)] * (len(frame) % 2)
    drawn = []
    for mine in (False, True):
        fig, ax = plt.subplots(figsize=(6, 4))
        if mine:
            add_polygons(ax, frame.geometry.to_numpy(), facecolors=tints, edgecolor="black", linewidth=0.5, alpha=0.5)
            add_outlines(ax, frame.geometry.to_numpy(), color="#555555", linewidth=0.7, alpha=0.8, zorder=1.5)
            ax.set_aspect(geographic_aspect(frame))
        else:
            frame.plot(ax=ax, color=tints, edgecolor="black", linewidth=0.5, alpha=0.5)
            frame.boundary.plot(ax=ax, color="#555555", linewidth=0.7, alpha=0.8, zorder=1.5)
        west, south, east, north = frame.total_bounds
        ax.set_xlim(west - 1, east + 1)
        ax.set_ylim(south - 1, north + 1)
        ax.set_xlabel("")
        ax.set_ylabel("")
        drawn.append(_pixels(fig))
    old, new = drawn
    assert old.shape == new.shape
    assert (np.abs(old - new).max(axis=2) > 48).mean() < 0.001  # antialiasing may differ at edges, nothing else


def test_a_regional_map_is_rendered_only_to_be_saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = run(load_scenario(write_scenario(tmp_path)))
    draws = []
    original = Figure.draw

    def counted(self: Figure, renderer: object) -> None:
        draws.append(1)
        original(self, renderer)

    monkeypatch.setattr(Figure, "draw", counted)
    written = regional_maps.draw_regional_maps(plan.results, tmp_path, catchments=None)
    assert written
    # savefig renders twice (the tight bounding box, then the PNG); geopandas rendered once more per .plot() (3 a map)
    assert len(draws) <= 2 * len(written)


def test_class_lines_leave_deadline_classes_to_their_own_panel() -> None:
    """Interactive classes get one line per (population, class) to its main site, in their own colour; batch none."""
    import matplotlib.pyplot as plt
    import pandas as pd
    from matplotlib.collections import LineCollection

    from placement.outputs.classes import DEADLINE_MS, deadline_classes, interactive_classes
    from placement.outputs.world_map import draw_class_lines

    rows = [  # (population, class, site lon, goodput, objective)
        ("p1", "chat", 2.0, 90.0, 300.0), ("p1", "chat", 4.0, 10.0, 300.0), ("p2", "chat", 2.0, 50.0, 300.0),
        ("p1", "agent", 4.0, 30.0, 250.0), ("p1", "batch", 100.0, 70.0, 3.6e6), ("p2", "batch", 100.0, 70.0, 3.6e6),
    ]  # fmt: skip
    assignments = pd.DataFrame(
        [{"population_id": p, "class": c, "site_lon": lon, "site_lat": 50.0, "pop_lon": 0.0 if p == "p1" else 1.0,
          "pop_lat": 48.0, "goodput_tok_s": g, "ttft_objective_ms": o} for p, c, lon, g, o in rows]
    )  # fmt: skip
    assert interactive_classes(assignments) == ["chat", "agent"] and deadline_classes(assignments) == ["batch"]
    assert 3.6e6 > DEADLINE_MS > 300
    fig, ax = plt.subplots()
    colours = draw_class_lines(ax, assignments)
    assert list(colours) == ["chat", "agent"] and colours["chat"] != colours["agent"]
    drawn = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert [len(c.get_segments()) for c in drawn] == [2, 1]  # p1 and p2 to their main chat site; p1's agent line
    ends = sorted(float(s[1][0]) for s in drawn[0].get_segments())
    assert ends == [2.0, 2.0]  # p1's main chat site is at lon 2 (90 of 100 tok/s), not 4
    plt.close(fig)
