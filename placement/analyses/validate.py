"""Check everything a solve reads, without solving: the scenario, its catalog, cities, serving model, stores, build-out.

:func:`check_scenario_inputs` gathers the problems of every input a scenario names and raises them
together, so a planner fixes a scenario in one pass; :func:`check_scenario` then builds the model's inputs
as ``solve`` does (:func:`placement.instance.build.build_instance`, the one function both call), so a rule that
reads two inputs together (a carbon price and the sites' intensities, a regional cap and the catalog's
regions, an hourly profile and the sites) is checked too: nothing ``validate`` accepts is refused by ``solve``
for its inputs. :func:`validate_file` checks a scenario or a site catalog by its file name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from placement._errors import InputError, Problem, problems_of
from placement.buildout.arrays import aggregated, check_buildout_inputs, horizon_of
from placement.instance.build import build_instance
from placement.instance.latency import build_latency_model, retrieval_extra_ms
from placement.instance.load import demand_cities, load_sites
from placement.instance.record import Instance
from placement.profiles.build import class_profiles
from placement.progress import Progress, quiet
from placement.rules.availability import availability_rules
from placement.rules.faults import fault_domains
from placement.rules.residency import scenario_regimes
from placement.scenario.load import LoadedScenario, Resolve, load_scenario
from placement.scenario.sections import SitesSection
from placement.world.catalog import load_catalog

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
    instance : Instance, optional
        The model's inputs as ``solve`` builds them, when the file is a scenario (a build-out's: its base year's).
    """

    path: Path
    sites: pd.DataFrame
    loaded: LoadedScenario | None = None
    instance: Instance | None = None


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


def check_scenario(loaded: LoadedScenario, *, progress: Progress = quiet) -> tuple[pd.DataFrame, Instance]:
    """Every check ``solve`` runs before solving: each input alone (gathered), then the model's inputs built.

    Parameters
    ----------
    loaded : LoadedScenario
        A scenario whose YAML is valid.
    progress : callable, optional
        Receives the build's progress lines.

    Returns
    -------
    tuple
        The candidate sites and the built :class:`~placement.instance.build.Instance` (a build-out's: the instance its
        engine builds first, every year's demand aggregated).

    Raises
    ------
    InputError
        The inputs' problems together; else the first rule the build refuses.
    """
    sites = check_scenario_inputs(loaded)
    built = aggregated(loaded, horizon_of(loaded)) if loaded.scenario.is_buildout else loaded
    return sites, build_instance(built, progress=progress)


def validate_file(path: str | Path) -> Validated:
    """Check a scenario (``.yaml``/``.yml``) or a site catalog (CSV/GeoJSON).

    A scenario's file, every input it names, and the model's inputs built from them as ``solve`` builds them.

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    Validated
        Its sites, and the scenario and its built instance when it is one.

    Raises
    ------
    InputError
        Every problem found, together.
    """
    path = Path(path)
    if path.suffix.lower() in SCENARIO_SUFFIXES:
        loaded = load_scenario(path)
        sites, instance = check_scenario(loaded)
        return Validated(path, sites, loaded, instance)
    return Validated(path, load_catalog(path))
