"""The ``compare`` command's rows written and shown: ``compare.csv``, ``compare.png`` and the text table.

The rows come from :func:`placement.analyses.compare.compare_placements` (the optimum, then each baseline of
:mod:`placement.analyses.baselines` on the same instance); this module only writes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from placement.outputs.charts import draw_comparison
from placement.outputs.writer import write_folder
from placement.results.folder import write_csv


def write_comparison(rows: list[dict[str, Any]], out_dir: str | Path, *, title: str) -> Path:
    """Write ``compare.csv`` and ``compare.png`` into a folder (whole or not at all).

    Parameters
    ----------
    rows : list of dict
        From :func:`placement.analyses.compare.compare_placements`.
    out_dir : str or Path
        The folder; an existing folder that is not a results folder is never overwritten.
    title : str
        The chart's title.

    Returns
    -------
    Path
        The folder written.
    """
    table = pd.DataFrame(rows)

    def write(folder: Path) -> None:
        write_csv(table, folder / "compare.csv")
        draw_comparison(rows, folder / "compare.png", title=title)

    return write_folder(out_dir, write)


def render_comparison(rows: list[dict[str, Any]]) -> str:
    """The comparison as a text table: placement, $/M goodput, served share, tokens/s per MW, MW, sites."""
    table = pd.DataFrame(rows)
    shown = pd.DataFrame(
        {
            "placement": table["placement"],
            "$/M goodput": table["cost_per_million_goodput_tokens_usd"].map("{:.3f}".format),
            "served": table["served_share"].map("{:.1%}".format),
            "tok/s per MW": table["tokens_per_s_per_mw"].map("{:,.0f}".format),
            "MW": table["mw_used"].map("{:.1f}".format),
            "sites": table["sites_open"],
        }
    )
    return shown.to_string(index=False)
