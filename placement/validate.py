"""Check everything a solve reads, without solving: the scenario, its catalog, cities, serving model, stores, build-out.

:func:`check_scenario_inputs` gathers the problems of every input a scenario names and raises them
together, so a planner fixes a scenario in one pass; :func:`validate_file` checks a scenario or a
site catalog by its file name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from placement._errors import InputError, Problem, problems_of
from placement.availability import availability_rules
from placement.buildout.arrays import check_buildout_inputs
from placement.catalog import load_catalog
from placement.faults import fault_domains
from placement.instance import build_latency_model, demand_cities, load_sites, retrieval_extra_ms
from placement.profiles import class_profiles
from placement.residency import scenario_regimes
from placement.scenario import LoadedScenario, Resolve, SitesSection, load_scenario

SCENARIO_SUFFIXES = frozenset({".yaml", ".yml"})


@dataclass(frozen=True)
class Validated:
    """What a valid file holds.

    Parameters
    ----------
    path : Path
        The file checked.
    sites : pandas.DataFrame
        The candidate sites (after a scenario's exclusions).
    loaded : LoadedScenario, optional
        The scenario, when the file is one.
    """

    path: Path
    sites: pd.DataFrame
    loaded: LoadedScenario | None = None


def _retrieval_catalog(spec: SitesSection, resolve: Resolve, sites: pd.DataFrame | None) -> pd.DataFrame | None:
    """Sites to check retrieval stores against: the scenario's, or the whole catalog when exclusions failed."""
    if sites is not None:
        return sites
    try:
        return load_catalog(resolve(spec.catalog))
    except InputError:
        return None  # the catalog's own problems are already reported


def check_scenario_inputs(loaded: LoadedScenario) -> pd.DataFrame:
    """Everything a solve reads besides the YAML: catalog, cities, classes, latency network, stores, rule tables.

    Parameters
    ----------
    loaded : LoadedScenario
        A scenario whose YAML is valid.

    Returns
    -------
    pandas.DataFrame
        The candidate sites.

    Raises
    ------
    InputError
        Every problem of every input, together.
    """
    scenario, resolve, source = loaded.scenario, loaded.resolve, str(loaded.path)
    sites: pd.DataFrame | None = None
    problems: list[Problem] = []
    try:
        sites = load_sites(scenario.sites, resolve, source=source)
    except InputError as exc:
        problems += exc.problems
    problems += problems_of(lambda: demand_cities(scenario.demand, resolve, source=source))
    problems += problems_of(lambda: class_profiles(scenario.classes, scenario.serving, source=source))
    stores = _retrieval_catalog(scenario.sites, resolve, sites)
    if stores is not None:
        problems += problems_of(
            lambda: retrieval_extra_ms(scenario.classes, stores, build_latency_model(scenario.latency, resolve), source=source)
        )
    if sites is not None:
        problems += problems_of(lambda: fault_domains(scenario.fault_tolerance, sites, source=source))
    problems += problems_of(lambda: scenario_regimes(loaded))  # the residency regimes and their table
    problems += problems_of(lambda: availability_rules(loaded))  # the availability table
    if scenario.is_buildout and sites is not None:
        problems += check_buildout_inputs(loaded, sites)  # accelerators on offer, model changes, fleet, power schedule
    if problems:
        raise InputError(problems)
    assert sites is not None
    return sites


def validate_file(path: str | Path) -> Validated:
    """Check a scenario (``.yaml``/``.yml``: the file and every input it names) or a site catalog (CSV/GeoJSON).

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    Validated
        Its sites, and the scenario when it is one.

    Raises
    ------
    InputError
        Every problem found, together.
    """
    path = Path(path)
    if path.suffix.lower() in SCENARIO_SUFFIXES:
        loaded = load_scenario(path)
        return Validated(path, check_scenario_inputs(loaded), loaded)
    return Validated(path, load_catalog(path))
