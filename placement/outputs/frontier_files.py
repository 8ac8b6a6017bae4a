"""A frontier's folder: every point's results folder, ``frontier.csv`` and ``frontier.png``, written whole or not at all.

``frontier.csv`` has one row per point: ``point``, ``axis`` (carbon or water), ``cap`` (tCO2e or m3 a year as the
axis says; blank for the plan without one), ``tco2e_per_year``, ``water_m3_per_year`` (blank where a site's water is
unknown), ``usd_per_million_goodput_tokens``, ``gco2e_per_million_goodput_tokens``,
``water_l_per_million_goodput_tokens``, ``usd_per_h``, ``goodput_tok_s``, ``sites_open``, ``unserved_share``,
``sites_opened`` and ``sites_closed`` (against the point before, ids joined by ``;``), ``usd_per_t_avoided`` and
``usd_per_m3_avoided`` (the point's extra cost a year over the tonnes, or cubic metres, it avoids against the plan
without a cap; blank where the point serves less goodput than that plan, as then part of the cut is demand left
unserved, not a dearer way of serving it, or where it avoids none) and ``plan`` (the point's results folder under the
frontier's folder), ``at_equal_service`` (whether the point serves the goodput of the plan without a cap, within
:data:`~placement.analyses.frontier.EQUAL_SERVICE_TOLERANCE`), ``unserved_usd_per_million`` (what an unserved token is
worth, the scenario's ``objective.unserved_usd_per_million``) and ``usd_per_million_with_unserved_value`` (the point's
cost plus that value of the goodput it leaves unserved, per million tokens of demand: a point that meets its cap by
serving less pays for what it drops, so this cost does not fall because service did, unless the tokens it drops
cost more than that to serve), and ``usd_per_million_dropped`` (what the goodput the point serves less than the plan
without a cap cost that plan to serve: its cost saved per million tokens dropped; blank at equal service).

By default a frontier is drawn at equal service (:func:`placement.analyses.frontier.frontier_start`): its caps run
down to the least use of a plan serving as much as the plan without a cap. Should a cap still be met only by serving
less, the first such point is the last row (``at_equal_service`` false: where the frontier ends, and by how much
service it would fall), and no tighter cap is solved (:func:`write_frontier`) or kept (on Dask, where every point is
solved at once). ``allow_unserved`` keeps every point, each at the service its cap leaves, and ``frontier.png`` then
draws the cost with the unserved tokens' value beside the cost of those served.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from placement.analyses.frontier import EQUAL_SERVICE_TOLERANCE, FrontierPoint
from placement.economics.cost import SECONDS_PER_HOUR
from placement.outputs.writer import write_folder, write_results
from placement.progress import Progress, quiet
from placement.results.folder import read_results_folder
from placement.results.summary import PlanSummary, cap_cost
from placement.scenario.sections import UNSERVED_USD_PER_MILLION

COLUMNS = (
    "point", "axis", "cap", "tco2e_per_year", "water_m3_per_year", "usd_per_million_goodput_tokens",
    "gco2e_per_million_goodput_tokens", "water_l_per_million_goodput_tokens", "usd_per_h", "goodput_tok_s",
    "sites_open", "unserved_share", "sites_opened", "sites_closed", "usd_per_t_avoided", "usd_per_m3_avoided", "plan",
    "at_equal_service", "unserved_usd_per_million", "usd_per_million_with_unserved_value", "usd_per_million_dropped",
)  # fmt: skip

PER_MILLION: dict[str, tuple[str, str]] = {
    "carbon": ("gco2e_per_million_goodput_tokens", "gCO2e per million goodput tokens"),
    "water": ("water_l_per_million_goodput_tokens", "litres of water per million goodput tokens"),
}
"""Each axis's figure per million goodput tokens: the frontier plot's x axis."""


@dataclass(frozen=True)
class PointRecord:
    """What ``frontier.csv`` reads of a point: its place, its cap, its plan's summary and open sites.

    Parameters
    ----------
    index : int
        The point (0: no cap).
    cap_per_year : float or None
        Its cap. [tCO2e or m3]
    summary : PlanSummary
        Its plan's figures.
    open_sites : frozenset of str
        Its plan's open site ids.
    folder : str
        Its results folder under the frontier's.
    """

    index: int
    cap_per_year: float | None
    summary: PlanSummary
    open_sites: frozenset[str]
    folder: str

    @classmethod
    def of(cls, point: FrontierPoint) -> PointRecord:
        """A solved point's record."""
        sites = point.plan.sites
        opened = frozenset(sites.loc[sites["open"], "site_id"].astype(str))
        return cls(point.index, point.cap_per_year, point.plan.summary, opened, point.folder)

    @classmethod
    def read(cls, index: int, cap_per_year: float | None, folder: Path) -> PointRecord:
        """A point's record from its written results folder."""
        results = read_results_folder(folder)
        sites = results.sites
        opened = frozenset(sites.loc[sites["open"], "site_id"].astype(str))
        return cls(index, cap_per_year, results.plan_summary(), opened, folder.name)


