"""A frontier's folder: every point's results folder, ``frontier.csv`` and ``frontier.png``, written whole or not at all.

``frontier.csv`` has one row per point: ``point``, ``cap`` (tCO2e a year; blank for the plan without one),
``tco2e_per_year``, ``water_m3_per_year`` (blank: water is not modelled yet), ``usd_per_million_goodput_tokens``,
``gco2e_per_million_goodput_tokens``, ``usd_per_h``, ``goodput_tok_s``, ``sites_open``, ``unserved_share``,
``sites_opened`` and ``sites_closed`` (against the point before, ids joined by ``;``), ``usd_per_t_avoided`` (the
point's extra cost a year over the tonnes it avoids, against the plan without a cap; blank where the point serves
less goodput than that plan: then part of the cut is demand left unserved, not a dearer way of serving it) and
``plan`` (the point's results folder under the frontier's folder).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from placement.economics import HOURS_PER_YEAR
from placement.frontier import FrontierPoint
from placement.outputs.writer import write_folder, write_results
from placement.progress import Progress, quiet

COLUMNS = (
    "point", "cap", "tco2e_per_year", "water_m3_per_year", "usd_per_million_goodput_tokens",
    "gco2e_per_million_goodput_tokens", "usd_per_h", "goodput_tok_s", "sites_open", "unserved_share", "sites_opened",
    "sites_closed",
    "usd_per_t_avoided", "plan",
)  # fmt: skip


def frontier_row(point: FrontierPoint, before: FrontierPoint | None, first: FrontierPoint) -> dict[str, Any]:
    """One point's row of ``frontier.csv`` (``before``: the point before it; ``first``: the plan without a cap)."""
    s = point.plan.summary
    open_ids = set(point.plan.sites.loc[point.plan.sites["open"], "site_id"].astype(str))
    earlier = set() if before is None else set(before.plan.sites.loc[before.plan.sites["open"], "site_id"].astype(str))
    base = first.plan.summary
    avoided = (base.tco2e_per_year or 0.0) - (s.tco2e_per_year or 0.0)
    extra = (s.objective_usd_per_h - base.objective_usd_per_h) * HOURS_PER_YEAR
    same_work = s.goodput_tok_s >= base.goodput_tok_s * (1 - 1e-6)
    return {
        "point": point.index,
        "cap": point.cap_t_per_year,
        "tco2e_per_year": s.tco2e_per_year,
        "water_m3_per_year": None,
        "usd_per_million_goodput_tokens": s.cost_per_million_goodput_tokens_usd,
        "gco2e_per_million_goodput_tokens": s.gco2e_per_million_goodput_tokens,
        "usd_per_h": s.objective_usd_per_h,
        "goodput_tok_s": s.goodput_tok_s,
        "sites_open": s.sites_open,
        "unserved_share": s.unserved_share,
        "sites_opened": ";".join(sorted(open_ids - earlier)) if before is not None else "",
        "sites_closed": ";".join(sorted(earlier - open_ids)),
        "usd_per_t_avoided": extra / avoided if avoided > 0 and same_work else None,
        "plan": point.folder,
    }


def draw_frontier(table: pd.DataFrame, path: Path) -> Path:
    """``frontier.png``: $/M goodput against gCO2e/M goodput, each point named with its unserved share and site changes."""
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.plot(table["gco2e_per_million_goodput_tokens"], table["usd_per_million_goodput_tokens"], "o-", color="#2b6a99")
    for row in table.itertuples():
        changes = [f"+{s}" for s in str(row.sites_opened or "").split(";") if s] + [
            f"-{s}" for s in str(row.sites_closed or "").split(";") if s
        ]
        text = ("no cap" if row.point == 0 else f"cap {row.cap:,.0f} t") + f", {row.unserved_share:.1%} unserved"
        if changes:
            text += "\n" + " ".join(changes[:4]) + (f" (+{len(changes) - 4})" if len(changes) > 4 else "")
        ax.annotate(text, (row.gco2e_per_million_goodput_tokens, row.usd_per_million_goodput_tokens),
                    textcoords="offset points", xytext=(6, 6), fontsize=7)  # fmt: skip
    ax.set_xlabel("gCO2e per million goodput tokens")
    ax.set_ylabel("$ per million goodput tokens")
    ax.set_title("cost-carbon frontier: the cheapest plan under each emissions cap")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_frontier(
    points: Iterable[FrontierPoint], out_dir: str | Path, *, maps: bool = False, progress: Progress = quiet
) -> Path:
    """Solve the points (as the iterable yields them) and write the frontier's folder whole.

    Parameters
    ----------
    points : iterable of FrontierPoint
        :func:`placement.frontier.carbon_frontier`: each plan is written as it comes and let go.
    out_dir : str or Path
        The frontier's folder (replaced as a whole).
    maps : bool, optional
        Draw each point's maps.
    progress : callable, optional
        Receives a line per file.

    Returns
    -------
    Path
        The folder written.
    """
    rows: list[dict[str, Any]] = []

    def writer(folder: Path) -> None:
        first: FrontierPoint | None = None
        before: FrontierPoint | None = None
        for point in points:
            first = first or point
            write_results(point.plan, folder / point.folder, maps=maps)
            rows.append(frontier_row(point, before, first))
            before = point
        table = pd.DataFrame(rows, columns=list(COLUMNS))
        table.to_csv(folder / "frontier.csv", index=False)
        draw_frontier(table, folder / "frontier.png")
        progress(f"wrote frontier.csv and frontier.png ({len(table)} points)")

    return write_folder(out_dir, writer)
