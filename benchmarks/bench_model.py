"""Model size, build time and solve time versus populations x sites x slices, CBC versus HiGHS.

Usage: .venv/bin/python benchmarks/bench_model.py [--quick]

Runs the bundled world scenario at several aggregation levels (demand.clusters), site counts
(the first N catalog sites by id are kept) and time slices, on both solvers with the scenario's
gap and a 60 s limit, and prints one table. Machines here are shared and noisy: compare rows of
one run with each other.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from placement.instance.build import build_instance  # noqa: E402
from placement.optimize.model import build_model  # noqa: E402
from placement.plan.solve import solve_instance  # noqa: E402
from placement.scenario.load import LoadedScenario, load_scenario  # noqa: E402
from placement.world.catalog import load_catalog  # noqa: E402

SCENARIO = REPO / "data" / "scenarios" / "default.yaml"


def variant(base: LoadedScenario, *, clusters: int, sites: int, slices: int, solver: str) -> LoadedScenario:
    ids = sorted(load_catalog(base.catalog_path)["id"])
    scenario = base.scenario.model_copy(
        update={
            "demand": base.scenario.demand.model_copy(update={"clusters": clusters}),
            "sites": base.scenario.sites.model_copy(update={"exclude": ids[sites:]}),
            "time": base.scenario.time.model_copy(update={"slices": slices}),
            "solver": base.scenario.solver.model_copy(update={"name": solver, "time_limit_s": 60.0}),
        }
    )
    return LoadedScenario(scenario=scenario, path=base.path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer configurations")
    args = parser.parse_args()
    base = load_scenario(SCENARIO)
    grid = [(100, 74, 24), (400, 74, 24), (1000, 74, 24), (400, 30, 24), (400, 74, 1), (400, 74, 6)]
    if args.quick:
        grid = grid[:2]
    header = (
        f"{'clusters':>8} {'pops':>5} {'sites':>5} {'slices':>6} {'rows':>5} {'pairs':>6} {'vars':>6} {'rows(LP)':>8} "
        f"{'solver':>6} {'build s':>8} {'solve s':>8} {'gap':>7} {'$/h':>10} {'open':>4} {'status':>9}"
    )
    print(header)
    print("-" * len(header))
    for clusters, sites, slices in grid:
        for solver in ("highs", "cbc"):
            loaded = variant(base, clusters=clusters, sites=sites, slices=slices, solver=solver)
            start = time.perf_counter()
            instance = build_instance(loaded)
            model = build_model(instance.inputs)
            built = time.perf_counter() - start
            n_vars, n_rows = model.problem.numVariables(), model.problem.numConstraints()
            plan = solve_instance(instance)
            s = plan.summary
            print(
                f"{clusters:8d} {s.populations:5d} {sites:5d} {slices:6d} {len(instance.modelled):5d} "
                f"{s.feasible_pairs:6d} {n_vars:6d} {n_rows:8d} {solver:>6} {built:8.2f} {s.runtime_s:8.2f} "
                f"{(s.gap or 0):7.3%} {s.objective_usd_per_h:10,.0f} {s.sites_open:4d} {s.solver_status:>9}",
                flush=True,
            )


if __name__ == "__main__":
    main()
