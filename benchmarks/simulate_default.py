"""Analytic versus simulated p99 TTFT (node part) and p99 ITL for the default scenario's classes.

Each class of ``data/scenarios/default.yaml`` is served on the scenario's node (Llama-3.1-70B FP8 on
8 x H100) at the planned load (1 x the analytic goodput) and at 50 % and 90 % of the analytic capacity.
The analytic TTFT at a load is the serving model's own formula: M/G/c p99 wait at that utilisation +
prefill + first decode step. The simulation (``placement.serving.simulate``) runs the same node; the
figures are the median over seeds 0-4 with the range in brackets.

Run: ``python benchmarks/simulate_default.py [--requests N] [--chunk analytic|itl]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from placement.analyses.tail import serving_request
from placement.scenario.load import load_scenario
from placement.serving.request import serve
from placement.serving.simulate import simulate_request
from placement.world.bundled import default_scenario_path


def _spread(values: list[float], digits: int) -> str:
    return f"{np.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--chunk", default="analytic", choices=["analytic", "itl"])
    args = parser.parse_args()
    loaded = load_scenario(default_scenario_path())
    print(
        f"{'class':6} {'load':>12} {'TP x rep':>8} {'batch':>5} {'chunk':>5} | {'TTFT analytic':>13} {'TTFT simulated':>20} | "
        f"{'ITL analytic':>12} {'ITL simulated':>20} | {'ITL obj':>7}"
    )
    start = time.perf_counter()
    for workload in loaded.scenario.classes:
        request = serving_request(loaded.scenario.serving, workload)
        result = serve(request)
        planned = result.goodput_tok_s / result.capacity_tok_s
        for label, utilisation in (("planned", planned), ("50 % cap", 0.5), ("90 % cap", 0.9)):
            factor = utilisation * result.capacity_tok_s / result.goodput_tok_s
            checks = [
                simulate_request(request, load_factor=factor, requests=args.requests, seed=s, analytic=result, chunk=args.chunk)
                for s in range(5)
            ]
            sims = [c.simulated for c in checks if c is not None]
            # the serving model states its p99 TTFT at the goodput it plans; at other loads it states none
            ttft = f"{result.ttft_ms:13.0f}" if label == "planned" else f"{'-':>13}"
            node = checks[0].node if checks[0] is not None else None
            print(
                f"{workload.name:6} {label + f' {utilisation:.2f}':>12} {f'{result.tp} x {result.replicas}':>8} {result.batch:5} "
                f"{node.chunk_tokens if node else 0:5} | {ttft} {_spread([s.ttft_p99_ms for s in sims], 0):>20} | "
                f"{result.itl_ms:12.1f} {_spread([s.itl_p99_ms for s in sims], 1):>20} | {workload.itl_p99_ms:7g}"
            )
    print(f"{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
