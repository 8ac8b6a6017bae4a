"""Calibrate the serving model jointly on every measured model and write ``data/serving/calibration.csv``.

Usage::

    .venv/bin/python benchmarks/calibrate_serving.py [--workers 2] [--iterations 8] [--start FIT.json]
        [--save FIT.json] [--write]

Fits the terms of ``placement.serving.joint`` (per family the per-step, per-layer and per-sequence floors; per die
and precision the GEMM fraction; the expert padding) on the median run of each configuration of
``data/serving/measured.csv`` with a latency limit (MLPerf Llama-2-70B, Llama-3.1-405B, Llama-3.1-8B and
DeepSeek-R1 Server and Interactive; the latest round of each). Prints the terms (prior and fit), per point the
model at the fit (real runs), then the cross-validation: each model left out and each die left out (the rest
refitted by one Gauss-Newton step from the joint fit, the left-out points predicted by real runs), per model and
part. ``--write`` writes the calibration table: the fitted figures, the figures carried over to families and
precisions without a point (marked ``extrapolated``), and per family the RMS log errors the goodput band uses.
A full fit takes ~20 minutes on 2 cores; ``--start`` begins from a saved fit (``--save``).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from placement.serving.efficiency import CALIBRATION_CSV
from placement.serving.hardware import bundled_accelerators, get_accelerator
from placement.serving.joint import JointFit, die_of, fit_jointly, fold_predictions, terms_for
from placement.serving.measured import MeasuredPoint, load_measured, median_points

ROOT = Path(__file__).resolve().parents[1]
Row = list[str]
ENGINE_CARRIED = (
    "step_overhead_ms",
    "layer_floor_us",
    "sequence_us",
    "allreduce_latency_us",
    "attention_efficiency",
    "gemm_half_tokens",
    "log_sigma_held_out",
    "log_sigma_model_out",
)
"""The engine's figures a family without points takes from the nearest measured one."""


def _label(p: MeasuredPoint) -> str:
    return f"{p.model} {p.accelerator} x{p.gpus} {p.precision} {p.scenario}"


def _rms(logs: list[float]) -> float:
    return float(np.sqrt(np.mean(np.square(logs)))) if logs else float("nan")


def _mae(logs: list[float]) -> float:
    return float(np.mean(np.abs(np.expm1(logs)))) if logs else float("nan")


def _family(p: MeasuredPoint) -> str:
    return get_accelerator(p.accelerator).family


def _folds(fit: JointFit, key: Callable[[MeasuredPoint], str], pool: ProcessPoolExecutor) -> dict[int, float]:
    """Log error of every point predicted with its group (model or die) left out."""
    out: dict[int, float] = {}
    for group in sorted({key(p) for p in fit.points}):
        _, predicted = fold_predictions(fit, lambda p, g=group: key(p) == g, pool=pool)
        out.update(predicted)
    return out


def _table(title: str, fit: JointFit, logs: dict[int, float]) -> None:
    print(f"\n{title}")
    for k, p in enumerate(fit.points):
        if k in logs:
            print(f"  {_label(p):52s} {p.tok_s:10,.0f} {math.exp(logs[k]) * p.tok_s:10,.0f} {math.expm1(logs[k]):+7.1%}")
    for name, key in (("model", lambda p: p.model), ("part", lambda p: die_of(p.accelerator))):
        groups: dict[str, list[float]] = {}
        for k, p in enumerate(fit.points):
            if k in logs:
                groups.setdefault(key(p), []).append(logs[k])
        print("  " + "; ".join(f"{g} {_mae(v):.1%} ({len(v)})" for g, v in sorted(groups.items())) + f"  [by {name}]")
    print(f"  all: mean |error| {_mae(list(logs.values())):.1%} over {len(logs)} configurations")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--start", type=Path, help="start from a fit saved with --save")
    parser.add_argument("--save", type=Path, help="save the fitted figures here (JSON)")
    parser.add_argument("--write", action="store_true", help="write data/serving/calibration.csv")
    args = parser.parse_args()
    # every published point inside latency limits: the Llama-2-70B rows and the other models' rows (``use`` = ``fit``);
    # the throughput tables (``check``) have no limit
    points = [p for p in median_points(load_measured()) if p.ttft_p99_ms < 1e8]
    terms = terms_for(points)
    start = None
    if args.start is not None:
        saved = json.loads(args.start.read_text(encoding="utf-8"))
        start = [saved.get(t.label, t.prior) for t in terms]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        fit = fit_jointly(points, pool=pool, start=start, iterations=args.iterations, progress=print)
        if args.save is not None:
            args.save.write_text(json.dumps({t.label: float(v) for t, v in zip(fit.terms, fit.values, strict=True)}, indent=1))
        print(f"\nTERMS ({len(points)} configurations):")
        for t, v in zip(fit.terms, fit.values, strict=True):
            print(f"  {t.label:48s} prior {t.prior:8.3f}  fit {v:8.3f}")
        fitted = {k: float(e) for k, e in enumerate(fit.log_errors)}
        _table("FITTED (real runs at the joint fit): measured, model, error", fit, fitted)
        model_out = _folds(fit, lambda p: p.model, pool)
        _table("LEAVE ONE MODEL OUT (the rest refitted; real runs)", fit, model_out)
        part_out = _folds(fit, lambda p: die_of(p.accelerator), pool)
        _table("LEAVE ONE PART OUT (the rest refitted; real runs)", fit, part_out)
    if args.write:
        write_table(fit, fitted, part_out, model_out)


