"""The ``placement`` command (and ``python cli.py`` in a checkout): parses arguments and calls library functions.

Each subcommand's arguments are built in :mod:`placement._cli.parser`; its handler here computes with the library
and hands the result to :mod:`placement.outputs.console` (or :mod:`placement.outputs.console_serving`), which prints.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from placement._cache import switched as cache_switched
from placement._cli import parser as arguments
from placement._errors import InputError, PlacementError, Problem
from placement._paths import nearest_existing
from placement._process import map_large_blocks
from placement.progress import StderrProgress
from placement.scenario.load import LoadedScenario, load_scenario
from placement.world.bundled import scenario_file
from placement.world.geodesy import is_lat_lon

if TYPE_CHECKING:
    import pandas as pd

    from placement.instance.record import Instance
    from placement.outputs.console_serving import GoodputAnswer
    from placement.plan.record import Plan
    from placement.serving.calibration import PartFit
    from placement.serving.closed_loop import SweepFit
    from placement.serving.efficiency import ServingEfficiency
    from placement.serving.request import ServingRequest

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


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
    from placement.instance.build import build_instance
    from placement.outputs.console import print_plan
    from placement.outputs.writer import check_output_folder, standby_writer, write_results

    check_output_folder(args.out)
    progress = StderrProgress(show=not args.quiet)
    loaded = _with_overrides(load_scenario(scenario_file(args.scenario)), args)
    progress(f"scenario {loaded.scenario.name} ({args.scenario})")
    if loaded.scenario.is_buildout:
        if args.price_rules:
            fix = "price the build-out's availability rules by solving again with availability: {enforce: false}"
            raise InputError(
                [Problem(str(args.scenario), "", "--price-rules", "prices a single-year plan's residency rules", fix)]
            )
        return _solve_buildout(args, loaded, progress)
    instance = build_instance(loaded, progress=progress)
    # the files are written by a child forked now, which imports the drawing libraries while this process solves
    with standby_writer(progress) as writer:
        plan, tail_table, tail = _solved_plan(args, loaded, instance, progress)
        progress("writing results")
        out = write_results(plan, args.out, maps=not args.no_maps, tail_check=tail_table, progress=progress, standby=writer)
    print_plan(plan.results, tail=tail, out=out)
    return EXIT_OK


def _solved_plan(
    args: argparse.Namespace, loaded: LoadedScenario, instance: Instance, progress: StderrProgress
) -> tuple[Plan, pd.DataFrame | None, list[str]]:
    """``solve``'s plan: solved, its rules priced, its arrangement compared, its adequacy kept, its tail checked."""
    from placement.analyses.arrangement import fixed_in_background, with_arrangement
    from placement.plan.solve import solve_instance

    fixed = None
    if loaded.scenario.serving.arrangement_options():  # the comparison's solve, beside the plan's own where it can
        fixed = fixed_in_background(loaded, instance, _waterfall)
        where = "in a second process" if fixed.forked else "first"
        progress(f"arrangement: solving the same world with the fixed arrangement (aggregated, no speculation) {where}")
    plan = solve_instance(instance, msg=args.verbose, progress=progress)
    if args.price_rules:
        plan = _price_rules(loaded, plan, progress)
    if fixed is not None:
        plan = with_arrangement(loaded, plan, progress=progress, waterfall=_waterfall, fixed=fixed.result())
    if loaded.scenario.fault_tolerance.wants_adequacy:
        from placement.analyses.adequacy_protect import plan_with_adequacy

        plan = plan_with_adequacy(plan, loaded.scenario.fault_tolerance, progress=progress)
    tail_table, tail = _check_tail(plan, progress) if args.check_tail else (None, [])
    return plan, tail_table, tail


