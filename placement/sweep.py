"""Parameter sweeps: many what-ifs of one scenario, solved in parallel on Dask, resumable.

A sweep file (YAML) names a ``base`` scenario and the ``axes`` to vary, keyed by scenario key
paths (``demand.growth``, ``classes[0].ttft_p99_ms``, ``sites.power_price_multiplier.Europe``).
:func:`prepare_sweep` expands the axes into cases (grid, explicit cases, random or Latin
hypercube samples), applies each case's overrides to the base's raw YAML and validates every
case through :func:`placement.scenario.load_scenario` before anything is solved, so every bad
axis is reported at once. :func:`run_sweep` solves the cases as independent Dask tasks, stores
each result as it finishes (``cases/<id>.json``) and skips the cases already stored.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import itertools
import json
import math
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from placement._errors import InputError, PlacementError, Problem
from placement.outputs import write_text_atomic
from placement.scenario import LoadedScenario, load_scenario

__all__ = [
    "PreparedSweep",
    "Range",
    "SweepCase",
    "SweepSpec",
    "expand_overrides",
    "load_sweep_spec",
    "parse_key_path",
    "prepare_sweep",
    "run_sweep",
    "solve_case",
]

PATH_KEYS = (
    "sites.catalog",
    "demand.cities",
    "time.profile",
    "time.power_price_profile",
    "latency.hubs",
    "latency.links",
)
"""Scenario keys holding file paths: made absolute so a case runs from any folder."""

MARKER = "sweep.json"
"""The file that marks a folder as a sweep results folder (safe to resume into)."""

RESULT_COLUMNS = (
    "status",
    "error",
    "gap",
    "runtime_s",
    "wall_s",
    "cost_per_million_goodput_tokens_usd",
    "goodput_tok_s",
    "mw_used",
    "sites_open",
    "objective_usd_per_h",
    "unserved_share",
    "p99_ttft_ms_max",
    "open_sites",
)

KeyPath = tuple[str | int, ...]


class Range(BaseModel):
    """A numeric range to sample from (``random`` and ``latin_hypercube`` modes)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    low: float
    high: float
    integer: bool = Field(False, description="draw whole numbers from low to high inclusive")

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if self.high < self.low:
            raise ValueError(f"high ({self.high:g}) is below low ({self.low:g})")
        return self


