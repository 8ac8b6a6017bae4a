"""One results folder: what ``solve`` writes reads back as the plan's tables, through one reader and one writer policy.

Namibia's country code ``NA`` stays a code whichever command reads the folder (report, explain, diff); an
undefined figure is an empty cell and reads back as NaN; a missing file is named, with what to do; and
``tail_check.csv`` is written with the other files, whole or not at all.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from placement._errors import InputError
from placement.analyses.diff import diff_plans, render_diff
from placement.analyses.explain import rebuild_plan
from placement.cli import main
from placement.outputs.compare import write_comparison
from placement.outputs.plan_outputs import summary_json_dict
from placement.outputs.report_html import rerender_report
from placement.outputs.writer import write_results
from placement.plan.record import Plan
from placement.plan.solve import run
from placement.results.folder import json_text, read_results_folder, read_table, write_csv, write_json
from placement.scenario.load import load_scenario
from tests.conftest import REPO, SMALL_CATALOG, SMALL_CITIES, write_scenario

NAMIBIA_CATALOG = SMALL_CATALOG + "windhoek,Windhoek,NA,Africa,-22.56,17.08,50,80,1.3,10000000,false\n"
NAMIBIA_CITIES = SMALL_CITIES + "5,Windhoek,NA,05,-22.56,17.08,400000,Africa/Windhoek\n"
LONG_CHAT = {
    "name": "chat",
    "share": 1.0,
    "ttft_p99_ms": 600,  # leaves 205 ms of RTT: Windhoek's users reach the Windhoek site (about 107 ms)
    "itl_p99_ms": 50,
    "network_round_trips": 2,
    "queue_ms": 40,
    "retrieval_ms": 20,
    "prefill_ms": 90,
    "safety_tokenization_ms": 15,
    "first_decode_ms": 25,
    "goodput_tok_s_per_node": 10000,
}


@pytest.fixture(scope="module")
def namibia(tmp_path_factory: pytest.TempPathFactory) -> tuple[Plan, Path]:
    """A small plan with a site and a population in Namibia (country code ``NA``), and its results folder."""
    root = tmp_path_factory.mktemp("namibia")
    scenario = write_scenario(root, catalog=NAMIBIA_CATALOG, cities=NAMIBIA_CITIES, classes=[LONG_CHAT])
    plan = run(load_scenario(scenario))
    return plan, write_results(plan, root / "out", maps=False)


def _as_written(table: pd.DataFrame) -> pd.DataFrame:
    """A plan table as its CSV file holds it: ids as text, an empty text or a non-finite figure missing."""
    expected = table.copy()
    for column in expected.columns:
        values = expected[column]
        if column == "id" or str(column).endswith("_id"):
            expected[column] = values.astype(object).where(values.notna(), None).map(lambda v: None if v is None else str(v))
        elif pd.api.types.is_float_dtype(values):
            expected[column] = values.where(np.isfinite(values.to_numpy(float)))
        elif not pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            expected[column] = values.astype(object).where(values.astype(str) != "", None)
    return expected


def _assert_same_table(read: pd.DataFrame, table: pd.DataFrame) -> None:
    expected = _as_written(table)
    assert list(read.columns) == list(expected.columns)
    assert len(read) == len(expected)
    for column in expected.columns:
        got, want = read[column], expected[column]
        if pd.api.types.is_float_dtype(want):
            assert got.to_numpy(float) == pytest.approx(want.to_numpy(float), rel=1e-9, nan_ok=True), column
        else:
            got_values = [None if pd.isna(v) else v for v in got.astype(object)]
            want_values = [None if pd.isna(v) else v for v in want.astype(object)]
            assert got_values == want_values, column


# ----------------------------------------------------------------------------- the reader


def test_reading_a_folder_gives_the_plans_tables_back(namibia: tuple[Plan, Path]) -> None:
    plan, folder = namibia
    results = read_results_folder(folder)
    _assert_same_table(results.sites, plan.sites)
    _assert_same_table(results.assignments, plan.assignments)
    assert results.populations is not None and results.members is not None
    _assert_same_table(results.populations, plan.populations)
    assert len(results.members) == len(plan.instance.populations.cities)
    assert results.sites["open"].dtype == bool and results.sites["open"].sum() == plan.summary.sites_open
    assert results.summary == json.loads(json_text(summary_json_dict(plan.results)))
    assert results.plan_summary() == plan.summary
    assert results.notes == list(plan.notes)
    assert results.extras == {} and not results.is_buildout_year


def test_namibia_stays_na_in_every_reader_path(namibia: tuple[Plan, Path], tmp_path: Path) -> None:
    _, folder = namibia
    results = read_results_folder(folder)
    assert results.populations is not None and results.members is not None
    assert results.sites.set_index("site_id").loc["windhoek", "country_code"] == "NA"
    assert results.sites.set_index("site_id").loc["windhoek", "open"]  # it serves Windhoek
    windhoek = results.assignments[results.assignments["population"] == "Windhoek"]
    assert len(windhoek) and (windhoek["country_code"] == "NA").all() and (windhoek["site_id"] == "windhoek").all()
    assert (results.populations.loc[results.populations["name"] == "Windhoek", "country_code"] == "NA").all()
    assert (results.members.loc[results.members["name"] == "Windhoek", "country_code"] == "NA").all()
    # explain: the site table it explains
    rebuilt = rebuild_plan(folder)
    assert rebuilt.sites.set_index("site_id").loc["windhoek", "country_code"] == "NA"
    # diff: plan B leaves Windhoek unserved, so its population moves from the Windhoek site to none
    later = tmp_path / "later"
    shutil.copytree(folder, later)
    assignments = read_table(later / "assignments.csv")
    write_csv(assignments[assignments["population"] != "Windhoek"], later / "assignments.csv")
    populations = read_table(later / "populations.csv")
    unserved = populations["name"] == "Windhoek"
    populations["unserved_tok_s"] = populations["unserved_tok_s"].astype(float).where(~unserved, populations["demand_tok_s"])
    write_csv(populations, later / "populations.csv")
    diff = diff_plans(folder, later)
    moved = diff.moved[diff.moved["population"] == "Windhoek"]
    assert list(moved["country_code"]) == ["NA"]
    assert "Windhoek (NA), chat: Windhoek -> unserved" in render_diff(diff)
    # the report rebuilt from the files lists Windhoek, unserved, in Namibia
    rerender_report(later)
    assert "| Windhoek | NA |" in (later / "report.md").read_text(encoding="utf-8")


def test_a_non_finite_value_is_written_empty_and_read_back_as_nan(tmp_path: Path) -> None:
    table = pd.DataFrame(
        {
            "site_id": ["007", "NA", "x"],
            "country_code": ["NA", "nan", ""],
            "cost_usd_per_h": [1.5, math.nan, math.inf],
            "mw_used": [-math.inf, 2.0, 1.0 / 3.0],
        }
    )
    path = tmp_path / "table.csv"
    write_csv(table, path)
    assert path.read_text(encoding="utf-8").splitlines() == [
        "site_id,country_code,cost_usd_per_h,mw_used",
        "007,NA,1.5,",
        "NA,nan,,2",
        "x,,,0.3333333333",
    ]
    read = read_table(path)
    assert list(read["site_id"]) == ["007", "NA", "x"]
    assert list(read["country_code"][:2]) == ["NA", "nan"] and pd.isna(read["country_code"][2])
    assert read["cost_usd_per_h"].dtype == float and read["cost_usd_per_h"].isna().tolist() == [False, True, True]
    assert read["mw_used"].isna().tolist() == [True, False, False]
    write_json({"cost": math.inf, "gap": math.nan, "ok": 1.0}, tmp_path / "summary.json")
    assert json.loads((tmp_path / "summary.json").read_text()) == {"cost": None, "gap": None, "ok": 1.0}


def test_every_writer_follows_the_policy(namibia: tuple[Plan, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """compare.csv and tail_check.csv once wrote ``inf``; they now go through the one writer."""
    plan, _ = namibia
    monkeypatch.setattr("placement.outputs.compare.draw_comparison", lambda *_, **__: None)  # a chart has no infinite bar
    rows = [
        {"placement": "optimal", "cost_per_million_goodput_tokens_usd": 1.0, "served_share": 1.0, "tokens_per_s_per_mw": 5.0,
         "mw_used": 1.0, "cost_usd_per_h": 10.0, "goodput_tok_s": 10.0, "sites_open": 1},
        {"placement": "nothing", "cost_per_million_goodput_tokens_usd": math.inf, "served_share": 0.0,
         "tokens_per_s_per_mw": math.nan, "mw_used": 0.0, "cost_usd_per_h": 0.0, "goodput_tok_s": 0.0, "sites_open": 0},
    ]  # fmt: skip
    compared = write_comparison(rows, tmp_path / "compare", title="t")
    text = (compared / "compare.csv").read_text(encoding="utf-8")
    assert "inf" not in text and "nan" not in text.lower()
    assert read_table(compared / "compare.csv")["cost_per_million_goodput_tokens_usd"].isna().tolist() == [False, True]
    tail = pd.DataFrame({"site_id": ["windhoek"], "simulated_ttft_p99_ms": [math.inf], "load_factor": [0.123456789]})
    out = write_results(plan, tmp_path / "out", maps=False, tail_check=tail)
    assert (out / "tail_check.csv").read_text(encoding="utf-8").splitlines() == [
        "site_id,simulated_ttft_p99_ms,load_factor",
        "windhoek,,0.123457",  # simulated figures to 6 digits
    ]
    assert set(read_results_folder(out).extras) == {"tail_check.csv"}


# ----------------------------------------------------------------------------- errors a user can act on


def test_a_missing_file_is_reported_by_name_without_a_traceback(
    namibia: tuple[Plan, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, folder = namibia
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    (broken / "assignments.csv").unlink()
    with pytest.raises(InputError) as raised:
        read_results_folder(broken)
    assert "assignments.csv missing" in str(raised.value) and "placement solve" in str(raised.value)
    for command in (["report", str(broken)], ["explain", str(broken), "--quiet"], ["diff", str(folder), str(broken)]):
        assert main([*command, *(["--out", str(tmp_path / "d")] if command[0] == "diff" else [])]) == 1, command
        err = capsys.readouterr().err
        assert f"{broken}: not a results folder: assignments.csv missing" in err, command
        assert "Fix: run 'placement solve SCENARIO --out" in err and "Traceback" not in err, command
    (broken / "sites.csv").write_text("")
    with pytest.raises(InputError, match=r"sites\.csv: not a table written by 'placement solve'"):
        read_table(broken / "sites.csv")
    year_like = tmp_path / "no-populations"
    shutil.copytree(folder, year_like)
    (year_like / "populations.csv").unlink()
    assert read_results_folder(year_like).populations is None  # a build-out year has none: diff reads it
    assert main(["report", str(year_like)]) == 1
    assert "populations.csv missing" in capsys.readouterr().err


def test_a_buildout_folder_is_named_for_what_it_is(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"kind": "buildout", "years": [{"year": 2027}, {"year": 2029}]}))
    with pytest.raises(InputError, match=r"is a build-out \(years 2027-2029\): it holds no plan tables.*years/2027"):
        read_results_folder(tmp_path)


# ----------------------------------------------------------------------------- tail_check.csv, whole or not at all


def test_tail_check_is_absent_when_a_write_fails_halfway(
    small_scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "results" / "out"
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet", "--no-maps"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def fail(*_: object, **__: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("placement.outputs.plan_files.render_report_html", fail)  # the last file of the folder
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet", "--no-maps", "--check-tail"]) == 1
    assert not (out / "tail_check.csv").exists()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]  # no staging folder left behind


def test_a_map_that_fails_in_its_own_process_leaves_the_previous_results_whole(
    small_scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the maps are drawn in a forked child beside the report and layers: its failure fails the folder, nothing swapped in
    out = tmp_path / "results" / "out"
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet"]) == 0
    assert (out / "map.html").is_file() and (out / "map.png").is_file()
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def fail(*_: object, **__: object) -> None:
        raise RuntimeError("the regional maps failed")

    monkeypatch.setattr("placement.outputs.plan_files.draw_regional_maps", fail)
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet", "--solver", "cbc"]) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]  # no staging folder left behind


def test_a_failing_tail_check_leaves_the_previous_results_whole(
    small_scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet", "--no-maps", "--check-tail"]) == 0
    assert (out / "tail_check.csv").is_file()
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def fail(*_: object, **__: object) -> None:
        raise RuntimeError("simulation failed")

    monkeypatch.setattr("placement.analyses.tail.check_tail", fail)
    assert main(["solve", str(small_scenario), "--out", str(out), "--quiet", "--no-maps", "--check-tail", "--solver", "cbc"]) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # not the cbc plan without its tail check
    assert json.loads((out / "summary.json").read_text())["solver"] == "highs"


def _pandas_csv(table: pd.DataFrame, digits: int = 10) -> str:
    """The reference: pandas' own writer with the folder's policy (non-finite figures missing, ``%.10g``)."""
    from placement.results.folder import null_nonfinite

    return null_nonfinite(table).to_csv(index=False, float_format=f"%.{digits}g", lineterminator="\n")


def test_csv_text_is_pandas_bytes_faster(namibia: tuple[Plan, Path]) -> None:
    """The column-at-a-time writer gives pandas' bytes: tricky values, and every table of a plan."""
    from placement.results.folder import csv_text

    tricky = pd.DataFrame(
        {
            "x": [1.0, np.nan, np.inf, -np.inf, 12345678901.5, 1e-7, 3.14159265358979, -0.0],
            "name": ["a", 'say "hi"', "x,y", "two\nlines", "", None, "naïve", "plain"],
            "flag": [True, False, True, False, True, False, True, False],
            "n": np.arange(8, dtype=np.int64),
            "maybe": pd.array([1.5, None, 2.0, None, 0.1, 7.0, None, 3.0], dtype="Float64"),
            "mixed": ["id-1", 2.5, None, "z", 3, "w", np.nan, "q"],
            "bool_or_one": [True, 1, 2, False, 0, "1", True, 0],  # equal as hash keys, not as cells
            "text": pd.array(["s-1", "s-1", None, 'q"t', "a,b", "s-1", None, "a,b"], dtype="string"),  # repeats: once each
        }
    )
    for digits in (10, 6):
        assert csv_text(tricky, digits=digits) == _pandas_csv(tricky, digits)
    assert csv_text(tricky.iloc[:0]) == _pandas_csv(tricky.iloc[:0])
    plan, _ = namibia
    for table in (plan.sites, plan.assignments, plan.populations):
        assert csv_text(table) == _pandas_csv(table)


def test_a_solve_written_by_its_standby_child_writes_the_files_a_write_here_writes(tmp_path: Path) -> None:
    # cli.py in its own process (a pytest-xdist worker has threads and so never forks): the files are written by the
    # child forked before the solve, failover.csv's rows by the solving process meanwhile; a write in this process of
    # the same plan gives the same tables, byte for byte
    import subprocess
    import sys

    scenario = write_scenario(tmp_path, policy={"unreachable": "report"}, fault_tolerance={"n_plus_one": True})
    there = tmp_path / "there"
    done = subprocess.run([sys.executable, str(REPO / "cli.py"), "solve", str(scenario), "--out", str(there), "--no-maps"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    here = write_results(run(load_scenario(scenario)), tmp_path / "here", maps=False)
    names = sorted(p.name for p in here.iterdir())
    assert sorted(p.name for p in there.iterdir()) == names and "failover.csv" in names
    assert read_table(there / "failover.csv").shape[0] > 0
    for name in names:
        if name.endswith(".csv") and name != "tail_check.csv":
            assert (there / name).read_bytes() == (here / name).read_bytes(), name
