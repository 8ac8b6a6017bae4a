"""A results folder: how every table and JSON file in it is written, and the one reader that reads it back.

Every CSV file a command writes goes through :func:`write_csv` and every JSON file through
:func:`write_json` (:mod:`placement.results.jsonio`): a figure that is not defined (NaN, infinity) is an empty
cell or ``null``, never the text ``nan`` or ``inf``.

:func:`read_results_folder` reads a folder ``solve`` wrote, or one year of a build-out
(``OUT/years/<year>/``), with one policy for every table: ids (``site_id``, ``population_id``, ...) and
country codes are text, so Namibia's ``NA`` stays a code; only an empty cell is missing (NaN in a column of
numbers). The report rebuild, ``explain`` and ``diff`` all read through it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from placement._errors import InputError, Problem
from placement.results import jsonio
from placement.results.summary import PlanSummary

__all__ = [
    "FLOAT_DIGITS",
    "TABLES",
    "LazyTables",
    "ResultsFolder",
    "csv_text",
    "json_text",
    "null_nonfinite",
    "read_results_folder",
    "read_summary",
    "read_table",
    "write_csv",
    "write_json",
]

FLOAT_DIGITS = 10
"""Significant digits of a float in a CSV file."""
TEXT_COLUMNS = ("country_code",)
"""Columns read as text whatever they hold (with every column named ``id`` or ``*_id``)."""
TABLES = {
    "sites": "sites.csv",
    "assignments": "assignments.csv",
    "populations": "populations.csv",
    "members": "population_members.csv",
}
"""The plan's tables, by the :class:`ResultsFolder` field that holds each."""
REQUIRED = ("summary.json", "sites.csv", "assignments.csv")
ADEQUACY_CSV = "adequacy.csv"
"""Per outage source, what it costs the plan (``placement adequacy``, or ``fault_tolerance.adequacy``)."""
"""What every results folder holds; a build-out year has no population tables."""

Frame = TypeVar("Frame", bound=pd.DataFrame)


# ----------------------------------------------------------------------------- writing


def null_nonfinite(frame: Frame) -> Frame:
    """A copy whose float columns hold a missing value (``pd.NA``) wherever they were not finite.

    Columns with a non-finite value become pandas' nullable ``Float64``: GDAL writes their
    missing values as JSON ``null`` and pandas writes them as empty CSV cells.

    Parameters
    ----------
    frame : pandas.DataFrame
        A table to write (a GeoDataFrame stays one).

    Returns
    -------
    pandas.DataFrame
        The same columns; float columns without a non-finite value are unchanged.
    """
    clean = frame.copy()
    for column in clean.columns:
        if column == "geometry" or not pd.api.types.is_float_dtype(clean[column]):
            continue
        values = clean[column].to_numpy(dtype=float, na_value=np.nan)
        finite = np.isfinite(values)
        if finite.all():
            continue
        column_values = pd.array(np.where(finite, values, 0.0), dtype="Float64")
        column_values[~finite] = pd.NA
        clean[column] = column_values
    return clean


def _cells(values: pd.Series, digits: int) -> list[str]:
    """One column's cells as pandas writes them: floats ``%.{digits}g``, missing empty, text quoted where needed."""
    fmt = f"%.{digits}g"
    if pd.api.types.is_bool_dtype(values.dtype):
        return ["True" if v else "False" for v in values.to_numpy(bool).tolist()]
    if pd.api.types.is_integer_dtype(values.dtype) and not isinstance(values.dtype, pd.api.extensions.ExtensionDtype):
        return [str(v) for v in values.to_numpy().tolist()]
    if pd.api.types.is_float_dtype(values.dtype):
        numbers = values.to_numpy(dtype=float, na_value=np.nan)
        return ["" if v != v else fmt % v for v in numbers.tolist()]
    if not isinstance(values.dtype, pd.StringDtype):  # objects of any kind: True and 1 would hash alike, so one at a time
        return [_text_cell(v, fmt) for v in values.tolist()]
    codes, uniques = pd.factorize(values.to_numpy(dtype=object), use_na_sentinel=False)  # ids and names repeat: each once
    texts = [_text_cell(v, fmt) for v in uniques.tolist()]
    return [texts[k] for k in codes.tolist()]