class SweepSpec(BaseModel):
    """A sweep file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = None
    description: str = ""
    base: str = Field(min_length=1, description="base scenario, relative to the sweep file")
    mode: Literal["grid", "cases", "random", "latin_hypercube"] = "grid"
    axes: dict[str, list[Any] | Range] = Field(default_factory=dict)
    cases: list[dict[str, Any]] = Field(default_factory=list, description="cases mode: one override mapping per case")
    fixed: dict[str, Any] = Field(default_factory=dict, description="overrides applied to every case")
    seed: int = Field(0, description="random and latin_hypercube: the generator's seed")
    n: int | None = Field(None, ge=1, description="random and latin_hypercube: number of cases")
    max_gap: float = Field(
        0.05, ge=0, description="cases stopped by the time limit with a larger proven gap are left out of the analysis"
    )

    @field_validator("axes", mode="before")
    @classmethod
    def _lists_or_ranges(cls, axes: Any) -> Any:
        if not isinstance(axes, dict):
            return axes
        out: dict[str, Any] = {}
        for key, values in axes.items():
            if isinstance(values, dict):
                try:
                    values = Range.model_validate(values)
                except ValidationError as exc:
                    reasons = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
                    raise ValueError(f"axis '{key}': a range is {{low:, high:, integer:}} ({reasons})") from None
            elif not isinstance(values, list | Range):
                raise ValueError(f"axis '{key}': write a list of values or a range {{low:, high:}}, not {values!r}")
            out[key] = values
        return out

    @model_validator(mode="after")
    def _mode_has_what_it_needs(self) -> SweepSpec:
        if self.mode == "cases":
            if not self.cases:
                raise ValueError("mode 'cases' needs a non-empty 'cases' list of override mappings")
            if self.axes:
                raise ValueError("mode 'cases' takes 'cases', not 'axes'; use mode 'grid' to combine axes")
            return self
        if not self.axes:
            raise ValueError(f"mode '{self.mode}' needs at least one axis under 'axes'")
        if self.cases:
            raise ValueError(f"'cases' is only read in mode 'cases', not '{self.mode}'")
        for key, values in self.axes.items():
            if isinstance(values, list) and not values:
                raise ValueError(f"axis '{key}' has no values")
            if isinstance(values, Range) and self.mode == "grid":
                raise ValueError(f"axis '{key}': a grid needs a list of values, not a range")
        if self.mode in ("random", "latin_hypercube") and self.n is None:
            raise ValueError(f"mode '{self.mode}' needs 'n', the number of cases")
        return self


@dataclass(frozen=True)
class SweepCase:
    """One validated case of a sweep.

    Parameters
    ----------
    index : int
        Position in the expansion (0-based).
    case_id : str
        Stable hash of the base scenario, the data files it reads and the overrides.
    overrides : dict
        Axis key path -> value for this case (the sweep's ``fixed`` overrides are not repeated).
    loaded : LoadedScenario
        The case's validated scenario (every path absolute).
    raw : dict
        The case's scenario as a YAML-ready mapping.
    """

    index: int
    case_id: str
    overrides: dict[str, Any]
    loaded: LoadedScenario
    raw: dict[str, Any]


@dataclass(frozen=True)
class PreparedSweep:
    """An expanded, validated sweep, ready to run.

    Parameters
    ----------
    path : Path
        The sweep file.
    spec : SweepSpec
        Its content.
    base : LoadedScenario
        The base scenario with the sweep's ``fixed`` overrides.
    axes : list of str
        The key paths that vary, in the order of the file.
    base_values : dict
        Each axis's value in the base scenario (defaults filled in; None when it has none).
    cases : list of SweepCase
        Every distinct case.
    notes : list of str
        What the expansion did (duplicates dropped).
    """

    path: Path
    spec: SweepSpec
    base: LoadedScenario
    axes: list[str]
    base_values: dict[str, Any]
    cases: list[SweepCase]
    notes: list[str] = field(default_factory=list)


# --- key paths -------------------------------------------------------------------------------

_SEGMENT = re.compile(r"^([^.\[\]]+)((?:\[\d+\])*)$")


def parse_key_path(key: str) -> KeyPath:
    """Split a scenario key path into mapping keys and list indices.

    Parameters
    ----------
    key : str
        Dotted path with ``[i]`` list indices, e.g. ``classes[0].ttft_p99_ms`` or
        ``sites.power_price_multiplier.North America``.

    Returns
    -------
    tuple of str and int
        ``("classes", 0, "ttft_p99_ms")``.

    Raises
    ------
    ValueError
        If a segment is empty or an index is not a whole number.
    """
    parts: list[str | int] = []
    for segment in key.split("."):
        match = _SEGMENT.match(segment)
        if match is None:
            raise ValueError(f"'{segment}' is not a key or key[index] (from '{key}')")
        parts.append(match.group(1))
        parts += [int(i) for i in re.findall(r"\[(\d+)\]", match.group(2))]
    return tuple(parts)


def _format_key_path(path: Iterable[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else ("." if text else "") + part
    return text


def _child(node: Any, part: str | int, following: str | int | None, where: str) -> Any:
    """Step one level down, creating a missing mapping on the way."""
    if isinstance(part, int):
        if not isinstance(node, list):
            raise ValueError(f"'{where}' is not a list, so [{part}] cannot index it")
        if part >= len(node):
            raise ValueError(f"'{where}' has {len(node)} entr{'y' if len(node) == 1 else 'ies'}, so [{part}] is out of range")
        return node[part]
    if not isinstance(node, dict):
        raise ValueError(f"'{where}' is a value, not a mapping, so it has no key '{part}'")
    if node.get(part) is None and following is not None:
        node[part] = {}
    return node[part]


def set_key_path(raw: dict[str, Any], key: str, value: Any) -> None:
    """Set one value in a raw scenario mapping, in place.

    Parameters
    ----------
    raw : dict
        A scenario as read from YAML.
    key : str
        Key path (see :func:`parse_key_path`). Missing mappings on the way are created.
    value : any
        The new value.

    Raises
    ------
    ValueError
        If the path does not fit the mapping (index out of range, a value where a mapping is).
    """
    path = parse_key_path(key)
    node: Any = raw
    for depth, part in enumerate(path[:-1]):
        node = _child(node, part, path[depth + 1], _format_key_path(path[:depth]) or "(top level)")
    last = path[-1]
    where = _format_key_path(path[:-1]) or "(top level)"
    if isinstance(last, int):
        _child(node, last, None, where)
        node[last] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ValueError(f"'{where}' is a value, not a mapping, so it has no key '{last}'")


def get_key_path(raw: Any, key: str) -> Any:
    """A value from a nested mapping by key path, or None when the path is absent."""
    node = raw
    for part in parse_key_path(key):
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                return None
            node = node[part]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


# --- the sweep file --------------------------------------------------------------------------


def _pydantic_problems(source: str, error: ValidationError) -> list[Problem]:
    problems = []
    for item in error.errors():
        where = _format_key_path(p for p in item["loc"] if isinstance(p, str | int)) or "(top level)"
        message = str(item["msg"]).removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            fix = f"remove it; known keys: {', '.join(SweepSpec.model_fields)}"
            message = "unknown key"
        elif item["type"] == "missing":
            fix = "add this key"
        else:
            fix = "see the sweep file format in the README (Sweeps)"
            if "input" in item and not isinstance(item["input"], dict):
                message = f"{message} (got {item['input']!r})"
        problems.append(Problem(source, where, "", message, fix))
    return problems


def _read_yaml_mapping(path: Path, what: str) -> dict[str, Any]:
    source = str(path)
    if not path.is_file():
        raise InputError([Problem(source, "", "", f"{what} not found", "check the path")])
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError([Problem(source, "", "", f"not valid YAML ({exc})", "fix the syntax")]) from None
    if not isinstance(raw, dict):
        raise InputError(
            [Problem(source, "", "", "the file must hold a mapping of keys to values", "see data/sweeps/example.yaml")]
        )
    return raw


def load_sweep_spec(path: str | Path) -> SweepSpec:
    """Read and validate a sweep file.

    Parameters
    ----------
    path : str or Path
        The sweep YAML.

    Returns
    -------
    SweepSpec
        Its content.

    Raises
    ------
    InputError
        Listing every problem with its key path.
    """
    path = Path(path)
    raw = _read_yaml_mapping(path, "sweep file")
    try:
        spec = SweepSpec.model_validate(raw)
    except ValidationError as exc:
        raise InputError(_pydantic_problems(str(path), exc)) from None
    problems = []
    keys = [*spec.fixed, *spec.axes, *(k for case in spec.cases for k in case)]
    for key in dict.fromkeys(keys):
        try:
            parse_key_path(key)
        except ValueError as exc:
            problems.append(Problem(str(path), f"axis '{key}'", "", str(exc), "write key.sub_key or key[0].sub_key"))
    if problems:
        raise InputError(problems)
    return spec


# --- expansion -------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Numpy scalars to Python ones, so YAML and JSON can hold them."""
    return value.item() if isinstance(value, np.generic) else value


def _grid(axes: dict[str, list[Any] | Range]) -> list[dict[str, Any]]:
    lists = [values for values in axes.values() if isinstance(values, list)]
    return [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*lists)]