def _solve_buildout(args: argparse.Namespace, loaded: LoadedScenario, progress: StderrProgress) -> int:
    """A scenario with a horizon (or a fleet mix): the build-out engine, its year and scenario tables."""
    from placement.buildout.arrays import build_buildout
    from placement.buildout.solve import solve_stochastic
    from placement.outputs.buildout import write_buildout
    from placement.outputs.console import print_buildout

    if loaded.scenario.fault_tolerance.wants_adequacy:
        fix = "drop fault_tolerance.adequacy and max_expected_unserved_share, or evaluate one year's plan solved on its own"
        raise InputError(
            [
                Problem(
                    str(args.scenario), "fault_tolerance", "adequacy", "is evaluated on a single-year plan, not a build-out", fix
                )
            ]
        )
    horizon = loaded.scenario.horizon
    limits = {k: v for k, v in (("time_limit_s", args.time_limit), ("gap", args.gap)) if v is not None}
    if horizon is not None and limits:  # --time-limit and --gap set the build-out's own limits
        scenario = loaded.scenario.model_copy(update={"horizon": horizon.model_copy(update=limits)})
        loaded = LoadedScenario(scenario=scenario, path=loaded.path)
    buildout = build_buildout(loaded, progress=progress)
    result = solve_stochastic(buildout, msg=args.verbose, progress=progress)
    progress("writing results")
    out = write_buildout(result, args.out, maps=not args.no_maps, runtime_s=time.perf_counter() - progress.start)
    print_buildout(result, buildout, out=out)
    return EXIT_OK


def _waterfall(plan: Plan) -> pd.DataFrame:
    """A plan's cost waterfall from its tables, as ``cost_waterfall.png`` draws it."""
    from placement.outputs.cost_waterfall import cost_waterfall

    return cost_waterfall(plan.summary.classes, plan.sites, plan.assignments)


def _price_rules(loaded: LoadedScenario, plan: Plan, progress: StderrProgress) -> Plan:
    """The plan with what each residency rule costs: ``rule_prices.csv``, ``summary.json`` and the rules block."""
    from placement.analyses.rule_price import price_lines, price_rules, with_price_lines

    table, headlines = price_rules(loaded, plan, progress=progress)
    notes = with_price_lines(plan.notes, price_lines(headlines))
    return plan.with_results(notes=notes, rule_prices=table, rule_price_headlines=headlines)


def _check_tail(plan: Plan, progress: StderrProgress) -> tuple[pd.DataFrame, list[str]]:
    """Simulate the plan's busiest hours: the table for ``tail_check.csv`` and the lines to print (at most 15 sites named).

    The table is written with the other result files (:func:`placement.outputs.writer.write_results`), whole or not at all.
    """
    from placement.analyses.tail import check_tail
    from placement.outputs.console import tail_check_lines

    progress("simulating every open site's busiest hour (--check-tail)")
    start = time.perf_counter()
    table = check_tail(plan)
    return table, tail_check_lines(table, seconds=time.perf_counter() - start)


def _compare(args: argparse.Namespace) -> int:
    from placement.analyses.compare import compare_placements
    from placement.outputs.compare import write_comparison
    from placement.outputs.console import print_comparison, print_json
    from placement.outputs.writer import check_output_folder

    check_output_folder(args.out)
    loaded = _with_overrides(load_scenario(scenario_file(args.scenario)), args)
    rows = compare_placements(loaded, progress=StderrProgress(show=not (args.quiet or args.json)))
    out = write_comparison(rows, args.out, title=f"{loaded.scenario.name}: same silicon, different arrangement")
    if args.json:
        print_json(rows)
        return EXIT_OK
    print_comparison(rows, out=out)
    return EXIT_OK


def _explain(args: argparse.Namespace) -> int:
    from placement.analyses.explain import explain_folder
    from placement.outputs.console import print_explanation
    from placement.outputs.writer import write_text_atomic
    from placement.results.folder import json_text

    folder = Path(args.outdir)
    explanation = explain_folder(folder, site=args.site, progress=StderrProgress(show=not args.quiet))
    write_text_atomic(folder / "explain.json", json_text(explanation.to_json_dict()))
    print_explanation(explanation, folder=folder)
    return EXIT_OK


