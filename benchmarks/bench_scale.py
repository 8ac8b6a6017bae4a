"""How a full-resolution solve grows with the catalog and the populations: build, solve and write times, peak memory,
pairs, pricing rounds and gap, beside the straightforward PuLP build of the same model, and a fitted growth exponent.

Usage: .venv/bin/python benchmarks/bench_scale.py [--sites 263 1000 2000 5000] [--populations 8000 34000]
                                                  [--time-limit 600] [--naive-max-pairs 400000] [--keep DIR]

Each row is ``data/scenarios/world_full.yaml`` (24 h, every city its own population) with its catalog grown to the
given number of sites by :func:`placement.analyses.candidates.with_candidates` (the 263 sites, then greenfield candidates at
large cities, as ``data/sites/world_sites_2k.csv`` is built) and its cities cut to about the given number by a
population floor (``--keep DIR`` keeps each row's ``sites.csv`` and ``scenario.yaml``, to solve or check again). Each row runs in its own child process, so its peak memory (``ru_maxrss``: the resident high-water
mark, HiGHS included) is its own. The straightforward build is the whole MILP on every feasible pair, as PuLP builds it
(:func:`placement.optimize.model.build_model`, what a direct solve would hand HiGHS), timed in a child of its own
where it has at most ``--naive-max-pairs`` pairs (beyond, it would take minutes and gigabytes before HiGHS starts).
The exponent is the least-squares slope of log(total time) on log(pairs) over the rows. Machines here are shared and
noisy: compare the rows and ratios of one run with each other.
"""

from __future__ import annotations

import argparse
import json
import math
import re
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
import yaml  # noqa: E402

from placement._process import map_large_blocks  # noqa: E402
from placement.analyses.candidates import with_candidates  # noqa: E402
from placement.instance.build import build_instance  # noqa: E402
from placement.optimize.model import build_model  # noqa: E402
from placement.outputs.writer import write_results  # noqa: E402
from placement.plan.solve import solve_instance  # noqa: E402
from placement.scenario.load import load_scenario  # noqa: E402
from placement.world.catalog import load_catalog  # noqa: E402
from placement.world.cities import load_cities  # noqa: E402

WORLD = REPO / "data" / "scenarios" / "world_full.yaml"
CITIES = REPO / "data" / "cities" / "geonames_cities15000.csv"
CATALOG = REPO / "data" / "sites" / "world_sites.csv"


def population_floor(populations: int) -> int:
    """The city population floor that leaves about ``populations`` cities (at least the table's own 15,000)."""
    sizes = np.sort(load_cities(CITIES)["population"].to_numpy(float))[::-1]
    if populations >= len(sizes):
        return 15_000
    return max(15_000, int(sizes[populations - 1]))


