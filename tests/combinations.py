"""Features two at a time on one small world: each pair solves, or is refused for a reason, and each feature's check holds.

The world has five sites in four countries (two US grid regions, Germany, the Netherlands, China) and a city beside
each; its catalog carries everything a feature reads (grid carbon intensity, climate, grid region, KV tier). A
feature is an overlay of scenario keys; a pair merges two overlays. A plan is solved as a planner does, with
``placement solve``, and each feature checks the written files alone (``sites.csv``, ``assignments.csv``,
``failover*.csv``, ``summary.json``): a cap recomputed from the sites' figures, every loss re-routed, no barred part
at a barred site, a regulated population served in its bloc.

:func:`run_pair` runs one pair; ``tests/test_combinations.py`` runs them all and ``scripts/combination_matrix.py``
prints the table docs/guides/features-together.md shows.
"""

from __future__ import annotations

import contextlib
import io
import json
import runpy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from tests.conftest import CATALOG_HEADER, REPO, computed_chat, merge_sections, scenario_dict

CATALOG = CATALOG_HEADER.replace(",locked\n", ",locked,carbon_intensity_g_per_kwh,climate,grid_region,kv_tier\n") + (
    "ashburn,Ashburn,US,North America,39.04,-77.49,60,80,1.3,10000000,false,380,cool,US-PJM,hbm\n"
    "chicago,Chicago,US,North America,41.88,-87.63,60,60,1.3,10000000,false,780,hot-dry,US-PJM,nvme\n"
    "frankfurt,Frankfurt,DE,Europe,50.11,8.68,60,120,1.3,10000000,false,350,temperate,DE-national,dram\n"
    "amsterdam,Amsterdam,NL,Europe,52.37,4.90,60,90,1.3,10000000,false,300,temperate,NL-national,dram\n"
    "shanghai,Shanghai,CN,Asia,31.23,121.47,60,70,1.3,10000000,false,550,hot-humid,CN-East,dram\n"
)
CITIES = (
    "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
    "1,New York,US,NY,40.71,-74.01,8000000,America/New_York\n"
    "2,Chicago,US,IL,41.88,-87.63,2700000,America/Chicago\n"
    "3,Berlin,DE,16,52.52,13.40,3600000,Europe/Berlin\n"
    "4,Amsterdam,NL,07,52.37,4.90,900000,Europe/Amsterdam\n"
    "5,Shanghai,CN,23,31.23,121.47,20000000,Asia/Shanghai\n"
)
BIS_RULE = "us-bis-2023-advanced-computing"
"""The export rule that bars the H100 at the Chinese site; the base world waives it, the availability feature not."""

CAP_SHARE = 0.9
"""A cap feature limits its figure to this share of the base world's plan's."""


def base_world() -> dict[str, Any]:
    """The scenario every pair starts from: computed serving, great-circle latency, the export rule waived."""
    return scenario_dict(
        classes=[computed_chat(400.0, prefix_reuse="chat")],
        serving={"model": "llama-3.1-70b", "accelerator": "h100-sxm", "node_kw": None},
        latency={"model": "great_circle"},
        solver={"name": "highs", "time_limit_s": 30, "gap": 1e-4},
        policy={"unreachable": "report"},
        availability={"waive": [BIS_RULE]},
        time={"slices": 4, "profile": str(REPO / "data" / "demand" / "diurnal_profile.csv")},
    )


@dataclass(frozen=True)
class Baseline:
    """What the base world's plan uses, from its files: the caps are shares of it."""

    tco2e_per_year: float
    water_m3_per_year: float
    us_tco2e_per_year: float


Check = Callable[[Path, Baseline], list[str]]


@dataclass(frozen=True)
class Feature:
    """A scenario overlay, and the check its written plan must pass."""

    name: str
    overlay: Callable[[Baseline], dict[str, Any]]
    check: Check = lambda folder, baseline: []
    patches: tuple[tuple[str, str, int], ...] = field(default=())


def _sites(folder: Path) -> pd.DataFrame:
    return pd.read_csv(folder / "sites.csv", keep_default_na=False)


def _check_failover(folder: Path, baseline: Baseline) -> list[str]:
    if not (folder / "failover.csv").exists():
        return ["failover: the plan has no failover files (N+1 not applied)"]
    checker = runpy.run_path(str(REPO / "scripts" / "check_failover.py"))["check"]
    return [f"failover: {line}" for line in checker(folder)]


