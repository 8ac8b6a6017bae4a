"""The library's input checks, without the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from placement._errors import InputError
from placement.analyses.validate import check_scenario_inputs, validate_file
from placement.scenario.load import load_scenario
from tests.conftest import CATALOG_HEADER, write_scenario


def test_a_valid_scenario_returns_its_sites(small_scenario: Path) -> None:
    checked = validate_file(small_scenario)
    assert checked.loaded is not None
    assert list(checked.sites["id"]) == ["ashburn", "chicago", "frankfurt"]


def test_a_catalog_is_checked_alone(tmp_path: Path) -> None:
    good = tmp_path / "sites.csv"
    good.write_text(CATALOG_HEADER + "a,A,US,NA,40,0,1,1,1.2,1,false\n")
    checked = validate_file(good)
    assert checked.loaded is None and list(checked.sites["id"]) == ["a"]


def test_every_input_problem_is_raised_together(tmp_path: Path) -> None:
    chat = {"name": "chat", "share": 1.0, "ttft_p99_ms": 300, "itl_p99_ms": 50, "serving_ttft_budget_ms": 170}
    path = write_scenario(
        tmp_path, classes=[chat], serving={"accelerator": "h900"}, sites={"catalog": "catalog.csv", "exclude": ["nowhere"]}
    )
    with pytest.raises(InputError) as info:
        check_scenario_inputs(load_scenario(path))
    where = {p.where for p in info.value.problems}
    assert {"serving.accelerator", "sites.exclude"} <= where