def _failover(args: argparse.Namespace) -> int:
    from placement.analyses.exposure import exposure_folder_name, failover_exposure
    from placement.outputs.console import exposure_json, print_exposure, print_json
    from placement.outputs.exposure_files import write_exposure

    folder = Path(args.outdir)
    exposure = failover_exposure(
        folder, site_ids=args.site or (), domain=args.domain, progress=StderrProgress(show=not (args.quiet or args.json))
    )
    out = Path(args.out) if args.out else folder / exposure_folder_name(exposure.label)
    written = write_exposure(exposure, out, plan_folder=folder)
    if args.json:
        print_json(exposure_json(exposure, written=written))
        return EXIT_OK
    print_exposure(exposure, written=written)
    return EXIT_OK


def _adequacy(args: argparse.Namespace) -> int:
    from placement.analyses.adequacy import adequacy_of_folder
    from placement.outputs.adequacy_files import write_adequacy
    from placement.outputs.console import adequacy_json, print_adequacy, print_json

    folder = Path(args.outdir)
    progress = StderrProgress(show=not (args.quiet or args.json))
    adequacy = adequacy_of_folder(folder, years=args.years, seed=args.seed, threshold=args.threshold, progress=progress)
    written = write_adequacy(adequacy, folder)
    if args.json:
        print_json(adequacy_json(adequacy.figures, written=written))
        return EXIT_OK
    print_adequacy(adequacy.figures, written=written)
    return EXIT_OK


def _diff(args: argparse.Namespace) -> int:
    from placement.analyses.diff import diff_plans
    from placement.outputs.console import print_diff, print_json
    from placement.outputs.diff_files import write_diff
    from placement.outputs.writer import check_output_folder

    diff = diff_plans(args.outdir_a, args.outdir_b)
    written = write_diff(diff, check_output_folder(args.out))
    if args.json:
        print_json(diff.to_json_dict())
        return EXIT_OK
    print_diff(diff, written=written)
    return EXIT_OK


def _rtt(args: argparse.Namespace) -> int:
    from placement.network.paths import PathType, default_round_trips
    from placement.network.places import rtt_report
    from placement.outputs.console import print_json, print_lines, rtt_lines

    # The rtt command reads no scenario: the bundled network and calibrated parameters, as the bundled scenarios.
    if args.measurements:
        return _rtt_measurements(args)
    if args.origin is None or args.destination is None:
        raise InputError([Problem("rtt", "FROM TO", "", "two places are needed", "give FROM and TO, or --measurements FILE")])
    path = PathType.ACCESS if args.access else PathType(args.path)
    report = rtt_report(
        args.origin, args.destination, path=path, site_network=args.site_network, round_trips=default_round_trips()
    )
    if args.json:
        print_json(report, ensure_ascii=False)
        return EXIT_OK
    print_lines(rtt_lines(report, path=path, site_network=args.site_network))
    return EXIT_OK


RTT_PROGRESS_ROWS = 50_000
"""A measurement file this long prints a progress line (it takes several seconds)."""
RTT_SECONDS_PER_ROW = 6e-5
"""About what fitting and reporting a measured path costs on one core (benchmarks/bench_inputs.py). [s]"""


def _rtt_measurements(args: argparse.Namespace) -> int:
    from placement.network.measurements import calibrate, load_measurements
    from placement.network.paths import default_round_trips
    from placement.outputs.console import print_json, print_rtt_calibration, rtt_calibration_json

    progress = StderrProgress(show=True)
    measurements = load_measurements(args.measurements)
    if len(measurements) >= RTT_PROGRESS_ROWS:  # past ~10 s: say what is being done and about how long it takes
        seconds = len(measurements) * RTT_SECONDS_PER_ROW
        progress(f"{args.measurements}: {len(measurements):,} paths read; fitting and reporting (about {seconds:.0f} s)")
    report = calibrate(measurements, default_round_trips())
    if args.json:
        print_json(rtt_calibration_json(report, measurements=args.measurements), ensure_ascii=False)
        return EXIT_OK
    print_rtt_calibration(report, measurements=args.measurements)
    return EXIT_OK