def _from_unit(values: list[Any] | Range, unit: np.ndarray) -> list[Any]:
    """Map points of [0, 1) onto an axis: a range linearly, a choice list by equal slices."""
    if isinstance(values, Range):
        if values.integer:
            whole = np.floor(values.low + unit * (math.floor(values.high) - math.ceil(values.low) + 1))
            return [int(v) for v in np.minimum(whole, math.floor(values.high))]
        return [float(v) for v in values.low + unit * (values.high - values.low)]
    index = np.minimum((unit * len(values)).astype(int), len(values) - 1)
    return [_plain(values[i]) for i in index.tolist()]


def _unit_samples(mode: str, n: int, n_axes: int, seed: int) -> np.ndarray:
    """An (n, axes) array in [0, 1): independent uniforms, or one point per stratum per axis."""
    rng = np.random.default_rng(seed)
    if mode == "random":
        return rng.random((n, n_axes))
    strata = np.stack([rng.permutation(n) for _ in range(n_axes)], axis=1)
    return (strata + rng.random((n, n_axes))) / n


def expand_overrides(spec: SweepSpec) -> list[dict[str, Any]]:
    """Every case of a sweep as a mapping of key path -> value.

    Parameters
    ----------
    spec : SweepSpec
        A validated sweep file.

    Returns
    -------
    list of dict
        ``grid``: the cartesian product of the axes, the last axis varying fastest; ``cases``: the
        listed mappings; ``random``: ``n`` independent draws (uniform over a range, equally likely
        choices); ``latin_hypercube``: ``n`` draws with exactly one in each of ``n`` equal strata
        of every axis (a choice list is cut into equal slices, so each choice is drawn about
        ``n / len(choices)`` times). The same seed gives the same cases.
    """
    if spec.mode == "grid":
        return _grid(spec.axes)
    if spec.mode == "cases":
        return [dict(case) for case in spec.cases]
    n = int(spec.n or 0)
    unit = _unit_samples(spec.mode, n, len(spec.axes), spec.seed)
    columns = {key: _from_unit(values, unit[:, k]) for k, (key, values) in enumerate(spec.axes.items())}
    return [{key: column[i] for key, column in columns.items()} for i in range(n)]