def at_equal_service(point: PointRecord, first: PointRecord) -> bool:
    """Whether a point serves the goodput of the plan without a cap (within :data:`EQUAL_SERVICE_TOLERANCE`)."""
    return point.summary.goodput_tok_s >= first.summary.goodput_tok_s * (1 - EQUAL_SERVICE_TOLERANCE)


def equal_service_prefix(records: list[PointRecord]) -> list[PointRecord]:
    """The points in order up to the first that serves less than the plan without a cap (kept: it ends the frontier)."""
    ordered = sorted(records, key=lambda r: r.index)
    for k, record in enumerate(ordered):
        if not at_equal_service(record, ordered[0]):
            return ordered[: k + 1]
    return ordered


def usd_per_million_with_unserved_value(summary: PlanSummary, unserved_usd_per_million: float) -> float | None:
    """A plan's cost plus the value of the goodput it leaves unserved, per million tokens of demand (None: no demand)."""
    if summary.demand_tok_s <= 0:
        return None
    unserved_tok_s = max(summary.demand_tok_s - summary.goodput_tok_s, 0.0)
    usd_per_h = summary.objective_usd_per_h + unserved_tok_s * SECONDS_PER_HOUR / 1e6 * unserved_usd_per_million
    return usd_per_h / (summary.demand_tok_s * SECONDS_PER_HOUR / 1e6)


def usd_per_million_dropped(point: PlanSummary, first: PlanSummary) -> float | None:
    """The cost a point saves per million goodput tokens it serves less than the plan without a cap (None: as many)."""
    dropped_tok_s = first.goodput_tok_s - point.goodput_tok_s
    if dropped_tok_s <= EQUAL_SERVICE_TOLERANCE * first.goodput_tok_s:
        return None
    return (first.objective_usd_per_h - point.objective_usd_per_h) / (dropped_tok_s * SECONDS_PER_HOUR / 1e6)


def frontier_row(
    point: PointRecord, before: PointRecord | None, first: PointRecord, axis: str, unserved_usd_per_million: float
) -> dict[str, Any]:
    """One point's row of ``frontier.csv`` (``before``: the point before it; ``first``: the plan without a cap)."""
    s = point.summary
    open_ids = point.open_sites
    earlier = frozenset() if before is None else before.open_sites
    against_first = cap_cost(s, first.summary)  # the uncapped point is the model without the cap
    return {
        "point": point.index,
        "axis": axis,
        "cap": point.cap_per_year,
        "tco2e_per_year": s.tco2e_per_year,
        "water_m3_per_year": s.water_m3_per_year,
        "usd_per_million_goodput_tokens": s.cost_per_million_goodput_tokens_usd,
        "gco2e_per_million_goodput_tokens": s.gco2e_per_million_goodput_tokens,
        "water_l_per_million_goodput_tokens": s.water_l_per_million_goodput_tokens,
        "usd_per_h": s.objective_usd_per_h,
        "goodput_tok_s": s.goodput_tok_s,
        "sites_open": s.sites_open,
        "unserved_share": s.unserved_share,
        "sites_opened": ";".join(sorted(open_ids - earlier)) if before is not None else "",
        "sites_closed": ";".join(sorted(earlier - open_ids)),
        "usd_per_t_avoided": against_first["usd_per_t_avoided"],
        "usd_per_m3_avoided": against_first["usd_per_m3_avoided"],
        "plan": point.folder,
        "at_equal_service": at_equal_service(point, first),
        "unserved_usd_per_million": unserved_usd_per_million,
        "usd_per_million_with_unserved_value": usd_per_million_with_unserved_value(s, unserved_usd_per_million),
        "usd_per_million_dropped": usd_per_million_dropped(s, first.summary),
    }


