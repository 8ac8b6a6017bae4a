"""Wall time of a frontier solved in turn and on a local Dask cluster, in one run.

Usage: .venv/bin/python benchmarks/bench_frontier.py [--scenario default] [--axis carbon] [--points 6] [--workers 2]

Each row runs ``placement frontier`` in its own process into a fresh folder, without maps, from the cache the first
row warmed (a row before the table, untimed, fills it): first in turn (one instance, every point in this process),
then with ``--workers N`` (the capped points as Dask tasks, each building its own instance on a worker). Prints the
whole-process seconds, the speed-up over the first row and the points written. Machines here are shared and noisy:
compare the rows of one run with each other.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _run(args: argparse.Namespace, out: Path, workers: int | None) -> tuple[float, int]:
    """Whole-process seconds of one frontier, and the points its ``frontier.csv`` holds."""
    command = [sys.executable, str(REPO / "cli.py"), "frontier", args.scenario, "--axis", args.axis,
               "--points", str(args.points), "--no-maps", "--quiet", "--out", str(out)]  # fmt: skip
    if workers is not None:
        command += ["--workers", str(workers)]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    points = len((out / "frontier.csv").read_text(encoding="utf-8").splitlines()) - 1
    return seconds, points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="default", help="scenario YAML or a bundled key")
    parser.add_argument("--axis", default="carbon", choices=["carbon", "water"])
    parser.add_argument("--points", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2, help="local Dask workers of the second row")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        _run(args, Path(folder) / "warm", None)  # the cache filled, so that neither row pays for it
        rows = [("in turn", *_run(args, Path(folder) / "turn", None))]
        rows.append((f"--workers {args.workers}", *_run(args, Path(folder) / "dask", args.workers)))
    first = rows[0][1]
    print(f"{args.scenario}, {args.axis}, {args.points} points")
    print("| run | wall s | speed-up | points |")
    print("|---|---|---|---|")
    for name, seconds, points in rows:
        print(f"| {name} | {seconds:.1f} | {first / seconds:.2f}x | {points} |")


if __name__ == "__main__":
    main()
