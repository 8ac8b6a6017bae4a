"""Command line: ``python cli.py solve|validate``. Parses arguments and calls library functions."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from placement._errors import InputError, PlacementError
from placement.catalog import load_catalog
from placement.scenario import LoadedScenario, load_scenario

DEFAULT_SCENARIO = Path(__file__).resolve().parent.parent / "data" / "scenarios" / "default.yaml"
EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
SCENARIO_SUFFIXES = {".yaml", ".yml"}


class _Progress:
    """Prints one timed line per step to standard error."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.start = time.perf_counter()

    def __call__(self, line: str) -> None:
        if not self.quiet:
            print(f"[{time.perf_counter() - self.start:6.1f} s] {line}", file=sys.stderr, flush=True)


def _with_overrides(loaded: LoadedScenario, args: argparse.Namespace) -> LoadedScenario:
    updates = {
        key: value
        for key, value in (
            ("name", args.solver),
            ("time_limit_s", args.time_limit),
            ("gap", args.gap),
        )
        if value is not None
    }
    if not updates:
        return loaded
    solver = loaded.scenario.solver.model_copy(update=updates)
    scenario = loaded.scenario.model_copy(update={"solver": solver})
    return LoadedScenario(scenario=scenario, path=loaded.path)


def _solve(args: argparse.Namespace) -> int:
    from placement.outputs import write_results
    from placement.plan import run

    progress = _Progress(args.quiet)
    loaded = _with_overrides(load_scenario(args.scenario), args)
    progress(f"scenario {loaded.scenario.name} ({args.scenario})")
    plan = run(loaded, msg=args.verbose, progress=progress)
    progress("writing results")
    out = write_results(plan, args.out)
    s = plan.summary
    cost = s["cost_per_million_goodput_tokens_usd"]
    print(
        f"{s['status']}: {s['sites_open']} of {s['sites_candidate']} sites open, {s['nodes']:,} nodes, {s['mw_used']:.1f} MW; "
        f"${s['objective_usd_per_h']:,.0f}/h for {s['goodput_tok_s']:,.0f} goodput tok/s = "
        f"${cost:.3f} per million goodput tokens (gap {s['gap']:.2%}, {s['solver']})"
        if cost is not None and s["gap"] is not None
        else f"{s['status']}: no goodput served"
    )
    print(
        f"unserved share {s['unserved_share']:.2%}; "
        f"p99 TTFT mean {s['p99_ttft_ms_mean'] or 0:.0f} ms, max {s['p99_ttft_ms_max'] or 0:.0f} ms"
    )
    for note in plan.notes[:8]:
        print(note)
    print(f"results in {out}")
    return EXIT_OK


def _validate(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if path.suffix.lower() in SCENARIO_SUFFIXES:
        loaded = load_scenario(path)
        sites = load_catalog(loaded.catalog_path)
        print(
            f"ok: scenario {loaded.scenario.name} with {len(loaded.scenario.classes)} classes; "
            f"catalog {loaded.catalog_path.name}: {len(sites)} sites"
        )
    else:
        sites = load_catalog(path)
        print(f"ok: catalog {path} with {len(sites)} sites")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``cli.py``."""
    parser = argparse.ArgumentParser(
        prog="cli.py",
        description="Place LLM inference capacity at the lowest cost per million goodput tokens.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    solve = commands.add_parser("solve", help="solve a scenario and write results")
    solve.add_argument(
        "scenario",
        nargs="?",
        default=str(DEFAULT_SCENARIO),
        help="scenario YAML (default: the bundled world)",
    )
    solve.add_argument("--out", default="out", help="results folder (default: out/)")
    solve.add_argument("--solver", choices=["highs", "cbc"], help="override the scenario's solver")
    solve.add_argument("--time-limit", type=float, help="override the solver time limit [s]")
    solve.add_argument("--gap", type=float, help="override the relative MIP gap")
    solve.add_argument("--verbose", action="store_true", help="show the solver log")
    solve.add_argument("--quiet", action="store_true", help="no progress lines")
    solve.set_defaults(handler=_solve)
    validate = commands.add_parser("validate", help="check a scenario (.yaml) or a site catalog (.csv/.geojson)")
    validate.add_argument("file")
    validate.set_defaults(handler=_validate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 invalid input or infeasible, 2 usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except PlacementError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
