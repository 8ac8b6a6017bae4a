"""Shared fixtures: small scenarios written into a temporary folder."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SCENARIO = REPO / "data" / "scenarios" / "default.yaml"
SOLVERS = ("cbc", "highs")
_OWN_CACHE = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """The run's own cache of clusters and profiles (placement._cache), fresh, never the user's.

    Set in the controlling process before pytest-xdist starts its workers, which inherit it, so they share one.
    """
    if not os.environ.get("PLACEMENT_CACHE_DIR"):
        os.environ["PLACEMENT_CACHE_DIR"] = tempfile.mkdtemp(prefix="placement-test-cache-")
        config.stash[_OWN_CACHE] = os.environ["PLACEMENT_CACHE_DIR"]


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run's cache removed, by the process that made it."""
    folder = config.stash.get(_OWN_CACHE, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


CATALOG_HEADER = "id,name,country_code,continent,lat,lon,mw_available,power_price_usd_per_mwh,pue,capex_usd_per_mw,locked\n"

# Three metros: two in the US east, one in Europe.
SMALL_CATALOG = CATALOG_HEADER + (
    "ashburn,Ashburn,US,North America,39.04,-77.49,50,80,1.3,10000000,false\n"
    "chicago,Chicago,US,North America,41.88,-87.63,50,60,1.3,10000000,false\n"
    "frankfurt,Frankfurt,DE,Europe,50.11,8.68,50,120,1.3,10000000,false\n"
)

SMALL_CITIES = (
    "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
    "1,New York,US,NY,40.71,-74.01,8000000,America/New_York\n"
    "2,Chicago,US,IL,41.88,-87.63,2700000,America/Chicago\n"
    "3,Berlin,DE,16,52.52,13.40,3600000,Europe/Berlin\n"
    "4,Paris,FR,11,48.85,2.35,2100000,Europe/Paris\n"
)


def computed_chat(ttft_ms: float, **overrides: Any) -> dict[str, Any]:
    """The default world's chat class on the serving model (conversation-trace lengths, a 170 ms node budget)."""
    return {
        "name": "chat",
        "share": 1.0,
        "ttft_p99_ms": ttft_ms,
        "itl_p99_ms": 50,
        "serving_ttft_budget_ms": 170,
        "input_tokens": 1155,
        "input_tokens_max": 4142,
        "output_tokens": 211,
        "prefix_cache_hit_rate": 0.5,
        **overrides,
    }


def scenario_dict(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "small",
        "sites": {"catalog": "catalog.csv"},
        "demand": {
            "cities": "cities.csv",
            "min_population": 0,
            "adoption": 0.05,
            "tokens_per_user_per_day": 10000,
            "peak_factor": 2.0,
            "clusters": None,
        },
        "classes": [
            {
                "name": "chat",
                "share": 1.0,
                "ttft_p99_ms": 300,
                "itl_p99_ms": 50,
                "network_round_trips": 2,
                "queue_ms": 40,
                "retrieval_ms": 20,
                "prefill_ms": 90,
                "safety_tokenization_ms": 15,
                "first_decode_ms": 25,
                "goodput_tok_s_per_node": 10000,
            }
        ],
        "serving": {"node_kw": 10.2, "headroom": 0.2},
        "economics": {"node_capex_usd": 400000, "opex_usd_per_node_h": 3.0, "site_fixed_cost_usd_per_h": 250},
        "solver": {"name": "highs", "time_limit_s": 30, "gap": 1e-6},
        "policy": {"unreachable": "stop"},
    }
    return merge_sections(base, overrides)


def merge_sections(scenario: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``scenario`` with ``overrides`` merged in, section by section (a section's keys merge, values replace)."""
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(scenario.get(key), dict):
            scenario[key] = {**scenario[key], **value}
        else:
            scenario[key] = value
    return scenario


def write_scenario(folder: Path, *, catalog: str = SMALL_CATALOG, cities: str = SMALL_CITIES, **overrides: Any) -> Path:
    (folder / "catalog.csv").write_text(catalog)
    (folder / "cities.csv").write_text(cities)
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario_dict(**overrides), sort_keys=False))
    return path


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Path]) -> Path:
    """What ``make`` writes into an empty folder (it returns the path of interest), made once per test run.

    Under pytest-xdist each worker has its own session, so a session fixture is made once per worker: here the first
    worker to ask makes it, under a lock in the folder the workers' temporary folders share, and the others wait and
    read it. One process (``-n 0``), or where there is no ``fcntl``: made here, in this run's temporary folder.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    try:
        import fcntl
    except ImportError:  # not POSIX: each worker makes its own
        worker = None
    if not worker:
        return make(tmp_path_factory.mktemp(name))
    root = tmp_path_factory.getbasetemp().parent / "made-once"  # pytest-N/, whose popen-gw* are the workers'
    root.mkdir(exist_ok=True)
    folder, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if ``make`` raises
        if done.is_file():
            return Path(done.read_text(encoding="utf-8"))
        shutil.rmtree(folder, ignore_errors=True)  # a worker that failed to make it left a part
        folder.mkdir()
        made = make(folder)
        done.write_text(str(made), encoding="utf-8")
        return made


def _solve_small(folder: Path) -> Path:
    from placement.cli import main

    scenario = write_scenario(folder, policy={"unreachable": "report"})
    assert main(["solve", str(scenario), "--out", str(folder / "out"), "--quiet", "--no-maps"]) == 0
    return folder / "out"


def solved_small(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """The small scenario (unreachable demand reported) solved by the command line with no maps: its results folder.

    Solved once per test run (:func:`made_once`); each caller gets its own copy (with the scenario beside it), which
    it may add to (``adequacy`` writes its figures into the folder it reads).
    """
    solved = made_once(tmp_path_factory, "small-solved", _solve_small)
    folder = shutil.copytree(solved.parent, tmp_path_factory.mktemp(name), dirs_exist_ok=True)
    return Path(folder) / "out"


def nested_mismatch(summary: dict[str, Any], key: str) -> tuple[list[str], list[str]]:
    """Of the object ``summary[key]`` (or each object of the list it holds): keys written but not described, and keys
    described as always written but missing."""
    held = summary[key]
    objects = held if isinstance(held, list) else [held]
    assert objects, f"summary.json's {key} holds nothing to check"
    written = list(dict.fromkeys(k for o in objects for k in o))
    from placement.outputs.columns import nested_keys

    described_keys = nested_keys("summary.json", key)
    undescribed = [k for k in written if not any(c.matches(k) for c in described_keys)]
    missing = [c.name for c in described_keys if not c.optional and any(c.name not in o for o in objects)]
    return undescribed, missing


def script_module(name: str) -> ModuleType:
    """``scripts/<name>.py`` imported as a module (registered under ``name``: dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def small_scenario(tmp_path: Path) -> Path:
    return write_scenario(tmp_path)


@pytest.fixture(scope="session")
def world_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled world solved once by ``cli.py solve`` (about 10 s), shared by every test module."""
    from placement.cli import main

    def solve(folder: Path) -> Path:
        assert main(["solve", "--out", str(folder / "out"), "--quiet"]) == 0
        return folder / "out"

    return made_once(tmp_path_factory, "world", solve)  # once per run, not once per pytest-xdist worker


BUILDOUT_SMALL = REPO / "tests" / "data" / "buildout_small.yaml"
"""A build-out of three years and two demand futures on a few European sites."""


@pytest.fixture(scope="session")
def buildout_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:data:`BUILDOUT_SMALL` solved by ``cli.py solve`` with every output, once per test run; read, never written to."""
    from placement.cli import main

    def solve(folder: Path) -> Path:
        assert main(["solve", str(BUILDOUT_SMALL), "--out", str(folder / "out"), "--quiet"]) == 0
        return folder / "out"

    return made_once(tmp_path_factory, "buildout-small", solve)
