"""Wall time of the example sweep with 1 and 2 local Dask workers, in one run.

Usage: .venv/bin/python benchmarks/bench_sweep.py [--sweep data/sweeps/example.yaml] [--workers 1 2]

Each run writes into a fresh folder, so no case is skipped. Prints a table with the speed-up over
the first row. Machines here are shared and noisy: compare the rows of one run with each other.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from placement.sweep.run import run_sweep  # noqa: E402

SWEEP = REPO / "data" / "sweeps" / "example.yaml"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sweep", default=str(SWEEP))
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        for workers in args.workers:
            start = time.perf_counter()
            table = run_sweep(args.sweep, out_dir=Path(tmp) / f"w{workers}", workers=workers, progress=False)
            wall = time.perf_counter() - start
            ok = table[table["error"] == ""]
            rows.append((workers, len(table), len(ok), wall, float(table["wall_s"].sum()), float(ok["gap"].max())))
    first = rows[0][3]
    print(f"sweep {args.sweep}")
    print(f"{'workers':>7} {'cases':>5} {'solved':>6} {'wall s':>8} {'case s (sum)':>12} {'max gap':>8} {'speed-up':>8}")
    for workers, cases, solved, wall, busy, gap in rows:
        print(f"{workers:>7} {cases:>5} {solved:>6} {wall:>8.1f} {busy:>12.1f} {gap:>8.2%} {first / wall:>8.2f}")


if __name__ == "__main__":
    main()