# --- preparing cases -------------------------------------------------------------------------


def _absolute_paths(raw: dict[str, Any], folder: Path, keys: Iterable[str]) -> None:
    """Resolve relative file paths in a raw scenario against ``folder``, in place."""
    for key in keys:
        value = get_key_path(raw, key)
        if isinstance(value, str) and value and not Path(value).is_absolute():
            set_key_path(raw, key, str((folder / value).resolve()))


def _file_digest(path: Path, cache: dict[Path, str]) -> str:
    if path not in cache:
        cache[path] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"
    return cache[path]


def case_id(base_text: str, overrides: dict[str, Any], data_files: dict[str, str]) -> str:
    """A stable id for a case: the same inputs give the same id on any machine.

    Parameters
    ----------
    base_text : str
        The base scenario file's text.
    overrides : dict
        Every override applied (the sweep's ``fixed`` ones and the case's axes).
    data_files : dict
        Scenario key -> SHA-256 of the file it names, so a changed catalog is solved again.

    Returns
    -------
    str
        16 hex digits of a SHA-256.
    """
    text = json.dumps({"base": base_text, "overrides": overrides, "data": data_files}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _matching_axis(where: str, keys: Iterable[str]) -> str | None:
    """The override key that a scenario problem's key path falls under (or that falls under it)."""
    for key in keys:
        if where == key or where.startswith((key + ".", key + "[")) or key.startswith((where + ".", where + "[")):
            return key
    return None


def _describe(overrides: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in overrides.items())


@dataclass
class _Gathered:
    """Problems across cases, merged when the same axis breaks the same rule in several cases."""

    source: str
    total: int = 0
    found: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)

    def add(self, index: int, subject: str, rule: str, fix: str) -> None:
        self.found.setdefault((subject, rule, fix), []).append(index)

    def _cases(self, cases: list[int]) -> str:
        if cases == [-1] or (self.total > 1 and len(cases) == self.total):
            return "every case"
        shown = ", ".join(str(i) for i in cases[:5]) + (f" and {len(cases) - 5} more" if len(cases) > 5 else "")
        return f"case {shown}" if len(cases) == 1 else f"cases {shown}"

    def problems(self) -> list[Problem]:
        return [
            Problem(self.source, f"{subject}, {self._cases(cases)}", "", rule, fix)
            for (subject, rule, fix), cases in self.found.items()
        ]