def _serving_request(args: argparse.Namespace) -> ServingRequest:
    from placement.serving.request import ServingRequest

    pool = args.pool_nodes
    if (pool > 1 or args.kv_link_gbit_s is not None) and not args.disaggregated:
        given = "--pool-nodes" if pool > 1 else "--kv-link-gbit-s"
        rule = "sizes prefill and decode pools, which only --disaggregated has"
        raise InputError([Problem("goodput", "", given, rule, "add --disaggregated, or leave it out")])
    return ServingRequest(
        args.model,
        args.accelerator,
        args.gpus * pool,  # one pool over pool_nodes nodes; its figures are divided back per node
        args.precision,
        args.input_tokens,
        args.output_tokens,
        args.ttft_p99_ms,
        args.itl_p99_ms,
        prefix_cache_hit_rate=args.prefix_cache_hit_rate,
        disaggregated=args.disaggregated,
        min_tok_s_per_user=args.min_tok_s_per_user,
        input_tokens_max=args.input_tokens_max,
        node_cost_usd_h=None if args.node_cost_usd_h is None else args.node_cost_usd_h * pool,
        pue=args.pue,
        speculative=args.speculative,
        attention_dp=args.attention_dp,
        itl_metric=args.itl_metric,
        kv_link_gbit_s=args.kv_link_gbit_s,
    )


def _per_node(report: dict[str, Any], pool: int) -> dict[str, Any]:
    """A pool's report per node: goodput, capacity and power over ``pool`` (``--pool-nodes``)."""
    if pool == 1:
        return report
    scaled = {k: report[k] / pool for k in ("goodput_tok_s", "capacity_tok_s", "node_kw") if report.get(k) is not None}
    band = {k: v / pool if k.startswith("goodput_") and v is not None else v for k, v in report["band"].items()}
    return {**report, **scaled, "band": band, "pool_nodes": pool}


def _simulated(request: ServingRequest, args: argparse.Namespace) -> dict[str, Any] | None:
    """``--simulate``: the node (colocated, speculative or not) or its pools, per node of ``--pool-nodes``."""
    from placement.serving.simulate import TailCheck, simulation_report
    from placement.serving.simulate_disaggregated import pools_report, simulate_serving

    check = simulate_serving(request, load_factor=args.load_factor, requests=args.sim_requests, seed=args.seed)
    if check is None:
        return None
    if isinstance(check, TailCheck):
        return simulation_report(check)
    report = pools_report(check)  # the pools of --pool-nodes nodes: tokens/s and requests/s per node
    for key in ("throughput_tok_s", "offered_tok_s", "arrival_rate_per_s"):
        report[key] = report[key] / args.pool_nodes if report[key] is not None else None
    return report


