"""``placement adequacy``'s files: ``adequacy.csv`` and the figures in ``summary.json`` and the report.

Each file is replaced whole or not at all (a temporary file, then a rename); the report is rendered again from
the updated ``summary.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from placement.analyses.adequacy import Adequacy
from placement.outputs.report_html import rerender_report
from placement.outputs.writer import write_text_atomic
from placement.results.folder import ADEQUACY_CSV, csv_text, json_text

__all__ = ["write_adequacy"]


def write_adequacy(adequacy: Adequacy, folder: str | Path) -> list[Path]:
    """Write ``adequacy.csv``, put the figures in ``summary.json`` (key ``adequacy``) and render the report again.

    Parameters
    ----------
    adequacy : Adequacy
        From :func:`placement.analyses.adequacy.adequacy_of_folder`.
    folder : str or Path
        The results folder evaluated.

    Returns
    -------
    list of Path
        The files written.
    """
    folder = Path(folder)
    table = folder / ADEQUACY_CSV
    write_text_atomic(table, csv_text(adequacy.sources))
    summary_path = folder / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    summary["adequacy"] = adequacy.figures
    write_text_atomic(summary_path, json_text(summary))
    return [table, summary_path, *rerender_report(folder)]