def _case_raw(
    base_raw: dict[str, Any], fixed: dict[str, Any], overrides: dict[str, Any], sweep_folder: Path
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The base mapping with the fixed and case overrides applied; problems as (key, message)."""
    raw = copy.deepcopy(base_raw)
    problems = []
    for key, value in [*fixed.items(), *overrides.items()]:
        try:
            set_key_path(raw, key, copy.deepcopy(value))
        except ValueError as exc:
            problems.append((key, str(exc)))
    _absolute_paths(raw, sweep_folder, [k for k in PATH_KEYS if k in fixed or k in overrides])
    solver = raw.setdefault("solver", {})
    if isinstance(solver, dict):
        solver["threads"] = 1  # one task, one core
    return raw, problems


def _with_value(rule: str, axis: str, value: Any) -> str:
    """A scenario rule as seen from the axis: the whole-section input dropped, the axis value added."""
    rule = re.sub(r" \(got \{.*\}\)$", "", rule)
    if rule == "unknown key" or "(got " in rule:
        return rule
    return f"{rule} ({axis}={value!r})"


def _validate_case(
    raw: dict[str, Any], index: int, overrides: dict[str, Any], fixed: dict[str, Any], folder: Path, gathered: _Gathered
) -> LoadedScenario | None:
    path = folder / f"case-{index}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    try:
        return load_scenario(path)
    except InputError as exc:
        for problem in exc.problems:
            axis = _matching_axis(problem.where, overrides)
            if axis is not None:
                gathered.add(index, f"axis {axis}", _with_value(problem.rule, axis, overrides[axis]), problem.fix)
                continue
            known = _matching_axis(problem.where, fixed)
            label = f"fixed {known}" if known is not None else f"scenario key {problem.where}"
            gathered.add(index, label, f"{problem.rule} ({_describe(overrides)})", problem.fix)
        return None


def _base_case(
    base_raw: dict[str, Any], fixed: dict[str, Any], sweep_folder: Path, folder: Path, gathered: _Gathered
) -> LoadedScenario:
    """The base with the ``fixed`` overrides; a problem there is in every case, so it stops here."""
    raw, problems = _case_raw(base_raw, fixed, {}, sweep_folder)
    for key, message in problems:
        gathered.add(-1, f"fixed {key}", message, "correct the key path or the index")
    loaded = None if problems else _validate_case(raw, -1, {}, fixed, folder, gathered)
    if loaded is None:
        raise InputError(gathered.problems())
    return loaded


def _load_base(spec: SweepSpec, sweep_path: Path) -> tuple[Path, str, dict[str, Any]]:
    base_path = (sweep_path.parent / spec.base).resolve()
    if not base_path.is_file():
        raise InputError(
            [Problem(str(sweep_path), "base", "", f"scenario not found: {base_path}", "give a path relative to the sweep file")]
        )
    load_scenario(base_path)  # the base must be valid on its own: its problems name its own file
    base_raw = _read_yaml_mapping(base_path, "base scenario")
    _absolute_paths(base_raw, base_path.parent, PATH_KEYS)
    return base_path, base_path.read_text(encoding="utf-8"), base_raw


def _data_digests(loaded: LoadedScenario, cache: dict[Path, str]) -> dict[str, str]:
    digests = {}
    for key in PATH_KEYS:
        value = get_key_path(loaded.scenario.model_dump(), key)
        if isinstance(value, str):
            digests[key] = _file_digest(loaded.resolve(value), cache)
    return digests


DICT_DEFAULTS = {"sites.power_price_multiplier": 1.0}
"""What an entry absent from a what-if mapping means (its base value for sensitivity)."""


def _base_value(base_dump: dict[str, Any], key: str) -> Any:
    value = get_key_path(base_dump, key)
    parent = key.rpartition(".")[0]
    return DICT_DEFAULTS.get(parent) if value is None else value


def prepare_sweep(sweep_path: str | Path) -> PreparedSweep:
    """Read a sweep file, expand it and validate every case before anything is solved.

    Parameters
    ----------
    sweep_path : str or Path
        The sweep YAML.

    Returns
    -------
    PreparedSweep
        Every distinct case with its validated scenario; duplicates (same id) are dropped with a note.

    Raises
    ------
    InputError
        Problems in the sweep file or its base scenario, or every bad axis value, naming the sweep
        file, the axis and the cases, gathered together.
    """
    sweep_path = Path(sweep_path).resolve()
    spec = load_sweep_spec(sweep_path)
    base_path, base_text, base_raw = _load_base(spec, sweep_path)
    expanded = expand_overrides(spec)
    gathered = _Gathered(str(sweep_path), total=len(expanded))
    cases: list[SweepCase] = []
    seen: set[str] = set()
    digest_cache: dict[Path, str] = {}
    with tempfile.TemporaryDirectory(prefix="placement-sweep-") as tmp:
        base = _base_case(base_raw, spec.fixed, sweep_path.parent, Path(tmp), gathered)
        for index, overrides in enumerate(expanded):
            raw, problems = _case_raw(base_raw, spec.fixed, overrides, sweep_path.parent)
            for key, message in problems:
                gathered.add(index, f"axis {key}", message, "correct the key path or the index")
            applied = {k: v for k, v in overrides.items() if k not in {key for key, _ in problems}}
            loaded = _validate_case(raw, index, applied, spec.fixed, Path(tmp), gathered)
            if problems:
                continue
            if loaded is None:
                continue
            digests = _data_digests(loaded, digest_cache)
            cid = case_id(base_text, {**spec.fixed, **overrides}, digests)
            if cid not in seen:
                seen.add(cid)
                cases.append(SweepCase(index, cid, overrides, loaded, raw))
    if gathered.found:
        raise InputError(gathered.problems())
    axes = list(dict.fromkeys(k for overrides in expanded for k in overrides))
    base_dump = base.scenario.model_dump()
    notes = [f"{len(expanded) - len(cases)} duplicate cases dropped"] if len(cases) < len(expanded) else []
    return PreparedSweep(
        path=sweep_path,
        spec=spec,
        base=LoadedScenario(scenario=base.scenario, path=base_path),
        axes=axes,
        base_values={key: _base_value(base_dump, key) for key in axes},
        cases=cases,
        notes=notes,
    )


# --- solving one case (runs on a Dask worker) --------------------------------------------------


def _open_sites(sites: pd.DataFrame) -> list[dict[str, Any]]:
    opened = sites.loc[sites["open"], ["site_id", "name", "lat", "lon", "mw_used"]]
    records: list[dict[Any, Any]] = opened.to_dict("records")
    return [
        {"site_id": str(r["site_id"]), "name": str(r["name"]), **{k: float(r[k]) for k in ("lat", "lon", "mw_used")}}
        for r in records
    ]


def solve_case(case_id: str, loaded: LoadedScenario) -> dict[str, Any]:
    """Solve one case and return its record; never raises for a failing case.

    Parameters
    ----------
    case_id : str
        The case's id (copied into the record).
    loaded : LoadedScenario
        Its validated scenario.

    Returns
    -------
    dict
        JSON-ready: ``status`` (the plan's, or ``error``), ``error`` ('' when solved, else the
        exception's type and text), headline figures, and ``open_sites`` (id, name, lat, lon, MW).
    """
    from placement.plan import run  # the worker imports the solver stack, the client need not

    start = time.perf_counter()
    record: dict[str, Any] = {"case_id": case_id, "error": ""}
    try:
        plan = run(loaded)
    except PlacementError as exc:
        record.update(status="error", error=f"{type(exc).__name__}: {exc}", open_sites=[])
    except Exception as exc:
        trace = traceback.format_exception_only(type(exc), exc)[-1].strip()
        record.update(status="error", error=f"unexpected {trace}", open_sites=[])
    else:
        summary = plan.summary
        record.update({key: summary.get(key) for key in RESULT_COLUMNS if key in summary})
        record["open_sites"] = _open_sites(plan.sites)
        record["notes"] = list(plan.notes[:5])
    record["wall_s"] = time.perf_counter() - start
    return record


# --- storage ---------------------------------------------------------------------------------


def _case_file(out_dir: Path, cid: str) -> Path:
    return out_dir / "cases" / f"{cid}.json"


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return _plain(value)


def store_case(out_dir: Path, case: SweepCase, record: dict[str, Any]) -> None:
    """Write one case's record to ``out_dir/cases/<id>.json`` whole or not at all."""
    payload = {**record, "case_index": case.index, "overrides": case.overrides}
    write_text_atomic(_case_file(out_dir, case.case_id), json.dumps(_clean(payload), indent=1) + "\n")


def load_case(out_dir: Path, cid: str) -> dict[str, Any] | None:
    """A stored record, or None when the case has not finished (or its file is damaged)."""
    path = _case_file(out_dir, cid)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return record if isinstance(record, dict) and record.get("case_id") == cid else None


def _claim_folder(out_dir: Path, prepared: PreparedSweep) -> None:
    """Make ``out_dir`` a sweep folder; refuse a non-empty folder that is not one."""
    if out_dir.exists() and (not out_dir.is_dir() or (any(out_dir.iterdir()) and not (out_dir / MARKER).is_file())):
        raise PlacementError(f"{out_dir} exists and is not a sweep results folder (no {MARKER}); choose another --out")
    (out_dir / "cases").mkdir(parents=True, exist_ok=True)
    (out_dir / "scenarios").mkdir(exist_ok=True)
    marker = {"sweep": str(prepared.path), "base": str(prepared.base.path), "cases": len(prepared.cases)}
    write_text_atomic(out_dir / MARKER, json.dumps(marker, indent=2) + "\n")
    shutil.copyfile(prepared.path, out_dir / "sweep.yaml")
    for case in prepared.cases:
        target = out_dir / "scenarios" / f"{case.case_id}.yaml"
        if not target.is_file():
            write_text_atomic(target, yaml.safe_dump(case.raw, sort_keys=False))


# --- running on Dask -------------------------------------------------------------------------


def _distributed() -> Any:
    """The ``distributed`` package, imported on first use (it is untyped: calls go through Any)."""
    return importlib.import_module("distributed")


def _open_client(workers: int | None, scheduler: str | None) -> tuple[Any, Any]:
    """A Dask client on an existing scheduler, or on a new local cluster of worker processes."""
    dask = _distributed()
    if scheduler is not None:
        try:
            return dask.Client(scheduler, timeout="20s"), None
        except OSError as exc:
            raise PlacementError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    cluster = dask.LocalCluster(
        n_workers=workers or 2,
        threads_per_worker=1,
        processes=True,
        dashboard_address="127.0.0.1:0",  # any free port: two sweeps at once do not collide on 8787
        host="127.0.0.1",
    )
    return dask.Client(cluster), cluster


def _completed(futures: list[Any], show: bool, total: int, skipped: int) -> Iterator[Any]:
    """Futures as they finish, with a progress bar on standard error."""
    from tqdm import tqdm

    with tqdm(total=total, initial=skipped, desc="cases", unit="case", file=sys.stderr, disable=not show) as bar:
        for future in _distributed().as_completed(futures):
            bar.update(1)
            yield future


def _solve_missing(
    missing: list[SweepCase], out_dir: Path, client: Any, *, progress: bool, total: int
) -> dict[str, dict[str, Any]]:
    """Submit each missing case as one task; store each record as it finishes."""
    by_key = {}
    futures = []
    for case in missing:
        future = client.submit(solve_case, case.case_id, case.loaded, key=f"placement-case-{case.case_id}", pure=False)
        by_key[future.key] = case
        futures.append(future)
    records = {}
    for future in _completed(futures, progress, total, total - len(missing)):
        case = by_key[future.key]
        try:
            record = future.result()
        except Exception as exc:
            records[case.case_id] = {"case_id": case.case_id, "status": "error", "error": f"worker: {type(exc).__name__}: {exc}"}
            continue
        store_case(out_dir, case, record)
        records[case.case_id] = record
        future.release()
    return records


def results_table(prepared: PreparedSweep, records: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per case: id, overrides (one column per axis), outcome and headline figures.

    Parameters
    ----------
    prepared : PreparedSweep
        The sweep.
    records : dict
        Case id -> record from :func:`solve_case` (missing cases get status ``missing``).

    Returns
    -------
    pandas.DataFrame
        Columns ``case_id``, ``case``, every axis key path, then :data:`RESULT_COLUMNS`;
        ``open_sites`` is a ``;``-joined list of site ids.
    """
    rows = []
    for case in prepared.cases:
        record = records.get(case.case_id, {"status": "missing", "error": "not solved"})
        row: dict[str, Any] = {"case_id": case.case_id, "case": case.index}
        row.update({axis: case.overrides.get(axis) for axis in prepared.axes})
        row.update({key: record.get(key) for key in RESULT_COLUMNS if key != "open_sites"})
        row["error"] = record.get("error") or ""
        row["open_sites"] = ";".join(site["site_id"] for site in record.get("open_sites") or [])
        rows.append(row)
    table = pd.DataFrame(rows, columns=["case_id", "case", *prepared.axes, *RESULT_COLUMNS])
    for axis in prepared.axes:
        table[axis] = _uniform_column(table[axis])
    numeric = [c for c in RESULT_COLUMNS if c not in ("status", "error", "open_sites")]
    table[numeric] = table[numeric].apply(pd.to_numeric, errors="coerce")
    return table


def _uniform_column(column: pd.Series) -> pd.Series:
    """Keep an axis column that Parquet can hold: one scalar type, else text (JSON for lists)."""
    values = [v for v in column if v is not None]
    kinds = {bool if isinstance(v, bool) else float if isinstance(v, int | float) else type(v) for v in values}
    if kinds <= {float} or kinds == {bool} or kinds == {str}:
        return column
    return column.map(lambda v: None if v is None else (v if isinstance(v, str) else json.dumps(v)))


def _write_tables(out_dir: Path, table: pd.DataFrame) -> None:
    with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".results.", suffix=".parquet", delete=False) as handle:
        staged = Path(handle.name)
    table.to_parquet(staged, index=False)
    staged.replace(out_dir / "results.parquet")
    write_text_atomic(out_dir / "results.csv", table.to_csv(index=False, float_format="%.10g"))


def run_sweep(
    sweep_path: str | Path,
    *,
    out_dir: str | Path,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Solve every case of a sweep on Dask and write the results and their analysis.

    Parameters
    ----------
    sweep_path : str or Path
        The sweep YAML.
    out_dir : str or Path
        Results folder. Cases already stored there (``cases/<id>.json``) are not solved again.
    workers : int, optional
        Worker processes of the local cluster (default 2; one thread each). Ignored with ``scheduler``.
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:port``) to submit to instead.
    progress : bool, optional
        Show a progress bar and a few lines on standard error.

    Returns
    -------
    pandas.DataFrame
        The results table (also written as ``results.parquet`` and ``results.csv``).

    Raises
    ------
    InputError
        When the sweep file, its base or any case is invalid (before anything is solved).
    PlacementError
        When ``out_dir`` is not a sweep folder or the scheduler cannot be reached.
    """
    from placement.sweep_analysis import write_analysis

    prepared = prepare_sweep(sweep_path)
    out = Path(out_dir).resolve()
    _claim_folder(out, prepared)
    say = _Say(progress)
    for note in prepared.notes:
        say(note)
    stored = {case.case_id: load_case(out, case.case_id) for case in prepared.cases}
    records = {cid: record for cid, record in stored.items() if record is not None}
    missing = [case for case in prepared.cases if case.case_id not in records]
    say(f"{len(prepared.cases)} cases: {len(records)} already solved in {out / 'cases'} (skipped), {len(missing)} to solve")
    if missing:
        client, cluster = _open_client(workers, scheduler)
        try:
            say(f"dask: {_describe_client(client, scheduler)}")
            records.update(_solve_missing(missing, out, client, progress=progress, total=len(prepared.cases)))
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    table = results_table(prepared, records)
    _write_tables(out, table)
    for note in write_analysis(out, prepared, table, records):
        say(note)
    failed = int((table["error"] != "").sum())
    say(f"{len(table) - failed} of {len(table)} cases solved, {failed} failed; results in {out}")
    return table


class _Say:
    """Prints a line to standard error, unless quiet."""

    def __init__(self, show: bool) -> None:
        self.show = show

    def __call__(self, line: str) -> None:
        if self.show:
            print(line, file=sys.stderr, flush=True)


def _describe_client(client: Any, scheduler: str | None) -> str:
    n_workers = len(client.scheduler_info().get("workers", {}))
    where = f"scheduler {scheduler}" if scheduler else "local cluster"
    return f"{where} with {n_workers} worker{'s' if n_workers != 1 else ''}"