def _check_total(column: str, limit: Callable[[Baseline], float], *, country: str | None = None) -> Check:
    def check(folder: Path, baseline: Baseline) -> list[str]:
        sites = _sites(folder)
        if country is not None:
            sites = sites[sites["country_code"] == country]
        used = float(pd.to_numeric(sites[column], errors="coerce").fillna(0.0).sum())
        cap = limit(baseline)
        return (
            []
            if used <= cap * (1 + 1e-6)
            else [f"{column}{'' if country is None else ' in ' + country}: {used:,.6g} > cap {cap:,.6g}"]
        )

    return check


def _check_bloc(folder: Path, baseline: Baseline) -> list[str]:
    rows = pd.read_csv(folder / "assignments.csv", keep_default_na=False)
    sites = _sites(folder).set_index("site_id")["country_code"]
    at = rows["site_id"].map(sites)
    wrong = rows[(rows["country_code"] == "CN") != (at == "CN")]
    return [f"residency: {len(wrong)} assignments cross the cn-pipl bloc"] if len(wrong) else []


def _check_barred(folder: Path, baseline: Baseline) -> list[str]:
    sites = _sites(folder).set_index("site_id")
    if "accelerator" not in sites.columns:  # a build-out year: nodes by part
        nodes = float(sites.loc["shanghai"].get("nodes_h100-sxm", 0) or 0)
        return [f"availability: Shanghai runs {nodes:g} barred h100-sxm nodes"] if nodes > 0 else []
    part = str(sites.loc["shanghai", "accelerator"])
    serves = float(sites.loc["shanghai", "goodput_tok_s"]) > 0
    return [f"availability: Shanghai serves on the barred {part}"] if serves and part == "h100-sxm" else []


def _horizon(baseline: Baseline) -> dict[str, Any]:
    return {
        "horizon": {
            "years": [2027, 2028],
            "clusters": None,
            "time_slices": 2,
            "accelerators": [{"id": "h100-sxm", "node_capex_usd": 250000}],
            "demand_scenarios": [{"name": "base", "probability": 1.0, "growth_per_year": 0.2}],
        }
    }


FEATURES: tuple[Feature, ...] = (
    Feature(
        "priced full resolution",
        lambda b: {},
        patches=(
            ("placement.optimize.solve", "PRICING_FROM_PAIRS", 0),
            ("placement.optimize.shortfall", "PRICING_FROM_PAIRS", 0),
            ("placement.optimize.failover", "FULL_FAILOVER_MAX_VARIABLES", 0),
        ),
    ),
    Feature("N+1", lambda b: {"fault_tolerance": {"n_plus_one": True}}, _check_failover),
    Feature("fault domains", lambda b: {"fault_tolerance": {"n_plus_one": True, "domains": "grid_region"}}, _check_failover),
    Feature(
        "carbon cap",
        lambda b: {"objective": {"carbon_cap_t_per_year": CAP_SHARE * b.tco2e_per_year}},
        _check_total("tco2e_per_year", lambda b: CAP_SHARE * b.tco2e_per_year),
    ),
    Feature(
        "water cap",
        lambda b: {"objective": {"water_cap_m3_per_year": CAP_SHARE * b.water_m3_per_year}},
        _check_total("water_m3_per_year", lambda b: CAP_SHARE * b.water_m3_per_year),
    ),
    Feature(
        "regional cap",
        lambda b: {"objective": {"regional_caps": [{"region": "US", "carbon_t_per_year": CAP_SHARE * b.us_tco2e_per_year}]}},
        _check_total("tco2e_per_year", lambda b: CAP_SHARE * b.us_tco2e_per_year, country="US"),
    ),
    Feature("residency regimes", lambda b: {"residency": {"regimes": ["cn-pipl"]}}, _check_bloc),
    Feature("availability rules", lambda b: {"availability": {"waive": []}}, _check_barred),
    Feature("fleet mix", lambda b: {"serving": {"accelerators": ["h100-sxm", "b200"]}}),
    Feature(
        "cross-metro prefill",
        lambda b: {"serving": {"disaggregated": "auto", "pool_nodes": 8, "cross_metro_prefill": {"partners": 2}}},
    ),
    Feature("node TTFT ladder", lambda b: {"serving": {"node_ttft_ladder": [0.8]}}),
    Feature("KV tiers", lambda b: {"serving": {"kv_cache": {"tier": "dram"}}}),
    Feature("speculative decoding", lambda b: {"serving": {"speculative": "auto"}}),
    Feature("optional serving", lambda b: {"policy": {"serving": "optional"}}),
    Feature("build-out", _horizon),
)
BY_NAME = {f.name: f for f in FEATURES}


