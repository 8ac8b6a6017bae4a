"""Calibrate the serving model on the measured points and write ``data/serving/calibration.csv``.

Usage::

    .venv/bin/python benchmarks/calibrate_serving.py [--workers 2] [--cache FILE.npz] [--write]

Fits, per accelerator family, the GEMM fraction of peak at the family's measured precision and the per-step
overhead (``placement.serving.calibration``) on the median run of each configuration of ``data/serving/measured.csv``
(the latest MLPerf round of each: the current software). Prints, per point, the model before (catalog priors)
and after (a real run at the fitted figures), then the cross-validation: each accelerator left out (its family
refitted on the rest), and each family predicted with another family's figures (a generation left out). Older
rounds are printed as a software-vintage check, never fitted. ``--write`` writes the calibration table, with the
extrapolated figures (families or precisions without a measured point) marked as such.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from placement.serving.calibration import (
    FamilyFit,
    Surface,
    family_of,
    fit_family,
    goodput_tok_s,
    leave_one_accelerator_out,
    priors,
    surfaces,
    with_fit,
)
from placement.serving.efficiency import CALIBRATION_CSV
from placement.serving.hardware import bundled_accelerators, get_accelerator
from placement.serving.measured import MeasuredPoint, load_measured, median_points

ROOT = Path(__file__).resolve().parents[1]


def _surfaces(points: list[MeasuredPoint], cache: Path | None, workers: int) -> list[Surface]:
    """The points' surfaces, those in ``cache`` (by point id, same measured figure) read back, the rest run."""
    known: dict[str, np.ndarray] = {}
    if cache is not None and cache.is_file():
        stored = np.load(cache, allow_pickle=False)
        known = {f"{i}@{t:.6g}": stored["grids"][k] for k, (i, t) in enumerate(zip(stored["ids"], stored["tok_s"], strict=True))}
    key = {p.point_id: f"{p.point_id}@{p.tok_s:.6g}" for p in points}
    missing = [p for p in points if key[p.point_id] not in known]
    for s in surfaces(missing, workers=workers, progress=print):
        known[key[s.point.point_id]] = s.log_goodput
    if cache is not None:
        ids = [p.point_id for p in points]
        np.savez(
            cache, ids=np.array(ids), tok_s=np.array([p.tok_s for p in points]), grids=np.stack([known[key[i]] for i in ids])
        )
    return [Surface(p, known[key[p.point_id]]) for p in points]


def _label(p: MeasuredPoint) -> str:
    return f"{p.accelerator} x{p.gpus} {p.precision} {p.scenario} {p.round}"


def _rms(logs: list[float]) -> float:
    return float(np.sqrt(np.mean(np.square(logs)))) if logs else float("nan")


def _mean_abs(errors: list[float]) -> float:
    return float(np.mean(np.abs(errors))) if errors else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--cache", type=Path, help="keep the surfaces here (they take ~1 s per grid node)")
    parser.add_argument("--write", action="store_true", help="write data/serving/calibration.csv")
    args = parser.parse_args()
    runs = load_measured()
    points = median_points(runs)
    found = _surfaces(points, args.cache, args.workers)
    families: dict[str, list[Surface]] = {}
    for s in found:
        families.setdefault(family_of(s.point), []).append(s)
    fits: dict[str, FamilyFit] = {}
    print("\nFITTED (median run of each configuration, latest round; a real run at the fitted figures):")
    print(f"{'point':36s} {'measured':>9s} {'prior':>9s} {'err':>7s} {'fitted':>9s} {'err':>7s}")
    before, after = [], []
    fitted_logs: dict[str, list[float]] = {}
    held_logs: dict[str, list[float]] = {}
    for family, members in sorted(families.items()):
        prior_gemm, prior_overhead = priors(members[0].point)
        fit = fit_family(family, members, prior_gemm=prior_gemm, prior_overhead_ms=prior_overhead)
        fits[family] = fit
        parts = ", ".join(f"{a} {g:.3f}" for a, g in fit.gemm_by_accelerator.items())
        print(
            f"-- {family} {fit.precision}: gemm_efficiency {parts} (family {fit.gemm_efficiency:.3f}, prior {prior_gemm}), "
            f"step_overhead_ms {fit.step_overhead_ms:.2f} (prior {prior_overhead})"
        )
        for s in members:
            p = s.point
            accel = get_accelerator(p.accelerator)
            prior = goodput_tok_s(p, accel.gemm_efficiency, accel.step_overhead_ms)  # the catalog's cited figures
            fitted = with_fit(p, fit)
            before.append(prior / p.tok_s - 1)
            after.append(fitted / p.tok_s - 1)
            fitted_logs.setdefault(family, []).append(float(np.log(fitted / p.tok_s)))
            print(f"{_label(p):36s} {p.tok_s:9,.0f} {prior:9,.0f} {before[-1]:+7.1%} {fitted:9,.0f} {after[-1]:+7.1%}")
    print(f"{'mean |error|':36s} {'':9s} {'':9s} {_mean_abs(before):7.1%} {'':9s} {_mean_abs(after):7.1%}")
    print("\nLEAVE ONE ACCELERATOR OUT (family refitted without it; its points predicted, real runs):")
    held_errors = []
    for family, members in sorted(families.items()):
        for left, fit, _ in leave_one_accelerator_out(family, members):
            for s in (m for m in members if m.point.accelerator == left):
                predicted = with_fit(s.point, fit)
                held_errors.append(predicted / s.point.tok_s - 1)
                held_logs.setdefault(family, []).append(float(np.log(predicted / s.point.tok_s)))
                print(
                    f"{_label(s.point):36s} {s.point.tok_s:9,.0f} predicted {predicted:9,.0f} {held_errors[-1]:+7.1%}"
                    f"  (fit on the rest: gemm {fit.gemm_for(left):.3f}, overhead {fit.step_overhead_ms:.2f} ms)"
                )
    print(f"{'mean |error| held out':36s} {_mean_abs(held_errors):7.1%}")
    print("\nLEAVE A GENERATION OUT (a family predicted with another family's figures; real runs):")
    for family, members in sorted(families.items()):
        for other, fit in sorted(fits.items()):
            if other == family:
                continue
            errors = [with_fit(s.point, fit) / s.point.tok_s - 1 for s in members]
            print(
                f"  {family} with {other}'s figures: mean |error| {_mean_abs(errors):.1%} ({', '.join(f'{e:+.0%}' for e in errors)})"
            )
    print("\nSOFTWARE VINTAGE (older rounds of the same configurations; checks, never fitted):")
    latest = {(p.accelerator, p.scenario): p.round for p in points}
    for p in median_points([r for r in runs if r.round < latest.get((r.accelerator, r.scenario), "")]):
        fit = fits.get(family_of(p))
        if fit is None:
            continue
        got = with_fit(p, fit)
        print(f"{_label(p):36s} {p.tok_s:9,.0f} model {got:9,.0f} {got / p.tok_s - 1:+7.1%}")
    print("\nBAND (RMS log error per family: the goodput band's sigma):")
    for family in sorted(fits):
        print(f"  {family}: fitted {_rms(fitted_logs.get(family, [])):.3f}, held out {_rms(held_logs.get(family, [])):.3f}")
    if args.write:
        write_table(fits, held_errors, fitted_logs, held_logs)


