"""Measured points as data and the calibration: the loader's errors, the fit on surfaces worked by hand, and
which figure is in force (override over calibration over catalog)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from placement._errors import InputError
from placement.serving.efficiency import (
    CALIBRATION_CSV,
    ServingEfficiency,
    achieved,
    bundled_calibration,
    load_calibration,
)
from placement.serving.hardware import bundled_accelerators, get_accelerator
from placement.serving.measured import MEASURED_CSV, MeasuredPoint, load_measured, median_points
from placement.serving.request import serve

HEADER = (
    "point_id,model,accelerator,gpus,precision,input_tokens,input_tokens_max,output_tokens,ttft_p99_ms,itl_p99_ms,tok_s,source\n"
)


def _point(accelerator: str = "h200", tok_s: float = 1000.0, point_id: str = "p", **kw: object) -> MeasuredPoint:
    base = MeasuredPoint(point_id, "llama-2-70b", accelerator, 8, "fp8", 222, 290, 1021, 2000.0, 200.0, tok_s)
    return replace(base, **kw)  # type: ignore[arg-type]


def test_the_bundled_points_load_and_name_only_catalog_parts() -> None:
    every = load_measured()
    points = [p for p in every if p.model == "llama-2-70b"]
    assert len(points) == 87  # 86 from the shared MLPerf file, 1 from DESIGN.md
    assert {p.accelerator for p in points} == {"h100-sxm", "h200", "b200", "gb200", "mi300x", "mi325x"}
    assert {p.precision for p in points if p.accelerator in ("b200", "gb200")} == {"fp4"}
    assert all(p.source.startswith("MLCommons MLPerf Inference") for p in every)
    # One configuration, one median: B200 Server v5.1 is the median of its 12 systems.
    b200 = [p for p in median_points(points) if p.accelerator == "b200" and p.scenario == "Server"]
    assert len(b200) == 1 and b200[0].round == "v5.1"
    runs = sorted(p.tok_s for p in points if p.accelerator == "b200" and p.scenario == "Server" and p.round == "v5.1")
    assert b200[0].tok_s == pytest.approx(float(np.median(runs)))
    # The throughput tables (no latency limit) are published checks, never fitted: 20 TensorRT-LLM, 4 AMD vLLM.
    tables = load_measured(use="check")
    assert len(tables) == 24 and all(p.use == "check" and p.tp == p.gpus for p in tables)
    assert {p.model for p in tables} == {"llama-2-70b", "llama-3.1-70b"}
    assert {p.software for p in tables} == {"TensorRT-LLM v0.13", "vLLM 0.9.0.1, ROCm 6.4.1"}
    # The other MLPerf LLM benchmarks (Llama-3.1-405B / 8B, DeepSeek-R1), one node's figure each, fitted with
    # Llama-2-70B: their own limits and dataset lengths, e.g. DeepSeek-R1 Server 2,000 / 80 ms, prompts 804 / 3,140.
    others = [p for p in every if p.model != "llama-2-70b"]
    assert len(others) == 64 and {p.model for p in others} == {"llama-3.1-405b", "llama-3.1-8b", "deepseek-r1"}
    r1 = [p for p in others if p.model == "deepseek-r1"]
    assert {(p.ttft_p99_ms, p.itl_p99_ms, p.input_tokens, p.input_tokens_max) for p in r1} == {(2000.0, 80.0, 804, 3140)}
    rack = [p for p in others if p.accelerator == "gb200-nvl72" and p.model == "deepseek-r1"]
    assert len(rack) == 1 and rack[0].gpus == 72 and rack[0].tok_s == pytest.approx(167578.06)
    # Each run's own p99s, below the limits it held: the evidence of where it ran (8B Server at ~25-31 ms of 100).
    logged = [p for p in others if p.tpot_p99_measured_ms is not None]
    assert len(logged) == 64 and all(p.tpot_p99_measured_ms <= p.itl_p99_ms for p in logged)  # type: ignore[operator]
    assert all(0 < (p.ttft_p99_measured_ms or 0) <= p.ttft_p99_ms for p in logged)
    small = median_points([p for p in others if p.model == "llama-3.1-8b" and p.scenario == "Server"])
    assert all((p.tpot_p99_measured_ms or 1e9) < 0.4 * p.itl_p99_ms for p in small)
    assert all(p.tpot_p99_measured_ms is None for p in points)  # the Llama-2-70B file has no latencies
    assert not {p.point_id for p in tables} & {p.point_id for p in every}


def test_a_bad_file_lists_every_problem_by_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text(
        HEADER
        + "a,llama-2-70b,h2OO,8,fp8,222,1021,290,2000,200,30000,me\n"
        + "b,llama-2-70b,h100-sxm,8,fp4,222,1021,290,2000,200,30000,me\n"
        + "c,llama-2-70b,h100-sxm,16,fp8,222,100,290,2000,200,30000,me\n"
        + "c,llama-2-7b,h100-sxm,8,fp8,222,1021,290,2000,200,-5,me\n"
    )
    with pytest.raises(InputError) as caught:
        load_measured(path)
    text = str(caught.value)
    assert "unknown accelerator 'h2OO'" in text
    assert "h100-sxm has no 'fp4'" in text
    assert "16 GPUs is more than one h100-sxm node (8)" in text
    assert "is below input_tokens" in text
    assert "unknown model 'llama-2-7b'" in text
    assert "'c' appears twice" in text
    assert "tok_s" in text and "line 5" in text


def test_a_row_is_fitted_or_a_check_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    row = "llama-2-70b,h100-sxm,8,fp8,222,1021,290,2000,200,30000,me"
    path.write_text(HEADER.replace("source", "source,tp,use") + f"a,{row},8,\nb,{row},,check\nc,{row},4,fitt\n")
    with pytest.raises(InputError) as caught:
        load_measured(path)
    assert "unknown use 'fitt'" in str(caught.value) and "line 4" in str(caught.value)
    path.write_text(HEADER.replace("source", "source,tp,use") + f"a,{row},8,\nb,{row},,check\n")
    (fitted,), (check,) = load_measured(path), load_measured(path, use="check")
    assert (fitted.point_id, fitted.tp, fitted.request().tp) == ("a", 8, 8)
    assert (check.point_id, check.tp, check.use) == ("b", None, "check")


def test_override_over_calibration_over_catalog() -> None:
    h200 = get_accelerator("h200")
    table = bundled_calibration()
    fitted = table.get(("nvidia-hopper", "h200", "gemm_efficiency", "fp8"))
    assert fitted is not None and fitted.basis == "fitted"
    assert achieved(h200, ServingEfficiency(), "fp8").tensor == fitted.value
    assert achieved(h200, ServingEfficiency(tensor=0.2), "fp8").tensor == 0.2
    assert achieved(replace(h200, family=""), ServingEfficiency(), "fp8").tensor == h200.gemm_efficiency
    # No precision: the catalog's (nothing is assumed about which precision the caller means).
    assert achieved(h200, ServingEfficiency()).tensor == h200.gemm_efficiency
    overhead = table[("nvidia-hopper", "", "step_overhead_ms", "")].value
    assert achieved(h200, ServingEfficiency()).step_overhead_ms == overhead


def test_a_part_of_no_calibrated_family_takes_the_fitted_families_floors() -> None:
    # A planner's own part (a family the calibration has never seen) still pays a step's launch, a layer's kernels
    # and a sequence's bookkeeping: the geometric mean of the fitted families' figures, not the floors off.
    from placement.serving.request import calibration_report

    table = bundled_calibration()
    families = sorted({k[0] for k, f in table.items() if k[2] == "layer_floor_us" and f.basis == "fitted"})
    assert len(families) >= 3
    expected = float(np.exp(np.mean([np.log(table[(f, "", "layer_floor_us", "")].value) for f in families])))
    own = replace(get_accelerator("h200"), id="acme-1", family="acme-accel", die="")
    figures = achieved(own, ServingEfficiency(), "fp8")
    assert figures.layer_floor_us == pytest.approx(expected)
    assert figures.sequence_us > 0 and figures.gemm_half_tokens > 0
    # the fabric's latency and the attention kernels' fraction stay the catalog's cited figures
    assert figures.allreduce_latency_us == own.allreduce_latency_us and figures.attention == own.attention_efficiency
    report = calibration_report(own, "fp8")
    assert report["layer_floor_us"]["basis"] == "extrapolated" and "acme-accel" in report["layer_floor_us"]["on"]
    assert report["gemm_efficiency"]["basis"] == "catalog prior"
    # 80 layers of floors make its steps longer, so its goodput lower, than with the floors off
    from placement.serving.hardware import get_model
    from placement.serving.kernels import decode_step

    with_floors = decode_step(get_model("llama-2-70b"), own, "fp8", tp=1, batch=64, context_tokens=500)
    off = ServingEfficiency(step_overhead_ms=0.0, layer_floor_us=0.0, sequence_us=0.0)
    without = decode_step(get_model("llama-2-70b"), own, "fp8", tp=1, batch=64, context_tokens=500, eff=off)
    assert with_floors.overhead_ms > without.overhead_ms + 80 * expected / 1e3 * 0.99


def test_the_bundled_calibration_says_how_each_figure_was_found() -> None:
    table = load_calibration(CALIBRATION_CSV)
    families = {a.family for a in bundled_accelerators().values()}
    assert {key[0] for key in table} <= families
    for figure in table.values():
        assert figure.basis in {"fitted", "extrapolated"} and figure.fitted_on
    # FP4 is its own precision: Blackwell's fitted FP4 fraction is not its FP8 one.
    bw = {p: table[("nvidia-blackwell", "", "gemm_efficiency", p)].value for p in ("fp4", "fp8")}
    assert bw["fp4"] != bw["fp8"]
    assert table[("amd-cdna4", "", "gemm_efficiency", "fp8")].basis == "extrapolated"


def test_a_bad_calibration_table_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "calibration.csv"
    path.write_text(
        "family,accelerator,parameter,precision,value,basis,fitted_on\n"
        "x,,gemm_efficiency,fp8,1.4,fitted,me\n"
        "x,,hbm_efficiency,,0.9,fitted,me\n"
        "x,,step_overhead_ms,,5,guessed,me\n"
    )
    with pytest.raises(InputError) as caught:
        load_calibration(path)
    text = str(caught.value)
    assert "a GEMM fraction must be in (0, 1]" in text
    assert "must be one of gemm_efficiency, step_overhead_ms" in text
    assert "must be one of fitted, extrapolated, prior" in text


@pytest.mark.slow
def test_the_calibrated_model_on_the_points_it_was_fitted_on() -> None:
    """The joint calibration at its own points (real runs): 8.6 % mean |error| over the 30 configurations, at most
    10.6 % for one model (Llama-2-70B; DeepSeek-R1 4.0 %; ``benchmarks/calibrate_serving.py`` prints every point)."""
    points = [p for p in median_points(load_measured(MEASURED_CSV)) if p.ttft_p99_ms < 1e8]
    assert len(points) == 30
    errors = [(p.model, f"{p.accelerator} {p.scenario}", abs(serve(p.request()).goodput_tok_s / p.tok_s - 1)) for p in points]
    assert float(np.mean([e for _, _, e in errors])) <= 0.09, errors
    for model in {m for m, _, _ in errors}:
        assert float(np.mean([e for m, _, e in errors if m == model])) <= 0.11, model


def test_goodput_says_where_each_calibrated_figure_comes_from() -> None:
    from placement.serving.request import calibration_report

    h100 = calibration_report(get_accelerator("h100-sxm"), "fp8")
    assert h100["gemm_efficiency"]["basis"] == "fitted" and "MLPerf" in h100["gemm_efficiency"]["on"]
    # The HGX B300 has no point of its own: it carries the B300 die, whose fraction GB300's points fit.
    b300 = calibration_report(get_accelerator("b300"), "fp4")
    assert b300["gemm_efficiency"]["basis"] == "fitted" and "b300 die on gb300" in b300["gemm_efficiency"]["on"]
    assert (
        b300["gemm_efficiency"]["value"] == calibration_report(get_accelerator("gb300-nvl72"), "fp4")["gemm_efficiency"]["value"]
    )
    assert calibration_report(get_accelerator("mi355x"), "fp4")["gemm_efficiency"]["basis"] == "extrapolated"
    # The per-layer floor is fitted on every model's Hopper points; MI355X has none and carries CDNA3's.
    assert h100["layer_floor_us"]["basis"] == "fitted" and "llama-3.1-405b" in h100["layer_floor_us"]["on"]
    assert 5.0 <= h100["layer_floor_us"]["value"] <= 120.0, "inside the prior's physical bounds"
    assert calibration_report(get_accelerator("mi355x"), "fp4")["layer_floor_us"]["basis"] == "extrapolated"
    # The tile padding is every GEMM's: fitted on every model's points, reported for every part.
    assert h100["gemm_half_tokens"]["basis"] == "fitted" and "llama-2-70b" in h100["gemm_half_tokens"]["on"]
    # The attention kernels' fraction and the collective's latency are fitted per family too, and say so.
    for term in ("attention_efficiency", "allreduce_latency_us"):
        assert h100[term]["basis"] == "fitted", term
        assert calibration_report(get_accelerator("mi355x"), "fp4")[term]["basis"] == "extrapolated", term
    own = replace(get_accelerator("h200"), id="acme-1", family="acme-accel", die="")
    assert calibration_report(own, "fp8")["attention_efficiency"] == {
        "value": own.attention_efficiency,
        "basis": "catalog prior",
        "on": "data/serving/accelerators.csv efficiency_source",
    }
    # A precision the calibration has no figure for keeps the catalog's prior, and says so.
    assert calibration_report(get_accelerator("h100-sxm"), "bf16")["gemm_efficiency"]["basis"] == "catalog prior"
