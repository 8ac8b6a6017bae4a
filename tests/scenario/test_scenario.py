"""A bad scenario is one error listing every problem with its key path."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from placement._errors import InputError
from placement.scenario.load import load_scenario
from tests.conftest import DEFAULT_SCENARIO, scenario_dict, write_scenario


def problems_of(path: Path) -> list[str]:
    with pytest.raises(InputError) as info:
        load_scenario(path)
    return [str(p) for p in info.value.problems]


def test_default_scenario_is_valid() -> None:
    loaded = load_scenario(DEFAULT_SCENARIO)
    assert loaded.catalog_path.is_file() and loaded.cities_path.is_file()
    assert loaded.scenario.classes[0].ttft_p99_ms == 300


def test_every_problem_with_its_key_path(tmp_path: Path) -> None:
    path = write_scenario(tmp_path)
    raw = scenario_dict()
    raw["demand"]["adoption"] = 1.5
    raw["classes"][0]["ttft_p99_ms"] = -3
    raw["serving"]["headroom"] = 1.0
    raw["solver"]["name"] = "gurobi"
    raw["economics"]["node_capex"] = 1
    del raw["economics"]["node_capex_usd"]
    del raw["demand"]["tokens_per_user_per_day"]
    path.write_text(yaml.safe_dump(raw))
    problems = problems_of(path)
    joined = "\n".join(problems)
    for key in ("demand.adoption", "classes[0].ttft_p99_ms", "serving.headroom", "solver.name", "demand.tokens_per_user_per_day"):
        assert key in joined, key
    assert "economics.node_capex" in joined and "did you mean 'node_capex_usd'" in joined
    assert len(problems) == 6


def test_fixed_components_leave_no_room_for_network(tmp_path: Path) -> None:
    raw = scenario_dict()
    raw["classes"][0]["prefill_ms"] = 290
    path = write_scenario(tmp_path)
    path.write_text(yaml.safe_dump(raw))
    (problem,) = problems_of(path)
    assert "classes[0]" in problem and "nothing of the" in problem


def test_shares_must_sum_to_one(tmp_path: Path) -> None:
    raw = scenario_dict()
    raw["classes"][0]["share"] = 0.5
    path = write_scenario(tmp_path)
    path.write_text(yaml.safe_dump(raw))
    (problem,) = problems_of(path)
    assert "sum to 1" in problem


def test_missing_files_are_named(tmp_path: Path) -> None:
    path = write_scenario(tmp_path)
    (tmp_path / "catalog.csv").unlink()
    (problem,) = problems_of(path)
    assert "sites.catalog" in problem and "file not found" in problem


def test_broken_yaml_gives_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nsites: [unclosed\n")
    (problem,) = problems_of(path)
    assert "line" in problem and "YAML" in problem


def test_non_finite_numbers_are_refused_with_their_key_path(tmp_path: Path) -> None:
    path = write_scenario(tmp_path)
    raw = scenario_dict()
    raw["classes"][0]["ttft_p99_ms"] = float("inf")  # was accepted: an objective nothing could miss
    raw["demand"]["adoption"] = float("nan")
    raw["sites"]["mw_multiplier"] = float("inf")
    raw["sites"]["power_price_multiplier"] = {"Europe": float("-inf")}
    raw["economics"]["opex_usd_per_node_h"] = float("inf")
    path.write_text(yaml.safe_dump(raw))
    assert ".inf" in path.read_text()
    problems = problems_of(path)
    assert len(problems) == 5
    for key in (
        "classes[0].ttft_p99_ms",
        "demand.adoption",
        "sites.mw_multiplier",
        "sites.power_price_multiplier.Europe",
        "economics.opex_usd_per_node_h",
    ):
        [line] = [p for p in problems if f", {key}:" in p]
        assert str(path) in line and "finite number" in line and "Fix: write a finite number" in line


def test_bad_latency_quantile_names_the_key_the_values_and_the_fix(tmp_path: Path) -> None:
    problems = problems_of(write_scenario(tmp_path, latency={"quantile": "p99"}))
    assert len(problems) == 1
    assert "latency.quantile" in problems[0]
    assert "'p50'" in problems[0] and "'p90'" in problems[0]
    assert "Fix: use one of the allowed values" in problems[0]


def test_latency_quantile_defaults_to_p90(tmp_path: Path) -> None:
    assert load_scenario(write_scenario(tmp_path)).scenario.latency.quantile == "p90"


def test_thousands_of_problems_are_counted_not_all_printed(tmp_path: Path) -> None:
    extra = {f"unknown_key_{k}": k for k in range(2_000)}
    path = write_scenario(tmp_path, **extra)
    with pytest.raises(InputError) as raised:
        load_scenario(path)
    assert len(raised.value.problems) == 2_000  # every problem is kept for a caller
    lines = str(raised.value).splitlines()
    assert lines[0] == "2,000 problems in the input:"
    assert len(lines) == 1 + 50 + 1
    assert lines[-1] == "  ... and 1,950 more (the first 50 are shown: fix them and run again)"


def test_a_problem_line_quoting_a_whole_section_is_cut() -> None:
    from placement._errors import RULE_CHARACTERS, Problem

    line = str(Problem("scenario.yaml", "classes", "", "shares must sum to 1 (got " + "x" * 3_000 + ")", "make them sum to 1"))
    assert len(line) < RULE_CHARACTERS + 100
    assert "... (2,627 more characters). Fix: make them sum to 1" in line


def test_norway_read_as_false_by_yaml_says_to_quote_it(tmp_path: Path) -> None:
    path = write_scenario(tmp_path)
    text = path.read_text().replace("demand:\n", "demand:\n  countries: [DE, FR, NO]\n", 1)
    assert "countries: [DE, FR, NO]" in text
    path.write_text(text)
    with pytest.raises(InputError) as raised:
        load_scenario(path)
    (problem,) = raised.value.problems
    assert problem.where == "demand.countries[2]"
    assert "YAML reads NO" in problem.rule and "'NO'" in problem.fix


def test_a_cross_field_rule_does_not_quote_its_whole_section(tmp_path: Path) -> None:
    path = write_scenario(tmp_path)
    raw = yaml.safe_load(path.read_text())
    raw["classes"].append(dict(raw["classes"][0]))  # two classes of one name: a rule over the whole list
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(InputError) as raised:
        load_scenario(path)
    text = str(raised.value)
    assert "class names must be unique" in text
    assert "(got {" not in text and "(got [{" not in text
