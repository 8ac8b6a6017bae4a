"""Time the bundled build-out by phase, and how far its aggregation moves the answer.

    python benchmarks/bench_buildout.py                          # the bundled aggregation
    python benchmarks/bench_buildout.py --clusters 200 --slices 4 --time-limit 900  # finer: the aggregation error

Prints one table: sizes, seconds per phase (build, RP, EV + EEV, write) and the headline figures.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from placement.buildout.arrays import build_buildout
from placement.buildout.solve import solve_stochastic
from placement.buildout.tables import year_table
from placement.outputs.buildout import write_buildout
from placement.scenario.load import LoadedScenario, load_scenario

SCENARIO = Path(__file__).resolve().parents[1] / "data" / "scenarios" / "buildout.yaml"


def _variant(loaded: LoadedScenario, clusters: int | None, slices: int | None, limit_s: float | None) -> LoadedScenario:
    horizon = loaded.scenario.horizon
    assert horizon is not None
    update = {k: v for k, v in (("clusters", clusters), ("time_slices", slices), ("time_limit_s", limit_s)) if v is not None}
    scenario = loaded.scenario.model_copy(update={"horizon": horizon.model_copy(update=update)})
    return LoadedScenario(scenario=scenario, path=loaded.path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", nargs="?", default=str(SCENARIO))
    parser.add_argument("--clusters", type=int)
    parser.add_argument("--slices", type=int)
    parser.add_argument("--time-limit", type=float, help="seconds per solve (finer variants need more than the bundled 60)")
    args = parser.parse_args()
    loaded = _variant(load_scenario(args.scenario), args.clusters, args.slices, args.time_limit)
    start = time.perf_counter()
    buildout = build_buildout(loaded)
    build_s = time.perf_counter() - start
    result = solve_stochastic(buildout)
    with tempfile.TemporaryDirectory() as tmp:
        begin = time.perf_counter()
        write_buildout(result, Path(tmp) / "out")
        write_s = time.perf_counter() - begin
    data = buildout.data
    years = year_table(result, buildout.base_index)
    rows = [
        ("populations", f"{len(buildout.instance.populations.table)}"),
        ("time slices", f"{data.slice_weight.size}"),
        ("demand rows x pairs", f"{data.row_class.size} x {data.pair_row.size}"),
        (
            "years x scenarios x accelerators",
            f"{len(buildout.years)} x {len(buildout.scenario_names)} x {len(buildout.fleet.ids)}",
        ),
        ("build [s]", f"{build_s:.1f}"),
        ("RP (relax, fix, polish) [s]", f"{result.timings_s['rp_s']:.1f}"),
        ("EV + EEV [s]", f"{result.timings_s['ev_eev_s']:.1f}"),
        ("write [s]", f"{write_s:.1f}"),
        ("expected NPV [B USD]", f"{result.expected_usd / 1e9:.3f}"),
        ("EEV [B USD]", f"{result.eev_usd / 1e9:.3f}"),
        ("VSS [B USD]", f"{result.vss_usd / 1e9:.3f}"),
        ("gap", f"{result.gap:.2%}"),
        ("first-year $/M (base)", f"{years['cost_per_million_goodput_tokens_usd'].iat[0]:.3f}"),
        ("last-year $/M (base)", f"{years['cost_per_million_goodput_tokens_usd'].iat[-1]:.3f}"),
        ("last-year MW used (base)", f"{years['mw_used'].iat[-1]:,.0f}"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"| {name:<{width}} | {value:>14} |")


if __name__ == "__main__":
    main()
