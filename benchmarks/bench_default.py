"""Time the bundled default scenario stage by stage, on both solvers, and the whole CLI run.

Usage: .venv/bin/python benchmarks/bench_default.py [--repeat N]

Prints a table. Machines here are shared and noisy: compare the rows of one run with each other.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from placement.instance.build import build_instance  # noqa: E402
from placement.outputs.writer import write_results  # noqa: E402
from placement.plan.solve import solve_instance  # noqa: E402
from placement.scenario.load import LoadedScenario, load_scenario  # noqa: E402

SCENARIO = REPO / "data" / "scenarios" / "default.yaml"


def with_solver(loaded: LoadedScenario, name: str) -> LoadedScenario:
    solver = loaded.scenario.solver.model_copy(update={"name": name})
    return LoadedScenario(scenario=loaded.scenario.model_copy(update={"solver": solver}), path=loaded.path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for _ in range(args.repeat):
        for solver in ("highs", "cbc"):
            loaded = with_solver(load_scenario(SCENARIO), solver)
            start = time.perf_counter()
            instance = build_instance(loaded)
            built = time.perf_counter()
            plan = solve_instance(instance)
            solved = time.perf_counter()
            with tempfile.TemporaryDirectory() as tmp:
                write_results(plan, Path(tmp) / "out")
            written = time.perf_counter()
            s = plan.summary
            rows.append(
                (
                    solver,
                    built - start,
                    solved - built,
                    s.runtime_s,
                    written - solved,
                    written - start,
                    s.objective_usd_per_h,
                    s.gap,
                    s.sites_open,
                )
            )
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, str(REPO / "cli.py"), "solve", "--out", str(Path(tmp) / "out"), "--quiet"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            rows.append(
                (
                    "cli (highs)",
                    float("nan"),
                    float("nan"),
                    float("nan"),
                    float("nan"),
                    time.perf_counter() - start,
                    float("nan"),
                    float("nan"),
                    0,
                )
            )
    header = f"{'run':<12} {'build s':>8} {'solve s':>8} {'solver s':>9} {'write s':>8} {'total s':>8} {'$/h':>12} {'gap':>8} {'open':>5}"
    print(header)
    print("-" * len(header))
    for run, build, solve, solver_s, write, total, objective, gap, sites in rows:
        print(
            f"{run:<12} {build:8.2f} {solve:8.2f} {solver_s:9.2f} {write:8.2f} {total:8.2f} {objective:12,.0f} {gap:8.4%} {sites:5d}"
        )


if __name__ == "__main__":
    main()
