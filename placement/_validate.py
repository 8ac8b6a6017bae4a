"""Input tables checked column by column, every problem gathered: the one CSV validator of every loader.

A loader reads its file with :func:`read_table` (text only: nothing is guessed), checks the header with
:func:`missing_columns`, parses each column with :func:`text`, :func:`numbers`, :func:`flags` or
:func:`choice`, checks ids with :func:`unique`, :func:`matches` and :func:`known`, adds its own
cross-column rules, and raises one :class:`~placement._errors.InputError` with every
:class:`~placement._errors.Problem` (file, row, field, rule, fix). The site catalog, the latency
graph's hubs and links, the serving catalogs and the build-out power schedule are read this way.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InputError, Problem

BLANK = frozenset({"", "nan", "na", "null", "none"})
"""Cells read as no value (compared lower-case)."""
_TRUE = frozenset({"true", "1", "yes", "y", "t"})
_FALSE = frozenset({"false", "0", "no", "n", "f", ""})


@dataclass(frozen=True)
class Column:
    """A column of an input table and its rule.

    Parameters
    ----------
    name : str
        Header name.
    kind : {"text", "number", "bool"}
        How its cells are read.
    required : bool
        Every row must give a value (else blank is allowed: '' for text, NaN for numbers, False for flags).
    low, high : float or None
        Bounds of a number, inclusive (None: unbounded).
    help : str
        What the column holds, for the fix (``give the {help}``); default its name.
    may_be_absent : bool
        The header may leave the column out (its cells then read as blank).
    fix : str
        How to fix a bad or missing cell ('': ``give the {help}``).
    whole : bool
        A number must be a whole number (a year, a count).
    """

    name: str
    kind: Literal["text", "number", "bool"] = "text"
    required: bool = True
    low: float | None = None
    high: float | None = None
    help: str = ""
    may_be_absent: bool = False
    fix: str = ""
    whole: bool = False

    def how_to_fix(self) -> str:
        """How to fix a bad or missing cell."""
        if self.fix:
            return self.fix
        what = self.help or self.name
        return f"give {what}" if what.startswith(("the ", "a ", "an ")) else f"give the {what}"

    def bounds(self) -> str:
        """The range a number must lie in, as words ('' when unbounded)."""
        if self.low is not None and self.high is not None:
            return f"between {self.low:g} and {self.high:g}"
        if self.low is not None:
            return f">= {self.low:g}"
        return f"<= {self.high:g}" if self.high is not None else ""


@dataclass(frozen=True)
class Table:
    """An input table as stripped text, with where each row was written.

    Parameters
    ----------
    source : str
        The file.
    cells : pandas.DataFrame
        Every cell as stripped text ('' where empty); column names stripped.
    rows : tuple of str
        Where each row is (``row 3 (line 4)``, ``feature 3``), in row order.
    """

    source: str
    cells: pd.DataFrame
    rows: tuple[str, ...]

    @classmethod
    def of(cls, source: str | Path, frame: pd.DataFrame, rows: Iterable[str] | None = None) -> Table:
        """Build from any frame: cells as stripped text, rows named ``row k`` unless given."""
        cells = pd.DataFrame({str(c).strip(): frame[c].fillna("").astype(str).str.strip() for c in frame.columns})
        cells = cells.reset_index(drop=True)
        labels = tuple(rows) if rows is not None else tuple(f"row {k + 1}" for k in range(len(cells)))
        return cls(str(source), cells, labels)

    def __len__(self) -> int:
        """Number of rows."""
        return len(self.cells)

    def where(self, k: int) -> str:
        """Where row ``k`` (0-based) is written."""
        return self.rows[k]

    def column(self, name: str) -> pd.Series:
        """A column's text ('' in every row when the header leaves it out)."""
        if name in self.cells.columns:
            return self.cells[name]
        return pd.Series([""] * len(self.cells), index=self.cells.index, dtype=str)

    def problem(self, k: int | None, field: str, rule: str, fix: str) -> Problem:
        """A problem at row ``k`` (None: the whole file)."""
        return Problem(self.source, "" if k is None else self.where(k), field, rule, fix)


def raise_if(problems: list[Problem]) -> None:
    """Raise one InputError with every problem, if there is any."""
    if problems:
        raise InputError(problems)


