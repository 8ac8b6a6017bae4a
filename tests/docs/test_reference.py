"""The generated reference is complete: every scenario key, CLI option and output column has a description, and the
column table describes exactly the columns (JSON keys) the commands write, each checked on a small scenario."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from placement.analyses.compare import compare_placements
from placement.cli import main
from placement.outputs.alternatives_files import DesignRecord, alternatives_table, site_classes
from placement.outputs.columns import COMMANDS, OUTPUT_FILES, described, output_file
from placement.outputs.compare import write_comparison
from placement.outputs.writer import write_results
from placement.plan.solve import run
from placement.scenario.load import load_scenario
from placement.sweep.spec import RESULT_COLUMNS
from tests.conftest import nested_mismatch, script_module, solved_small, write_scenario
from tests.rules.test_residency_regimes import _two_blocs

reference = script_module("docs_reference")


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
    nested = [(f.name, key, c.name) for f in OUTPUT_FILES for key, cs in f.nested for c in cs if not c.description.strip()]
    assert nested == []
    assert all(f.is_json and {key for key, _ in f.nested} <= {c.name for c in f.columns} for f in OUTPUT_FILES if f.nested)
    for table in OUTPUT_FILES:
        names = [c.name for c in table.columns]
        assert len(names) == len(set(names)), table.name


def test_pages_list_every_key_command_and_column() -> None:
    scenario, cli, outputs = (reference.page(p) for p in reference.PAGES)
    assert all(f"`{k.path}`" in scenario for k in reference.scenario_keys())
    assert all(f"## {name}" in cli for name in reference.commands())
    assert all(f"`{c.name}`" in outputs for f in OUTPUT_FILES for c in f.columns)


def test_angle_brackets_in_text_are_shown_not_read_as_tags() -> None:
    assert reference._cell("map_<region>.png | x") == "map_&lt;region&gt;.png \\| x"
    assert reference._code("map_<region>.png") == "map_<region>.png"  # inside backticks the page shows it as is
    assert "map_&lt;region&gt;.png" in reference.page("reference/cli.md")


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
    with pytest.raises(KeyError, match=r"compare\.csv"):
        output_file("compare.csv", "solve")


def test_every_file_belongs_to_a_listed_command_and_a_placeholder_matches_one_column_per_value() -> None:
    assert {f.command for f in OUTPUT_FILES} == set(COMMANDS)
    assert described("alternatives.csv", "mw_in_north_america", "alternatives") is not None
    assert described("alternatives.csv", "mw_not_shared", "alternatives").name == "mw_not_shared"  # type: ignore[union-attr]
    assert described("years.csv", "nodes_h100-sxm", "buildout") is not None
    assert described("sites.csv", "serving_mode_chat") is not None


def _mismatch(name: str, written: list[str], command: str = "solve") -> tuple[list[str], list[str]]:
    """What ``written`` (a header, or a JSON object's keys) has that is not described, and what is described as always
    written but is missing."""
    undescribed = [h for h in written if described(name, h, command) is None]
    columns = output_file(name, command).columns
    missing = [c.name for c in columns if not c.optional and not any(c.matches(h) for h in written)]
    return undescribed, missing


def _keys(path: Path) -> list[str]:
    return list(json.loads(path.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small scenario of the tests solved by the command line (about 3 s), with no maps."""
    return solved_small(tmp_path_factory, "solved")


def test_summary_json_holds_the_described_keys_and_no_other(solved: Path) -> None:
    assert _mismatch("summary.json", _keys(solved / "summary.json")) == ([], [])


def test_a_plans_figures_are_printed_from_its_summary(solved: Path) -> None:
    """scripts/plan_figures.py: the table the optimisation page shows for world_full, here for the small plan."""
    script = script_module("plan_figures")
    summary = json.loads((solved / "summary.json").read_text())
    figures = dict(line.strip("| ").split(" | ", 1) for line in script.table(summary).splitlines()[2:])
    assert figures["cost per million goodput tokens"] == f"${summary['cost_per_million_goodput_tokens_usd']:.3f}"
    assert figures["feasible pairs"] == f"{summary['feasible_pairs']:,}"
    assert figures["unserved"] == f"{summary['unserved_share'] * 100:.2f} % of demand"
    assert figures["the solver's account"] == summary["solver_message"]
    assert script.main([str(solved / "missing")]) == 2


def test_the_cost_breakdowns_keys_are_described(solved: Path) -> None:
    summary = json.loads((solved / "summary.json").read_text())
    assert nested_mismatch(summary, "cost_breakdown_usd_per_h") == ([], [])
    assert nested_mismatch(summary, "classes") == ([], [])  # each class's object
    assert sum(v for k, v in summary["cost_breakdown_usd_per_h"].items() if k != "total") == pytest.approx(
        summary["cost_breakdown_usd_per_h"]["total"]
    )


def test_compare_writes_the_described_columns(solved: Path, tmp_path: Path) -> None:
    rows = compare_placements(load_scenario(solved.parent / "scenario.yaml"))
    out = write_comparison(rows, tmp_path / "compare", title="small")
    assert _mismatch("compare.csv", _header(out / "compare.csv"), "compare") == ([], [])


def test_diff_json_holds_the_described_keys(solved: Path, tmp_path: Path) -> None:
    assert main(["diff", str(solved), str(solved), "--out", str(tmp_path / "diff")]) == 0
    assert _mismatch("diff.json", _keys(tmp_path / "diff" / "diff.json"), "diff") == ([], [])


def test_failover_and_adequacy_write_the_described_columns(solved: Path, tmp_path: Path) -> None:
    folder = shutil.copytree(solved, tmp_path / "plan")  # adequacy adds its figures to the folder it reads
    out = tmp_path / "lost"
    assert main(["failover", str(folder), "--site", "chicago", "--out", str(out), "--quiet"]) == 0
    for name in ("failover_exposure.csv", "failover_exposure_sites.csv"):
        assert _mismatch(name, _header(out / name), "failover") == ([], []), name
    assert _mismatch("failover_exposure.json", _keys(out / "failover_exposure.json"), "failover") == ([], [])
    assert main(["adequacy", str(folder), "--years", "100", "--quiet"]) == 0
    assert _mismatch("adequacy.csv", _header(folder / "adequacy.csv")) == ([], [])
    assert _mismatch("summary.json", _keys(folder / "summary.json")) == ([], [])


def test_the_alternatives_tables_have_the_described_columns(solved: Path) -> None:
    records = [
        DesignRecord.read(0, "optimum", "optimal", solved),
        DesignRecord.read(1, "least-power-in:Europe", "optimal", solved),
    ]
    assert _mismatch("alternatives.csv", list(alternatives_table(records).columns), "alternatives") == ([], [])
    assert _mismatch("alternative_sites.csv", list(site_classes(records).columns), "alternatives") == ([], [])


def test_price_rules_writes_the_described_columns(tmp_path: Path) -> None:
    scenario = _two_blocs(tmp_path, ["bloc-a", "bloc-b"])
    out = tmp_path / "out"
    assert main(["solve", str(scenario), "--out", str(out), "--no-maps", "--quiet", "--price-rules"]) == 0
    assert _mismatch("rule_prices.csv", _header(out / "rule_prices.csv")) == ([], [])
    keys = _keys(out / "summary.json")
    assert "rule_prices" in keys and _mismatch("summary.json", keys) == ([], [])


def test_a_sweeps_results_are_described_in_the_order_written() -> None:
    names = [c.name for c in output_file("results.csv", "sweep").columns]
    assert names == ["case_id", "case", "<axis>", *RESULT_COLUMNS]  # the writer's order: case, axes, results


def test_a_buildout_writes_the_described_files(buildout_results: Path) -> None:
    out = buildout_results
    assert _mismatch("summary.json", _keys(out / "summary.json"), "buildout") == ([], [])
    tables = [f.name for f in OUTPUT_FILES if f.command == "buildout" and not f.is_json]
    assert len(tables) == 7
    for name in tables:
        assert _mismatch(name, _header(out / name), "buildout") == ([], []), name