def _plot_path(text: str) -> Path:
    """Where ``goodput --plot`` writes, checked before anything is computed; a missing folder is created."""
    path = Path(text).resolve()
    base = nearest_existing(path.parent)
    source, fix = f"--plot {text}", "give the path of a PNG file in a folder you can write to"
    if path.is_dir():
        raise InputError([Problem(source, "", "", "it is a folder, not a file", fix)])
    if not base.is_dir():
        raise InputError([Problem(source, "", "", f"it would be inside {base}, which is a file, not a folder", fix)])
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _with_cache(
    args: argparse.Namespace, request: ServingRequest, refit: ServingEfficiency | None
) -> tuple[ServingRequest, dict[str, Any] | None]:
    """``--kv-cache TIER --prefix-reuse PROFILE``: the request at the hit rate its cache sustains, and the cache's figures."""
    if args.kv_cache is None and args.prefix_reuse is None:
        return request, None
    if args.kv_cache is None or args.prefix_reuse is None:
        given, other = ("--kv-cache", "--prefix-reuse") if args.kv_cache is not None else ("--prefix-reuse", "--kv-cache")
        fix = f"give {other} too (e.g. --kv-cache dram --prefix-reuse chat), or neither for a fixed --prefix-cache-hit-rate"
        raise InputError([Problem(given, "", "", f"{given} needs {other}", fix)])
    from placement.profiles.build import cached_request
    from placement.scenario.sections import KvCacheSection, ServingSection
    from placement.serving.prefix_cache import reuse_for

    reuse = reuse_for(args.prefix_reuse, source="--prefix-reuse", key="")
    serving = ServingSection(
        model=args.model,
        accelerator=args.accelerator,
        gpus_per_node=args.gpus,
        precision=args.precision,
        disaggregated=args.disaggregated,
        speculative=args.speculative,
        kv_cache=KvCacheSection(tier=args.kv_cache),
    )
    served, _, figures = cached_request(serving, request, reuse, refit)
    return served, {
        "tier": figures.tier,
        "reuse_profile": reuse.profile,
        "cache_gb_per_node": figures.cache_gb_per_node,
        "retention_s": figures.retention_s,
        "hit_rate_limit": figures.hit_rate_limit,
        "hit_load_ms": figures.hit_load_ms,
        "warmup_nodes_per_site": figures.warmup_nodes,
        "goodput_tok_s_per_node_without_cache": figures.goodput_no_cache_tok_s_per_node,
    }


def _goodput(args: argparse.Namespace) -> int:
    """``placement goodput``: one node's goodput inside the objective, as text or JSON (and its Pareto curve)."""
    from placement.outputs.console_serving import print_goodput, print_goodput_json

    answer = _goodput_answer(args)
    if args.json:
        print_goodput_json(answer)
        return EXIT_OK
    print_goodput(answer)
    return EXIT_OK


def _goodput_answer(args: argparse.Namespace) -> GoodputAnswer:
    """The node's report per node, with its prefix cache, its simulation and the refits; the Pareto curve is drawn."""
    from dataclasses import asdict

    from placement.outputs.console_serving import GoodputAnswer
    from placement.outputs.pareto_chart import plot_pareto
    from placement.serving.efficiency import ServingEfficiency
    from placement.serving.pareto import pareto_curve
    from placement.serving.request import goodput_report

    plot = _plot_path(args.plot) if args.plot else None
    asked = _serving_request(args)
    fits = _part_fits(args.measurements, quiet=args.json) if args.measurements else []
    refit = next((f for f in fits if (f.accelerator, f.precision) == (asked.accelerator, asked.precision)), None)
    overrides = ServingEfficiency() if refit is None else refit.efficiency()
    request, cache = _with_cache(args, asked, None if refit is None else overrides)
    report = goodput_report(request, efficiency=overrides)
    report = _per_node(report, args.pool_nodes)
    if cache is not None:  # the hits' KV comes back from the tier before the prefill ends, as the plan counts it
        report["kv_cache"] = cache
        for key in ("prefill_ms", "ttft_ms"):
            report[key] = report[key] + cache["hit_load_ms"] if report.get(key) is not None else None
    if args.measurements:
        report["measurements"] = [asdict(f) for f in fits]
    simulated = _simulated(request, args) if args.simulate else None
    if plot is not None:
        plot_pareto(pareto_curve(request), plot, itl_p99_ms=args.itl_p99_ms, title=request.label)
    return GoodputAnswer(
        asked=asked,
        report=report,
        pool_nodes=args.pool_nodes,
        node_cost_usd_h=args.node_cost_usd_h,
        cache=cache,
        simulate=args.simulate,
        simulated=simulated,
        plot=args.plot,
        measurements=args.measurements,
        fits=fits,
        refitted=refit is not None,
    )


