"""Size, phase times, bound, gap and peak memory of whole-world solves, beside a straightforward PuLP build.

Usage: .venv/bin/python benchmarks/bench_world.py [SCENARIO.yaml ...]

Default: the bundled world (data/scenarios/default.yaml). Give more scenario paths (for example a
full-resolution world_full.yaml, or the default with ``policy.serving: optional`` for the exact ratio) to add
rows. Each scenario runs in its own child process, so its peak
memory (``ru_maxrss``, the resident high-water mark, HiGHS included) is its own; the table is printed once
all rows are in. The straightforward build is the same instance written the textbook way (every
population-class x site pair as a variable, tuple-keyed dicts and ``lpSum``, no pruning of pairs or slices)
and only built, not solved; its ratio is its build time over the project's PuLP build. Machines here are
shared and noisy: compare the rows and ratios of one run with each other.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import pulp  # noqa: E402

from placement.instance.build import build_instance  # noqa: E402
from placement.optimize.model import build_model  # noqa: E402
from placement.optimize.priced import PRICING_FROM_PAIRS  # noqa: E402
from placement.optimize.problem import PlacementInput  # noqa: E402
from placement.outputs.writer import write_results  # noqa: E402
from placement.plan.solve import solve_instance  # noqa: E402
from placement.scenario.load import load_scenario  # noqa: E402

DEFAULT = REPO / "data" / "scenarios" / "default.yaml"

NAIVE_MAX_VARIABLES = 400_000
"""The straightforward build is skipped above this many (commodity x site) variables: at full resolution on
~300 sites it would be ~1 million PuLP variables, minutes and gigabytes just to build."""


def straightforward_build(data: PlacementInput) -> pulp.LpProblem:
    """The same instance as a textbook PuLP model: all pairs, every site x slice row, lpSum over tuple lists."""
    commodities, sites, slices = range(data.n_commodities), range(data.n_sites), range(len(data.slice_hours))
    allowed = np.zeros((data.n_commodities, data.n_sites), dtype=bool)
    allowed[data.pair_commodity, data.pair_site] = True
    nodes_per_tok_s = np.zeros((data.n_commodities, data.n_sites))
    nodes_per_tok_s[data.pair_commodity, data.pair_site] = data.pair_nodes_per_tok_s
    pair_cost = np.zeros((data.n_commodities, data.n_sites))
    pair_cost[data.pair_commodity, data.pair_site] = data.pair_cost_usd_per_h
    pairs = [(c, j) for c in commodities for j in sites]
    problem = pulp.LpProblem("straightforward", pulp.LpMinimize)
    y = pulp.LpVariable.dicts("open", sites, cat="Binary")
    n = pulp.LpVariable.dicts("nodes", sites, lowBound=0, cat="Integer")
    x = pulp.LpVariable.dicts("share", pairs, lowBound=0, upBound=1)
    problem += pulp.lpSum(data.site_fixed_usd_per_h[j] * y[j] + data.site_node_usd_per_h[j] * n[j] for j in sites) + pulp.lpSum(
        pair_cost[c, j] * x[c, j] for c, j in pairs
    )
    for c in commodities:
        problem += pulp.lpSum(x[c, j] for j in sites) == 1
    for c, j in pairs:
        problem += x[c, j] <= (1 if allowed[c, j] else 0) * y[j]
    for j in sites:
        for t in slices:
            problem += pulp.lpSum(data.slice_demand_tok_s[c, t] * nodes_per_tok_s[c, j] * x[c, j] for c in commodities) <= n[j]
        problem += data.site_node_mw[j] * n[j] <= data.site_mw_available[j] * y[j]
    return problem


def measure(path: Path) -> dict[str, Any]:
    """One scenario, end to end in this process: sizes, phase times, bound, gap, peak memory."""
    loaded = load_scenario(path)
    start = time.perf_counter()
    instance = build_instance(loaded)
    built = time.perf_counter()
    plan = solve_instance(instance)
    solved = time.perf_counter()
    solve_peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # instance and solve, before writing
    with tempfile.TemporaryDirectory() as tmp:
        write_results(plan, Path(tmp) / "out")
    written = time.perf_counter()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the comparison builds
    data = instance.inputs
    tic = time.perf_counter()
    model = build_model(data)
    ours_s = time.perf_counter() - tic
    naive_rows: int | None = None
    naive_s: float | None = None
    if data.n_commodities * data.n_sites <= NAIVE_MAX_VARIABLES:
        tic = time.perf_counter()
        naive_rows = len(straightforward_build(data).constraints)
        naive_s = time.perf_counter() - tic
    s = plan.summary
    return {
        "scenario": f"{path.stem}",
        "populations": s.populations,
        "sites": s.sites_candidate,
        "pairs": s.feasible_pairs,
        "rows": len(model.problem.constraints),
        "naive_rows": naive_rows,
        "instance_s": built - start,
        "solve_s": solved - built,
        "highs_s": s.runtime_s,
        "write_s": written - solved,
        "total_s": written - start,
        "objective_usd_per_h": s.objective_usd_per_h,
        "bound_usd_per_h": s.best_bound_usd_per_h,
        "gap": s.gap,
        "gap_basis": getattr(s, "gap_basis", "aggregated" if loaded.scenario.demand.clusters else "full_resolution"),
        "stopped_by": s.stopped_by,
        "method": "priced" if s.feasible_pairs > PRICING_FROM_PAIRS and not data.fault_tolerant else "direct",
        "dinkelbach": len(s.dinkelbach_iterations),
        "ratio_usd_per_m": s.cost_per_million_goodput_tokens_usd if s.dinkelbach_iterations else None,
        "ratio_bound_usd_per_m": getattr(s, "ratio_bound_usd_per_million_tokens", None),
        "peak_mb": peak_mb,
        "solve_peak_mb": solve_peak_mb,
        "pulp_build_s": ours_s,
        "naive_build_s": naive_s,
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'scenario':<16} {'pops':>6} {'sites':>5} {'pairs':>7} {'rows':>7} {'method':>7} {'inst s':>7} {'solve s':>7} "
        f"{'highs s':>7} {'write s':>7} {'total s':>7} {'bound $/h':>11} {'gap':>7} {'basis':>15} {'stopped':>10} "
        f"{'peak MB':>7} {'solve MB':>8} {'build s':>7} {'naive rows':>10} {'naive s':>7} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        gap = "n/a" if r["gap"] is None else f"{r['gap']:.3%}"
        bound = "n/a" if r["bound_usd_per_h"] is None else f"{r['bound_usd_per_h']:,.0f}"
        naive_rows = "n/a" if r["naive_rows"] is None else f"{r['naive_rows']}"
        naive_s = "n/a" if r["naive_build_s"] is None else f"{r['naive_build_s']:.2f}"
        ratio = "n/a" if r["naive_build_s"] is None else f"{r['naive_build_s'] / r['pulp_build_s']:.1f}x"
        print(
            f"{r['scenario'][:16]:<16} {r['populations']:>6} {r['sites']:>5} {r['pairs']:>7} {r['rows']:>7} {r['method']:>7} "
            f"{r['instance_s']:>7.2f} {r['solve_s']:>7.2f} {r['highs_s']:>7.2f} {r['write_s']:>7.2f} {r['total_s']:>7.2f} "
            f"{bound:>11} {gap:>7} {r['gap_basis']:>15} {r['stopped_by']!s:>10} {r['peak_mb']:>7.0f} {r['solve_peak_mb']:>8.0f} "
            f"{r['pulp_build_s']:>7.2f} {naive_rows:>10} {naive_s:>7} {ratio:>6}"
        )
    for r in rows:
        if r["dinkelbach"]:
            print(
                f"{r['scenario']}: exact ratio ${r['ratio_usd_per_m']:.4f}/M goodput, proven at least "
                f"${r['ratio_bound_usd_per_m']:.4f}/M, in {r['dinkelbach']} Dinkelbach MILPs"
            )
    print(
        "inst: scenario to model arrays (aggregation included); solve: MILP build, HiGHS, routing and tables; "
        "highs: the solver's own time (priced: pricing LPs and the restricted MILP); write: every result file; "
        "rows: the project's PuLP model of the whole instance (the priced method solves far fewer); method: direct "
        "MILP, or the LP priced over every pair with a MILP on the pairs it singles out; bound and gap: of the model "
        "basis names; peak MB: the process's resident high-water mark, writing included; solve MB: the same before "
        "writing; build: the project's PuLP build of the instance; naive: the straightforward PuLP build of the "
        "same instance (not solved; n/a where it has more than "
        f"{NAIVE_MAX_VARIABLES:,} variables); ratio: naive over build time"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "scenarios", nargs="*", type=Path, default=[DEFAULT], help="scenario YAML files (default: the bundled world)"
    )
    parser.add_argument("--row", action="store_true", help=argparse.SUPPRESS)  # a child: measure one scenario, print JSON
    args = parser.parse_args()
    if args.row:
        print(json.dumps(measure(args.scenarios[0])))
        return
    rows = []
    for path in args.scenarios:
        child = subprocess.run(
            [sys.executable, __file__, "--row", str(path.resolve())], check=True, capture_output=True, text=True
        )
        rows.append(json.loads(child.stdout.strip().splitlines()[-1]))
    print_table(rows)


if __name__ == "__main__":
    main()