def _on(fit: JointFit, family: str) -> str:
    mine = [p for p in fit.points if not family or _family(p) == family]
    models = sorted({p.model for p in mine})
    return f"{len(mine)} median MLPerf points ({', '.join(models)}), fitted jointly with {len(fit.points)} in all"


def write_table(fit: JointFit, fitted: dict[int, float], part_out: dict[int, float], model_out: dict[int, float]) -> None:
    """``data/serving/calibration.csv``: the fitted figures, the carried-over ones, and the band's errors."""
    rows: list[Row] = []
    families = sorted({t.family for t in fit.terms if t.family})
    gemm: dict[tuple[str, str], list[float]] = {}
    for t, v in zip(fit.terms, fit.values, strict=True):
        if t.parameter == "gemm_efficiency":
            gemm.setdefault((t.family, t.precision), []).append(float(v))
            mine = [p for p in fit.points if die_of(p.accelerator) == t.die and p.precision == t.precision]
            models = ", ".join(sorted({p.model for p in mine}))
            measured = ", ".join(sorted({p.accelerator for p in mine}))
            on = f"{len(mine)} median MLPerf points ({models}) of the {t.die} die on {measured}"
            for part in sorted(a for a in bundled_accelerators() if die_of(a) == t.die):
                rows.append(
                    [
                        t.family,
                        part,
                        t.parameter,
                        t.precision,
                        f"{v:.4f}",
                        "fitted",
                        f"{on}, fitted jointly with {len(fit.points)} in all",
                    ]
                )
        elif t.family:
            rows.append([t.family, "", t.parameter, "", f"{v:.4f}", "fitted", _on(fit, t.family)])
    for (family, precision), values in sorted(gemm.items()):
        mean = float(np.exp(np.mean(np.log(values))))
        rows.append(
            [family, "", "gemm_efficiency", precision, f"{mean:.4f}", "fitted", "geometric mean of the family's fitted dies"]
        )
    padding = fit.value("gemm_half_tokens")
    for family in families:
        if padding is not None:
            rows.append(
                [
                    family,
                    "",
                    "gemm_half_tokens",
                    "",
                    f"{padding:.2f}",
                    "fitted",
                    f"shared by every family (tensor-core tiles): {_on(fit, '')}",
                ]
            )
        for parameter, logs in (
            ("log_sigma_fitted", fitted),
            ("log_sigma_held_out", part_out),
            ("log_sigma_model_out", model_out),
        ):
            mine = [e for k, e in logs.items() if _family(fit.points[k]) == family]
            if mine:
                rows.append([family, "", parameter, "", f"{_rms(mine):.4f}", "fitted", f"RMS log error of {len(mine)} points"])
    rows += _carried_over(rows)
    with CALIBRATION_CSV.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(["family", "accelerator", "parameter", "precision", "value", "basis", "fitted_on"])
        writer.writerows(rows)
    print(f"\nwrote {CALIBRATION_CSV} ({len(rows)} figures)")


def _carried_over(rows: list[Row]) -> list[Row]:
    """Figures for families and precisions without a point, from the nearest fitted ones (``extrapolated``)."""
    have = {(r[0], r[1], r[2], r[3]): float(r[4]) for r in rows}
    out: list[Row] = []

    def carry(
        family: str, parameter: str, precision: str, source: str, why: str, scale: float = 1.0, from_precision: str | None = None
    ) -> None:
        value = have.get((source, "", parameter, precision if from_precision is None else from_precision))
        if value is not None and (family, "", parameter, precision) not in have:
            out.append([family, "", parameter, precision, f"{value * scale:.4f}", "extrapolated", why])
            have[(family, "", parameter, precision)] = value * scale

    carry(
        "nvidia-blackwell",
        "gemm_efficiency",
        "fp8",
        "nvidia-hopper",
        "no Blackwell FP8 point: nvidia-hopper's FP8 fraction (the same vendor's FP8 kernels)",
    )
    for parameter in ENGINE_CARRIED:
        carry("amd-cdna4", parameter, "", "amd-cdna3", "no MI355X point: amd-cdna3's figure (the same ROCm serving engine)")
    carry("amd-cdna4", "gemm_efficiency", "fp8", "amd-cdna3", "no MI355X point: amd-cdna3's FP8 fraction (the same ROCm kernels)")
    carry(
        "amd-cdna4",
        "gemm_efficiency",
        "fp4",
        "amd-cdna3",
        "no AMD FP4 point: amd-cdna3's FP8 fraction of peak (the same ROCm GEMM libraries at the FP4 peak; no FP4/FP8 "
        "ratio of one die is measured to scale it by)",
        from_precision="fp8",
    )
    for parameter in ENGINE_CARRIED:
        carry(
            "huawei-ascend", parameter, "", "amd-cdna3", "no Ascend point: the least tuned measured engine's figure (amd-cdna3)"
        )
    return out


if __name__ == "__main__":
    main()
