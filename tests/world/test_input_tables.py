"""The shared CSV validator: text only, real line numbers, every problem gathered with its row, field and fix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from placement._errors import InputError, Problem
from placement._validate import Column, Table, choice, known, missing_columns, numbers, read_table, text, unique

YEAR = Column("year", "number", whole=True, help="year")
MW = Column("mw", "number", low=0.0, high=100.0, help="MW")
NOTE = Column("note", required=False, may_be_absent=True)


def _table(tmp_path: Path, body: str, comment: str | None = None) -> Table:
    path = tmp_path / "t.csv"
    path.write_text(body, encoding="utf-8")
    return read_table(path, fix="write a CSV", comment=comment)


def test_rows_are_named_by_their_line_comments_and_blank_lines_counted(tmp_path: Path) -> None:
    table = _table(tmp_path, "# a comment\nid, year\n\na,2027\n# another\nb,2028\n", comment="#")
    assert table.rows == ("row 1 (line 4)", "row 2 (line 6)")
    assert table.cells.columns.tolist() == ["id", "year"] and table.cells["year"].tolist() == ["2027", "2028"]


def test_a_cell_across_lines_keeps_the_row_without_a_line(tmp_path: Path) -> None:
    table = _table(tmp_path, 'id,note\na,"two\nlines"\nb,x\n')
    assert table.rows == ("row 1", "row 2")


@pytest.mark.parametrize(
    ("body", "rule"),
    [("", "the file is empty"), ('id\n"a\n', "not a readable CSV")],
)
def test_unreadable_files_are_one_problem(tmp_path: Path, body: str, rule: str) -> None:
    with pytest.raises(InputError, match=rule):
        _table(tmp_path, body)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        read_table(tmp_path / "nowhere.csv", fix="write a CSV")


def test_every_problem_is_gathered_with_row_field_and_fix(tmp_path: Path) -> None:
    table = _table(tmp_path, "id,year,mw,kind\na,2027,5,x\na,20x9,-1,y\n,2028.5,,Y\nb,2029,inf,x\n")
    problems: list[Problem] = []
    assert missing_columns(table, (Column("id"), YEAR, MW, NOTE)) == []
    text(table, Column("id"), problems)
    unique(table, "id", problems, what="id", fix="give every row a unique id")
    years = numbers(table, YEAR, problems)
    mw = numbers(table, MW, problems)
    kinds = choice(table, "kind", ("x", "y"), problems, fix="write x or y", fold_case=True)
    found = {(p.where, p.field, p.rule) for p in problems}
    assert found == {
        ("row 3 (line 4)", "id", "is empty"),
        ("row 2 (line 3)", "id", "duplicate id 'a' (first at row 1 (line 2))"),
        ("row 2 (line 3)", "year", "must be a whole number, got '20x9'"),
        ("row 3 (line 4)", "year", "must be a whole number, got '2028.5'"),
        ("row 2 (line 3)", "mw", "must be between 0 and 100, got -1"),
        ("row 3 (line 4)", "mw", "is missing (blank)"),
        ("row 4 (line 5)", "mw", "must be a finite number, got 'inf'"),
    }
    assert all(p.fix for p in problems)
    np.testing.assert_array_equal(years.to_numpy(), [2027.0, np.nan, np.nan, 2029.0])
    np.testing.assert_array_equal(mw.to_numpy(), [5.0, np.nan, np.nan, np.nan])
    assert kinds.tolist() == ["x", "y", "y", "x"]


def test_header_problems_name_each_column_and_optional_ones_may_be_absent(tmp_path: Path) -> None:
    table = _table(tmp_path, "id\na\n")
    problems = missing_columns(table, (Column("id"), YEAR, MW, NOTE))
    assert [(p.where, p.field, p.rule) for p in problems] == [
        ("header", "year", "required column is missing"),
        ("header", "mw", "required column is missing"),
    ]
    assert text(table, NOTE, []).tolist() == [""]


def test_unknown_ids_suggest_close_ones(tmp_path: Path) -> None:
    table = _table(tmp_path, "site\nparis\nparsi\n")
    problems: list[Problem] = []
    ok = known(table, "site", {"paris", "berlin"}, problems, what="site", fix="use a site id")
    assert ok.tolist() == [True, False]
    (problem,) = problems
    assert problem.rule == "unknown site 'parsi'" and "did you mean 'paris'" in problem.fix