def _part_fits(path: str, *, quiet: bool) -> list[PartFit] | list[SweepFit]:
    """A planner's measurements refitted: a closed-loop sweep (a ``concurrency`` column) or points inside limits."""
    from placement.serving.calibration import fit_parts
    from placement.serving.closed_loop import fit_sweep, is_sweep, load_sweep
    from placement.serving.measured import load_measured

    if Path(path).is_file() and is_sweep(path):
        return fit_sweep(load_sweep(path))
    points = load_measured(path)
    if not points:
        rule = "no row to fit: every row is use=check (a published check, not a measurement to fit)"
        raise InputError([Problem(path, "", "use", rule, "give rows with use blank or fit")])
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
        return fit_parts(points, source=path, progress=StderrProgress(show=not quiet), pool=pool)


def _calibrate(args: argparse.Namespace) -> int:
    from placement.outputs.console_serving import print_calibration, print_fits_json

    fits = _part_fits(args.file, quiet=args.json or args.quiet)
    if args.json:
        print_fits_json(fits)
        return EXIT_OK
    print_calibration(fits, source=args.file)
    return EXIT_OK


def _report(args: argparse.Namespace) -> int:
    from placement.outputs.console import print_written
    from placement.outputs.report_html import rerender_report

    print_written(rerender_report(args.outdir))
    return EXIT_OK


def _discover(args: argparse.Namespace) -> int:
    import tempfile

    from placement.analyses.discover import discover
    from placement.outputs.console import print_discovery
    from placement.outputs.discover_files import write_discovery
    from placement.outputs.writer import check_output_folder
    from placement.scenario.sections import DiscoverSection

    out = check_output_folder(args.out)
    progress = StderrProgress(show=not args.quiet)
    loaded = _with_overrides(load_scenario(scenario_file(args.scenario)), args)
    spec = loaded.scenario.sites.discover or DiscoverSection()
    changes = {k: v for k, v in (("min_population", args.min_population), ("spacing_km", args.spacing_km),
                                 ("max_candidates", args.max_candidates)) if v is not None}  # fmt: skip
    spec = DiscoverSection(**{**spec.model_dump(), **changes})
    with tempfile.TemporaryDirectory(prefix="placement-discover-") as work:
        found = discover(loaded, work=Path(work), final_folder=out.resolve(), spec=spec, progress=progress)
        write_discovery(found, out, work=Path(work), maps=not args.no_maps, progress=progress)
    print_discovery(found, spec=spec, out=out)
    return EXIT_OK


def _frontier(args: argparse.Namespace) -> int:
    from placement.analyses.frontier import resource_frontier
    from placement.outputs.console import print_frontier
    from placement.outputs.frontier_files import write_frontier
    from placement.outputs.writer import check_output_folder

    check_output_folder(args.out)
    progress = StderrProgress(show=not args.quiet)
    loaded = _with_overrides(load_scenario(scenario_file(args.scenario)), args)
    progress(f"scenario {loaded.scenario.name}: the cost-{args.axis} frontier in {args.points} points")
    try:
        if args.scheduler or args.workers:  # the capped points as Dask tasks, as a sweep's cases
            from placement.sweep.frontier_tasks import write_frontier_on_dask

            out = write_frontier_on_dask(
                loaded, args.out, axis=args.axis, points=args.points, maps=not args.no_maps, workers=args.workers,
                scheduler=args.scheduler, equal_service=not args.allow_unserved, progress=progress,
            )  # fmt: skip
        else:
            equal = not args.allow_unserved
            points = resource_frontier(loaded, axis=args.axis, points=args.points, equal_service=equal, progress=progress)
            out = write_frontier(points, args.out, axis=args.axis, maps=not args.no_maps, equal_service=equal,
                                 unserved_usd_per_million=loaded.scenario.objective.unserved_usd_per_million,
                                 progress=progress)  # fmt: skip
    except ValueError as exc:
        raise InputError(
            [Problem(str(args.scenario), "", "", str(exc), 'see the guide "Carbon and water" (docs/guides/carbon-water.md)')]
        ) from None
    print_frontier(out, axis=args.axis)
    return EXIT_OK


