"""Writing a plan to a results folder, whole or not at all.

Every file is first written into a fresh sibling folder; only when all of them are written is
it swapped in for the destination, so a failure leaves the previous results untouched.

The files themselves are :mod:`placement.outputs.plan_files`' work, which needs the drawing libraries; this module
imports it only when a plan is written in this process, so that a command can hand the writing to a child on standby
(:func:`standby_writer`) that imported them while the plan was solved.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from placement._errors import InputError, Problem
from placement._paths import nearest_existing
from placement._process import Standby
from placement.outputs.plan_outputs import PlanOutputs, plan_outputs, write_failover_rows
from placement.plan.record import Plan
from placement.progress import Progress, quiet

MARKERS = (
    "summary.json",
    "compare.csv",
    "diff.json",
    "failover_exposure.json",
    "frontier.csv",
    "discover.json",
    "alternatives.csv",
)

MAP_FILES = ("map.png", "map_<region>.png", "map.html")
"""The files ``maps=False`` (``solve --no-maps``) leaves out; every other file is written."""


WriterStandby = Standby[tuple[Path, PlanOutputs], None]
"""A child ready to write a plan's files: handed a staging folder and what to write there."""


def standby_writer(progress: Progress = quiet) -> WriterStandby:
    """A child, forked now, that imports the drawing libraries and reads the basemap while the caller solves.

    Pass it to :func:`write_results`; close it (or open it in a ``with`` block) when no plan comes. Where a fork is
    not safe it forks nothing and the files are written in the caller, as without it.

    Parameters
    ----------
    progress : callable, optional
        Receives a line as each group of files is written (from the child).

    Returns
    -------
    Standby
        The child, waiting.
    """

    def prepare() -> None:
        from placement.outputs import plan_files

        plan_files.prepare()

    def work(job: tuple[Path, PlanOutputs]) -> None:
        from placement.outputs.plan_files import write_plan_files

        write_plan_files(job[1], job[0], progress)

    return Standby(prepare, work)


def check_output_folder(out_dir: str | Path, *, results_markers: tuple[str, ...] | None = MARKERS) -> Path:
    """Check, before anything is solved, that a results folder can be written at ``out_dir``.

    A results folder is written into a sibling staging folder and swapped in (see
    :func:`write_folder`), so the place that must be writable is the nearest existing folder
    on the way to ``out_dir``'s parent. It is probed by creating and removing an empty folder there,
    which fails on a read-only file system or without permission, for root too.

    Parameters
    ----------
    out_dir : str or Path
        The destination the user gave (``--out``).
    results_markers : tuple of str or None, optional
        Files that mark an existing folder as results this program may replace (default :data:`MARKERS`:
        ``summary.json``, ``compare.csv``, ``diff.json`` or ``failover_exposure.json``); None leaves that check to
        the caller (a sweep folder has its own marker).

    Returns
    -------
    Path
        The destination, absolute.

    Raises
    ------
    InputError
        Naming the path, what is wrong with it and the fix.
    """
    out = Path(out_dir).resolve()
    source = f"output folder {out}"
    fix = "choose another --out: a new folder, or an old results folder, in a folder you can write to"
    if out.exists() and not out.is_dir():
        raise InputError([Problem(source, "", "", "it is a file, not a folder", fix)])
    markers = results_markers or ()
    foreign = out.is_dir() and any(out.iterdir()) and not any((out / name).exists() for name in markers)
    if results_markers is not None and foreign:
        rule = f"it exists, is not empty and is not a placement results folder (no {' or '.join(markers)})"
        raise InputError([Problem(source, "", "", rule + "; nothing in it is overwritten", fix)])
    base = nearest_existing(out.parent)  # staging and the swap happen beside out_dir
    if not base.is_dir():
        raise InputError([Problem(source, "", "", f"it would be inside {base}, which is a file, not a folder", fix)])
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".placement-write-check-", dir=base))
    except OSError as exc:
        raise InputError([Problem(source, "", "", f"{base} cannot be written to ({exc.strerror})", fix)]) from None
    return out


def write_folder(out_dir: str | Path, writer: Callable[[Path], None]) -> Path:
    """Write a results folder whole or not at all.

    Parameters
    ----------
    out_dir : str or Path
        Destination folder. It is replaced as a whole; an existing folder that does not hold
        placement results (none of :data:`MARKERS`) is refused.
    writer : callable
        Writes every file into the folder it is given.

    Returns
    -------
    Path
        The folder written.

    Raises
    ------
    InputError
        If the destination exists and is not a results folder, or cannot be written
        (:func:`check_output_folder`).
    """
    out = check_output_folder(out_dir)  # again: the folder may have changed while the plan was solved
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    try:
        writer(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    retired = None
    if out.exists():
        retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        out.rename(retired / "results")
    staging.rename(out)
    if retired is not None:
        shutil.rmtree(retired, ignore_errors=True)
    return out


def write_text_atomic(path: Path, text: str) -> None:
    """Write one file whole or not at all (temporary file, then rename).

    Parameters
    ----------
    path : Path
        Destination.
    text : str
        Content.
    """
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with open(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    # mkstemp makes the file private (0600): give it the mode any other file written here gets (0666 less the umask)
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(temporary, 0o666 & ~mask)
    Path(temporary).replace(path)


def write_results(
    plan: Plan,
    out_dir: str | Path,
    *,
    maps: bool = True,
    tail_check: pd.DataFrame | None = None,
    progress: Progress = quiet,
    standby: WriterStandby | None = None,
) -> Path:
    """Write every result file of a plan into ``out_dir``, atomically.

    Parameters
    ----------
    plan : Plan
        A solved plan.
    out_dir : str or Path
        Destination folder. It is replaced as a whole; an existing folder that does not hold
        placement results (no ``summary.json``) is refused rather than overwritten.
    maps : bool, optional
        Draw the maps (:data:`MAP_FILES`); False leaves them out (scripted runs), every other
        file is written as usual.
    tail_check : pandas.DataFrame, optional
        The plan's tail check (:func:`placement.analyses.tail.check_tail`), written as ``tail_check.csv`` with
        the other files, so it is swapped in with them or not at all.
    progress : callable, optional
        Receives a line as each group of files is written (tables, GeoJSON, maps, report); with ``standby``, the
        standby's own.
    standby : Standby, optional
        A child ready to write (:func:`standby_writer`): the files are written there (the same files).

    Returns
    -------
    Path
        The folder written.

    Raises
    ------
    InputError
        If the destination exists and is not a results folder, or cannot be written.
    """
    outputs = plan_outputs(plan, maps=maps, tail_check=tail_check)

    def write(folder: Path) -> None:
        if standby is not None:  # the files in the child, failover.csv's rows (made from the model) here meanwhile
            sent = outputs.without_failover_rows()
            standby.send((folder, sent))
            try:
                if not sent.failover_rows and plan.results.failover is not None:
                    write_failover_rows(plan.results.failover, folder)
            except BaseException:
                standby.close()  # stopped before the staging folder is removed
                raise
            standby.result()
            return
        from placement.outputs.plan_files import write_plan_files

        write_plan_files(outputs, folder, progress)

    return write_folder(out_dir, write)