_QUOTED = re.compile(r'[,"\n\r]')


def _text_cell(v: object, fmt: str) -> str:
    """One cell of a column of objects: missing empty, a float ``fmt``, text quoted where it holds a comma, quote or line end."""
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return ""
    if isinstance(v, float):
        return fmt % v
    text = str(v)
    return '"' + text.replace('"', '""') + '"' if _QUOTED.search(text) else text


def csv_text(table: pd.DataFrame, *, digits: int = FLOAT_DIGITS) -> str:
    """A table as CSV text: no index, floats to ``digits`` significant digits, a non-finite figure empty.

    The bytes of pandas' ``to_csv(index=False, float_format="%.{digits}g")`` after :func:`null_nonfinite` (the tests
    compare them), formatted a column at a time in plain Python rather than through pandas' formatter, which costs
    a Python call per float: a full-resolution plan's ``assignments.csv`` takes seconds, not a quarter of a minute.

    Parameters
    ----------
    table : pandas.DataFrame
        The table.
    digits : int, optional
        Significant digits of a float (a simulated figure is worth fewer than a solved one).

    Returns
    -------
    str
        The text, a newline after the header and after each row.
    """
    return "".join(_csv_parts(table, digits=digits))


CSV_CHUNK_ROWS = 50_000
"""Rows formatted at a time: the text of a whole full-resolution table at once would hold a few hundred MB."""


def _csv_parts(table: pd.DataFrame, *, digits: int) -> Iterator[str]:
    """:func:`csv_text` a piece at a time: the header, then each chunk of rows."""
    clean = null_nonfinite(table)
    yield ",".join(_cells(pd.Series([str(c) for c in clean.columns], dtype=object), digits)) + "\n"
    for start in range(0, len(clean), CSV_CHUNK_ROWS):
        chunk = clean.iloc[start : start + CSV_CHUNK_ROWS]
        columns = [_cells(chunk[name], digits) for name in chunk.columns]
        yield "".join(",".join(row) + "\n" for row in zip(*columns, strict=True))


def significant(values: ArrayLike, digits: int) -> NDArray[np.float64]:
    """``values`` rounded to ``digits`` significant digits (0 and non-finite values unchanged)."""
    x = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        magnitude = np.where(np.isfinite(x) & (x != 0), np.floor(np.log10(np.abs(x))), 0.0)
    scale = 10.0 ** (digits - 1 - magnitude)
    return np.asarray(np.where(np.isfinite(x), np.round(x * scale) / scale, x), dtype=float)


def write_csv_chunks(chunks: Iterable[pd.DataFrame], path: Path, *, columns: Sequence[str], digits: int = FLOAT_DIGITS) -> None:
    """Write a table given in chunks as one CSV file, never holding it whole (Arrow's CSV writer: C++ speed).

    Floats are rounded to ``digits`` significant digits and written in their shortest form; booleans as
    ``true``/``false``. Meant for tables of millions of rows (``failover.csv`` at full resolution), where
    pandas' formatting costs a minute.

    Parameters
    ----------
    chunks : iterable of pandas.DataFrame
        The table's rows in order, each chunk with ``columns`` (and the same dtypes).
    path : Path
        Destination file (inside a folder being written whole).
    columns : sequence of str
        The header (written even when there are no chunks).
    digits : int, optional
        Significant digits of a float.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    writer = None
    try:
        for chunk in chunks:
            frame = chunk[list(columns)].copy()
            for column in frame.columns:
                if pd.api.types.is_float_dtype(frame[column]):
                    frame[column] = significant(frame[column].to_numpy(), digits)
            table = pa.Table.from_pandas(frame, preserve_index=False)
            if writer is None:
                writer = pacsv.CSVWriter(str(path), table.schema, write_options=pacsv.WriteOptions(quoting_style="needed"))
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        path.write_text(",".join(columns) + "\n", encoding="utf-8")


def write_csv(table: pd.DataFrame, path: Path, *, digits: int = FLOAT_DIGITS) -> None:
    """Write a table as CSV (:func:`csv_text`), UTF-8.

    Parameters
    ----------
    table : pandas.DataFrame
        The table.
    path : Path
        Destination file (inside a folder being written whole, see
        :func:`placement.outputs.writer.write_folder`).
    digits : int, optional
        Significant digits of a float.
    """
    with path.open("w", encoding="utf-8", newline="") as out:
        for part in _csv_parts(table, digits=digits):
            out.write(part)


def json_text(value: Any) -> str:
    """JSON text of a file: :func:`placement.results.jsonio.dumps` (non-finite numbers as ``null``), indented, newline-ended."""
    return jsonio.dumps(value) + "\n"


def write_json(value: Any, path: Path) -> None:
    """Write a JSON file (:func:`json_text`), UTF-8.

    Parameters
    ----------
    value : Any
        What to encode (see :func:`placement.results.jsonio.plain`).
    path : Path
        Destination file.
    """
    path.write_text(json_text(value), encoding="utf-8")


# ----------------------------------------------------------------------------- reading


def _text_columns(path: Path) -> dict[str, type[str]]:
    """Each column of ``path``'s header read as text: ids and country codes."""
    header = pd.read_csv(path, nrows=0, encoding="utf-8").columns
    return {str(name): str for name in header if name == "id" or str(name).endswith("_id") or name in TEXT_COLUMNS}