def _alternatives(args: argparse.Namespace) -> int:
    from placement.analyses.alternatives import check_options, near_optimal_alternatives
    from placement.outputs.alternatives_files import write_alternatives
    from placement.outputs.console import print_alternatives
    from placement.outputs.writer import check_output_folder

    directions = [d for given in args.direction for d in given]
    fix = 'see the guide "Near-optimal alternatives" (docs/guides/alternatives.md)'
    try:
        check_options(args.slack, args.count, directions)
    except ValueError as exc:
        raise InputError([Problem("alternatives", "", "--count", str(exc), fix)]) from None
    check_output_folder(args.out)
    progress = StderrProgress(show=not args.quiet)
    loaded = _with_overrides(load_scenario(scenario_file(args.scenario)), args)
    progress(f"scenario {loaded.scenario.name}: {args.count} alternatives at most {args.slack:.1%} dearer than the optimum")
    try:
        if args.scheduler or args.workers:  # the hand-chosen directions as Dask tasks
            from placement.sweep.alternatives_tasks import write_alternatives_on_dask

            out = write_alternatives_on_dask(
                loaded, args.out, slack=args.slack, count=args.count, directions=directions, maps=not args.no_maps,
                workers=args.workers, scheduler=args.scheduler, progress=progress,
            )  # fmt: skip
        else:
            designs = near_optimal_alternatives(loaded, slack=args.slack, count=args.count, directions=directions,
                                                progress=progress)  # fmt: skip
            out = write_alternatives(designs, args.out, maps=not args.no_maps, progress=progress)
    except ValueError as exc:
        raise InputError([Problem(str(args.scenario), "", "", str(exc), fix)]) from None
    print_alternatives(out)
    return EXIT_OK


def _sweep(args: argparse.Namespace) -> int:
    from placement.outputs.console import print_sweep
    from placement.outputs.writer import check_output_folder
    from placement.sweep.run import run_sweep

    check_output_folder(args.out, results_markers=None)  # run_sweep checks its own marker
    table = run_sweep(args.sweep, out_dir=args.out, workers=args.workers, scheduler=args.scheduler, progress=not args.quiet)
    print_sweep(table, out=Path(args.out).resolve())
    solved = int((table["error"] == "").sum())
    return EXIT_OK if solved else EXIT_INVALID


def _validate(args: argparse.Namespace) -> int:
    from placement.analyses.validate import validate_file
    from placement.outputs.console import print_validated

    checked = validate_file(args.file if Path(args.file).suffix else scenario_file(args.file))
    loaded = checked.loaded
    if loaded is None:
        print_validated(path=checked.path, n_sites=len(checked.sites))
    else:
        scenario = loaded.scenario
        print_validated(
            path=checked.path, n_sites=len(checked.sites), scenario_name=scenario.name, n_classes=len(scenario.classes),
            catalog_name=loaded.catalog_path.name,
        )  # fmt: skip
    return EXIT_OK


def _init(args: argparse.Namespace) -> int:
    from placement.outputs.console import print_init
    from placement.world.bundled import copy_scenario

    print_init(copy_scenario(args.dir, args.scenario), folder=Path(args.dir))
    return EXIT_OK


def _scenarios(args: argparse.Namespace) -> int:
    from placement.outputs.console import print_scenarios
    from placement.world.bundled import describe_scenarios

    print_scenarios(describe_scenarios())
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    from placement.outputs.console import print_schema, print_written
    from placement.scenario.schema import schema_text

    text = schema_text()
    if args.out is None:
        print_schema(text)
        return EXIT_OK
    from placement.outputs.writer import write_text_atomic

    out = Path(args.out)
    if not out.parent.is_dir() or out.is_dir():
        reason = "it is a folder" if out.is_dir() else f"{out.parent} is not an existing folder"
        fix = "give a file path in an existing folder"
        raise InputError([Problem(str(out), "", "--out", f"cannot write the schema there: {reason}", fix)])
    write_text_atomic(out, text)
    print_written([out])
    return EXIT_OK


