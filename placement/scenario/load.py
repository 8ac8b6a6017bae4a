"""Loading a scenario file: a validated :class:`LoadedScenario` or every problem in the file at once.

A scenario is YAML. Every problem in it is gathered into one :class:`InputError` that names each
key path (``classes[0].ttft_p99_ms``), the rule and the fix. Paths inside the file are relative
to the file's own folder.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from placement._errors import InputError, Problem
from placement.scenario.document import Scenario

Resolve = Callable[[str], Path]
"""Turns a path written in the scenario into a file, relative to the scenario's folder (:meth:`LoadedScenario.resolve`).

Loaders take their own section and this, not the whole :class:`LoadedScenario`."""


class LoadedScenario(BaseModel):
    """A validated scenario and the folder its relative paths start from."""

    model_config = ConfigDict(frozen=True)

    scenario: Scenario
    path: Path

    def resolve(self, relative: str) -> Path:
        """A path from the scenario, made absolute against the scenario's folder."""
        candidate = Path(relative)
        return candidate if candidate.is_absolute() else (self.path.parent / candidate).resolve()

    @property
    def catalog_path(self) -> Path:
        """The site catalog file."""
        return self.resolve(self.scenario.sites.catalog)

    @property
    def cities_path(self) -> Path:
        """The cities file."""
        return self.resolve(self.scenario.demand.cities)


_FIXES = {
    "missing": "add this key",
    "extra_forbidden": "remove it or correct its spelling",
    "greater_than": "use a larger value",
    "greater_than_equal": "use a larger value",
    "less_than": "use a smaller value",
    "less_than_equal": "use a smaller value",
    "float_parsing": "write a number",
    "finite_number": "write a finite number (not .inf or .nan)",
    "int_parsing": "write a whole number",
    "int_from_float": "write a whole number",
    "literal_error": "use one of the allowed values",
    "too_short": "add at least one entry",
    "string_type": "write a text value",
    "list_type": "write a list",
    "model_type": "write a mapping of keys to values",
    "dict_type": "write a mapping of keys to values",
}


def _key_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += ("." if path else "") + part
    return path or "(top level)"


def _known_keys(loc: tuple[int | str, ...]) -> list[str]:
    model: Any = Scenario
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part) if hasattr(model, "model_fields") else None
        if field is None:
            return []
        annotation = field.annotation
        inner = getattr(annotation, "__args__", (annotation,))
        model = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if model is None:
            return []
    return list(model.model_fields) if hasattr(model, "model_fields") else []


def _problem_from_pydantic(source: str, error: Any) -> Problem:
    loc = tuple(error["loc"])
    kind = error["type"]
    message = str(error["msg"]).removeprefix("Value error, ")
    fix = _FIXES.get(kind, "see the scenario keys (docs/reference/scenario.md, or placement schema)")
    if kind == "extra_forbidden":
        known = _known_keys(loc)
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        fix = f"did you mean '{close[0]}'?" if close else f"remove it; known keys here: {', '.join(known)}"
        message = "unknown key"
    elif kind == "string_type" and isinstance(error.get("input"), bool):
        # YAML 1.1 reads NO (Norway), yes, on, off, y and n as booleans.
        message = f"{message} (got {error['input']!r}: YAML reads NO, yes, on, off, y and n unquoted as true or false)"
        fix = "quote the value, e.g. 'NO' for Norway"
    elif "input" in error and kind != "missing" and not isinstance(error["input"], dict | list):
        message = f"{message} (got {error['input']!r})"  # a cross-field rule's input is its whole section: left out
    return Problem(source, _key_path(loc), "", message, fix)


FILE_KEYS = (
    "sites.catalog",
    "demand.cities",
    "time.profile",
    "time.power_price_profile",
    "time.carbon_intensity_profile",
    "latency.hubs",
    "latency.links",
    "latency.measurements",
    "serving.measurements",
    "availability.file",
    "residency.regimes_file",
    "horizon.power_schedule",
)
"""Every scenario key that names a file (relative to the scenario's folder unless absolute)."""


def _check_files(loaded: LoadedScenario, source: str) -> list[Problem]:
    problems = []
    files = [("sites.catalog", loaded.catalog_path), ("demand.cities", loaded.cities_path)]
    for key, relative in (
        ("time.profile", loaded.scenario.time.profile),
        ("time.power_price_profile", loaded.scenario.time.power_price_profile),
        ("time.carbon_intensity_profile", loaded.scenario.time.carbon_intensity_profile),
        ("latency.hubs", loaded.scenario.latency.hubs),
        ("latency.links", loaded.scenario.latency.links),
        ("latency.measurements", loaded.scenario.latency.measurements),
        ("availability.file", loaded.scenario.availability.file),
        ("horizon.power_schedule", loaded.scenario.horizon.power_schedule if loaded.scenario.horizon else None),
    ):
        if relative is not None:
            files.append((key, loaded.resolve(relative)))
    for key, path in files:
        if not path.is_file():
            problems.append(
                Problem(
                    source,
                    key,
                    "",
                    f"file not found: {path}",
                    "give a path relative to the scenario file",
                )
            )
    return problems


def load_scenario(path: str | Path) -> LoadedScenario:
    """Read and validate a scenario file.

    Parameters
    ----------
    path : str or Path
        A YAML scenario.

    Returns
    -------
    LoadedScenario
        The scenario and its location.

    Raises
    ------
    InputError
        Listing every problem with its key path.
    """
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise InputError([Problem(source, "", "", "file not found", "check the path")])
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise InputError(
            [
                Problem(
                    source,
                    where,
                    "",
                    f"not valid YAML ({getattr(exc, 'problem', exc)})",
                    "fix the syntax",
                )
            ]
        ) from None
    if not isinstance(raw, dict):
        raise InputError(
            [
                Problem(
                    source,
                    "",
                    "",
                    "the file must hold a mapping of keys to values",
                    "see data/scenarios/default.yaml",
                )
            ]
        )
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise InputError([_problem_from_pydantic(source, e) for e in exc.errors()]) from None
    loaded = LoadedScenario(scenario=scenario, path=path.resolve())
    problems = _check_files(loaded, source)
    if problems:
        raise InputError(problems)
    return loaded