def read_table(path: Path) -> pd.DataFrame:
    """One table of a results folder, read with the folder's policy.

    Ids and country codes are text; every other column is what pandas makes of it, only an empty cell
    being missing (``NA``, ``nan`` or ``null`` in a column of text stay text). An ``open`` column is bool.

    Parameters
    ----------
    path : Path
        A CSV file written by :func:`write_csv`.

    Returns
    -------
    pandas.DataFrame
        The table.

    Raises
    ------
    InputError
        The file is empty or not CSV.
    """
    try:
        text = _text_columns(path)
        table = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype=text, encoding="utf-8")
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        rule = f"not a table written by 'placement solve' ({type(exc).__name__}: {exc})"
        raise InputError([Problem(str(path), "", "", rule, _fix(path.parent))]) from None
    if "open" in table.columns:
        table["open"] = table["open"].astype(str).str.lower().isin(["true", "1"])
    return table


def _fix(folder: Path) -> str:
    return f"run 'placement solve SCENARIO --out {folder}' first, or pass a results folder"


def read_summary(folder: str | Path) -> dict[str, Any]:
    """``summary.json`` of a results folder (a build-out's too).

    Parameters
    ----------
    folder : str or Path
        A results folder.

    Returns
    -------
    dict
        The parsed file.

    Raises
    ------
    InputError
        The folder or its ``summary.json`` does not exist, or the file is not a JSON object.
    """
    path = Path(folder)
    if not path.is_dir():
        raise InputError([Problem(str(path), "", "", "no such folder", _fix(path))])
    summary_path = path / "summary.json"
    if not summary_path.is_file():
        raise InputError([Problem(str(path), "", "", "not a results folder: summary.json missing", _fix(path))])
    return _summary_document(summary_path)


