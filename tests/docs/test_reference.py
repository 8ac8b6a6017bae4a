"""The generated reference is complete: every scenario key, CLI option and output column has a description, and the
column table describes exactly the columns a solve writes."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from placement.outputs.columns import OUTPUT_FILES, described, output_file
from placement.outputs.writer import write_results
from placement.plan.solve import run
from placement.scenario.load import load_scenario
from tests.conftest import REPO, write_scenario


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference", REPO / "scripts" / "docs_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


reference = _reference()


def test_every_scenario_key_has_a_description_and_a_time_key_a_unit() -> None:
    keys = list(reference.scenario_keys())
    assert len(keys) > 150
    assert [k.path for k in keys if not k.description] == []
    for key in keys:  # a key named in a unit says so in the reference
        if key.path.endswith(("_ms", "_km", "_usd_per_h")):
            assert key.unit, key.path
    paths = {k.path for k in keys}
    assert {
        "classes[].ttft_p99_ms",
        "serving.node_ttft_ladder",
        "horizon.accelerators[].id",
        "residency.regimes[].share",
    } <= paths


def test_units_come_from_the_description_before_the_name() -> None:
    assert reference.unit_of("wan_gbit_s", "rate of one wave [Gbit/s]") == "Gbit/s"
    assert reference.unit_of("node_ttft_ladder", "shares, e.g. [0.8, 0.6]") == ""
    assert reference.unit_of("retrieval_ms", "lookup time") == "ms"


def test_every_command_and_option_has_a_description() -> None:
    commands = reference.commands()
    assert {"solve", "schema", "validate", "init", "goodput", "sweep"} <= set(commands)
    assert [name for name, (text, _) in commands.items() if not text] == []
    missing = [(o.command, o.names) for name, (_, p) in commands.items() for o in reference.options(name, p) if not o.help]
    assert missing == []


def test_every_described_column_has_a_description() -> None:
    missing = [(f.name, c.name) for f in OUTPUT_FILES for c in f.columns if not c.description.strip()]
    assert missing == []
    for table in OUTPUT_FILES:
        names = [c.name for c in table.columns]
        assert len(names) == len(set(names)), table.name


def test_pages_list_every_key_command_and_column() -> None:
    scenario, cli, outputs = (reference.page(p) for p in reference.PAGES)
    assert all(f"`{k.path}`" in scenario for k in reference.scenario_keys())
    assert all(f"## {name}" in cli for name in reference.commands())
    assert all(f"`{c.name}`" in outputs for f in OUTPUT_FILES for c in f.columns)


def _header(path: Path) -> list[str]:
    with path.open(encoding="utf-8", newline="") as stream:
        return next(csv.reader(stream))


def test_a_solve_writes_the_described_columns_and_no_other(tmp_path: Path) -> None:
    plan = run(load_scenario(write_scenario(tmp_path)))
    out = write_results(plan, tmp_path / "out", maps=False)
    for name in ("sites.csv", "assignments.csv", "populations.csv", "population_members.csv"):
        header = _header(out / name)
        assert [h for h in header if described(name, h) is None] == [], f"{name}: columns written but not described"
        required = [c.name for c in output_file(name).columns if not c.optional]
        assert [c for c in required if c not in header] == [], f"{name}: described as always written, but missing"


def test_an_unknown_table_is_refused_by_name() -> None:
    with pytest.raises(KeyError, match=r"sites\.csv"):
        output_file("site.csv")
