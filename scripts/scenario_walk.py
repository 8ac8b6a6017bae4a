"""The walk of the solve command's scenario: how far the loaded scenario travels through the code.

Runs ``placement solve`` on a scenario (default: the bundled world, maps included) in-process under
:func:`sys.settrace` and follows the :class:`placement.scenario.load.LoadedScenario` that ``load_scenario``
returns. Only calls of functions defined in ``placement/`` are looked at.

Followed objects
    The ``LoadedScenario``, its ``.scenario`` and every section inside (each section model, the
    ``classes`` list and each class), and, one generation on, what a call on the walk that was
    handed one of those returns (``build_instance(loaded)`` returns the ``Instance``, ``run``
    the ``Plan``, ``load_sites`` the sites table, ``LoadedScenario.catalog_path`` a path):
    ``--taint 0`` follows the scenario and its sections only, ``--taint 2`` one generation more.
On the walk
    A call is on the walk when one of its arguments (``self`` included) is a followed object or
    holds one as an attribute, up to ``--depth`` attributes deep (a ``Plan`` holds an ``Instance``).

Figures over the walk calls, in the order they happen:

files entered
    Distinct ``placement/`` files of walk calls (``load_scenario``'s own file counts as the first).
moves
    Distinct (from file, to file) pairs of consecutive walk calls in different files: the edges
    of the file graph the scenario travels.
climbs
    Distinct moves back up: into a file already on the call stack below the current call (the
    scenario went down into a helper and comes back to be read again by a caller's file), or to
    an earlier, higher layer of ``.importlinter``'s order.

``moves along the walk`` and ``climbs along the walk`` count the same moves with repetitions.

Choice of definitions: on unchanged ``main`` (df1d61c, the bundled world, maps written), the
definitions above give 27 files, 64 moves and 28 climbs, the nearest to the issue's 29 / 70 / 32 of
those tried. Following the scenario and its sections only gives 11 / 19 / 8 (48 / 20 along the
walk); one more generation gives 35 files; climbs by the stack alone 20, by the layers alone 24.

Static figures, over every module of the package:

functions taking the whole LoadedScenario
    Functions and methods written in ``placement/`` with a parameter annotated ``LoadedScenario``
    (``| None`` included; a dataclass's generated ``__init__`` is not counted).
deep attribute chains in outputs/
    Attribute chains in ``placement/outputs/`` and the writers ``summary.py`` (with its parts
    ``class_summary.py``, ``cost_breakdown.py``, ``headline_figures.py``) and ``tail.py`` that
    reach into the scenario through an object holding it: a chain naming ``.loaded`` after its
    first name, or ``.instance`` followed by ``.scenario``/``.classes``
    (``plan.instance.loaded.scenario.name``).

Usage::

    python scripts/scenario_walk.py [SCENARIO] [--no-maps] [--taint N] [--depth N] [--trace]

The solve stops after the results are written (``--check-tail`` is not run); ~45 s on the bundled world.
"""

from __future__ import annotations

import argparse
import ast
import configparser
import contextlib
import dataclasses
import importlib
import inspect
import io
import itertools
import json
import pkgutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "placement"
sys.path.insert(0, str(ROOT))

from pydantic import BaseModel  # noqa: E402

import placement  # noqa: E402
from placement.cli import main as cli_main  # noqa: E402

PREFIX = str(PACKAGE) + "/"


def _relative(filename: str) -> str:
    return filename[len(PREFIX) :]


def _children(obj: Any) -> Iterator[Any]:
    """The attribute values of a placement object (dataclass, pydantic model or plain instance)."""
    if isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            yield getattr(obj, name)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for field in dataclasses.fields(obj):
            yield getattr(obj, field.name, None)
    elif hasattr(obj, "__dict__"):
        yield from vars(obj).values()


def _is_placement(obj: Any) -> bool:
    return type(obj).__module__.startswith("placement")


def _sections(loaded: Any) -> dict[int, Any]:
    """The loaded scenario, its scenario and every section model inside (lists of them included), by id."""
    found: dict[int, Any] = {}

    def visit(obj: Any) -> None:
        if id(obj) in found:
            return
        if isinstance(obj, BaseModel):
            found[id(obj)] = obj
            for name in type(obj).model_fields:
                visit(getattr(obj, name))
        elif isinstance(obj, list | tuple) and any(isinstance(v, BaseModel) for v in obj):
            found[id(obj)] = obj
            for v in obj:
                visit(v)
        elif isinstance(obj, dict) and any(isinstance(v, BaseModel) for v in obj.values()):
            found[id(obj)] = obj
            for v in obj.values():
                visit(v)

    visit(loaded)
    return found