def _row_labels(path: Path, rows: int, comment: str | None) -> tuple[str, ...]:
    """``row k (line n)`` where the file's lines map one to one onto the rows read, else ``row k``."""
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    data = [n + 1 for n, line in enumerate(lines) if line.strip() and not (comment and line.lstrip().startswith(comment))]
    if len(data) != rows + 1:  # a quoted cell across lines: the line numbers are not known
        return tuple(f"row {k + 1}" for k in range(rows))
    return tuple(f"row {k + 1} (line {data[k + 1]})" for k in range(rows))


def read_table(path: str | Path, *, fix: str, comment: str | None = None) -> Table:
    """Read a CSV with a header row as text, every cell stripped.

    Parameters
    ----------
    path : str or Path
        The file (UTF-8, a byte-order mark allowed).
    fix : str
        How to fix a file that is empty or not a readable CSV (e.g. ``save it as UTF-8 CSV with a header row``).
    comment : str, optional
        Lines starting with this character are comments.

    Returns
    -------
    Table
        The cells, with the row and line of each row.

    Raises
    ------
    InputError
        When the file is missing, empty or not a readable CSV.
    """
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise InputError([Problem(source, "", "", "file not found", "check the path")])
    if path.stat().st_size == 0:
        raise InputError([Problem(source, "", "", "the file is empty", fix)])
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True, encoding="utf-8-sig", comment=comment)
        rows = _row_labels(path, len(frame), comment)
    except (OSError, ValueError) as exc:  # pandas' ParserError and EmptyDataError, UnicodeDecodeError
        raise InputError([Problem(source, "", "", f"not a readable CSV ({exc})", fix)]) from None
    return Table.of(source, frame, rows)


def require_rows(table: Table, fix: str) -> None:
    """Refuse a table with a header and no rows (:func:`read_table` refuses an empty file).

    Raises
    ------
    InputError
        Naming the file, with ``fix``.
    """
    if not len(table):
        raise InputError([Problem(table.source, "", "", "the file has a header and no rows", fix)])


def missing_columns(table: Table, columns: Iterable[Column]) -> list[Problem]:
    """A problem for every column the header must name and does not.

    Parameters
    ----------
    table : Table
        The table read.
    columns : iterable of Column
        Its columns.

    Returns
    -------
    list of Problem
        One per missing column, at ``header``.
    """
    return [
        Problem(
            table.source,
            "header",
            column.name,
            "required column is missing",
            f"add a column '{column.name}'" + (f" ({column.help})" if column.help else ""),
        )
        for column in columns
        if not column.may_be_absent and column.name not in table.cells.columns
    ]


def text(table: Table, column: Column, problems: list[Problem]) -> pd.Series:
    """A text column; an empty cell of a required column is a problem.

    Returns
    -------
    pandas.Series of str
        The stripped text.
    """
    values = table.column(column.name)
    if column.required:
        problems.extend(table.problem(k, column.name, "is empty", column.how_to_fix()) for k in _rows(values.eq("")))
    return values


def numbers(table: Table, column: Column, problems: list[Problem]) -> pd.Series:
    """A numeric column: finite (or whole) numbers within the column's bounds.

    Blank cells (:data:`BLANK`) are a problem when the column is required; text that is no finite
    number and numbers out of bounds are always one.

    Returns
    -------
    pandas.Series of float
        The numbers; NaN where a cell is blank or bad.
    """
    written = table.column(column.name)
    blank = written.str.lower().isin(BLANK)
    values = pd.to_numeric(written.where(~blank), errors="coerce").astype(float)
    finite = values.notna() & values.abs().lt(np.inf)
    if column.whole:
        finite &= values.eq(values.round())
    inside = finite & (values >= (-np.inf if column.low is None else column.low))
    inside &= values <= (np.inf if column.high is None else column.high)
    number = "a whole number" if column.whole else "a finite number"
    for k in _rows(~inside & (~blank | column.required)):
        if blank.iloc[k]:
            rule = f"is missing ({written.iloc[k] or 'blank'})"
        elif not finite.iloc[k]:
            rule = f"must be {number}, got {written.iloc[k]!r}"
        else:
            rule = f"must be {column.bounds()}, got {written.iloc[k]}"
        problems.append(table.problem(k, column.name, rule, column.how_to_fix()))
    return values.where(inside)


