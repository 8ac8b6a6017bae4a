"""Running a sweep: each case solved as an independent Dask task, stored as it finishes, resumable.

:func:`run_sweep` solves the cases of a prepared sweep (:mod:`placement.sweep.spec`), stores each
result as it finishes (``cases/<id>.json``), skips the cases already stored, and writes the
results table and its analysis (:mod:`placement.sweep.analysis`).
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from placement._errors import PlacementError
from placement.outputs.writer import write_text_atomic
from placement.progress import StderrProgress
from placement.results import jsonio
from placement.results.folder import csv_text, json_text
from placement.scenario.load import LoadedScenario
from placement.sweep.spec import MARKER, RESULT_COLUMNS, PreparedSweep, SweepCase, prepare_sweep

# --- solving one case (runs on a Dask worker) --------------------------------------------------


def _open_sites(sites: pd.DataFrame) -> list[dict[str, Any]]:
    opened = sites.loc[sites["open"], ["site_id", "name", "lat", "lon", "mw_used"]]
    records: list[dict[Any, Any]] = opened.to_dict("records")
    return [
        {"site_id": str(r["site_id"]), "name": str(r["name"]), **{k: float(r[k]) for k in ("lat", "lon", "mw_used")}}
        for r in records
    ]


def solve_case(case_id: str, loaded: LoadedScenario) -> dict[str, Any]:
    """Solve one case and return its record; never raises for a failing case.

    Parameters
    ----------
    case_id : str
        The case's id (copied into the record).
    loaded : LoadedScenario
        Its validated scenario.

    Returns
    -------
    dict
        JSON-ready: ``status`` (the plan's, or ``error``), ``error`` ('' when solved, else the
        exception's type and text), headline figures, and ``open_sites`` (id, name, lat, lon, MW).
    """
    from placement.plan.solve import run  # the worker imports the solver stack, the client need not

    start = time.perf_counter()
    record: dict[str, Any] = {"case_id": case_id, "error": ""}
    try:
        plan = run(loaded)
    except PlacementError as exc:
        record.update(status="error", error=f"{type(exc).__name__}: {exc}", open_sites=[])
    except Exception as exc:
        trace = traceback.format_exception_only(type(exc), exc)[-1].strip()
        record.update(status="error", error=f"unexpected {trace}", open_sites=[])
    else:
        figures = plan.summary.to_json_dict()  # RESULT_COLUMNS are summary.json keys
        record.update({key: figures[key] for key in RESULT_COLUMNS if key in figures})
        record["open_sites"] = _open_sites(plan.sites)
        record["notes"] = list(plan.notes[:5])
    record["wall_s"] = time.perf_counter() - start
    return record


# --- storage ---------------------------------------------------------------------------------


def _case_file(out_dir: Path, cid: str) -> Path:
    return out_dir / "cases" / f"{cid}.json"


def store_case(out_dir: Path, case: SweepCase, record: dict[str, Any]) -> None:
    """Write one case's record to ``out_dir/cases/<id>.json`` whole or not at all."""
    payload = {**record, "case_index": case.index, "overrides": case.overrides}
    write_text_atomic(_case_file(out_dir, case.case_id), jsonio.dumps(payload, indent=1) + "\n")


def load_case(out_dir: Path, cid: str) -> dict[str, Any] | None:
    """A stored record, or None when the case has not finished (or its file is damaged)."""
    path = _case_file(out_dir, cid)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return record if isinstance(record, dict) and record.get("case_id") == cid else None


def _claim_folder(out_dir: Path, prepared: PreparedSweep) -> None:
    """Make ``out_dir`` a sweep folder; refuse a non-empty folder that is not one."""
    if out_dir.exists() and (not out_dir.is_dir() or (any(out_dir.iterdir()) and not (out_dir / MARKER).is_file())):
        raise PlacementError(f"{out_dir} exists and is not a sweep results folder (no {MARKER}); choose another --out")
    (out_dir / "cases").mkdir(parents=True, exist_ok=True)
    (out_dir / "scenarios").mkdir(exist_ok=True)
    marker = {"sweep": str(prepared.path), "base": str(prepared.base.path), "cases": len(prepared.cases)}
    write_text_atomic(out_dir / MARKER, json_text(marker))
    shutil.copyfile(prepared.path, out_dir / "sweep.yaml")
    for case in prepared.cases:
        target = out_dir / "scenarios" / f"{case.case_id}.yaml"
        if not target.is_file():
            write_text_atomic(target, yaml.safe_dump(case.raw, sort_keys=False))


# --- running on Dask -------------------------------------------------------------------------


def distributed() -> Any:
    """The ``distributed`` package, imported on first use (it is untyped: calls go through Any)."""
    return importlib.import_module("distributed")


@contextmanager
def dask_client(workers: int | None, scheduler: str | None) -> Iterator[Any]:
    """:func:`open_client`'s client for a ``with`` block, closed with its local cluster (if it made one) after it."""
    client, cluster = open_client(workers, scheduler)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def open_client(workers: int | None, scheduler: str | None) -> tuple[Any, Any]:
    """A Dask client on an existing scheduler, or on a new local cluster of worker processes."""
    dask = distributed()
    if scheduler is not None:
        try:
            return dask.Client(scheduler, timeout="20s"), None
        except OSError as exc:
            raise PlacementError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    cluster = dask.LocalCluster(
        n_workers=workers or 2,
        threads_per_worker=1,
        processes=True,
        dashboard_address="127.0.0.1:0",  # any free port: two sweeps at once do not collide on 8787
        host="127.0.0.1",
    )
    return dask.Client(cluster), cluster


def _completed(futures: list[Any], show: bool, total: int, skipped: int) -> Iterator[Any]:
    """Futures as they finish, with a progress bar on standard error."""
    from tqdm import tqdm

    with tqdm(total=total, initial=skipped, desc="cases", unit="case", file=sys.stderr, disable=not show) as bar:
        for future in distributed().as_completed(futures):
            bar.update(1)
            yield future


def _solve_missing(
    missing: list[SweepCase], out_dir: Path, client: Any, *, progress: bool, total: int
) -> dict[str, dict[str, Any]]:
    """Submit each missing case as one task; store each record as it finishes."""
    by_key = {}
    futures = []
    for case in missing:
        future = client.submit(solve_case, case.case_id, case.loaded, key=f"placement-case-{case.case_id}", pure=False)
        by_key[future.key] = case
        futures.append(future)
    records = {}
    for future in _completed(futures, progress, total, total - len(missing)):
        case = by_key[future.key]
        try:
            record = future.result()
        except Exception as exc:
            records[case.case_id] = {"case_id": case.case_id, "status": "error", "error": f"worker: {type(exc).__name__}: {exc}"}
            continue
        store_case(out_dir, case, record)
        records[case.case_id] = record
        future.release()
    return records


def results_table(prepared: PreparedSweep, records: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per case: id, overrides (one column per axis), outcome and headline figures.

    Parameters
    ----------
    prepared : PreparedSweep
        The sweep.
    records : dict
        Case id -> record from :func:`solve_case` (missing cases get status ``missing``).

    Returns
    -------
    pandas.DataFrame
        Columns ``case_id``, ``case``, every axis key path, then :data:`RESULT_COLUMNS`;
        ``open_sites`` is a ``;``-joined list of site ids.
    """
    rows = []
    for case in prepared.cases:
        record = records.get(case.case_id, {"status": "missing", "error": "not solved"})
        row: dict[str, Any] = {"case_id": case.case_id, "case": case.index}
        row.update({axis: case.overrides.get(axis) for axis in prepared.axes})
        row.update({key: record.get(key) for key in RESULT_COLUMNS if key != "open_sites"})
        row["error"] = record.get("error") or ""
        row["open_sites"] = ";".join(site["site_id"] for site in record.get("open_sites") or [])
        rows.append(row)
    table = pd.DataFrame(rows, columns=["case_id", "case", *prepared.axes, *RESULT_COLUMNS])
    for axis in prepared.axes:
        table[axis] = _uniform_column(table[axis])
    numeric = [c for c in RESULT_COLUMNS if c not in ("status", "error", "open_sites")]
    table[numeric] = table[numeric].apply(pd.to_numeric, errors="coerce")
    return table


def _uniform_column(column: pd.Series) -> pd.Series:
    """Keep an axis column that Parquet can hold: one scalar type, else text (JSON for lists)."""
    values = [v for v in column if v is not None]
    kinds = {bool if isinstance(v, bool) else float if isinstance(v, int | float) else type(v) for v in values}
    if kinds <= {float} or kinds == {bool} or kinds == {str}:
        return column
    return column.map(lambda v: None if v is None else (v if isinstance(v, str) else json.dumps(v)))


def _write_tables(out_dir: Path, table: pd.DataFrame) -> None:
    with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".results.", suffix=".parquet", delete=False) as handle:
        staged = Path(handle.name)
    table.to_parquet(staged, index=False)
    staged.replace(out_dir / "results.parquet")
    write_text_atomic(out_dir / "results.csv", csv_text(table))


def run_sweep(
    sweep_path: str | Path,
    *,
    out_dir: str | Path,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Solve every case of a sweep on Dask and write the results and their analysis.

    Parameters
    ----------
    sweep_path : str or Path
        The sweep YAML.
    out_dir : str or Path
        Results folder. Cases already stored there (``cases/<id>.json``) are not solved again.
    workers : int, optional
        Worker processes of the local cluster (default 2; one thread each). Ignored with ``scheduler``.
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:port``) to submit to instead.
    progress : bool, optional
        Show a progress bar and a few lines on standard error.

    Returns
    -------
    pandas.DataFrame
        The results table (also written as ``results.parquet`` and ``results.csv``).

    Raises
    ------
    InputError
        When the sweep file, its base or any case is invalid (before anything is solved).
    PlacementError
        When ``out_dir`` is not a sweep folder or the scheduler cannot be reached.
    """
    from placement.sweep.writer import write_analysis

    say = StderrProgress(show=progress, timed=False)
    prepared = prepare_sweep(sweep_path, progress=say)
    out = Path(out_dir).resolve()
    _claim_folder(out, prepared)
    for note in prepared.notes:
        say(note)
    stored = {case.case_id: load_case(out, case.case_id) for case in prepared.cases}
    records = {cid: record for cid, record in stored.items() if record is not None}
    missing = [case for case in prepared.cases if case.case_id not in records]
    say(f"{len(prepared.cases)} cases: {len(records)} already solved in {out / 'cases'} (skipped), {len(missing)} to solve")
    if missing:
        with dask_client(workers, scheduler) as client:
            say(f"dask: {describe_client(client, scheduler)}")
            records.update(_solve_missing(missing, out, client, progress=progress, total=len(prepared.cases)))
    table = results_table(prepared, records)
    _write_tables(out, table)
    for note in write_analysis(out, prepared, table, records):
        say(note)
    failed = int((table["error"] != "").sum())
    say(f"{len(table) - failed} of {len(table)} cases solved, {failed} failed; results in {out}")
    return table


def describe_client(client: Any, scheduler: str | None) -> str:
    """Where the tasks run, in words: the scheduler or a local cluster, and its workers."""
    n_workers = len(client.scheduler_info().get("workers", {}))
    where = f"scheduler {scheduler}" if scheduler else "local cluster"
    return f"{where} with {n_workers} worker{'s' if n_workers != 1 else ''}"