class Walk:
    """Follows the loaded scenario through the calls of placement's functions.

    Parameters
    ----------
    depth : int
        Attributes deep an argument may hold a followed object.
    taint : int
        Generations of derived values followed: with 1, what a call on the walk returns is followed
        too (its own returns are not); 0 follows the scenario and its sections only.
    """

    def __init__(self, depth: int, *, taint: int = 0) -> None:
        self.depth = depth
        self.taint = taint
        self.tracked: dict[int, tuple[Any, int]] = {}  # id -> (object kept alive, generation)
        self.holds: dict[int, tuple[Any, int | None]] = {}  # id -> (object kept alive, generation it holds)
        self.calls: list[tuple[str, str, frozenset[str]]] = []  # (file, function, placement files on the stack)
        self.lock = threading.Lock()

    def follow(self, obj: Any, generation: int) -> None:
        """Follow ``obj`` from now on (the cache of what holds what starts again)."""
        if id(obj) not in self.tracked:
            self.tracked[id(obj)] = (obj, generation)
            self.holds.clear()

    def _holds(self, obj: Any, depth: int) -> int | None:
        known = self.tracked.get(id(obj))
        if known is not None and known[0] is obj:
            return known[1]
        if depth == 0 or not _is_placement(obj):
            return None
        cached = self.holds.get(id(obj))
        if cached is not None and cached[0] is obj:
            return cached[1]
        self.holds[id(obj)] = (obj, None)  # cycles
        found = [g for g in (self._holds(child, depth - 1) for child in _children(obj)) if g is not None]
        result = min(found) if found else None
        self.holds[id(obj)] = (obj, result)
        return result

    def _generation(self, frame: FrameType) -> int | None:
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        local = frame.f_locals
        found = [g for g in (self._holds(local[n], self.depth) for n in names if n in local) if g is not None]
        return min(found) if found else None

    def trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        """The global trace function: records the walk calls."""
        filename = frame.f_code.co_filename
        if not filename.startswith(PREFIX):
            return None
        if not self.tracked:
            return self._watch_load if frame.f_code.co_name == "load_scenario" else None
        generation = self._generation(frame)
        if generation is None:
            return None
        stack, back = set(), frame.f_back
        while back is not None:
            if back.f_code.co_filename.startswith(PREFIX):
                stack.add(_relative(back.f_code.co_filename))
            back = back.f_back
        with self.lock:
            self.calls.append((_relative(filename), frame.f_code.co_qualname, frozenset(stack)))
        if generation >= self.taint:
            return None
        frame.f_trace_lines = False

        def returned(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "return" and arg is not None and not isinstance(arg, bool | int | float | str):
                self.follow(arg, generation + 1)
            return returned

        return returned

    def _watch_load(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "return" and arg is not None and type(arg).__name__ == "LoadedScenario":
            for obj in _sections(arg).values():
                self.follow(obj, 0)
            self.calls.append((_relative(frame.f_code.co_filename), frame.f_code.co_qualname, frozenset()))
        return self._watch_load


def _layers() -> list[list[str]]:
    parser = configparser.ConfigParser()
    parser.read(ROOT / ".importlinter")
    text = parser["importlinter:contract:layers"]["layers"]
    return [[m.strip() for m in line.split("|")] for line in text.strip().splitlines() if line.strip()]


def _layer_of(file: str, layers: list[list[str]]) -> int | None:
    module = "placement." + file.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    for index, layer in enumerate(layers):
        if any(module == m or module.startswith(m + ".") for m in layer):
            return index
    return None


def walk_figures(calls: list[tuple[str, str, frozenset[str]]]) -> dict[str, int]:
    """The walk's figures: files entered, moves and climbs (distinct), and the same along the sequence."""
    layers = _layers()
    moves: list[tuple[str, str]] = []
    climbs: list[tuple[str, str]] = []
    for (before, _, _), (after, _, stack) in itertools.pairwise(calls):
        if after == before:
            continue
        moves.append((before, after))
        a, b = _layer_of(before, layers), _layer_of(after, layers)
        if after in stack or (a is not None and b is not None and b < a):
            climbs.append((before, after))
    return {
        "files entered": len({file for file, _, _ in calls}),
        "moves": len(set(moves)),
        "climbs": len(set(climbs)),
        "walk calls": len(calls),
        "moves along the walk": len(moves),
        "climbs along the walk": len(climbs),
    }


def _modules() -> Iterator[Any]:
    for info in pkgutil.walk_packages(placement.__path__, "placement."):
        yield importlib.import_module(info.name)


def functions_taking_loaded() -> list[str]:
    """Functions and methods of the package with a parameter annotated ``LoadedScenario``."""
    found = set()
    for module in _modules():
        for _, obj in inspect.getmembers(module):
            candidates = [obj]
            if inspect.isclass(obj) and obj.__module__ == module.__name__:
                candidates += [v for v in vars(obj).values() if inspect.isfunction(v)]
            for function in candidates:
                if not inspect.isfunction(function) or function.__module__ != module.__name__:
                    continue
                if not function.__code__.co_filename.startswith(PREFIX):  # a dataclass's generated __init__
                    continue
                annotations = [str(p.annotation) for p in inspect.signature(function).parameters.values()]
                if any("LoadedScenario" in a for a in annotations):
                    found.add(f"{function.__module__}.{function.__qualname__}")
    return sorted(found)


def _chain(node: ast.Attribute) -> list[str]:
    parts = [node.attr]
    value = node.value
    while isinstance(value, ast.Attribute):
        parts.append(value.attr)
        value = value.value
    if isinstance(value, ast.Name):
        parts.append(value.id)
    return parts[::-1]


def deep_chains() -> list[str]:
    """Attribute chains in the writers that reach the scenario through an object holding it."""
    summary = [PACKAGE / "results" / f"{name}.py" for name in ("summary", "class_summary", "cost_breakdown", "headline_figures")]
    files = [*sorted((PACKAGE / "outputs").glob("*.py")), *summary, PACKAGE / "analyses" / "tail.py"]
    found = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or id(node) in inner:
                continue
            parts = _chain(node)
            via_instance = "instance" in parts and any(p in {"scenario", "classes"} for p in parts[parts.index("instance") :])
            if "loaded" in parts[1:] or via_instance:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {'.'.join(parts)}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", help="scenario YAML (default: the bundled world)")
    parser.add_argument("--no-maps", action="store_true", help="solve with --no-maps (fewer output files walked)")
    parser.add_argument("--depth", type=int, default=1, help="attributes deep an argument may hold the scenario")
    parser.add_argument("--taint", type=int, default=1, help="generations of returned values that join the walk")
    parser.add_argument("--dump", help="write the walk calls to this JSON file")
    parser.add_argument("--trace", action="store_true", help="print every walk call")
    args = parser.parse_args()
    walk = Walk(args.depth, taint=args.taint)
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["solve", *([args.scenario] if args.scenario else []), "--out", str(Path(tmp) / "out"), "--quiet"]
        argv += ["--no-maps"] if args.no_maps else []
        threading.settrace(walk.trace)
        sys.settrace(walk.trace)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                code = cli_main(argv)
        finally:
            sys.settrace(None)
            threading.settrace(None)
    if code != 0:
        print(f"solve exited {code}", file=sys.stderr)
        return code
    if args.trace:
        previous = None
        for file, function, stack in walk.calls:
            if file != previous:
                print(f"{'^' if file in stack else ' '} {file}: {function}")
            previous = file
    if args.dump:
        Path(args.dump).write_text(json.dumps([[f, q, sorted(st)] for f, q, st in walk.calls]))
    figures = walk_figures(walk.calls)
    taking = functions_taking_loaded()
    chains = deep_chains()
    figures["functions taking the whole LoadedScenario"] = len(taking)
    figures["deep attribute chains in outputs/"] = len(chains)
    width = max(len(k) for k in figures)
    print(f"{'figure':<{width}}  value")
    for key, value in figures.items():
        print(f"{key:<{width}}  {value:>5}")
    if args.trace:
        print("\n".join(["", *taking, "", *chains]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