def write_table(
    fits: dict[str, FamilyFit], held_errors: list[float], fitted_logs: dict[str, list[float]], held_logs: dict[str, list[float]]
) -> None:
    """``data/serving/calibration.csv``: the fitted figures and the extrapolated ones, each with its basis."""
    rows = []
    for family, fit in sorted(fits.items()):
        on = f"{len(fit.points)} median MLPerf Llama-2-70B points ({', '.join(fit.points)})"
        for accelerator, gemm in fit.gemm_by_accelerator.items():
            rows.append([family, accelerator, "gemm_efficiency", fit.precision, f"{gemm:.4f}", "fitted", on])
        parts = " and ".join(fit.gemm_by_accelerator)
        rows.append(
            [
                family,
                "",
                "gemm_efficiency",
                fit.precision,
                f"{fit.gemm_efficiency:.4f}",
                "fitted",
                f"geometric mean of the fitted {parts} (a part of the family without a point gets it)",
            ]
        )
        rows.append([family, "", "step_overhead_ms", "", f"{fit.step_overhead_ms:.3f}", "fitted", on])
        logs = fitted_logs.get(family, [])
        rows.append(
            [family, "", "log_sigma_fitted", "", f"{_rms(logs):.4f}", "fitted", f"RMS log error on the {len(logs)} points fitted"]
        )
        held = held_logs.get(family, [])
        if held:
            rows.append(
                [
                    family,
                    "",
                    "log_sigma_held_out",
                    "",
                    f"{_rms(held):.4f}",
                    "fitted",
                    f"RMS log error of the {len(held)} points predicted with their accelerator left out",
                ]
            )
    hopper, blackwell, cdna3 = fits.get("nvidia-hopper"), fits.get("nvidia-blackwell"), fits.get("amd-cdna3")
    if hopper and blackwell:
        rows.append(
            [
                "nvidia-blackwell",
                "",
                "gemm_efficiency",
                "fp8",
                f"{hopper.gemm_efficiency:.4f}",
                "extrapolated",
                "no Blackwell FP8 point: nvidia-hopper's fitted FP8 fraction (the same vendor's FP8 kernels)",
            ]
        )
    if cdna3:
        rows.append(
            [
                "amd-cdna4",
                "",
                "gemm_efficiency",
                "fp8",
                f"{cdna3.gemm_efficiency:.4f}",
                "extrapolated",
                "no MI355X point: amd-cdna3's fitted FP8 fraction (the same ROCm kernels)",
            ]
        )
        rows.append(
            [
                "amd-cdna4",
                "",
                "step_overhead_ms",
                "",
                f"{cdna3.step_overhead_ms:.3f}",
                "extrapolated",
                "no MI355X point: amd-cdna3's fitted overhead (the same serving engine)",
            ]
        )
        if hopper and blackwell:
            ratio = blackwell.gemm_efficiency / hopper.gemm_efficiency
            rows.append(
                [
                    "amd-cdna4",
                    "",
                    "gemm_efficiency",
                    "fp4",
                    f"{cdna3.gemm_efficiency * ratio:.4f}",
                    "extrapolated",
                    f"no AMD FP4 point: amd-cdna3's FP8 fraction x NVIDIA's fitted FP4/FP8 ratio {ratio:.3f}",
                ]
            )
    with CALIBRATION_CSV.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(["family", "accelerator", "parameter", "precision", "value", "basis", "fitted_on"])
        writer.writerows(rows)
    accelerators = bundled_accelerators()
    print(f"\nwrote {CALIBRATION_CSV} ({len(rows)} figures; held-out mean |error| {_mean_abs(held_errors):.1%});")
    print("families in the catalog:", sorted({a.family for a in accelerators.values()}))


if __name__ == "__main__":
    main()
