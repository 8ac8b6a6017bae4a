"""How the serving model transfers: goodput against every measured MLPerf point, per model and part.

Usage::

    .venv/bin/python benchmarks/serving_transfer.py [--workers 2] [--config in-force|per-layer|both]

Runs ``placement.serving.request.serve`` at each configuration's median run (``data/serving/measured.csv``: the
Llama-2-70B points the calibration in force was fitted on, and the Llama-3.1-405B, Llama-3.1-8B and DeepSeek-R1
points it has not seen) and prints model vs measured per point, then the mean absolute error per model.

Two configurations: ``in-force`` is the bundled calibration (a per-step overhead fitted on Llama-2-70B alone, the
per-gap ITL); ``per-layer`` switches on the issue-45 terms at the values of :data:`PER_LAYER` (a per-step launch,
a per-layer kernel floor, a per-sequence cost, expert padding), reads the ITL objective as MLPerf's TPOT and the
prefill queue's variability from the prompt mix. ``PER_LAYER`` is the best of a coarse grid over every point
(not a cross-validated fit: the joint calibration with leave-one-model-out is issue 45's remaining work).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

import numpy as np

from placement.serving.efficiency import ServingEfficiency
from placement.serving.measured import MeasuredPoint, load_measured, median_points
from placement.serving.request import serve

PER_LAYER = ServingEfficiency(
    step_overhead_ms=1.0, layer_floor_us=60.0, sequence_us=40.0, expert_half_tokens=256.0, service_cv2=None
)
"""The per-layer terms at the coarse grid's best (step 1 ms; layer 30/60/100 µs; sequence 10/20/40 µs; expert
half-rows 64/256)."""
CONFIGS = {"in-force": (ServingEfficiency(), "step"), "per-layer": (PER_LAYER, "tpot")}


def _run(job: tuple[MeasuredPoint, str]) -> tuple[float, int, int, float, str, float]:
    point, config = job
    eff, metric = CONFIGS[config]
    start = time.perf_counter()
    r = serve(replace(point.request(), itl_metric=metric), efficiency=eff)
    return r.goodput_tok_s, r.batch, r.tp, r.itl_ms, r.limit, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--config", choices=(*CONFIGS, "both"), default="both")
    args = parser.parse_args()
    points = median_points(load_measured()) + median_points(load_measured(use="check"))
    points = [p for p in points if p.ttft_p99_ms < 1e8]  # the throughput tables have no latency limit
    configs = list(CONFIGS) if args.config == "both" else [args.config]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for config in configs:
            print(f"== {config}")
            print(
                f"{'model':15s} {'part':12s} {'gpus':>4s} {'prec':4s} {'scenario':11s} {'measured':>9s} {'model':>9s} {'error':>7s}"
            )
            errors: dict[str, list[float]] = {}
            results = pool.map(_run, [(p, config) for p in points])
            for p, (good, batch, tp, itl, limit, seconds) in zip(points, results, strict=True):
                err = good / p.tok_s - 1
                errors.setdefault(p.model, []).append(abs(err))
                print(
                    f"{p.model:15s} {p.accelerator:12s} {p.gpus:4d} {p.precision:4s} {p.scenario:11s} {p.tok_s:9,.0f} "
                    f"{good:9,.0f} {err:+7.1%}  batch {batch} tp {tp} itl {itl:.1f} ms {limit} ({seconds:.1f} s)"
                )
            for model, errs in errors.items():
                print(f"  {model:15s} mean |error| {np.mean(errs):6.1%} over {len(errs)} configurations")
            print(f"  {'all':15s} mean |error| {np.mean([e for v in errors.values() for e in v]):6.1%}")


if __name__ == "__main__":
    main()
