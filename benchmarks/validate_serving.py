"""Serving model against published figures: the DESIGN.md rows, then checks and predictions never fitted.

Usage::

    .venv/bin/python benchmarks/validate_serving.py          # DESIGN.md rows with residuals, checks, predictions
    .venv/bin/python benchmarks/validate_serving.py --fit    # the old one-parameter fit (step overhead), for reference

Since issue 22 the model is calibrated on ``data/serving/measured.csv`` (``benchmarks/calibrate_serving.py``
fits and cross-validates it; the DESIGN.md MLPerf v5.0 rows below are among its points). Printed as checks,
never fitted: the v4.1 H100 Server row (older software on the same box), the TensorRT-LLM v0.13 throughput table,
the TensorRT-LLM v0.9 batch-1 TTFT figures, and AMD's published vLLM throughput of 8 x MI300X on Llama-3.1-70B
FP8. The predictions are for accelerators and scenarios with no published figure used.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace

from placement.serving.efficiency import (
    CALIBRATED,
    MLPERF_LLAMA2_INPUT_TOKENS,
    MLPERF_LLAMA2_INPUT_TOKENS_MAX,
    MLPERF_LLAMA2_OUTPUT_TOKENS,
    ServingEfficiency,
)
from placement.serving.hardware import get_accelerator, get_model
from placement.serving.kernels import prefill_ms
from placement.serving.measured import MeasuredPoint, load_measured
from placement.serving.request import ServingRequest, serve

SERVER = (2000.0, 200.0)  # llama2-70b Server: p99 TTFT, p99 TPOT [ms]
INTERACTIVE = (450.0, 40.0)  # llama2-70b-interactive (v5.0)
UNLIMITED = (1e9, 1e9)  # TensorRT-LLM throughput table: no latency limit
IN, IN_MAX, OUT = MLPERF_LLAMA2_INPUT_TOKENS, MLPERF_LLAMA2_INPUT_TOKENS_MAX, MLPERF_LLAMA2_OUTPUT_TOKENS


@dataclass(frozen=True)
class Row:
    label: str
    accelerator: str
    gpus: int
    precision: str
    slo: tuple[float, float]
    published_tok_s: float | None = None
    input_tokens: int = IN
    input_tokens_max: int | None = IN_MAX
    output_tokens: int = OUT
    tp: int | None = None
    model: str = "llama-2-70b"

    def request(self) -> ServingRequest:
        ttft, itl = self.slo
        return ServingRequest(
            self.model,
            self.accelerator,
            self.gpus,
            self.precision,
            self.input_tokens,
            self.output_tokens,
            ttft,
            itl,
            input_tokens_max=self.input_tokens_max,
            tp=self.tp,
        )


FITTED = [
    Row("MLPerf v5.0 DGX H100 Server", "h100-sxm", 8, "fp8", SERVER, 31106),
    Row("MLPerf v5.0 XE9680 H100 Interactive", "h100-sxm", 8, "fp8", INTERACTIVE, 12979),
    Row("MLPerf v5.0 8x H200 Interactive", "h200", 8, "fp8", INTERACTIVE, 19424),
]
VINTAGE = [Row("MLPerf v4.1 DGX H100 Server (older sw)", "h100-sxm", 8, "fp8", SERVER, 21606)]


def _check_row(point: MeasuredPoint) -> Row:
    slo = (point.ttft_p99_ms, point.itl_p99_ms)
    n_in, n_out = round(point.input_tokens), round(point.output_tokens)
    label = f"{point.software} {point.accelerator} TP{point.tp} {n_in}/{n_out}"
    return Row(label, point.accelerator, point.gpus, point.precision, slo, point.tok_s, n_in, None, n_out, point.tp, point.model)


#: The published throughput tables of data/serving/measured.csv (``use`` = ``check``): every prompt submitted at
#: once, no latency limit; never fitted. AMD's vLLM table (8 x MI300X, Llama-3.1-70B FP8) was found after the fit.
CHECKS = [_check_row(p) for p in load_measured(use="check")]
TRTLLM = [r for r in CHECKS if r.label.startswith("TensorRT-LLM")]
AMD_VLLM = [r for r in CHECKS if not r.label.startswith("TensorRT-LLM")]

PREDICTIONS = [
    Row(f"{acc} x{gpus} {precision} {name}", acc, gpus, precision, slo)
    for acc, gpus, precision in (
        ("h100-sxm", 8, "fp8"),
        ("h200", 8, "fp8"),
        ("b200", 8, "fp4"),
        ("gb200", 4, "fp4"),
        ("b300", 8, "fp4"),
        ("mi300x", 8, "fp8"),
        ("mi325x", 8, "fp8"),
        ("mi355x", 8, "fp8"),
        ("mi355x", 8, "fp4"),
    )
    for name, slo in (("Server", SERVER), ("Interactive", INTERACTIVE))
]


def goodput(row: Row, eff: ServingEfficiency = CALIBRATED) -> float:
    return serve(row.request(), efficiency=eff).goodput_tok_s


def print_rows(title: str, rows: list[Row], eff: ServingEfficiency = CALIBRATED) -> list[float]:
    print(f"\n{title}")
    print(f"{'configuration':40s} {'predicted':>10s} {'published':>10s} {'resid':>7s}  tp batch chunk itl_ms ttft_ms  limit")
    errors = []
    for row in rows:
        r = serve(row.request(), efficiency=eff)
        pub = f"{row.published_tok_s:10,.0f}" if row.published_tok_s else f"{'-':>10s}"
        err = ""
        if row.published_tok_s:
            errors.append(r.goodput_tok_s / row.published_tok_s - 1)
            err = f"{errors[-1]:+7.1%}"
        print(
            f"{row.label:40s} {r.goodput_tok_s:10,.0f} {pub} {err:>7s}  {r.tp:2d} {r.batch:5d} {r.chunk_tokens:5d} "
            f"{r.itl_ms:6.1f} {r.ttft_ms:7.0f}  {r.limit}"
        )
    if errors:
        print(f"{'mean |residual|':40s} {sum(abs(e) for e in errors) / len(errors):29.1%}")
    return errors


def print_ttft() -> None:
    """TensorRT-LLM v0.9 batch-1 TTFT (DESIGN.md): a check on prefill, not fitted."""
    model = get_model("llama-2-70b")
    print("\nBatch-1 TTFT (TensorRT-LLM v0.9; check, not fitted):")
    for acc, tp, tokens, published in (("h100-sxm", 8, 2048, 85.0), ("h200", 4, 128, 17.8), ("h200", 4, 2048, 103.0)):
        got = prefill_ms(model, get_accelerator(acc), "fp8", tp=tp, tokens=tokens)
        print(
            f"  {acc} TP{tp} {tokens:5d} tokens: predicted {got:6.1f} ms, published {published:6.1f} ms ({got / published - 1:+.0%})"
        )


def fit() -> None:
    """One parameter, three rows: the per-step overhead that minimises the mean |residual| of the fitted rows."""
    results = []
    for overhead in (2.0, 4.0, 6.0, 8.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 18.0):
        eff = replace(CALIBRATED, step_overhead_ms=overhead)
        errs = [goodput(row, eff) / (row.published_tok_s or 1.0) - 1 for row in FITTED]
        results.append((sum(abs(e) for e in errs) / len(errs), overhead, errs))
    for mean_abs, overhead, errs in sorted(results)[:6]:
        print(f"  step_overhead_ms {overhead:5.1f}: mean |residual| {mean_abs:6.1%}  {[f'{e:+.1%}' for e in errs]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fit", action="store_true", help="redo the step-overhead fit on the three MLPerf rows")
    args = parser.parse_args()
    if args.fit:
        fit()
        return
    h100 = get_accelerator("h100-sxm")
    print(
        f"Catalog efficiencies (h100-sxm): HBM {h100.hbm_efficiency}, GEMM {h100.gemm_efficiency}, attention "
        f"{h100.attention_efficiency}, all-reduce {h100.allreduce_latency_us} us / {h100.scale_up_efficiency}, "
        f"step overhead {h100.step_overhead_ms} ms (catalog priors; data/serving/calibration.csv overrides GEMM and overhead)"
    )
    print(f"MLPerf llama2-70b workload: prompts mean {IN}, longest {IN_MAX}; {OUT} generated tokens")
    print_rows("DESIGN.md MLPerf v5.0 rows (points of the calibration):", FITTED)
    print_rows("SOFTWARE VINTAGE (same box, older software; not fitted):", VINTAGE)
    print_rows("TensorRT-LLM v0.13 table (fixed lengths, no latency limit; check, not fitted):", TRTLLM)
    print_ttft()
    print_rows("AMD vLLM throughput, 8 x MI300X (found after the fit; comparison, not fitted):", AMD_VLLM)
    print_rows("PREDICTIONS (never fitted, no published figure used):", PREDICTIONS)


if __name__ == "__main__":
    main()