def write_table(
    records: list[PointRecord],
    folder: Path,
    axis: str,
    progress: Progress = quiet,
    *,
    equal_service: bool = True,
    unserved_usd_per_million: float = UNSERVED_USD_PER_MILLION,
) -> None:
    """``frontier.csv`` and ``frontier.png`` from the points' records, in the order of their index.

    With ``equal_service`` the points after the first that serves less are dropped, their folders with them;
    ``unserved_usd_per_million`` values the goodput each point leaves unserved.
    """
    ordered = sorted(records, key=lambda r: r.index)
    if equal_service:
        kept = equal_service_prefix(ordered)
        for dropped in ordered[len(kept) :]:
            shutil.rmtree(folder / dropped.folder, ignore_errors=True)
        if not at_equal_service(kept[-1], kept[0]):
            end = kept[-1]
            fall = 1 - end.summary.goodput_tok_s / kept[0].summary.goodput_tok_s
            progress(
                f"the frontier at equal service ends at point {end.index}: its cap is met only by serving {fall:.1%} "
                "less goodput than the plan without a cap (--allow-unserved draws the points past it)"
            )
        ordered = kept
    rows = [
        frontier_row(r, ordered[k - 1] if k else None, ordered[0], axis, unserved_usd_per_million) for k, r in enumerate(ordered)
    ]
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    table.to_csv(folder / "frontier.csv", index=False)
    draw_frontier(table, folder / "frontier.png", axis)
    progress(f"wrote frontier.csv and frontier.png ({len(table)} points)")


def draw_frontier(table: pd.DataFrame, path: Path, axis: str = "carbon") -> Path:
    """``frontier.png``: $/M goodput against gCO2e (or litres) per M, each point named with its changes."""
    column, label = PER_MILLION[axis]
    unit = "t" if axis == "carbon" else "m3"
    fig, ax = plt.subplots(figsize=(8, 5))
    same = table[table["at_equal_service"].astype(bool)]
    ax.plot(same[column], same["usd_per_million_goodput_tokens"], "o-", color="#2b6a99", label="at the same service")
    less = table[~table["at_equal_service"].astype(bool)]
    if len(less):
        ax.plot(less[column], less["usd_per_million_goodput_tokens"], "o", mfc="none", color="#b5472f",
                label="serving less (demand left unserved)")  # fmt: skip
        value = float(table["unserved_usd_per_million"].iloc[0])
        ax.plot(table[column], table["usd_per_million_with_unserved_value"], "s--", color="#6b4c9a",
                label=f"per million tokens of demand, each unserved one valued at ${value:,.4g}")  # fmt: skip
        ax.legend(fontsize=8)
    for row in table.to_dict("records"):
        changes = [f"+{s}" for s in str(row["sites_opened"] or "").split(";") if s] + [
            f"-{s}" for s in str(row["sites_closed"] or "").split(";") if s
        ]
        text = ("no cap" if row["point"] == 0 else f"cap {row['cap']:,.0f} {unit}") + f", {row['unserved_share']:.1%} unserved"
        if changes:
            text += "\n" + " ".join(changes[:4]) + (f" (+{len(changes) - 4})" if len(changes) > 4 else "")
        ax.annotate(text, (row[column], row["usd_per_million_goodput_tokens"]),
                    textcoords="offset points", xytext=(6, 6), fontsize=7)  # fmt: skip
    ax.set_xlabel(label)
    ax.set_ylabel("$ per million goodput tokens")
    ax.set_title(f"cost-{axis} frontier: the cheapest plan under each {'emissions' if axis == 'carbon' else 'water'} cap")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_frontier(
    points: Iterable[FrontierPoint],
    out_dir: str | Path,
    *,
    axis: str = "carbon",
    maps: bool = False,
    equal_service: bool = True,
    unserved_usd_per_million: float = UNSERVED_USD_PER_MILLION,
    progress: Progress = quiet,
) -> Path:
    """Solve the points (as the iterable yields them) and write the frontier's folder whole.

    Parameters
    ----------
    points : iterable of FrontierPoint
        :func:`placement.analyses.frontier.resource_frontier`: each plan is written as it comes and let go.
    out_dir : str or Path
        The frontier's folder (replaced as a whole).
    axis : {"carbon", "water"}, optional
        What the caps limit.
    maps : bool, optional
        Draw each point's maps.
    equal_service : bool, optional
        End the frontier at the first point that serves less than the plan without a cap (no tighter cap is solved);
        False: every point, at the service its cap leaves.
    unserved_usd_per_million : float, optional
        What a goodput token left unserved is worth (``frontier.csv``'s valued cost). [USD per million tokens]
    progress : callable, optional
        Receives a line per file.

    Returns
    -------
    Path
        The folder written.
    """

    def writer(folder: Path) -> None:
        records: list[PointRecord] = []
        for point in points:
            write_results(point.plan, folder / point.folder, maps=maps)
            records.append(PointRecord.of(point))
            if equal_service and not at_equal_service(records[-1], records[0]):
                break  # a tighter cap would serve less still: the frontier at equal service ends here
        write_table(records, folder, axis, progress, equal_service=equal_service,
                    unserved_usd_per_million=unserved_usd_per_million)  # fmt: skip

    return write_folder(out_dir, writer)