def _summary_document(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError([Problem(str(path), f"line {exc.lineno}", "", "not valid JSON", _fix(path.parent))]) from None
    if not isinstance(document, dict):
        raise InputError([Problem(str(path), "", "", "not a JSON object", _fix(path.parent))])
    return document


def _buildout_problem(folder: Path, summary: Mapping[str, Any]) -> Problem:
    years = [entry.get("year") for entry in summary.get("years") or [] if isinstance(entry, Mapping)]
    span = f" (years {years[0]}-{years[-1]})" if years else ""
    rule = f"it is a build-out{span}: it holds no plan tables of its own; each year's plan is in years/<year>/"
    example = folder / "years" / str(years[0] if years else "YEAR")
    fix = f"pass a single-year results folder, or a year's folder ({example}) to 'placement diff'"
    return Problem(str(folder), "", "", rule, fix)


class LazyTables(Mapping[str, pd.DataFrame]):
    """CSV files by name, each read (:func:`read_table`) the first time it is asked for.

    A folder's other tables can be large (``failover.csv`` of a full-resolution N+1 plan holds ~11 M rows), and
    most readers want none of them: listing them costs nothing, reading one costs only that one.

    Parameters
    ----------
    paths : mapping of str to Path
        The files, by name.
    """

    def __init__(self, paths: Mapping[str, Path]) -> None:
        self._paths = dict(paths)
        self._read: dict[str, pd.DataFrame] = {}

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._read:
            self._read[name] = read_table(self._paths[name])
        return self._read[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


@dataclass(frozen=True)
class ResultsFolder:
    """A results folder read back: its summary and the plan's tables.

    Parameters
    ----------
    folder : Path
        The folder read.
    summary : dict
        ``summary.json`` as written (:meth:`plan_summary` types a plain solve's).
    sites, assignments : pandas.DataFrame
        ``sites.csv`` (``open`` as bool) and ``assignments.csv``.
    populations, members : pandas.DataFrame or None
        ``populations.csv`` and ``population_members.csv``; None in a build-out year's folder.
    extras : mapping
        Every other CSV file of the folder (``tail_check.csv``, ``failover.csv``, ...), by file name, read
        when first asked for (:class:`LazyTables`).
    """

    folder: Path
    summary: dict[str, Any]
    sites: pd.DataFrame
    assignments: pd.DataFrame
    populations: pd.DataFrame | None = None
    members: pd.DataFrame | None = None
    extras: Mapping[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def is_buildout_year(self) -> bool:
        """The folder is one year of a build-out (``OUT/years/<year>/``), not a plain solve."""
        return "year" in self.summary and "demand_scenario" in self.summary

    @property
    def notes(self) -> list[str]:
        """The plan's notes (``summary.json``'s ``notes``)."""
        return [str(note) for note in self.summary.get("notes") or []]

    @property
    def scenario_path(self) -> Path:
        """The scenario solved: the original file if it still exists, else the folder's ``scenario.yaml``."""
        original = Path(str(self.summary.get("scenario_path", "")))
        return original if original.is_file() else self.folder / "scenario.yaml"

    def plan_summary(self) -> PlanSummary:
        """The typed summary of a plain solve's folder.

        Returns
        -------
        PlanSummary
            From ``summary.json`` (an older folder's too: figures added later are optional).

        Raises
        ------
        PlacementError
            ``summary.json`` lacks a figure every version has written (a build-out year's does).
        """
        return PlanSummary.from_json_dict(self.summary)


def read_results_folder(folder: str | Path, *, require: Collection[str] = ()) -> ResultsFolder:
    """Read a results folder: ``summary.json`` and every table, with one policy (:func:`read_table`).

    Parameters
    ----------
    folder : str or Path
        A folder written by ``solve`` (by this or an older version), a sweep scenario's run, or one year
        of a build-out.
    require : collection of str, optional
        Files the caller needs besides ``summary.json``, ``sites.csv`` and ``assignments.csv`` (e.g.
        ``populations.csv``): a folder without one is refused like one without ``sites.csv``.

    Returns
    -------
    ResultsFolder
        The summary and the tables.

    Raises
    ------
    InputError
        The folder does not exist, lacks a file (every missing one named, with what to do), holds a
        ``summary.json`` that is not JSON, or is a whole build-out (its plans are its years' folders).
    """
    path = Path(folder)
    if not path.is_dir():
        raise InputError([Problem(str(path), "", "", "no such folder", _fix(path))])
    summary = _summary_document(path / "summary.json") if (path / "summary.json").is_file() else None
    if summary is not None and summary.get("kind") == "buildout":
        raise InputError([_buildout_problem(path, summary)])
    missing = [name for name in dict.fromkeys([*REQUIRED, *require]) if not (path / name).is_file()]
    if missing or summary is None:
        raise InputError([Problem(str(path), "", "", f"not a results folder: {', '.join(missing)} missing", _fix(path))])
    tables = {key: read_table(path / name) if (path / name).is_file() else None for key, name in TABLES.items()}
    known = set(TABLES.values())
    extras = LazyTables({p.name: p for p in sorted(path.glob("*.csv")) if p.name not in known})
    sites, assignments = tables.pop("sites"), tables.pop("assignments")
    assert sites is not None and assignments is not None  # REQUIRED
    return ResultsFolder(path, summary, sites, assignments, tables["populations"], tables["members"], extras)
