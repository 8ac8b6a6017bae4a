"""Whole-process timings of the runs a planner waits for: one table, each run in its own process, each row twice.

Usage: .venv/bin/python benchmarks/bench_speed.py [--repeat 2] [--large] [--only NAME ...]

Rows (``--large`` adds the catalog-scale ones, minutes each):

- ``default``: ``placement solve`` of the bundled world with every output, from an empty cache;
- ``default --no-maps``: the same without the maps, from an empty cache;
- ``what-if``: the bundled world again with one price changed (``economics.opex_usd_per_node_h``), the cache warm from
  the run before (what a planner's second look costs);
- ``what-if --no-maps``: the same without the maps;
- ``world_2k``, ``world_full-24x7`` (``--large``): ``--no-maps``, from an empty cache.

Each run's phases: start (to its first progress line: Python and the command's imports), then from its progress
lines build (to the ``model:`` line), solve (to ``writing results``) and write (to the end); ``peak MB`` is the
largest resident set of the run's own process (``wait4``; the children it forks for profiles and maps are smaller). Machines here are shared and noisy: compare the rows of one
run, and the median of each row's runs.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PLACEMENT = [sys.executable, str(REPO / "cli.py")]
STAMP = re.compile(r"^\[\s*([0-9.]+) s\] (.*)$")


@dataclass(frozen=True)
class Run:
    """One run's whole-process seconds, its phases and its peak memory."""

    wall_s: float
    start_s: float
    build_s: float
    solve_s: float
    write_s: float
    peak_mb: float


@dataclass(frozen=True)
class Row:
    """A row of the table: a scenario, its options, and whether it starts from a warm cache."""

    name: str
    scenario: str
    options: tuple[str, ...]
    warm: bool = False
    edit: tuple[str, str] | None = None  # a line of the scenario replaced (the what-if)


def _scenario_copy(folder: Path, key: str, edit: tuple[str, str] | None) -> Path:
    """A bundled scenario copied with its paths made absolute (and one line changed for a what-if)."""
    source = REPO / "data" / "scenarios" / f"{key}.yaml"
    text = source.read_text(encoding="utf-8").replace("../", f"{REPO / 'data'}/")
    if edit is not None:
        old, new = edit
        if old not in text:
            raise SystemExit(f"{key}.yaml has no line {old!r} to change for the what-if")
        text = text.replace(old, new, 1)
    path = folder / f"{key}{'-whatif' if edit else ''}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _phases(stderr: str, clocked_s: float) -> tuple[float, float, float]:
    """Build, solve and write seconds from the run's progress lines (``clocked_s``: the run's seconds after its first)."""
    stamps = [(float(m.group(1)), m.group(2)) for m in map(STAMP.match, stderr.splitlines()) if m]
    built = next((t for t, text in stamps if text.startswith("model:")), float("nan"))
    writing = next((t for t, text in stamps if text.startswith("writing results")), float("nan"))
    return built, writing - built, clocked_s - writing


def _run(row: Row, folder: Path, cache: Path) -> Run:
    scenario = _scenario_copy(folder, row.scenario, row.edit)
    out = folder / f"out-{row.name.replace(' ', '_')}"
    env = {**os.environ, "PLACEMENT_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    child = subprocess.Popen([*PLACEMENT, "solve", str(scenario), "--out", str(out), *row.options],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    assert child.stderr is not None
    lines: list[str] = []
    first = math.nan
    for line in child.stderr:  # the first line comes once the command's imports are done: its progress clock starts
        first = time.perf_counter() - start if not lines else first
        lines.append(line)
    _, status, usage = os.wait4(child.pid, 0)  # this run's own peak, not the largest child's so far
    wall = time.perf_counter() - start
    stderr = "".join(lines)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{row.name} failed:\n{stderr[-2000:]}")
    shutil.rmtree(out, ignore_errors=True)
    return Run(wall, first, *_phases(stderr, wall - first), usage.ru_maxrss / 1024)


ROWS = (
    Row("default", "default", ()),
    Row("default --no-maps", "default", ("--no-maps",)),
    Row("what-if", "default", (), warm=True, edit=("  opex_usd_per_node_h:", "  opex_usd_per_node_h: 4.5 #")),
    Row(
        "what-if --no-maps", "default", ("--no-maps",), warm=True, edit=("  opex_usd_per_node_h:", "  opex_usd_per_node_h: 4.5 #")
    ),
)
LARGE = (
    Row("world_2k", "world_2k", ("--no-maps",)),
    Row("world_full-24x7", "world_full-24x7", ("--no-maps",)),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each row (default 2)")
    parser.add_argument("--large", action="store_true", help="add world_2k and world_full-24x7 (minutes each)")
    parser.add_argument("--only", nargs="*", help="rows by name")
    args = parser.parse_args()
    rows = [r for r in (*ROWS, *(LARGE if args.large else ())) if not args.only or r.name in args.only]
    table: dict[str, list[Run]] = {r.name: [] for r in rows}
    with tempfile.TemporaryDirectory(prefix="bench-speed-") as tmp:
        folder = Path(tmp)
        for attempt in range(args.repeat):
            for row in rows:
                cache = folder / "cache-warm" if row.warm else folder / f"cache-cold-{attempt}-{row.name}"
                if row.warm and not cache.exists():  # warmed by the same scenario unchanged
                    _run(Row("warm-up", row.scenario, ("--no-maps",)), folder, cache)
                run = _run(row, folder, cache)
                table[row.name].append(run)
                print(f"# {row.name} run {attempt + 1}: {run.wall_s:.1f} s", file=sys.stderr, flush=True)
    print("| run | runs (s) | median s | start s | build s | solve s | write s | peak MB |")
    print("|---|---|---|---|---|---|---|---|")
    for name, runs in table.items():
        walls = ", ".join(f"{r.wall_s:.1f}" for r in runs)

        def median(values: list[float]) -> float:
            return statistics.median(values)

        print(
            f"| {name} | {walls} | {median([r.wall_s for r in runs]):.1f} | {median([r.start_s for r in runs]):.1f} | "
            f"{median([r.build_s for r in runs]):.1f} | "
            f"{median([r.solve_s for r in runs]):.1f} | {median([r.write_s for r in runs]):.1f} | "
            f"{max(r.peak_mb for r in runs):,.0f} |"
        )


if __name__ == "__main__":
    main()
