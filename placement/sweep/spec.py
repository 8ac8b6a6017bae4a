"""The sweep file and its cases: axes over scenario key paths, expanded and validated up front.

A sweep file (YAML) names a ``base`` scenario and the ``axes`` to vary, keyed by scenario key
paths (``demand.growth``, ``classes[0].ttft_p99_ms``, ``sites.power_price_multiplier.Europe``).
:func:`prepare_sweep` expands the axes into cases (grid, explicit cases, random or Latin
hypercube samples), applies each case's overrides to the base's raw YAML and validates every
case through :func:`placement.scenario.load.load_scenario` before anything is solved, so every bad
axis is reported at once.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from placement._errors import InputError, Problem
from placement.progress import Progress, quiet
from placement.scenario.load import LoadedScenario, load_scenario

__all__ = [
    "PreparedSweep",
    "Range",
    "SweepCase",
    "SweepSpec",
    "expand_overrides",
    "load_sweep_spec",
    "parse_key_path",
    "prepare_sweep",
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

MAX_CASES = 1_000
"""Most cases a sweep may expand to unless its file sets ``max_cases``: each is a solve (seconds to a minute)."""


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
    max_cases: int = Field(
        MAX_CASES, ge=1, description="refuse a sweep that expands to more cases (raise it on purpose for a large one)"
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
        count = self.case_count
        if count > self.max_cases:
            how = " x ".join(str(len(v)) for v in self.axes.values() if isinstance(v, list)) if self.mode == "grid" else ""
            raise ValueError(
                f"the sweep expands to {count:,} cases{f' ({how})' if how else ''}, more than max_cases {self.max_cases:,}: "
                "each case is a solve. Use fewer values per axis, or set max_cases to at least that on purpose"
            )
        return self

    @property
    def case_count(self) -> int:
        """Cases the sweep expands to, duplicates included (counted without expanding)."""
        if self.mode == "cases":
            return len(self.cases)
        if self.mode == "grid":
            return math.prod(len(v) for v in self.axes.values() if isinstance(v, list))
        return int(self.n or 0)


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
            fix = 'see the sweep file format in the guide "Sweeps on a cluster" (docs/guides/sweeps.md)'
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


def plain_scalar(value: Any) -> Any:
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
    return [plain_scalar(values[i]) for i in index.tolist()]


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


def prepare_sweep(sweep_path: str | Path, *, progress: Progress = quiet) -> PreparedSweep:
    """Read a sweep file, expand it and validate every case before anything is solved.

    Parameters
    ----------
    sweep_path : str or Path
        The sweep YAML.
    progress : callable, optional
        Receives a line before the cases are checked and every 100 cases (each case's scenario is validated).

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
    progress(f"checking {len(expanded):,} cases of {sweep_path.name}")
    gathered = _Gathered(str(sweep_path), total=len(expanded))
    cases: list[SweepCase] = []
    seen: set[str] = set()
    digest_cache: dict[Path, str] = {}
    with tempfile.TemporaryDirectory(prefix="placement-sweep-") as tmp:
        base = _base_case(base_raw, spec.fixed, sweep_path.parent, Path(tmp), gathered)
        for index, overrides in enumerate(expanded):
            if index and index % 100 == 0:
                progress(f"checked {index:,} of {len(expanded):,} cases")
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
