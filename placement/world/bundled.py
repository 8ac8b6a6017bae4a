"""Files bundled with the package: scenarios, catalogs, cities, the network, serving catalogs, maps.

The repository's ``data/`` folder is installed as the package ``placement.data``, so the same files
are found in a checkout, an editable install and a wheel, and nothing is read relative to the
working directory. :func:`copy_scenario` copies a bundled scenario and the files it reads into a
folder of the planner's own (``placement init``).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from placement._errors import InputError, PlacementError, Problem
from placement._paths import nearest_existing

__all__ = [
    "DATA_PACKAGE",
    "BundledScenario",
    "bundled_path",
    "bundled_scenarios",
    "copy_scenario",
    "default_scenario_path",
    "describe_scenarios",
    "scenario_file",
]

DATA_PACKAGE = "placement.data"
#: The name ``placement init`` gives the copied scenario, and the copied sweep.
INIT_SCENARIO, INIT_SWEEP = "scenario.yaml", "sweep.yaml"
#: The scenario's JSON Schema: its file name, in the bundled ``schema`` folder and beside a copied scenario.
SCHEMA_FILE = "scenario.schema.json"
#: The first line of a scenario file that points an editor's YAML support (yaml-language-server) at the schema.
SCHEMA_COMMENT = "# yaml-language-server: $schema="


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


def scenario_file(argument: str | Path) -> Path:
    """The scenario file a command-line argument names: a path, or the key of a bundled scenario.

    A path that exists wins over a key of the same spelling, so a planner's own ``default.yaml`` or a folder
    called ``buildout`` is never shadowed.

    Parameters
    ----------
    argument : str or Path
        A YAML path, or a key that ``placement scenarios`` lists (``default``, ``buildout``, ``europe-small``).

    Returns
    -------
    pathlib.Path
        The file to load.

    Raises
    ------
    InputError
        Neither a file nor a bundled key; the message lists the keys.
    """
    path = Path(argument)
    if path.is_file():
        return path
    known = {s.stem: s for s in bundled_scenarios()}
    if str(argument) in known:
        return known[str(argument)]
    raise InputError(
        [
            Problem(
                str(argument),
                "",
                "",
                "file not found, and not the key of a bundled scenario",
                f"check the path, or give one of the keys 'placement scenarios' lists: {', '.join(sorted(known))}",
            )
        ]
    )


@dataclass(frozen=True)
class BundledScenario:
    """A bundled scenario as ``placement scenarios`` lists it.

    Parameters
    ----------
    key : str
        The file's stem: what ``placement init --scenario`` takes (``default``, ``europe-small``).
    name, description : str
        The scenario's own ``name`` and ``description``.
    path : Path
        The installed file.
    """

    key: str
    name: str
    description: str
    path: Path


def describe_scenarios() -> list[BundledScenario]:
    """Every bundled scenario with its name and description, sorted by file name."""
    described = []
    for path in bundled_scenarios():
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        description = " ".join(str(raw.get("description", "")).split())
        described.append(BundledScenario(path.stem, str(raw.get("name", path.stem)), description, path))
    return described


def _bundled_files(raw: Any, folder: Path) -> list[str]:
    """Every string value of a scenario that names a file inside the bundled data, relative to ``folder``."""
    if isinstance(raw, dict):
        return [v for value in raw.values() for v in _bundled_files(value, folder)]
    if isinstance(raw, list):
        return [v for value in raw for v in _bundled_files(value, folder)]
    if isinstance(raw, str) and raw.strip() and "\n" not in raw and not Path(raw).is_absolute():
        try:
            target = (folder / raw).resolve()
            if target.is_file() and target.is_relative_to(bundled_path().resolve()):
                return [raw]
        except OSError:  # text that is not a path (too long for one)
            return []
    return []


def _relocated(text: str, old: str, new: str) -> str:
    """The YAML text with the path value ``old`` (quoted or not) replaced by ``new``; comments kept."""
    pattern = re.compile(r"((?::|^\s*-|[\[,])\s*)(['\"]?)" + re.escape(old) + r"\2(?=\s|$|[\],])", re.MULTILINE)
    return pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}{new}{m.group(2)}", text)


def with_schema_line(text: str, schema: str) -> str:
    """Scenario text whose first line points an editor at ``schema`` (a path relative to the file), replacing any such line.

    Parameters
    ----------
    text : str
        A scenario file's text.
    schema : str
        Where the JSON Schema is, relative to the scenario file (``../schema/scenario.schema.json``).

    Returns
    -------
    str
        ``# yaml-language-server: $schema=SCHEMA`` and the text, without the line it had.
    """
    lines = text.splitlines(keepends=True)
    if lines and lines[0].startswith(SCHEMA_COMMENT):
        lines = lines[1:]
    return f"{SCHEMA_COMMENT}{schema}\n" + "".join(lines)


def _starter_files(source: Path) -> tuple[str, str, dict[Path, Path]]:
    """Scenario and sweep text with paths rewritten for the new folder, and the data files to copy (from -> relative to)."""
    text = source.read_text(encoding="utf-8")
    data_root = bundled_path().resolve()
    copies: dict[Path, Path] = {}
    for value in dict.fromkeys(_bundled_files(yaml.safe_load(text), source.parent)):
        origin = (source.parent / value).resolve()
        relative = origin.relative_to(data_root)
        copies[origin] = relative
        text = _relocated(text, value, relative.as_posix())
    text = with_schema_line(text, SCHEMA_FILE)  # the schema is copied beside the scenario
    copies[bundled_path("schema", SCHEMA_FILE).resolve()] = Path(SCHEMA_FILE)
    left = _bundled_files(yaml.safe_load(text), source.parent)
    if left:  # a path written in a form the rewrite does not know: better no copy than a broken one
        raise PlacementError(f"cannot relocate {', '.join(left)} in {source.name}: a bug in placement, please report it")
    sweep = bundled_path("sweeps", "example.yaml").read_text(encoding="utf-8")
    sweep = f"# Copied by 'placement init': the base is {INIT_SCENARIO} in this folder.\n" + _relocated(
        sweep, "../scenarios/default.yaml", INIT_SCENARIO
    ).replace("python cli.py sweep data/sweeps/example.yaml", f"placement sweep {INIT_SWEEP}")
    return text, sweep, copies


def copy_scenario(dest: str | Path, scenario: str = "default") -> list[Path]:
    """Copy a bundled scenario, every data file it reads and the example sweep into a folder, paths rewritten.

    The scenario becomes ``DEST/scenario.yaml`` (comments kept; its first line points an editor at the copied
    ``DEST/scenario.schema.json``) and its files keep their bundled
    layout below ``DEST`` (``sites/world_metros.csv``, ``cities/geonames_cities15000.csv``,
    ``demand/diurnal_profile.csv``), so the folder is self-contained: it can be moved, shared or
    read by sweep workers, and survives reinstalling the package. ``DEST/sweep.yaml`` is the example
    sweep with the copied scenario as its base.

    Parameters
    ----------
    dest : str or Path
        The folder; created if missing.
    scenario : str
        A bundled scenario's key (file stem), see :func:`describe_scenarios`.

    Returns
    -------
    list of Path
        The files written, the scenario first.

    Raises
    ------
    PlacementError
        Unknown scenario (the message lists the bundled ones), or a file that would be overwritten
        (nothing is written then).
    """
    known = {s.stem: s for s in bundled_scenarios()}
    if scenario not in known:
        raise PlacementError(f"no bundled scenario '{scenario}'; the bundled scenarios are: {', '.join(sorted(known))}")
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise PlacementError(f"{dest} is a file, not a folder. Fix: give a new or empty folder")
    base = nearest_existing(dest.parent)
    if not base.is_dir():
        raise PlacementError(f"{dest} would be inside {base}, which is a file, not a folder. Fix: give a folder path")
    text, sweep, copies = _starter_files(known[scenario])
    targets = [dest / INIT_SCENARIO, dest / INIT_SWEEP, *(dest / relative for relative in copies.values())]
    existing = [str(path) for path in targets if path.exists()]
    if existing:
        raise PlacementError(
            f"{dest} already holds {', '.join(existing)}: refusing to overwrite. "
            "Fix: choose a new or empty folder, or move those files away"
        )
    dest.mkdir(parents=True, exist_ok=True)
    (dest / INIT_SCENARIO).write_text(text, encoding="utf-8")
    (dest / INIT_SWEEP).write_text(sweep, encoding="utf-8")
    for origin, relative in copies.items():
        (dest / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(origin, dest / relative)
    return targets
