"""Files bundled with the package: scenarios, catalogs, cities, the network, serving catalogs, maps.

The repository's ``data/`` folder is installed as the package ``placement.data``, so the same files
are found in a checkout, an editable install and a wheel, and nothing is read relative to the
working directory.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["DATA_PACKAGE", "bundled_path", "bundled_scenarios", "default_scenario_path"]

DATA_PACKAGE = "placement.data"


def bundled_path(*parts: str) -> Path:
    """Path of a bundled data file, e.g. ``bundled_path("cities", "geonames_cities15000.csv")``.

    Parameters
    ----------
    *parts : str
        Path components below ``data/``.

    Returns
    -------
    pathlib.Path
        The file's location on disk (installed packages are unpacked, so it is a real path).
    """
    root = files(DATA_PACKAGE)
    return Path(str(root.joinpath(*parts)))


def default_scenario_path() -> Path:
    """The bundled world scenario, ``data/scenarios/default.yaml``."""
    return bundled_path("scenarios", "default.yaml")


def bundled_scenarios() -> list[Path]:
    """Every bundled scenario file, sorted by name."""
    return sorted(bundled_path("scenarios").glob("*.yaml"))
