"""A partial plan's results: no NaN or infinity in any file, and every map drawn in bounded memory.

A partial plan (a diagnosis, or a time-limited N+1 answer) can open sites that serve nothing:
their $/M goodput is undefined and no MW is used. Such a plan once wrote ``inf`` into the CSV
files, made GDAL skip fields of the GeoJSON, and drew a legend marker sized by 1 MW over 0 MW
used that grew the process until the kernel killed it.
"""

from __future__ import annotations

import csv
import json
import math
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from placement.instance.build import build_instance
from placement.instance.record import Instance
from placement.optimize.problem import PlacementSolution
from placement.optimize.solver import SolverReport, SolveStatus
from placement.outputs.writer import write_results
from placement.plan.record import Plan
from placement.plan.solve import assemble_plan
from placement.scenario.load import load_scenario
from tests.conftest import write_scenario

MAP_MEMORY_LIMIT_BYTES = 3_000_000_000
"""Address space allowed to the map-drawing process (it needs well under half of it)."""


def _plan(instance: Instance, served_commodities: int) -> Plan:
    """Every site open; the first model rows served on their first pair, the rest unserved."""
    data = instance.inputs
    shares = np.zeros(len(data.pair_site))
    for c in range(min(served_commodities, data.n_commodities)):
        shares[np.flatnonzero(data.pair_commodity == c)[0]] = 1.0
    served = np.bincount(data.pair_commodity, weights=shares, minlength=data.n_commodities)
    is_open = np.ones(data.n_sites, dtype=bool)
    nodes = np.ceil(data.site_slice_load(shares).max(axis=1) - 1e-9).astype(np.int64)
    cost = data.cost_usd_per_h(is_open, nodes, shares)
    report = SolverReport("highs", SolveStatus.FEASIBLE, cost, math.nan, math.nan, 0.0, "made by hand for the test")
    solution = PlacementSolution(is_open, nodes, shares, 1.0 - served, cost, report)
    return assemble_plan(instance, solution, "partial", ["a partial plan made by hand"])


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Instance:
    folder = tmp_path_factory.mktemp("partial")
    return build_instance(load_scenario(write_scenario(folder, policy={"unreachable": "report"})))


def _numeric_columns(rows: list[list[str]]) -> list[int]:
    """Columns whose every non-empty cell is a number (a city called "Nan" is not one)."""
    header, body = rows[0], rows[1:]
    numeric = []
    for k in range(len(header)):
        cells = [row[k] for row in body if k < len(row) and row[k] != ""]
        try:
            [float(cell) for cell in cells]
        except ValueError:
            continue
        numeric.append(k)
    return numeric


def _walk_json(value: Any, where: str, problems: list[str]) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        problems.append(f"{where}: {value}")
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk_json(item, f"{where}.{key}", problems)
    elif isinstance(value, list):
        for k, item in enumerate(value):
            _walk_json(item, f"{where}[{k}]", problems)


def nonfinite_values(folder: Path) -> list[str]:
    """Every NaN or infinity in the JSON, GeoJSON and CSV files of a results folder."""
    problems: list[str] = []
    for path in sorted(folder.iterdir()):
        if path.suffix in (".json", ".geojson"):

            def constant(name: str, where: str = path.name) -> float:
                problems.append(f"{where}: literal {name}")
                return 0.0

            _walk_json(json.loads(path.read_text(encoding="utf-8"), parse_constant=constant), path.name, problems)
        elif path.suffix == ".csv":
            with path.open(newline="", encoding="utf-8") as stream:
                rows = list(csv.reader(stream))
            for k in _numeric_columns(rows):
                for n, row in enumerate(rows[1:], start=2):
                    if k < len(row) and row[k] != "" and not math.isfinite(float(row[k])):
                        problems.append(f"{path.name} line {n} column {rows[0][k]}: {row[k]}")
    return problems


def test_checker_finds_nan_and_infinity(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("name,x\nNan,1\nParis,inf\n")
    (tmp_path / "b.geojson").write_text('{"features": [{"properties": {"x": NaN}}]}')
    (tmp_path / "c.json").write_text('{"x": [1, 1e999]}')
    assert nonfinite_values(tmp_path) == ["a.csv line 3 column x: inf", "b.geojson: literal NaN", "c.json.x[1]: inf"]


def test_partial_plan_writes_no_nan_or_infinity(instance: Instance, tmp_path: Path) -> None:
    plan = _plan(instance, served_commodities=1)
    # The premise: open sites serve nothing, so their $/M goodput is undefined.
    idle = plan.sites["open"] & (plan.sites["goodput_tok_s"] <= 0)
    assert idle.any()
    out = write_results(plan, tmp_path / "out")
    assert nonfinite_values(out) == []
    # Undefined on purpose: an empty cell in CSV and null in GeoJSON, not a skipped field.
    with (out / "sites.csv").open(newline="") as stream:
        rows = {row["site_id"]: row for row in csv.DictReader(stream)}
    features = json.loads((out / "sites.geojson").read_text())["features"]
    by_id = {f["properties"]["site_id"]: f["properties"] for f in features}
    for site_id in plan.sites.loc[idle, "site_id"]:
        assert rows[site_id]["cost_per_million_goodput_tokens_usd"] == ""
        assert by_id[site_id]["cost_per_million_goodput_tokens_usd"] is None


DRAW = textwrap.dedent(
    """
    import pickle, resource, sys
    from pathlib import Path

    limit = int(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from placement.outputs.regional_maps import draw_regional_maps_from_tables
    from placement.outputs.world_map import draw_world_map

    tables = pickle.loads(Path(sys.argv[1]).read_bytes())
    out = Path(sys.argv[2])
    draw_world_map(*tables, out / "map.png", title="partial")
    written = draw_regional_maps_from_tables(tables, out, title="partial")
    print(len(written))
    """
)


@pytest.mark.parametrize("served_commodities", [0, 1])
def test_maps_of_a_partial_plan_are_drawn_in_bounded_memory(instance: Instance, tmp_path: Path, served_commodities: int) -> None:
    # With nothing served, no MW is used: the old legend drew a 1 MW key on a scale of 900 pt^2 per
    # 1e-9 MW, a marker a million points wide, and died of MemoryError under this limit.
    plan = _plan(instance, served_commodities)
    tables = tmp_path / "tables.pkl"
    tables.write_bytes(pickle.dumps((plan.sites, plan.assignments, plan.populations)))
    done = subprocess.run(
        [sys.executable, "-c", DRAW, str(tables), str(tmp_path), str(MAP_MEMORY_LIMIT_BYTES)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) == 2  # North America and Europe hold open sites
    assert (tmp_path / "map.png").stat().st_size > 10_000
