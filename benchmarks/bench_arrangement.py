"""Run time of the world with every arrangement option on, beside the default world, in one run.

Usage: .venv/bin/python benchmarks/bench_arrangement.py [--repeat N]

Each row is ``cli.py solve KEY --out TMP --no-maps --quiet`` in a child process (wall clock around it, peak
memory of the child): ``default`` (the fixed arrangement) and ``world-arrangement`` (speculative decoding and
disaggregated pools as per-class choices, then the fixed-arrangement solve its ``summary.json`` compares
with). The serving-model phase is timed on its own (class profiles with and without the options). Every run starts
from an empty cache of its own (``PLACEMENT_CACHE_DIR``): the serving model computed, not read back. Machines here are
shared and noisy: read the ratio of one run, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from placement._cache import FOLDER_ENV  # noqa: E402
from placement.profiles.build import class_profiles  # noqa: E402
from placement.scenario.load import load_scenario  # noqa: E402
from placement.world.bundled import scenario_file  # noqa: E402


def solve_s(key: str) -> tuple[float, float]:
    """Wall seconds and peak memory (GB) of one solve in a child process."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        command = [sys.executable, str(REPO / "cli.py"), "solve", key, "--out", f"{tmp}/out", "--no-maps", "--quiet"]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e6


def profiles_s(key: str) -> float:
    """Seconds of the serving model for every class of a scenario."""
    loaded = load_scenario(scenario_file(key))
    start = time.perf_counter()
    class_profiles(loaded.scenario.classes, loaded.scenario.serving, source=str(loaded.path))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=1, help="solves per scenario (the fastest is kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-arrangement-cache-") as cache:
        _table(args.repeat, cache)


def _table(repeat: int, cache: str) -> None:
    """Each scenario solved ``repeat`` times, each from an empty cache; the serving model timed afresh too."""
    rows = []
    for key in ("default", "world-arrangement"):
        runs = []
        for k in range(repeat):
            os.environ[FOLDER_ENV] = f"{cache}/{key}-{k}"  # a folder of its own: nothing read back
            runs.append(solve_s(key))
        os.environ[FOLDER_ENV] = f"{cache}/{key}-profiles"
        rows.append((key, min(r[0] for r in runs), max(r[1] for r in runs), profiles_s(key)))
    base = rows[0][1]
    print("| scenario | solve wall [s] | over default | serving model [s] | peak memory so far [GB] |")
    print("|---|---|---|---|---|")
    for key, wall, peak, serving in rows:
        print(f"| {key} | {wall:.1f} | {wall / base:.2f} | {serving:.1f} | {peak:.2f} |")


if __name__ == "__main__":
    main()
