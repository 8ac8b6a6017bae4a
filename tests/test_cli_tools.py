"""cli.py rtt and cli.py goodput: the contracts other tools score against."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement.cli import main


def test_rtt_json_has_the_contract_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rtt", "Chicago", "Frankfurt am Main", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"rtt_ms", "rtt_p90_ms", "path", "bound_ms", "path_type"} <= set(report)
    assert report["path_type"] == "internet"
    assert 85 <= report["rtt_ms"] <= 115  # seed: Chicago-Frankfurt 90-100 ms; the public internet is a little slower
    assert report["rtt_p90_ms"] > report["rtt_ms"]
    assert report["rtt_ms"] >= report["bound_ms"]
    assert report["path"][0] == "Chicago" and report["path"][-1] == "Frankfurt"


def test_rtt_access_adds_the_users_last_mile(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rtt", "Chicago", "Ashburn", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)["rtt_ms"]
    assert main(["rtt", "Chicago", "Ashburn", "--json", "--access"]) == 0
    assert json.loads(capsys.readouterr().out)["rtt_ms"] > plain + 1


@pytest.mark.parametrize(
    "argv",
    [
        ["rtt", "-33.87,151.21", "40.71,-74.01", "--json"],
        ["rtt", "--json", "-33.87,151.21", "40.71,-74.01"],
        ["rtt", "-33.87,151.21", "--json", "40.71,-74.01", "--path", "internet"],
    ],
)
def test_rtt_takes_southern_and_western_coordinates_as_written(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["from"]["country_code"] == "AU" and report["to"]["country_code"] == "US"
    assert report["from"]["lat"] == -33.87 and report["to"]["lon"] == -74.01
    assert report["rtt_ms"] >= report["bound_ms"] > 150


def test_rtt_backbone_is_a_separate_path_type(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rtt", "-23.55,-46.63", "40.71,-74.01", "--json", "--path", "backbone"]) == 0
    backbone = json.loads(capsys.readouterr().out)
    assert backbone["path_type"] == "backbone" and backbone["rtt_ms"] >= backbone["bound_ms"]


def test_rtt_coordinates_and_unknown_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rtt", "41.88,-87.63", "Sao Paulo"]) == 0
    assert "São Paulo" in capsys.readouterr().out
    assert main(["rtt", "Chicgo", "Paris"]) == 1
    assert "did you mean Chicago" in capsys.readouterr().err


def test_goodput_json_has_the_contract_keys(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plot = tmp_path / "pareto.png"
    args = [
        "goodput",
        "--model",
        "llama-2-70b",
        "--accelerator",
        "h200",
        "--gpus",
        "8",
        "--precision",
        "fp8",
        "--input-tokens",
        "222",
        "--input-tokens-max",
        "1021",
        "--output-tokens",
        "290",
        "--ttft-p99-ms",
        "450",
        "--itl-p99-ms",
        "40",
        "--node-cost-usd-h",
        "30",
        "--json",
        "--plot",
        str(plot),
    ]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    keys = {
        "goodput_tok_s",
        "batch",
        "itl_ms",
        "ttft_ms",
        "node_kw",
        "tokens_per_s_per_mw",
        "cost_per_million_goodput_tokens_usd",
        "prefill_ms",
        "queue_p99_ms",
        "first_decode_ms",
        "chunk_tokens",
    }
    assert keys <= set(report)
    # MLPerf v5.0 H200 interactive row, within 10 % at the joint calibration (tests/serving/test_physics.py)
    assert 0.9 * 19_424 <= report["goodput_tok_s"] <= 1.1 * 19_424
    assert report["band"]["goodput_p10_tok_s"] < report["goodput_tok_s"] < report["band"]["goodput_p90_tok_s"]
    assert report["itl_ms"] <= 40 and report["ttft_ms"] <= 450
    assert report["cost_per_million_goodput_tokens_usd"] == pytest.approx(30 / (report["goodput_tok_s"] * 3600 / 1e6))
    assert plot.stat().st_size > 0


def test_goodput_unknown_model_lists_known(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "goodput",
        "--model",
        "llama-9",
        "--accelerator",
        "h200",
        "--input-tokens",
        "1",
        "--output-tokens",
        "1",
        "--ttft-p99-ms",
        "100",
        "--itl-p99-ms",
        "50",
    ]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "unknown model 'llama-9'" in err and "llama-3.1-70b" in err


GOODPUT = ["goodput", "--model", "llama-3.1-70b", "--accelerator", "h200", "--input-tokens", "500", "--output-tokens", "200"]
GOODPUT += ["--ttft-p99-ms", "1000", "--itl-p99-ms", "50"]


def test_goodput_plot_into_a_new_folder_creates_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plot = tmp_path / "new" / "deeper" / "pareto.png"
    assert main([*GOODPUT, "--plot", str(plot)]) == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_goodput_plot_where_no_file_can_go_is_an_input_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x\n")
    assert main([*GOODPUT, "--plot", str(tmp_path / "a-file" / "pareto.png")]) == 1
    err = capsys.readouterr().err
    assert "which is a file, not a folder" in err and "internal failure" not in err
    assert main([*GOODPUT, "--plot", str(tmp_path)]) == 1
    assert "it is a folder, not a file" in capsys.readouterr().err


def test_rtt_with_an_empty_place_says_it_is_empty(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rtt", "", "Chicago"]) == 1
    err = capsys.readouterr().err
    assert "is empty" in err and "did you mean" not in err
