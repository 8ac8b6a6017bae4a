"""What N+1 costs in time and money: each step of a protected plan, on a bundled 24x7 world.

Builds the scenario once, then times the plan without N+1 that serves the most (the priced path), the
most-served LP with every loss covered, and the least-cost step (the MILP, or one loss at a time above
``protect.MILP_MAX_COLUMNS``), and prints one table: seconds, columns, and the plan's $/h. The machines here
are shared and noisy: compare the steps' ratios within one run.

Usage::

    .venv/bin/python benchmarks/bench_n_plus_one.py [SCENARIO]   # default: data/scenarios/world-24x7.yaml
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

from placement.instance.build import build_instance
from placement.optimize import protect
from placement.optimize.priced import PRICING_FROM_PAIRS, solve_priced
from placement.scenario.load import load_scenario

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> None:
    """Time each step and print the table."""
    path = Path(argv[0]) if argv else ROOT / "data" / "scenarios" / "world-24x7.yaml"
    start = time.perf_counter()
    instance = build_instance(load_scenario(path))
    data = replace(instance.inputs, fault_tolerant=True)
    options = instance.facts.solver.options(msg=False)
    rows = [("build the instance", time.perf_counter() - start, len(data.pair_site), float("nan"))]
    start = time.perf_counter()
    all_pairs = len(data.pair_site) <= PRICING_FROM_PAIRS
    base = solve_priced(replace(data, fault_tolerant=False), options, shortfall=True, route_nearest=False, all_pairs=all_pairs)
    rows.append(("plan without N+1 (most served)", time.perf_counter() - start, len(data.pair_site), base.objective_usd_per_h))
    start = time.perf_counter()
    scenarios = protect.losses(data, base.pair_share)
    most = protect.protection_model(data, base, scenarios, least_cost=False)
    report, _ = protect._run(most, options, time_limit_s=options.time_limit_s)
    rows.append((f"most-served LP, {len(scenarios)} losses", time.perf_counter() - start, most.model.n_cols, float("nan")))
    start = time.perf_counter()
    protected = protect.protect_plan(data, base, options)
    size = protect.protection_size(data, base, scenarios)
    step = "least-cost MILP" if size <= protect.MILP_MAX_COLUMNS else "spare one loss at a time"
    rows.append((f"protect_plan ({step})", time.perf_counter() - start, size, protected.objective_usd_per_h))
    print(
        f"{path.name}: {len(data.pair_site):,} pairs, {data.n_sites} sites, {len(data.slice_hours)} slices; LP {report.message}"
    )
    print(f"{'step':<44} {'s':>8} {'columns':>10} {'$/h':>14}")
    for name, seconds, columns, cost in rows:
        print(f"{name:<44} {seconds:>8.1f} {columns:>10,} {cost:>14,.0f}")
    rise = protected.objective_usd_per_h / base.objective_usd_per_h - 1
    print(f"N+1 adds {rise:+.1%} to the cost; dropped: {protected.n_plus_one_dropped}")


if __name__ == "__main__":
    main(sys.argv[1:])