def flags(table: Table, column: Column, problems: list[Problem]) -> pd.Series:
    """A true/false column (true, 1, yes, y, t / false, 0, no, n, f or blank).

    Returns
    -------
    pandas.Series of bool
        True where the cell says so.
    """
    written = table.column(column.name)
    lowered = written.str.lower()
    problems.extend(
        table.problem(k, column.name, f"must be true or false, got {written.iloc[k]!r}", "write true or false")
        for k in _rows(~lowered.isin(_TRUE | _FALSE))
    )
    return lowered.isin(_TRUE)


def choice(
    table: Table,
    column: str,
    choices: Collection[str],
    problems: list[Problem],
    *,
    fix: str,
    blank: str | None = None,
    fold_case: bool = False,
) -> pd.Series:
    """A column whose cells are one of a few words.

    Parameters
    ----------
    table : Table
        The table.
    column : str
        The column.
    choices : collection of str
        The words allowed.
    problems : list of Problem
        Gathers one problem per cell that is none of them.
    fix : str
        How to fix such a cell.
    blank : str, optional
        What a blank cell means (None: blank is not allowed).
    fold_case : bool, optional
        Compare lower-case.

    Returns
    -------
    pandas.Series of str
        The words (``blank`` where the cell is blank).
    """
    values = table.column(column)
    if fold_case:
        values = values.str.lower()
    if blank is not None:
        values = values.where(values.ne(""), blank)
    allowed = ", ".join(choices) + (" or blank" if blank is not None else "")
    problems.extend(
        table.problem(k, column, f"must be one of {allowed}, got {table.column(column).iloc[k]!r}", fix)
        for k in _rows(~values.isin(list(choices)))
    )
    return values


def matches(table: Table, column: str, pattern: str, problems: list[Problem], *, what: str, fix: str) -> NDArray[np.bool_]:
    """Flag every cell that does not match ``pattern`` in full; ``what`` says what a good one is.

    Returns
    -------
    numpy.ndarray of bool
        True for the rows that match.
    """
    values = table.column(column)
    ok = np.array([re.fullmatch(pattern, value) is not None for value in values], dtype=bool)
    problems.extend(table.problem(k, column, f"must be {what}, got {values.iloc[k]!r}", fix) for k in _rows(~ok))
    return ok


def unique(
    table: Table, column: str, problems: list[Problem], *, what: str, fix: str, rows: NDArray[np.bool_] | None = None
) -> None:
    """Flag every repeat of a value, naming the row it first appeared in (blank cells are not compared).

    Parameters
    ----------
    table : Table
        The table.
    column : str
        The column that must hold unique values.
    problems : list of Problem
        Gathers one problem per repeat.
    what : str
        What a value is (``id``, ``hub id``).
    fix : str
        How to fix a repeat.
    rows : numpy.ndarray of bool, optional
        Compare only these rows (e.g. the ids that are well formed).
    """
    first: dict[str, int] = {}
    for k, value in enumerate(table.column(column).tolist()):
        if value == "" or (rows is not None and not rows[k]):
            continue
        if value in first:
            rule = f"duplicate {what} {value!r} (first at {table.where(first[value])})"
            problems.append(table.problem(k, column, rule, fix))
        else:
            first[value] = k


def close_matches(value: str, known: Iterable[str]) -> str:
    """`` (did you mean 'a', 'b'?)`` for up to three known values close to ``value``, else ''."""
    close = difflib.get_close_matches(value, sorted(known), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def known(table: Table, column: str, ids: Collection[str], problems: list[Problem], *, what: str, fix: str) -> NDArray[np.bool_]:
    """Flag every cell that is not one of ``ids``, suggesting close ones.

    Parameters
    ----------
    table : Table
        The table.
    column : str
        The column that refers to ids of another table.
    ids : collection of str
        The ids it may hold.
    problems : list of Problem
        Gathers one problem per unknown id.
    what : str
        What an id is (``hub id``, ``site``).
    fix : str
        How to fix an unknown one; the close ids known are appended.

    Returns
    -------
    numpy.ndarray of bool
        True for the rows whose id is known.
    """
    values = table.column(column)
    ok = values.isin(list(ids)).to_numpy()
    problems.extend(
        table.problem(k, column, f"unknown {what} {values.iloc[k]!r}", fix + close_matches(values.iloc[k], ids))
        for k in _rows(~ok)
    )
    return np.asarray(ok)


def _rows(mask: pd.Series | NDArray[np.bool_]) -> list[int]:
    return [int(k) for k in np.flatnonzero(np.asarray(mask, dtype=bool))]
