"""The optimum beside simple arrangements of the same hardware and demand: rows, table, CSV and chart.

The rows are the ``compare`` command's: the optimal plan of a scenario, then each baseline of
:mod:`placement.baselines` (nearest-metro, cheapest-power, single-region) on the same instance.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from placement.arrangement import arrangement_options, fixed_arrangement
from placement.baselines import all_baselines
from placement.instance import build_instance
from placement.outputs.charts import draw_comparison
from placement.outputs.writer import write_folder
from placement.plan import Plan, run, solve_instance
from placement.results import write_csv
from placement.scenario import LoadedScenario


def optimal_row(plan: Plan, name: str = "optimal") -> dict[str, Any]:
    """The optimal plan's figures, with the same keys as :meth:`placement.baselines.Baseline.as_dict`."""
    s = plan.summary
    return {
        "placement": name,
        "cost_per_million_goodput_tokens_usd": s.cost_per_million_goodput_tokens_usd,
        "served_share": 1.0 - s.unserved_share,
        "tokens_per_s_per_mw": s.tokens_per_s_per_mw,
        "mw_used": s.mw_used,
        "cost_usd_per_h": s.objective_usd_per_h,
        "goodput_tok_s": s.goodput_tok_s,
        "sites_open": s.sites_open,
    }


def compare_placements(loaded: LoadedScenario, *, progress: Callable[[str], None] = lambda _: None) -> list[dict[str, Any]]:
    """Solve a scenario and evaluate the baselines on the same instance.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario.
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    list of dict
        ``optimal``, ``nearest-metro``, ``cheapest-power``, ``single-region``, each with
        ``cost_per_million_goodput_tokens_usd``, ``served_share``, ``tokens_per_s_per_mw``,
        ``mw_used``, ``cost_usd_per_h``, ``goodput_tok_s``, ``sites_open``; a scenario with arrangement
        options on (:func:`placement.arrangement.arrangement_options`) adds ``optimal, fixed arrangement``:
        the same world solved with aggregated serving and no speculation.
    """
    instance = build_instance(loaded, progress=progress)
    plan = solve_instance(instance, progress=progress)
    rows = [optimal_row(plan)]
    if arrangement_options(loaded.scenario.serving):
        progress("solving the same world with the fixed arrangement")
        rows.append(optimal_row(run(fixed_arrangement(loaded)), "optimal, fixed arrangement"))
    return [*rows, *(b.as_dict() for b in all_baselines(instance))]


def write_comparison(rows: list[dict[str, Any]], out_dir: str | Path, *, title: str) -> Path:
    """Write ``compare.csv`` and ``compare.png`` into a folder (whole or not at all).

    Parameters
    ----------
    rows : list of dict
        From :func:`compare_placements`.
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
