"""How the serving model transfers: goodput against every measured MLPerf point, per model and part.

Usage::

    .venv/bin/python benchmarks/serving_transfer.py [--workers 2] [--config in-force|joint|both] [--at-measured-load]

Runs ``placement.serving.request.serve`` at each configuration's median run (``data/serving/measured.csv``: MLPerf
Llama-2-70B, Llama-3.1-405B, Llama-3.1-8B and DeepSeek-R1 Server and Interactive) and prints model vs measured per
point (the model's ITL at its batch beside the run's own logged p99 TPOT where the source gives it), then the mean
absolute error per model. ``--at-measured-load`` also simulates the node the calibration plans for each run that
logged its latencies at that run's measured throughput, and prints the simulated p99 TPOT and TTFT beside the
run's: evidence the fit does not use (it sees throughput only).

``in-force`` is the bundled calibration (``data/serving/calibration.csv``), as ``placement goodput`` serves it.
``joint`` is the fit saved by ``benchmarks/calibrate_serving.py --save`` in ``benchmarks/serving_joint_fit.json``
(per family the floors per step, layer and sequence, the collective's latency and the attention fraction; per die
the GEMM fraction; the expert padding): the same figures once ``--write`` has written them, a new fit before.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from placement.serving.efficiency import ServingEfficiency
from placement.serving.joint import efficiency_for, terms_for
from placement.serving.measured import MeasuredPoint, load_measured, median_points
from placement.serving.request import serve
from placement.serving.simulate import simulate_request

JOINT_FIT = Path(__file__).resolve().parent / "serving_joint_fit.json"
"""The joint calibration's figures (``calibrate_serving.py --save``)."""
CONFIGS = ("in-force", "joint")
MAX_LOAD = 1.5
"""Highest load factor simulated: a run above 1.5 x the model's goodput is reported at 1.5 x (the queue diverges)."""
SIM_REQUESTS = 1500
"""Requests per simulated node (the other models' answers are 128-3,750 tokens: a few minutes of node time)."""


def _run(job: tuple[MeasuredPoint, str, list[MeasuredPoint]]) -> tuple[float, int, int, float, str, float]:
    point, config, points = job
    start = time.perf_counter()
    if config == "in-force":
        r = serve(point.request(), efficiency=ServingEfficiency())
    else:
        terms = terms_for(points)
        saved = json.loads(JOINT_FIT.read_text(encoding="utf-8"))
        eff = efficiency_for(point, terms, [saved.get(t.label, t.prior) for t in terms])
        r = serve(point.request(), efficiency=eff)
    return r.goodput_tok_s, r.batch, r.tp, r.itl_ms, r.limit, time.perf_counter() - start


def _at_measured_load(point: MeasuredPoint) -> tuple[float, float, float] | None:
    """The node the calibration in force plans, simulated at the run's own throughput: (load factor, p99 TPOT, p99
    TTFT), to set beside the run's logged p99s (not fitted: the fit sees throughput only); None when there is nothing
    to simulate (no goodput, or disaggregated) or the run logged no latencies."""
    if point.tpot_p99_measured_ms is None:
        return None
    request = point.request()
    analytic = serve(request)
    if analytic.goodput_tok_s <= 0:
        return None
    load = min(point.tok_s / analytic.goodput_tok_s, MAX_LOAD)
    check = simulate_request(request, load_factor=load, analytic=analytic, requests=SIM_REQUESTS)
    if check is None:
        return None
    return load, check.simulated.tpot_p99_ms, check.simulated.ttft_p99_ms


def _logged(point: MeasuredPoint) -> str:
    """The run's own p99 TPOT beside the model's ITL: where it actually ran against its limit."""
    return "" if point.tpot_p99_measured_ms is None else f" (run: {point.tpot_p99_measured_ms:.1f} ms)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--config", choices=(*CONFIGS, "both"), default="both")
    parser.add_argument(
        "--at-measured-load",
        action="store_true",
        help="also simulate each other-model run's planned node at the run's own throughput, beside its logged p99s",
    )
    args = parser.parse_args()
    # every fitted point (the throughput tables, ``use`` = ``check``, have no latency limit)
    points = [p for p in median_points(load_measured()) if p.ttft_p99_ms < 1e8]
    configs = list(CONFIGS) if args.config == "both" else [args.config]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for config in configs:
            print(f"== {config}")
            print(
                f"{'model':15s} {'part':12s} {'gpus':>4s} {'prec':4s} {'scenario':11s} {'measured':>9s} {'model':>9s} {'error':>7s}"
            )
            errors: dict[str, list[float]] = {}
            results = pool.map(_run, [(p, config, points) for p in points])
            for p, (good, batch, tp, itl, limit, seconds) in zip(points, results, strict=True):
                err = good / p.tok_s - 1
                errors.setdefault(p.model, []).append(abs(err))
                print(
                    f"{p.model:15s} {p.accelerator:12s} {p.gpus:4d} {p.precision:4s} {p.scenario:11s} {p.tok_s:9,.0f} "
                    f"{good:9,.0f} {err:+7.1%}  batch {batch} tp {tp} itl {itl:.1f} ms{_logged(p)} {limit} ({seconds:.1f} s)"
                )
            for model, errs in errors.items():
                print(f"  {model:15s} mean |error| {np.mean(errs):6.1%} over {len(errs)} configurations")
            print(f"  {'all':15s} mean |error| {np.mean([e for v in errors.values() for e in v]):6.1%}")
        if args.at_measured_load:
            logged = [p for p in points if p.tpot_p99_measured_ms is not None]
            print("== in force, the planned node simulated at each run's measured throughput, beside the run's p99s")
            print(
                f"{'model':15s} {'part':12s} {'scenario':11s} {'load':>5s} {'TPOT sim':>9s} {'run':>7s} {'TTFT sim':>9s} {'run':>7s}"
            )
            for p, found in zip(logged, pool.map(_at_measured_load, logged), strict=True):
                if found is None:
                    print(
                        f"{p.model:15s} {p.accelerator:12s} {p.scenario:11s}   nothing to simulate (disaggregated or no goodput)"
                    )
                    continue
                load, tpot, ttft = found
                print(
                    f"{p.model:15s} {p.accelerator:12s} {p.scenario:11s} {load:5.2f} {tpot:9.1f} "
                    f"{p.tpot_p99_measured_ms:7.1f} {ttft:9.0f} {p.ttft_p99_measured_ms or float('nan'):7.0f}"
                )


if __name__ == "__main__":
    main()
