"""Shared fixtures: small scenarios written into a temporary folder."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
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


def solved_small(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """The small scenario (unreachable demand reported) solved by the command line with no maps: its results folder."""
    from placement.cli import main

    folder = tmp_path_factory.mktemp(name)
    scenario = write_scenario(folder, policy={"unreachable": "report"})
    assert main(["solve", str(scenario), "--out", str(folder / "out"), "--quiet", "--no-maps"]) == 0
    return folder / "out"


@pytest.fixture
def small_scenario(tmp_path: Path) -> Path:
    return write_scenario(tmp_path)


@pytest.fixture(scope="session")
def world_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled world solved once by ``cli.py solve`` (about 10 s), shared by every test module."""
    from placement.cli import main

    out = tmp_path_factory.mktemp("world") / "out"
    assert main(["solve", "--out", str(out), "--quiet"]) == 0
    return out