def _cache(args: argparse.Namespace) -> int:
    from placement import _cache as store
    from placement.outputs.console import print_lines

    folder, entries, size = store.summary()
    if args.action == "clear":
        removed, freed = store.clear()
        print_lines([f"cleared {removed} entries ({freed / 1e6:,.1f} MB) from {folder}"])
        return EXIT_OK
    state = "on" if store.is_enabled() else f"off ({store.SWITCH_ENV}={os.environ.get(store.SWITCH_ENV, '')})"
    print_lines([f"cache: {folder}", f"{entries} entries, {size / 1e6:,.1f} MB (at most {store.MAX_BYTES / 1e9:g} GB); {state}"])
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``placement`` command: each subcommand's arguments, bound to its handler."""
    parser = arguments.root_parser()
    commands = parser.add_subparsers(dest="command", required=True)
    for add, handler in (
        (arguments.add_solve, _solve),
        (arguments.add_compare, _compare),
        (arguments.add_explain, _explain),
        (arguments.add_failover, _failover),
        (arguments.add_adequacy, _adequacy),
        (arguments.add_diff, _diff),
        (arguments.add_rtt, _rtt),
        (arguments.add_goodput, _goodput),
        (arguments.add_calibrate, _calibrate),
        (arguments.add_report, _report),
        (arguments.add_discover, _discover),
        (arguments.add_frontier, _frontier),
        (arguments.add_alternatives, _alternatives),
        (arguments.add_sweep, _sweep),
        (arguments.add_init, _init),
        (arguments.add_scenarios, _scenarios),
        (arguments.add_validate, _validate),
        (arguments.add_schema, _schema),
        (arguments.add_cache, _cache),
    ):
        add(commands).set_defaults(handler=handler)
    return parser


_RTT_VALUE_OPTIONS = ("--path", "--site-network", "--measurements")


def _places_as_positionals(argv: list[str]) -> list[str]:
    """``rtt`` arguments with the places after ``--``, so ``"-33.87,151.21"`` is a place, not an option.

    argparse takes any word that starts with ``-`` and is not a plain number for an option; a
    southern or western coordinate is such a word. For the ``rtt`` command, options (and the value
    of ``--path``) are moved ahead and every place — a coordinate pair or a word not starting with
    ``-`` — goes after ``--`` in its original order. Other commands are left as written.
    """
    first = next((k for k, token in enumerate(argv) if not token.startswith("-")), None)
    if first is None or argv[first] != "rtt" or "--" in argv:
        return argv
    options, places = [], []
    rest = iter(argv[first + 1 :])
    for token in rest:
        if not token.startswith("-") or is_lat_lon(token):
            places.append(token)
            continue
        options.append(token)
        if token in _RTT_VALUE_OPTIONS:
            options.append(next(rest, ""))
    return [*argv[: first + 1], *options, "--", *places]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 invalid input or infeasible, 2 usage)."""
    map_large_blocks()  # freed large arrays go back to the system (a 2,000-site solve peaks 0.35 GB lower)
    parser = build_parser()
    args = parser.parse_args(_places_as_positionals(list(sys.argv[1:] if argv is None else argv)))
    try:
        with cache_switched(not getattr(args, "no_cache", False)):
            return int(args.handler(args))
    except PlacementError as exc:  # InputError included
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into a reader that stopped early (| head): not an error to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # a bug, not bad input: say so plainly, traceback on request
        if os.environ.get("PLACEMENT_DEBUG"):
            raise
        print(
            f"error: internal failure ({type(exc).__name__}: {exc}). This is a bug in placement, not in your input; "
            "run again with PLACEMENT_DEBUG=1 for the traceback and report it.",
            file=sys.stderr,
        )
        return EXIT_INVALID
