"""What ``placement failover`` costs in time: a written plan loses each of its busiest sites in turn.

Solves a scenario once into a temporary folder (not timed), then, for its five busiest sites, times the
whole command's work: reading the folder back and rebuilding the scenario, mapping the plan onto the model
arrays, the per-slice re-routing LPs, and the tables. Prints one row per loss with what it moved and left
unserved. The machines here are shared and noisy: compare the phases' ratios within one run.

Usage::

    .venv/bin/python benchmarks/bench_failover.py [SCENARIO]   # default: the bundled world (data/scenarios/default.yaml)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from placement.analyses.explain import rebuild_plan
from placement.analyses.exposure import exposure_tables, plan_solution
from placement.cli import main as placement
from placement.optimize.reroute import reroute_on_capacity
from placement.optimize.solver import SolverOptions

ROOT = Path(__file__).resolve().parents[1]
LOSSES = 5


def main(argv: list[str]) -> None:
    """Solve once, then time each loss and print the table."""
    scenario = Path(argv[0]) if argv else ROOT / "data" / "scenarios" / "default.yaml"
    folder = Path(tempfile.mkdtemp(prefix="bench-failover-")) / "out"
    assert placement(["solve", str(scenario), "--out", str(folder), "--quiet", "--no-maps"]) == 0
    sites = pd.read_csv(folder / "sites.csv", keep_default_na=False)
    busiest = sites.sort_values("goodput_tok_s", ascending=False)["site_id"].head(LOSSES).tolist()
    print(f"{scenario.name}: {len(sites)} sites, losing each of the {len(busiest)} busiest\n")
    print(f"{'site lost':<16} {'rebuild s':>9} {'map s':>6} {'LPs s':>6} {'tables s':>8} {'served tok/s':>13} {'unserved %':>10}")
    for site in busiest:
        start = time.perf_counter()
        rebuilt = rebuild_plan(folder)
        rebuild_s = time.perf_counter() - start
        start = time.perf_counter()
        solution = plan_solution(rebuilt.instance, rebuilt.sites, rebuilt.results.assignments, source=str(folder))
        failed = np.array([list(rebuilt.sites["site_id"]).index(site)])
        map_s = time.perf_counter() - start
        start = time.perf_counter()
        reroute = reroute_on_capacity(rebuilt.instance.inputs, solution, failed, options=SolverOptions())
        lp_s = time.perf_counter() - start
        start = time.perf_counter()
        table, _ = exposure_tables(rebuilt.instance, rebuilt.results.assignments, solution, reroute, source=str(folder))
        tables_s = time.perf_counter() - start
        served = float(table["served_there_tok_s"].sum())
        unserved = float(table["unserved_tok_s"].sum()) / served if served else 0.0
        print(
            f"{site:<16} {rebuild_s:>9.2f} {map_s:>6.2f} {lp_s:>6.2f} {tables_s:>8.2f} {served:>13,.0f} {100 * unserved:>10.2f}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
