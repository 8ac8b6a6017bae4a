"""The ``placement`` command's arguments: one builder per subcommand, the option groups they share, the option types.

:func:`placement.cli.build_parser` calls each ``add_*`` builder on the subcommands and binds the subcommand to its
handler. The option types keep their names: argparse shows a type's name when a value is not a number at all
(``invalid _positive_int value: 'x'``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from placement.world.bundled import default_scenario_path

if TYPE_CHECKING:
    from pydantic import BaseModel

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""The subcommands of the ``placement`` command, as ``add_subparsers`` returns them."""

DEFAULT_SCENARIO = default_scenario_path()
"""The scenario a command solves when none is given: the bundled world."""


def _key(section: str, field: str) -> Callable[[str], Any]:
    """An argparse type for an option that overrides the scenario key ``section.field``: checked by that key's rule."""
    from placement.scenario import sections as scenario

    models: dict[str, type[BaseModel]] = {"solver": scenario.SolverSection, "sites.discover": scenario.DiscoverSection}
    model = models[section]

    def parse(text: str) -> Any:
        try:
            return scenario.key_value(model, field, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{exc}: the rule of the scenario key {section}.{field}") from None

    return parse


def _positive_int(text: str) -> int:
    """A whole number of at least 1 (workers)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _whole_number(text: str) -> int:
    """A whole number of 0 or more (a random seed)."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _positive_float(text: str) -> float:
    """A finite number above 0 (a load factor, a link rate)."""
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _frontier_points(text: str) -> int:
    """The frontier's points: the plan without a cap and up to ``MAX_POINTS - 1`` caps."""
    from placement.analyses.frontier import MAX_POINTS

    value = int(text)
    if not 2 <= value <= MAX_POINTS:
        raise argparse.ArgumentTypeError(
            f"must be 2 to {MAX_POINTS}, got {value}: the plan without a cap and up to {MAX_POINTS - 1} caps, 1 % of its "
            "figure apart (closer caps differ by less than the solver's gap, and each is a whole solve)"
        )
    return value


def _slack(text: str) -> float:
    """The near-optimal slack: a share of the optimum's cost above 0 and at most ``MAX_SLACK``."""
    from placement.analyses.alternatives import MAX_SLACK

    value = float(text)
    if not 0 < value <= MAX_SLACK:
        raise argparse.ArgumentTypeError(
            f"must be above 0 and at most {MAX_SLACK:g}, got {text}: a share of the optimum's cost (0.02: designs up to 2 % "
            "dearer)"
        )
    return value


def _alternatives_count(text: str) -> int:
    """Alternatives after the optimum: 1 to ``MAX_ALTERNATIVES``."""
    from placement.analyses.alternatives import MAX_ALTERNATIVES

    value = int(text)
    if not 1 <= value <= MAX_ALTERNATIVES:
        raise argparse.ArgumentTypeError(
            f"must be 1 to {MAX_ALTERNATIVES}, got {value}: each alternative is two solves of the whole model"
        )
    return value


def _directions(text: str) -> list[Any]:
    """Hand-chosen directions, comma-separated (``fewest-sites,least-power-in:Europe``)."""
    from placement.analyses.alternatives import parse_direction

    try:
        return [parse_direction(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _sim_requests(text: str) -> int:
    """Requests to simulate: at least 100, so that a p99 is measured."""
    value = int(text)
    if value < 100:
        raise argparse.ArgumentTypeError(f"a p99 needs at least 100 simulated requests, got {value}")
    return value


def root_parser() -> argparse.ArgumentParser:
    """The ``placement`` command without its subcommands."""
    return argparse.ArgumentParser(
        prog="placement",
        description="Place LLM inference capacity at the lowest cost per million goodput tokens.",
    )


def _solver_overrides(parser: argparse.ArgumentParser, *, time_limit_of: str = "") -> None:
    """``--solver``, ``--time-limit`` and ``--gap``, which :func:`placement.cli._with_overrides` applies to the scenario."""
    parser.add_argument("--solver", choices=["highs", "cbc"], help="override the scenario's solver")
    of = f" of {time_limit_of}" if time_limit_of else ""
    parser.add_argument("--time-limit", type=_key("solver", "time_limit_s"), help=f"override the solver time limit{of} [s]")
    parser.add_argument("--gap", type=_key("solver", "gap"), help="override the relative MIP gap (0 to 1)")


def _scenario(parser: argparse.ArgumentParser) -> None:
    """The optional scenario argument (a YAML file or a bundled scenario's key; default: the bundled world), ``--no-cache``."""
    parser.add_argument("scenario", nargs="?", default=str(DEFAULT_SCENARIO), help="scenario YAML or a bundled key")
    _no_cache(parser)


def _no_cache(parser: argparse.ArgumentParser) -> None:
    """``--no-cache``: the scenario's clusters and class profiles computed afresh (:mod:`placement._cache`)."""
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="compute the population clusters and class profiles afresh, neither reading nor writing the cache "
        "(placement cache info)",
    )


def _quiet(parser: argparse.ArgumentParser) -> None:
    """``--quiet``: no progress lines on stderr."""
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def add_solve(commands: Commands) -> argparse.ArgumentParser:
    """``placement solve``: a scenario solved and its results folder written (a build-out's too)."""
    solve = commands.add_parser("solve", help="solve a scenario and write results")
    solve.add_argument(
        "scenario",
        nargs="?",
        default=str(DEFAULT_SCENARIO),
        help="scenario YAML, or a bundled scenario's key ('placement scenarios'; default: the bundled world)",
    )
    solve.add_argument("--out", default="out", help="results folder (default: out/)")
    _no_cache(solve)
    _solver_overrides(solve)
    solve.add_argument("--verbose", action="store_true", help="show the solver log")
    _quiet(solve)
    solve.add_argument(
        "--no-maps",
        action="store_true",
        help="skip the maps (map.png, map_<region>.png, map.html) for scripted runs; every other file is written",
    )
    solve.add_argument(
        "--check-tail",
        action="store_true",
        help="simulate every open site's busiest hour; list the sites whose simulated p99 breaks an objective",
    )
    solve.add_argument(
        "--price-rules",
        action="store_true",
        help="solve again without each residency rule: what each costs ($/M, MW, per continent) in rule_prices.csv, the report",
    )
    return solve


def add_compare(commands: Commands) -> argparse.ArgumentParser:
    """``placement compare``: the optimum beside the nearest-metro, cheapest-power and single-region baselines."""
    compare = commands.add_parser("compare", help="the optimum versus nearest-metro, cheapest-power and single-region")
    _scenario(compare)
    compare.add_argument("--out", default="out-compare", help="folder for compare.csv and compare.png")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    _solver_overrides(compare)
    _quiet(compare)
    return compare


def add_explain(commands: Commands) -> argparse.ArgumentParser:
    """``placement explain``: why each site of a solved plan is in or out."""
    explain = commands.add_parser("explain", help="why each site of a solved plan is in or out")
    explain.add_argument("outdir", help="a results folder written by 'solve'")
    explain.add_argument("--site", help="explain one site only")
    _quiet(explain)
    _no_cache(explain)
    return explain


def add_failover(commands: Commands) -> argparse.ArgumentParser:
    """``placement failover``: what a solved plan does if a site or fault domain is lost now."""
    failover = commands.add_parser(
        "failover", help="what a solved plan does if a site or fault domain is lost now: re-routed, unserved, TTFT"
    )
    failover.add_argument("outdir", metavar="RESULTS", help="a results folder written by 'solve'")
    failover.add_argument(
        "--site", action="append", metavar="ID", help="a site lost (repeat for several); its id as in sites.csv"
    )
    failover.add_argument(
        "--domain",
        metavar="NAME",
        help="a fault domain lost: one of the scenario's fault_tolerance.domains, or a catalog grid_region, campus or "
        "corridor value (column:value to choose)",
    )
    failover.add_argument("--out", help="folder for the failover_exposure files (default: RESULTS/failover-<what fails>/)")
    failover.add_argument("--json", action="store_true", help="print the headline as JSON")
    _quiet(failover)
    _no_cache(failover)
    return failover


def add_adequacy(commands: Commands) -> argparse.ArgumentParser:
    """``placement adequacy``: a solved plan's expected unserved goodput over a year of outages."""
    adequacy = commands.add_parser(
        "adequacy",
        help="a solved plan's expected unserved goodput over a year of site and fault-domain outages: expected share, "
        "P(a year loses more than a threshold), CVaR",
    )
    adequacy.add_argument("outdir", metavar="RESULTS", help="a results folder written by 'solve'")
    adequacy.add_argument(
        "--years", type=int, metavar="N", help="years the Monte Carlo draws (default: fault_tolerance.outages.years, 2000)"
    )
    adequacy.add_argument("--seed", type=int, metavar="S", help="seed of the draws (default: fault_tolerance.outages.seed, 0)")
    adequacy.add_argument(
        "--threshold",
        type=float,
        metavar="X",
        help="report the probability a year loses more than this share of the plan's goodput (default: "
        "fault_tolerance.outages.threshold_share, 0.001)",
    )
    adequacy.add_argument("--json", action="store_true", help="print the figures as JSON (expected_unserved_share among them)")
    _quiet(adequacy)
    _no_cache(adequacy)
    return adequacy


def add_diff(commands: Commands) -> argparse.ArgumentParser:
    """``placement diff``: what changed between two results folders."""
    diff = commands.add_parser("diff", help="what changed between two results folders (A before, B after)")
    diff.add_argument(
        "outdir_a", metavar="OUTDIR_A", help="results folder of plan A (solve, a sweep scenario's run, a build-out year)"
    )
    diff.add_argument("outdir_b", metavar="OUTDIR_B", help="results folder of plan B")
    diff.add_argument("--out", default="out-diff", help="folder for diff.json, diff.geojson and diff.png (default: out-diff/)")
    diff.add_argument("--json", action="store_true", help="print diff.json instead of the table")
    return diff


def add_rtt(commands: Commands) -> argparse.ArgumentParser:
    """``placement rtt``: the round trip between two places, or the model's error on measured round trips."""
    rtt = commands.add_parser("rtt", help="round trip between two places (names or 'lat,lon')")
    rtt.add_argument("origin", metavar="FROM", nargs="?", help='a city name ("Chicago", "Sao Paulo") or "lat,lon"')
    rtt.add_argument("destination", metavar="TO", nargs="?", help="a city name or lat,lon")
    rtt.add_argument(
        "--measurements",
        metavar="FILE",
        help="your measured round trips (CSV: from, to, rtt_ms[, rtt_p90_ms, samples, path]): the model's error on them "
        "before and after the corrections they make, with a held-out split",
    )
    rtt.add_argument(
        "--access", action="store_true", help="users at FROM to a site at TO: exactly the round trip a plan budgets for them"
    )
    rtt.add_argument(
        "--path",
        choices=["internet", "backbone"],
        default="internet",
        help="data center to data center over the public internet (default; the plan's) or a provider's backbone",
    )
    rtt.add_argument(
        "--site-network",
        choices=["transit", "backbone"],
        default="transit",
        help="who carries the data centers' packets: transit (default: colocation, greenfield, hosting) or backbone "
        "(cloud regions, reached at the provider's nearest edge)",
    )
    rtt.add_argument("--json", action="store_true", help="print JSON (rtt_ms, rtt_p90_ms, path, bound_ms, ...)")
    return rtt


def _request_options(parser: argparse.ArgumentParser) -> None:
    """``placement goodput``'s request: model, node, prompt and answer lengths, objective, node cost, cache hit rate."""
    parser.add_argument("--model", required=True, help="model id, e.g. llama-2-70b")
    parser.add_argument("--accelerator", required=True, help="accelerator id, e.g. h200")
    parser.add_argument("--gpus", type=int, default=8, help="GPUs per node")
    parser.add_argument("--precision", default="fp8", help="bf16, fp8 or fp4")
    parser.add_argument("--input-tokens", type=int, required=True, help="MEAN prompt length [tokens]")
    parser.add_argument(
        "--input-tokens-max",
        type=int,
        help="longest prompt (or its p99): KV room and p99 TTFT [tokens]; default: every prompt is the mean",
    )
    parser.add_argument("--output-tokens", type=int, required=True, help="MEAN answer length [tokens]")
    parser.add_argument("--ttft-p99-ms", type=float, required=True, help="p99 time-to-first-token objective of the node [ms]")
    parser.add_argument(
        "--itl-p99-ms", type=float, required=True, help="p99 inter-token latency objective (see --itl-metric) [ms]"
    )
    parser.add_argument("--node-cost-usd-h", type=float, help="all-in node cost, for $/M goodput tokens")
    parser.add_argument(
        "--prefix-cache-hit-rate", type=float, default=0.0, help="share of prompt tokens found in the prefix cache (0 to 1)"
    )


def _serving_options(parser: argparse.ArgumentParser) -> None:
    """``placement goodput``'s way of serving: disaggregated pools, speculative decoding, ITL metric, a prefix cache."""
    parser.add_argument("--disaggregated", action="store_true", help="separate prefill and decode pools")
    parser.add_argument(
        "--pool-nodes",
        type=int,
        default=1,
        metavar="N",
        help="with --disaggregated: the pools span N nodes (one prefill queue over their GPUs); figures per node",
    )
    parser.add_argument(
        "--kv-link-gbit-s",
        type=_positive_float,
        metavar="RATE",
        help="with --disaggregated: the prefill pool is in another metro and the prompt's KV crosses one WAN link of "
        "this rate (take the metros' round trip off --ttft-p99-ms)",
    )
    parser.add_argument(
        "--speculative",
        metavar="METHOD",
        help="speculative decoding: eagle3, mtp (data/serving/speculative.csv) or auto (kept only where it gives more goodput)",
    )
    parser.add_argument(
        "--itl-metric",
        choices=("step", "tpot"),
        default="tpot",
        help="what --itl-p99-ms bounds: each request's mean time per output token (tpot, the default: MLPerf's and "
        "serving benchmarks' TPOT, what the calibration is fitted on) or every single gap between tokens (step)",
    )
    parser.add_argument(
        "--attention-dp",
        action="store_true",
        help="a mixture of experts may also run data-parallel attention with all-to-all experts (modelled, not calibrated)",
    )
    parser.add_argument(
        "--kv-cache",
        choices=("hbm", "dram", "nvme"),
        help="the prefix cache as a model, in this tier (data/serving/kv_tiers.csv); needs --prefix-reuse",
    )
    parser.add_argument(
        "--prefix-reuse",
        metavar="PROFILE",
        help="with --kv-cache: a profile of data/serving/prefix_reuse.csv (chat, agent); replaces --prefix-cache-hit-rate",
    )


def _simulation_options(parser: argparse.ArgumentParser) -> None:
    """``placement goodput --simulate``: the node simulated event by event, its load, requests and seed."""
    parser.add_argument(
        "--simulate", action="store_true", help="also simulate the node event by event: p99 TTFT / ITL beside the analytic ones"
    )
    parser.add_argument(
        "--load-factor", type=_positive_float, default=1.0, help="--simulate: offered load over the goodput (1: planned)"
    )
    parser.add_argument("--sim-requests", type=_sim_requests, default=3000, help="--simulate: requests to simulate")
    parser.add_argument("--seed", type=_whole_number, default=0, help="--simulate: random seed (0 or more)")


def add_goodput(commands: Commands) -> argparse.ArgumentParser:
    """``placement goodput``: one node's goodput inside a p99 TTFT / ITL objective, its figures, a Pareto curve."""
    goodput = commands.add_parser("goodput", help="per-node goodput inside a p99 TTFT / ITL objective")
    _request_options(goodput)
    _serving_options(goodput)
    goodput.add_argument(
        "--min-tok-s-per-user", type=float, default=0.0, help="interactivity floor: the least tokens/s each user sees [tok/s]"
    )
    goodput.add_argument("--pue", type=float, default=1.0, help="for tokens/s per facility MW (1: IT power)")
    goodput.add_argument("--plot", help="write the throughput-interactivity Pareto curve to this PNG")
    goodput.add_argument("--json", action="store_true", help="print JSON")
    _simulation_options(goodput)
    goodput.add_argument(
        "--measurements",
        metavar="FILE",
        help="your measured goodput (the columns of data/serving/measured.csv) or a closed-loop concurrency sweep "
        "(concurrency, input_tokens, output_tokens, output_tok_s, ...): the part's figures are refitted on it",
    )
    return goodput


def add_calibrate(commands: Commands) -> argparse.ArgumentParser:
    """``placement calibrate``: the serving model refitted on measured goodput."""
    calibrate = commands.add_parser(
        "calibrate", help="refit the serving model on your measured goodput: fitted vs measured, and the held-out error"
    )
    calibrate.add_argument(
        "file",
        metavar="FILE",
        help="a CSV with the columns of data/serving/measured.csv, or a closed-loop concurrency sweep (a concurrency "
        "column: one row per level)",
    )
    calibrate.add_argument("--json", action="store_true", help="print the fits as JSON")
    _quiet(calibrate)
    return calibrate


def add_report(commands: Commands) -> argparse.ArgumentParser:
    """``placement report``: a results folder's report.md and report.html rebuilt."""
    report = commands.add_parser("report", help="rebuild report.md and report.html of a results folder (no re-solve)")
    report.add_argument("outdir", help="a results folder written by 'solve'")
    return report


def add_discover(commands: Commands) -> argparse.ArgumentParser:
    """``placement discover``: greenfield sites proposed near unserved demand, solved and ranked."""
    finder = commands.add_parser(
        "discover", help="where to build next: greenfield sites proposed near unserved demand, solved and ranked"
    )
    _scenario(finder)
    finder.add_argument("--out", default="discover", help="folder: discovered_sites.csv, discover.json, plan/, baseline/")
    finder.add_argument(
        "--min-population", type=_key("sites.discover", "min_population"), help="least population of a proposed city (>= 0)"
    )
    finder.add_argument(
        "--spacing-km", type=_key("sites.discover", "spacing_km"), help="least distance from every site and proposal (> 0)"
    )
    finder.add_argument("--max-candidates", type=_key("sites.discover", "max_candidates"), help="proposals at most (>= 1)")
    _solver_overrides(finder, time_limit_of="each solve")
    _quiet(finder)
    finder.add_argument("--no-maps", action="store_true", help="no maps")
    return finder


def add_frontier(commands: Commands) -> argparse.ArgumentParser:
    """``placement frontier``: the cost-carbon (or cost-water) frontier."""
    frontier = commands.add_parser(
        "frontier", help="the cost-carbon frontier: the cheapest plan under a sequence of emissions caps"
    )
    _scenario(frontier)
    frontier.add_argument("--axis", default="carbon", choices=["carbon", "water"], help="what the caps limit")
    frontier.add_argument(
        "--points", type=_frontier_points, default=6, help="points, the plan without a cap included: 2 to 51 (default 6)"
    )
    frontier.add_argument("--out", default="frontier", help="folder: frontier.csv, frontier.png, a results folder per point")
    _solver_overrides(frontier, time_limit_of="each point's solve")
    _quiet(frontier)
    frontier.add_argument("--no-maps", action="store_true", help="no maps in the points' results folders")
    frontier.add_argument(
        "--allow-unserved",
        action="store_true",
        help="keep the points whose cap is met only by serving less than the plan without a cap (default: the frontier "
        "ends at the first, drawn at equal service)",
    )
    frontier.add_argument("--workers", type=_positive_int, help="solve the capped points on a local Dask cluster")
    frontier.add_argument("--scheduler", default=None, help="solve the capped points on this Dask scheduler (tcp://host:port)")
    return frontier


def add_alternatives(commands: Commands) -> argparse.ArgumentParser:
    """``placement alternatives``: near-optimal designs, each as different from the ones before as the slack allows."""
    alternatives = commands.add_parser(
        "alternatives", help="near-optimal alternatives: designs at most --slack dearer, as different as possible"
    )
    _scenario(alternatives)
    alternatives.add_argument("--out", default="alternatives",
                              help="folder: alternatives.csv, alternative_sites.csv, alternatives.png, alternatives.geojson "
                              "and a results folder per design")  # fmt: skip
    alternatives.add_argument(
        "--slack", type=_slack, default=0.02, help="alternatives cost at most this share more than the optimum (default 0.02)"
    )
    alternatives.add_argument("--count", type=_alternatives_count, default=5, help="alternatives after the optimum: 1 to 20 "
                              "(default 5)")  # fmt: skip
    alternatives.add_argument(
        "--direction",
        type=_directions,
        action="append",
        default=[],
        help="a hand-chosen direction, one alternative each before the spread ones (repeatable, or a comma list): "
        "fewest-sites, most-sites, least-power-in:REGION (a continent, country code or grid_region), least-emissions",
    )
    _solver_overrides(alternatives, time_limit_of="each solve")
    _quiet(alternatives)
    alternatives.add_argument("--no-maps", action="store_true", help="no maps in the designs' results folders")
    alternatives.add_argument("--workers", type=_positive_int, help="solve the hand-chosen directions on a local Dask cluster")
    alternatives.add_argument(
        "--scheduler", default=None, help="solve the hand-chosen directions on this Dask scheduler (tcp://host:port)"
    )
    return alternatives


def add_sweep(commands: Commands) -> argparse.ArgumentParser:
    """``placement sweep``: many what-ifs of a scenario solved in parallel (Dask), resumable."""
    sweep = commands.add_parser("sweep", help="solve many what-ifs of a scenario in parallel (Dask), resumable")
    sweep.add_argument("sweep", metavar="SWEEP", help="sweep YAML (see data/sweeps/example.yaml)")
    sweep.add_argument("--out", default="out-sweep", help="results folder; cases already in it are not solved again")
    sweep.add_argument("--workers", type=_positive_int, help="local worker processes, one thread each (default 2)")
    sweep.add_argument("--scheduler", metavar="ADDRESS", help="submit to a running Dask scheduler, e.g. tcp://host:8786")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar or progress lines")
    _no_cache(sweep)
    return sweep


def add_init(commands: Commands) -> argparse.ArgumentParser:
    """``placement init``: a bundled scenario, its catalog and data copied into a folder to edit."""
    init = commands.add_parser("init", help="copy a bundled scenario, its site catalog and data into a folder to edit")
    init.add_argument("dir", metavar="DIR", help="folder to create (existing files are never overwritten)")
    init.add_argument("--scenario", default="default", help="bundled scenario to copy (see 'scenarios'; default: default)")
    return init


def add_scenarios(commands: Commands) -> argparse.ArgumentParser:
    """``placement scenarios``: the bundled scenarios listed."""
    scenarios = commands.add_parser("scenarios", help="list the bundled scenarios")
    return scenarios


def add_cache(commands: Commands) -> argparse.ArgumentParser:
    """``placement cache``: where the cache of intermediate products is, and emptying it."""
    cache = commands.add_parser(
        "cache", help="the cache of population clusters and class profiles a what-if reuses: info, or clear it"
    )
    cache.add_argument("action", choices=["info", "clear"], help="info: its folder, entries and size; clear: empty it")
    return cache


def add_schema(commands: Commands) -> argparse.ArgumentParser:
    """``placement schema``: the scenario file's JSON Schema, for an editor to check a scenario as it is typed."""
    schema = commands.add_parser(
        "schema", help="write the scenario file's JSON Schema (an editor's YAML support checks a scenario against it)"
    )
    schema.add_argument("--out", metavar="FILE", help="write the schema to FILE, whole or not at all (default: stdout)")
    return schema


def add_validate(commands: Commands) -> argparse.ArgumentParser:
    """``placement validate``: a scenario or a site catalog checked."""
    validate = commands.add_parser("validate", help="check a scenario (.yaml) or a site catalog (.csv/.geojson)")
    validate.add_argument("file", help="a scenario YAML, a bundled scenario's key, or a site catalog (CSV/GeoJSON)")
    return validate