def merged(*overlays: dict[str, Any]) -> dict[str, Any]:
    """The base world with overlays merged section by section (a section's keys merge, lists and values replace)."""
    scenario = base_world()
    for overlay in overlays:
        scenario = merge_sections(scenario, overlay)
    return scenario


@contextlib.contextmanager
def _patched(patches: tuple[tuple[str, str, int], ...]) -> Iterator[None]:
    import importlib

    saved = []
    for module, name, value in patches:
        target = importlib.import_module(module)
        saved.append((target, name, getattr(target, name)))
        setattr(target, name, value)
    try:
        yield
    finally:
        for target, name, value in saved:
            setattr(target, name, value)


@dataclass(frozen=True)
class Outcome:
    """One pair: solved and checked (``problems`` empty), or refused (``refusal``: what the tool said)."""

    features: tuple[str, ...]
    refusal: str | None
    problems: list[str]

    @property
    def passed(self) -> bool:
        return self.refusal is None and not self.problems


def solve(folder: Path, scenario: dict[str, Any], patches: tuple[tuple[str, str, int], ...] = ()) -> tuple[int, str]:
    """``placement solve`` of a scenario written into ``folder``: the exit code and what it printed on stderr."""
    from placement.cli import main

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "catalog.csv").write_text(CATALOG)
    (folder / "cities.csv").write_text(CITIES)
    (folder / "scenario.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    err = io.StringIO()
    with _patched(patches), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["solve", str(folder / "scenario.yaml"), "--out", str(folder / "out"), "--no-maps", "--quiet"])
    return code, err.getvalue()


def baseline(folder: Path) -> Baseline:
    """Solve the base world and read what its plan uses."""
    code, err = solve(folder, base_world())
    if code != 0:
        raise AssertionError(f"the base world does not solve: {err}")
    used = read_use(folder / "out")
    assert used is not None
    return used


def read_use(out: Path) -> Baseline | None:
    """What a single-year plan uses, from its files (None: a build-out's folder)."""
    if not (out / "sites.csv").exists():
        return None
    summary = json.loads((out / "summary.json").read_text())
    sites = _sites(out)
    us = float(sites.loc[sites["country_code"] == "US", "tco2e_per_year"].sum())
    return Baseline(float(summary["tco2e_per_year"]), float(summary["water_m3_per_year"]), us)


CAPS = ("carbon cap", "water cap", "regional cap")
"""The features that cap what the plan uses: each is a share of what the pair's plan without caps uses."""


def run_pair(folder: Path, names: tuple[str, ...], base: Baseline) -> Outcome:
    """Solve the base world with these features and run each one's check on the written plan."""
    features = [BY_NAME[n] for n in names]
    others = [f for f in features if f.name not in CAPS]
    if len(others) < len(features):  # a cap is a share of what the same world uses without the caps
        code, err = solve(
            folder / "uncapped", merged(*(f.overlay(base) for f in others)), tuple(p for f in others for p in f.patches)
        )
        if code != 0:
            return Outcome(names, "without the caps: " + (" ".join(err.split()) or f"exit {code}"), [])
        base = read_use(folder / "uncapped" / "out") or base
    scenario = merged(*(f.overlay(base) for f in features))
    patches = tuple(p for f in features for p in f.patches)
    code, err = solve(folder, scenario, patches)
    if code != 0:
        return Outcome(names, " ".join(err.split()) or f"exit {code}", [])
    out = folder / "out"
    buildout = "horizon" in scenario or "accelerators" in scenario["serving"]
    plans = sorted(p for p in (out / "years").iterdir() if p.is_dir()) if buildout else [out]
    if not plans:
        return Outcome(names, None, ["the build-out wrote no year's plan"])
    problems = []
    for plan in plans:  # a build-out's every year is a plan of its own, with the same files
        where = f"{plan.name}: " if buildout else ""
        problems += [where + p for f in features for p in f.check(plan, base)]
        rows = pd.read_csv(plan / "assignments.csv", keep_default_na=False)
        late = rows[rows["ttft_p99_ms"] > rows["ttft_objective_ms"] + 1e-9]
        problems += [f"{where}{len(late)} assignments outside their TTFT objective"] if len(late) else []
    return Outcome(names, None, problems)
