"""The files of a loss looked at after the plan: ``failover_exposure*.csv`` and ``.json``, written whole or not at all."""

from __future__ import annotations

from pathlib import Path

from placement._errors import InputError, Problem
from placement.analyses.exposure import FailoverExposure
from placement.outputs.writer import write_folder
from placement.results.folder import write_csv, write_json

__all__ = ["EXPOSURE_FILES", "write_exposure"]

EXPOSURE_FILES = ("failover_exposure.csv", "failover_exposure_sites.csv", "failover_exposure.json")
"""What ``placement failover`` writes: per population and class, per receiving site, and the headline."""


def write_exposure(exposure: FailoverExposure, out_dir: str | Path, *, plan_folder: Path) -> Path:
    """Write a loss's exposure into ``out_dir``, whole or not at all.

    Parameters
    ----------
    exposure : FailoverExposure
        From :func:`placement.analyses.exposure.failover_exposure`.
    out_dir : str or Path
        Destination folder (an earlier exposure's folder is replaced).
    plan_folder : Path
        The plan's folder: ``out_dir`` may be inside it, never it.

    Returns
    -------
    Path
        The folder written.

    Raises
    ------
    InputError
        ``out_dir`` is the plan's folder, or cannot be written (:func:`placement.outputs.writer.write_folder`).
    """
    out = Path(out_dir).resolve()
    if out == plan_folder.resolve():
        rule = f"it would replace the plan's folder {plan_folder}"
        fix = "choose another --out (default: RESULTS/failover-<what fails>/)"
        raise InputError([Problem(f"output folder {out}", "", "", rule, fix)])

    def write(folder: Path) -> None:
        write_csv(exposure.commodities, folder / EXPOSURE_FILES[0])
        write_csv(exposure.sites, folder / EXPOSURE_FILES[1])
        write_json(exposure.headline, folder / EXPOSURE_FILES[2])

    return write_folder(out, write)
