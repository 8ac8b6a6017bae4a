"""Figures the pages show are what scripts print today: the exact ratio's tables (scripts/dinkelbach_table.py, from a
plan's summary) and the first plan's transcript (scripts/first_plan_transcript.py), each compared with a fresh run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from placement.cli import main
from placement.scenario.load import load_scenario
from tests.conftest import REPO, script_module, write_scenario

PAGE = REPO / "docs" / "models" / "optimisation.md"


def _figures(text: str) -> dict[str, str]:
    lines = text.split("\n\n")[0].splitlines()[2:]
    return dict(line.strip("| ").split(" | ", 1) for line in lines)


def test_the_ratio_and_each_step_are_printed_from_the_summary(tmp_path: Path) -> None:
    script = script_module("dinkelbach_table")
    scenario = write_scenario(tmp_path, policy={"unreachable": "report", "serving": "optional"})
    assert main(["solve", str(scenario), "--out", str(tmp_path / "out"), "--quiet", "--no-maps"]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    printed = script.table(summary)
    figures = _figures(printed)
    assert figures["cost per million goodput tokens"] == f"${summary['cost_per_million_goodput_tokens_usd']:.4f}"
    assert figures["least ratio proven"] == f"${summary['ratio_bound_usd_per_million_tokens']:.4f}"
    steps = summary["dinkelbach_iterations"]
    assert figures["Dinkelbach steps"] == str(len(steps)) and len(steps) >= 1
    step_lines = printed.split("\n\n")[1].splitlines()[2:]
    assert len(step_lines) == len(steps)
    last = steps[-1]
    assert f"${last['cost_usd_per_h']:,.0f}/h" in step_lines[-1]
    if last.get("ratio_bound_usd_per_tok_s") is not None:  # the ratio proven, in $/M, is the summary's bound
        assert step_lines[-1].endswith(f"${summary['ratio_bound_usd_per_million_tokens']:.4f}/M |")


def test_a_plan_without_optional_serving_is_refused_by_name(tmp_path: Path) -> None:
    script = script_module("dinkelbach_table")
    scenario = write_scenario(tmp_path)
    assert main(["solve", str(scenario), "--out", str(tmp_path / "out"), "--quiet", "--no-maps"]) == 0
    assert script.main([str(tmp_path / "out")]) == 2
    assert script.main([str(tmp_path / "missing")]) == 2
    assert script.main([]) == 2


def test_the_example_is_the_bundled_world_with_serving_optional(tmp_path: Path) -> None:
    script = script_module("dinkelbach_table")
    policy = load_scenario(script.example_scenario(tmp_path / "example.yaml")).scenario.policy
    bundled = load_scenario(REPO / "data" / "scenarios" / "default.yaml").scenario
    assert policy.serving == "optional" and policy.min_served_share == pytest.approx(0.9)
    assert policy.unreachable == bundled.policy.unreachable


@pytest.mark.slow
def test_the_pages_ratio_tables_are_what_the_script_prints_today(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = script_module("dinkelbach_table")
    assert script.main(["--solve", str(tmp_path / "example")]) == 0
    printed = capsys.readouterr().out
    page = PAGE.read_text(encoding="utf-8")
    found = re.search(r"<!-- dinkelbach_table -->\n(.*?)<!-- /dinkelbach_table -->", page, re.S)
    assert found is not None, "the page marks the script's output"
    assert found.group(1).strip() == printed.strip(), "regenerate: scripts/dinkelbach_table.py --solve DIR"


@pytest.mark.slow
def test_the_first_plan_pages_transcript_is_what_a_run_prints_today() -> None:
    # scripts/first_plan_transcript.py solves the bundled world afresh; the page's block is its output, the seconds aside
    script = script_module("first_plan_transcript")
    printed = script.transcript()
    page = (REPO / "docs" / "get-started" / "first-plan.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- first_plan -->\n```\n(.*?)```\n<!-- /first_plan -->", page, re.S)
    assert found is not None, "the page marks the script's output"

    def unstamped(text: str) -> list[str]:
        return [script.STAMP.sub("[ s] ", line) for line in text.strip().splitlines()]

    assert unstamped(found.group(1)) == unstamped(printed), "regenerate: scripts/first_plan_transcript.py"
    assert "writing results" in printed and printed.rstrip().endswith("results in out")
