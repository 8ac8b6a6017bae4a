"""A planner's own measurements: refitting a part's GEMM fraction, `placement calibrate`, `goodput --measurements`
and `serving.measurements` in a scenario."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement._errors import InputError
from placement.cli import main
from placement.instance.build import build_instance
from placement.scenario.load import load_scenario
from placement.serving.calibration import fit_parts, goodput_tok_s
from placement.serving.measured import MeasuredPoint, load_measured
from placement.serving.request import ServingRequest, serve
from tests.conftest import write_scenario
from tests.profiles.test_profiles import physics_class

HEADER = (
    "point_id,model,accelerator,gpus,precision,input_tokens,input_tokens_max,output_tokens,ttft_p99_ms,itl_p99_ms,tok_s,source\n"
)
TRUE_GEMM = 0.45
"""The GEMM fraction the made-up measurement was produced with (the bundled calibration has H200 at 0.83)."""


def _point(tok_s: float, point_id: str = "mine-1") -> MeasuredPoint:
    # one GPU of Llama-3.1-8B: the part's GEMM fraction moves it as much as a node of 70B, in a third of the time
    return MeasuredPoint(point_id, "llama-3.1-8b", "h200", 1, "fp8", 222, 290, 1021, 450.0, 40.0, tok_s)


@pytest.fixture(scope="module")
def measured_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A measurement the model itself gives at TRUE_GEMM: the refit must find it again.
    tok_s = goodput_tok_s(_point(1.0), TRUE_GEMM)
    path = tmp_path_factory.mktemp("mine") / "measured.csv"
    path.write_text(HEADER + f"mine-1,llama-3.1-8b,h200,1,fp8,222,1021,290,450,40,{tok_s:.3f},our benchmark\n")
    return path


def test_the_refit_finds_the_fraction_a_measurement_was_made_with(measured_file: Path) -> None:
    (fit,) = fit_parts(load_measured(measured_file))
    assert (fit.accelerator, fit.precision) == ("h200", "fp8")
    # The prior (the bundled calibration's 0.83) pulls a little; one exact point outweighs it.
    assert fit.gemm_efficiency == pytest.approx(TRUE_GEMM, abs=0.02)
    assert fit.fitted_tok_s[0] == pytest.approx(fit.measured_tok_s[0], rel=0.03)
    assert fit.before_tok_s[0] > fit.measured_tok_s[0] * 1.05  # the bundled calibration was faster than this node
    assert fit.held_out_tok_s == ()  # one point: nothing to hold out


def test_a_scenario_with_measurements_plans_on_the_refitted_part(measured_file: Path, tmp_path: Path) -> None:
    serving = {"model": "llama-3.1-70b", "accelerator": "h200", "measurements": str(measured_file)}
    instance = build_instance(load_scenario(write_scenario(tmp_path, classes=[physics_class()], serving=serving)))
    (fit,) = fit_parts(load_measured(measured_file))
    from placement.serving.efficiency import ServingEfficiency

    want = serve(
        ServingRequest("llama-3.1-70b", "h200", 8, "fp8", 1024, 290, 170, 50),
        efficiency=ServingEfficiency(tensor=fit.gemm_efficiency),
    )
    assert instance.profiles[0].goodput_tok_s_per_node == pytest.approx(want.goodput_tok_s)
    assert instance.profiles[0].source == "serving model, refitted on serving.measurements"


def test_a_missing_measurements_file_names_the_key(tmp_path: Path) -> None:
    serving = {"model": "llama-3.1-70b", "accelerator": "h200", "measurements": "nope.csv"}
    with pytest.raises(InputError) as caught:
        build_instance(load_scenario(write_scenario(tmp_path, classes=[physics_class()], serving=serving)))
    assert "serving.measurements" in str(caught.value) and "no such file" in str(caught.value)


def test_calibrate_prints_the_fit_and_goodput_uses_it(measured_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", str(measured_file), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "h200 fp8: gemm_efficiency" in out and "held out: needs two configurations of a part" in out
    args = ["goodput", "--model", "llama-3.1-8b", "--accelerator", "h200", "--gpus", "1", "--input-tokens", "222"]
    args += ["--input-tokens-max", "1021"]
    args += [
        "--output-tokens",
        "290",
        "--ttft-p99-ms",
        "450",
        "--itl-p99-ms",
        "40",
        "--measurements",
        str(measured_file),
        "--json",
    ]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["calibration"]["gemm_efficiency"]["basis"] == "refitted"
    assert report["goodput_tok_s"] == pytest.approx(report["measurements"][0]["fitted_tok_s"][0])


def test_calibrate_on_a_bad_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(HEADER + "a,llama-2-70b,h200,8,fp8,222,1021,290,450,40,lots,me\n")
    assert main(["calibrate", str(path)]) == 1
    err = capsys.readouterr().err
    assert "tok_s" in err and "line 2" in err and "Traceback" not in err