def write_scenario(folder: Path, sites: int, populations: int, time_limit_s: float) -> Path:
    """world_full.yaml with ``sites`` candidate sites and about ``populations`` cities, written into ``folder``."""
    catalog = with_candidates(load_cities(CITIES), load_catalog(CATALOG), total=sites)
    catalog_path = folder / "sites.csv"
    catalog.to_csv(catalog_path, index=False, lineterminator="\n")
    spec = yaml.safe_load(WORLD.read_text())
    spec["name"] = f"scale-{sites}-{populations}"
    spec["sites"]["catalog"] = str(catalog_path)
    spec["demand"]["min_population"] = population_floor(populations)
    spec["solver"]["time_limit_s"] = time_limit_s
    for key in ("cities", "profile"):  # paths in the spec are relative to world_full.yaml: make them absolute
        for section in ("demand", "time"):
            value = spec.get(section, {}).get(key)
            if isinstance(value, str) and not Path(value).is_absolute():
                spec[section][key] = str((WORLD.parent / value).resolve())
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def measure(path: Path) -> dict[str, Any]:
    """One scenario, end to end in this process: sizes, phase times, rounds, bound, gap, peak memory."""
    map_large_blocks()  # the allocator as the CLI sets it
    loaded = load_scenario(path)
    start = time.perf_counter()
    instance = build_instance(loaded)
    built = time.perf_counter()
    plan = solve_instance(instance)
    solved = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        write_results(plan, Path(tmp) / "out", maps=False)
    written = time.perf_counter()
    s = plan.summary
    rounds = re.search(r"in (\d+) rounds", s.solver_message or "")  # "LP priced over all N pairs in R rounds"
    return {
        "sites": s.sites_candidate,
        "populations": s.populations,
        "pairs": s.feasible_pairs,
        "rounds": int(rounds.group(1)) if rounds else None,
        "build_s": built - start,
        "solve_s": solved - built,
        "solver_s": s.runtime_s,  # the solver alone (what its time limit bounds), within solve_s
        "write_s": written - solved,
        "total_s": written - start,
        "sites_open": s.sites_open,
        "objective_usd_per_h": s.objective_usd_per_h,
        "gap": s.gap,
        "stopped_by": str(s.stopped_by),
        "time_limit_s": loaded.scenario.solver.time_limit_s,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def measure_naive(path: Path) -> dict[str, Any]:
    """The whole MILP on every feasible pair as PuLP builds it: seconds and the process's peak memory."""
    instance = build_instance(load_scenario(path))
    tic = time.perf_counter()
    model = build_model(instance.inputs)
    return {
        "naive_build_s": time.perf_counter() - tic,
        "naive_rows": len(model.problem.constraints),
        "naive_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def child(*args: str) -> dict[str, Any] | None:
    """Run this script as a child with ``args``; its last line of output, as JSON (None, its error shown, if it failed)."""
    run = subprocess.run([sys.executable, __file__, *args], check=False, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"  {' '.join(args)} failed ({run.returncode}):\n" + "\n".join(run.stderr.splitlines()[-15:]), file=sys.stderr)
        return None
    return dict(json.loads(run.stdout.strip().splitlines()[-1]))


def growth_exponent(rows: list[dict[str, Any]], x: str, y: str) -> float:
    """Least-squares slope of log(y) on log(x) over the rows (nan with fewer than two distinct x)."""
    xs = np.log([float(r[x]) for r in rows])
    ys = np.log([float(r[y]) for r in rows])
    if len(set(xs.round(9))) < 2:
        return math.nan
    return float(np.polyfit(xs, ys, 1)[0])


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'sites':>5} {'pops':>6} {'pairs':>9} {'rounds':>6} {'build s':>7} {'solve s':>7} {'solver s':>8} {'write s':>7} {'total s':>7} "
        f"{'open':>5} {'$/h':>11} {'gap':>6} {'stopped':>10} {'limit s':>7} {'peak MB':>7} {'naive s':>8} {'naive MB':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        naive_s = "n/a" if r.get("naive_build_s") is None else f"{r['naive_build_s']:.1f}"
        naive_mb = "n/a" if r.get("naive_peak_mb") is None else f"{r['naive_peak_mb']:.0f}"
        gap = "n/a" if r["gap"] is None else f"{r['gap']:.2%}"
        print(
            f"{r['sites']:>5} {r['populations']:>6} {r['pairs']:>9,} {r['rounds'] if r['rounds'] is not None else 'n/a':>6} "
            f"{r['build_s']:>7.1f} {r['solve_s']:>7.1f} {r.get('solver_s') or math.nan:>8.1f} {r['write_s']:>7.1f} {r['total_s']:>7.1f} {r['sites_open']:>5} "
            f"{r['objective_usd_per_h']:>11,.0f} {gap:>6} {r['stopped_by'][:10]:>10} {r['time_limit_s'] or 0:>7.0f} "
            f"{r['peak_mb']:>7.0f} {naive_s:>8} {naive_mb:>8}"
        )
    print(
        f"growth: total time ~ pairs^{growth_exponent(rows, 'pairs', 'total_s'):.2f}, "
        f"solve time ~ pairs^{growth_exponent(rows, 'pairs', 'solve_s'):.2f}, "
        f"peak memory ~ pairs^{growth_exponent(rows, 'pairs', 'peak_mb'):.2f} (least squares on logs over the rows)"
    )
    print(
        "pops: populations (cities) modelled; pairs: feasible (population-class row, site) pairs of the full model; "
        "rounds: LP pricing rounds; solve: the plan (solver, routing and the plan's tables); solver: the solver's own time, "
        "which the scenario's time limit bounds; total: build + solve + write (results without maps); gap: against the full-"
        "resolution model's bound; peak MB: the run's resident high-water mark; naive: the whole MILP on every pair "
        "as PuLP builds it (build only, not solved; n/a above --naive-max-pairs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", nargs="+", type=int, default=[263, 1000, 2000, 5000], help="candidate sites per row")
    parser.add_argument("--populations", nargs="+", type=int, default=[8000, 34000], help="about this many cities")
    parser.add_argument("--time-limit", type=float, default=600.0, help="the whole solve's time limit per row [s]")
    parser.add_argument("--naive-max-pairs", type=int, default=400_000, help="largest model the naive build is timed on")
    parser.add_argument("--keep", type=Path, help="write each row's catalog and scenario into DIR/SITES_POPULATIONS/")
    parser.add_argument("--row", type=Path, help=argparse.SUPPRESS)  # a child: measure one scenario, print JSON
    parser.add_argument("--naive", type=Path, help=argparse.SUPPRESS)  # a child: time the naive build, print JSON
    args = parser.parse_args()
    if args.row is not None:
        print(json.dumps(measure(args.row)))
        return
    if args.naive is not None:
        print(json.dumps(measure_naive(args.naive)))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for populations in args.populations:
            for sites in args.sites:
                folder = (args.keep or Path(tmp)) / f"{sites}_{populations}"
                folder.mkdir(parents=True, exist_ok=True)
                path = write_scenario(folder, sites, populations, args.time_limit)
                row = child("--row", str(path))
                if row is None:
                    continue
                if row["pairs"] <= args.naive_max_pairs:
                    row.update(child("--naive", str(path)) or {})
                rows.append(row)
                print(f"  {sites} sites, {row['populations']} populations: {row['total_s']:.1f} s", file=sys.stderr, flush=True)
                print(json.dumps(row), file=sys.stderr, flush=True)  # the row as measured, should a later one fail
    print_table(rows)


if __name__ == "__main__":
    main()
