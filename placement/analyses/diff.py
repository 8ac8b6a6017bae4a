"""What changed between two plans: headline figures, sites, and populations whose serving site moved.

Reads only the standard files of a results folder (``summary.json``, ``sites.csv``,
``assignments.csv``, through :func:`placement.results.folder.read_results_folder`), so it works on any
folder ``solve`` writes: a plain solve, a run of a sweep's ``scenarios/<id>.yaml``, or one year of a
build-out (``OUT/years/<year>/``). Pure: two folders in, tables out;
:mod:`placement.outputs.diff_files` writes them.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from placement._errors import InputError, Problem
from placement.results.folder import ResultsFolder, read_results_folder
from placement.results.textfmt import mw_text

__all__ = [
    "HEADLINE_KEYS",
    "PlanDiff",
    "class_costs",
    "diff_plans",
    "headline",
    "main_sites",
    "populations_moved",
    "region_costs",
    "render_diff",
    "site_changes",
]

HEADLINE_KEYS = (
    "cost_per_million_goodput_tokens_usd",
    "objective_usd_per_h",
    "mw_used",
    "sites_open",
    "unserved_share",
    "tco2e_per_year",
    "gco2e_per_million_goodput_tokens",
    "water_m3_per_year",
    "water_l_per_million_goodput_tokens",
)
"""The figures ``diff.json``'s ``headline`` compares, each as A, B and delta (B - A)."""

LATER_KEYS = (
    "tco2e_per_year",
    "gco2e_per_million_goodput_tokens",
    "water_m3_per_year",
    "water_l_per_million_goodput_tokens",
)
"""Headline figures folders written before them lack: compared as n/a there, not refused."""

SITE_COLUMNS = ("site_id", "name", "lat", "lon", "open", "nodes", "mw_used", "cost_usd_per_h")
ASSIGNMENT_COLUMNS = ("population_id", "population", "class", "site_id", "site", "goodput_tok_s", "rtt_ms", "ttft_p99_ms")
REPRICED_SHARE = 0.005
"""A site open in both plans with the same nodes is 'repriced' when its $/h moves by more than this share."""


def _missing_columns(frame: pd.DataFrame, columns: tuple[str, ...], source: str) -> list[Problem]:
    missing = [c for c in columns if c not in frame.columns]
    fix = "pass a folder written by 'placement solve' (or solve again with this version)"
    return [Problem(source, "", ", ".join(missing), "columns missing", fix)] if missing else []


def _plan_problems(plan: ResultsFolder) -> list[Problem]:
    """What :func:`diff_plans` needs and a results folder lacks: a column of a table or a headline figure."""
    problems = _missing_columns(plan.sites, SITE_COLUMNS, str(plan.folder / "sites.csv"))
    problems += _missing_columns(plan.assignments, ASSIGNMENT_COLUMNS, str(plan.folder / "assignments.csv"))
    absent = [key for key in HEADLINE_KEYS if key not in plan.summary and key not in LATER_KEYS]
    if absent:
        fix = f"run 'placement solve SCENARIO --out {plan.folder}' first, or pass a results folder"
        problems.append(Problem(str(plan.folder / "summary.json"), "", ", ".join(absent), "keys missing", fix))
    return problems


def _number(value: Any) -> float | None:
    """A finite float, or None for a missing or undefined figure."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _compare(a: Any, b: Any) -> dict[str, float | None]:
    first, second = _number(a), _number(b)
    return {"a": first, "b": second, "delta": None if first is None or second is None else second - first}


def headline(a: dict[str, Any], b: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """The headline figures of two summaries side by side.

    Parameters
    ----------
    a, b : dict
        ``summary.json`` of plan A and plan B.

    Returns
    -------
    dict
        For each of :data:`HEADLINE_KEYS`: ``a``, ``b`` and ``delta`` (B - A; None where one is undefined).
    """
    return {key: _compare(a.get(key), b.get(key)) for key in HEADLINE_KEYS}


def class_costs(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """$/M goodput of each class in two summaries. [USD per million goodput tokens]

    Parameters
    ----------
    a, b : dict
        ``summary.json`` of plan A and plan B (their ``classes`` lists).

    Returns
    -------
    list of dict
        One per class of either plan (A's order first): ``class``, ``a``, ``b``, ``delta``.
    """
    key = "cost_per_million_goodput_tokens_usd"
    costs_a = {c["class"]: c.get(key) for c in a.get("classes") or []}
    costs_b = {c["class"]: c.get(key) for c in b.get("classes") or []}
    names = list(costs_a) + [n for n in costs_b if n not in costs_a]
    return [{"class": name, **_compare(costs_a.get(name), costs_b.get(name))} for name in names]


def _site_change(row: pd.Series) -> str:
    """``opened``, ``closed``, ``resized``, ``repriced`` or ``""`` for one site's A and B figures."""
    if row["open_a"] != row["open_b"]:
        return "opened" if row["open_b"] else "closed"
    if not row["open_a"]:
        return ""
    if row["nodes_a"] != row["nodes_b"]:
        return "resized"
    cost_a, cost_b = row["cost_usd_per_h_a"], row["cost_usd_per_h_b"]
    return "repriced" if abs(cost_b - cost_a) > REPRICED_SHARE * max(abs(cost_a), 1e-9) else ""


def site_changes(sites_a: pd.DataFrame, sites_b: pd.DataFrame) -> pd.DataFrame:
    """The sites whose state changed between two plans.

    A site is ``opened`` or ``closed``; ``resized`` when open in both with a different node count;
    ``repriced`` when open in both with the same nodes and its $/h moved by more than
    :data:`REPRICED_SHARE` (a power price, say). A site in one catalog only counts as closed in the other
    (``candidate_a`` / ``candidate_b`` say which).

    Parameters
    ----------
    sites_a, sites_b : pandas.DataFrame
        ``sites.csv`` of plan A and plan B (``open`` as bool).

    Returns
    -------
    pandas.DataFrame
        One row per changed site, largest $/h change first: ``site_id``, ``name``, ``change``, ``lat``,
        ``lon``, ``candidate_a``/``_b``, ``open_a``/``_b``, ``nodes_a``/``_b``, ``mw_used_a``/``_b``,
        ``cost_usd_per_h_a``/``_b`` and the deltas ``nodes_delta``, ``mw_used_delta``, ``cost_usd_per_h_delta``.
    """
    columns = ["site_id", "name", "lat", "lon", "open", "nodes", "mw_used", "cost_usd_per_h"]
    both = (
        sites_a[columns]
        .assign(candidate=True)
        .merge(
            sites_b[columns].assign(candidate=True),
            on="site_id",
            how="outer",
            suffixes=("_a", "_b"),
            sort=False,
        )
    )
    for side in ("a", "b"):
        both[f"candidate_{side}"] = both[f"candidate_{side}"].notna() & both[f"candidate_{side}"].astype(bool)
        both[f"open_{side}"] = both[f"open_{side}"].fillna(False).astype(bool)
        for figure in ("nodes", "mw_used", "cost_usd_per_h"):
            both[f"{figure}_{side}"] = both[f"{figure}_{side}"].fillna(0.0).astype(float)
    both["nodes_a"], both["nodes_b"] = both["nodes_a"].astype(np.int64), both["nodes_b"].astype(np.int64)
    for figure in ("name", "lat", "lon"):
        both[figure] = both[f"{figure}_b"].fillna(both[f"{figure}_a"])
    for figure in ("nodes", "mw_used", "cost_usd_per_h"):
        both[f"{figure}_delta"] = both[f"{figure}_b"] - both[f"{figure}_a"]
    both["change"] = both.apply(_site_change, axis=1) if len(both) else pd.Series(dtype=str)
    order = ["site_id", "name", "change", "lat", "lon", "candidate_a", "candidate_b", "open_a", "open_b"]
    order += [f"{f}_{s}" for f in ("nodes", "mw_used", "cost_usd_per_h") for s in ("a", "b", "delta")]
    changed = both.loc[both["change"] != "", order]
    return changed.reindex(changed["cost_usd_per_h_delta"].abs().sort_values(ascending=False).index).reset_index(drop=True)


def main_sites(assignments: pd.DataFrame) -> pd.DataFrame:
    """Each (population, class)'s main assignment: the site carrying most of its goodput.

    Parameters
    ----------
    assignments : pandas.DataFrame
        ``assignments.csv``.

    Returns
    -------
    pandas.DataFrame
        One row per served (population, class), indexed by ``(population_id, class)``.
    """
    ranked = assignments.sort_values(["goodput_tok_s", "site_id"], ascending=[False, True], kind="mergesort")
    return ranked.drop_duplicates(["population_id", "class"]).set_index(["population_id", "class"])


_MOVED_FIGURES = ("site_id", "site", "rtt_ms", "ttft_p99_ms", "goodput_tok_s", "site_lat", "site_lon")


def populations_moved(assignments_a: pd.DataFrame, assignments_b: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The (population, class) pairs whose main serving site differs between two plans.

    A pair served in one plan only is moved to or from no site (``site_id`` empty, figures missing).
    Populations are matched by ``population_id`` and ``class``; an id whose population name differs
    between the plans (demand built differently) is not compared, and a note says how many.

    Parameters
    ----------
    assignments_a, assignments_b : pandas.DataFrame
        ``assignments.csv`` of plan A and plan B.

    Returns
    -------
    moved : pandas.DataFrame
        One row per moved pair, most goodput first: ``population_id``, ``population``, ``country_code``,
        ``class``, ``pop_lat``, ``pop_lon`` and, suffixed ``_a`` / ``_b``, ``site_id``, ``site``,
        ``rtt_ms``, ``ttft_p99_ms``, ``goodput_tok_s``, ``site_lat``, ``site_lon``.
    notes : list of str
        What could not be compared.
    """
    main_a, main_b = main_sites(assignments_a), main_sites(assignments_b)
    keep = ["population", "country_code", "pop_lat", "pop_lon"]
    people = [c for c in keep if c in main_a.columns and c in main_b.columns]
    columns = people + list(_MOVED_FIGURES)
    both = main_a[columns].merge(main_b[columns], how="outer", left_index=True, right_index=True, suffixes=("_a", "_b"))
    notes = []
    renamed = both["population_a"].notna() & both["population_b"].notna() & (both["population_a"] != both["population_b"])
    if renamed.any():
        notes.append(
            f"{int(renamed.sum())} (population, class) pairs have the same id but a different population in the two plans "
            "(demand built differently): not compared"
        )
    for column in people:
        both[column] = both[f"{column}_a"].fillna(both[f"{column}_b"])
    moved = both[~renamed & (both["site_id_a"].fillna("") != both["site_id_b"].fillna(""))].reset_index()
    moved["goodput_tok_s_max"] = moved[["goodput_tok_s_a", "goodput_tok_s_b"]].max(axis=1)
    moved = moved.sort_values(["goodput_tok_s_max", "population_id", "class"], ascending=[False, True, True], kind="mergesort")
    columns = ["population_id", *people[:2], "class", *people[2:]]
    columns += [f"{f}_{s}" for f in _MOVED_FIGURES for s in ("a", "b")]
    return moved[columns].reset_index(drop=True), notes


@dataclass(frozen=True)
class PlanDiff:
    """What changed from plan A to plan B.

    Parameters
    ----------
    folder_a, folder_b : Path
        The two results folders.
    headline : dict
        :func:`headline`.
    classes : list of dict
        :func:`class_costs`.
    sites : pandas.DataFrame
        :func:`site_changes`.
    moved : pandas.DataFrame
        :func:`populations_moved`.
    notes : list of str
        What could not be compared.
    regions : pandas.DataFrame
        :func:`region_costs` (empty when a plan's sites carry no continent).
    rule_prices : dict
        ``a`` and ``b``: each plan's ``rule_prices`` (``solve --price-rules``; empty lists without).
    """

    folder_a: Path
    folder_b: Path
    headline: dict[str, dict[str, float | None]]
    classes: list[dict[str, Any]]
    sites: pd.DataFrame
    moved: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    regions: pd.DataFrame = field(default_factory=pd.DataFrame)
    rule_prices: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        """What ``diff.json`` holds: headline, classes, regions, rule_prices, sites, populations_moved, notes; ``a``, ``b``."""
        return {
            "a": str(self.folder_a),
            "b": str(self.folder_b),
            "headline": self.headline,
            "classes": self.classes,
            "regions": _records(self.regions),
            "rule_prices": self.rule_prices,
            "sites": _records(self.sites),
            "populations_moved": _records(self.moved),
            "notes": list(self.notes),
        }


def region_costs(sites_a: pd.DataFrame, sites_b: pd.DataFrame) -> pd.DataFrame:
    """Per continent of the open sites: MW, $/h, goodput and $/M goodput in A and B.

    Diffing a plan with a rule against the same scenario without it shows what the rule costs where.

    Returns
    -------
    pandas.DataFrame
        ``region``, ``mw_used_a``/``_b``, ``cost_usd_per_h_a``/``_b``, ``goodput_tok_s_a``/``_b``, ``usd_per_m_a``/``_b``
        (None where a region serves nothing); empty when either plan's sites carry no ``continent``.
    """
    if "continent" not in sites_a.columns or "continent" not in sites_b.columns:
        return pd.DataFrame()
    figures = ["mw_used", "cost_usd_per_h", "goodput_tok_s"]
    tables = []
    for sites in (sites_a, sites_b):
        open_sites = sites[sites["open"].astype(bool)]
        tables.append(open_sites.groupby(open_sites["continent"].fillna("unknown").astype(str))[figures].sum())
    table = tables[0].merge(tables[1], how="outer", left_index=True, right_index=True, suffixes=("_a", "_b")).fillna(0.0)
    for side in ("a", "b"):
        served = table[f"goodput_tok_s_{side}"]
        table[f"usd_per_m_{side}"] = (table[f"cost_usd_per_h_{side}"] / (served * 3600.0) * 1e6).where(served > 0)
    return table.rename_axis("region").reset_index()


def _missing(value: Any) -> bool:
    """True for None, NaN and pandas' missing markers."""
    return value is None or value is pd.NA or (isinstance(value, float) and not math.isfinite(value))


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts, a missing value as None."""
    return [{str(k): (None if _missing(v) else v) for k, v in r.items()} for r in frame.to_dict("records")]


def diff_plans(folder_a: str | Path, folder_b: str | Path) -> PlanDiff:
    """Compare two results folders.

    Parameters
    ----------
    folder_a, folder_b : str or Path
        Folders written by ``solve`` (or a sweep scenario's run, or a build-out year): A is "before".

    Returns
    -------
    PlanDiff
        Headline, $/M per class, changed sites and moved populations.

    Raises
    ------
    InputError
        Either folder is not a results folder (both are checked, every problem reported).
    """
    problems: list[Problem] = []
    plans: list[ResultsFolder] = []
    for folder in (folder_a, folder_b):
        try:
            plan = read_results_folder(folder)
        except InputError as exc:
            problems += exc.problems
            continue
        problems += _plan_problems(plan)
        plans.append(plan)
    if problems:
        raise InputError(problems)
    a, b = plans
    notes = []
    if a.summary.get("scenario") != b.summary.get("scenario"):
        notes.append(f"the plans solve different scenarios: {a.summary.get('scenario')} and {b.summary.get('scenario')}")
    moved, moved_notes = populations_moved(a.assignments, b.assignments)
    return PlanDiff(
        folder_a=a.folder,
        folder_b=b.folder,
        headline=headline(a.summary, b.summary),
        classes=class_costs(a.summary, b.summary),
        sites=site_changes(a.sites, b.sites),
        moved=moved,
        notes=notes + moved_notes,
        regions=region_costs(a.sites, b.sites),
        rule_prices={"a": list(a.summary.get("rule_prices") or []), "b": list(b.summary.get("rule_prices") or [])},
    )


_HEADLINE_ROWS = (
    ("cost_per_million_goodput_tokens_usd", "$/M goodput tokens", "{:,.3f}"),
    ("objective_usd_per_h", "cost $/h", "{:,.0f}"),
    ("mw_used", "MW used", "{:,.1f}"),  # totals: always to 0.1
    ("sites_open", "sites open", "{:,.0f}"),
    ("unserved_share", "unserved share", "{:.2%}"),
    ("tco2e_per_year", "tCO2e a year", "{:,.0f}"),
    ("gco2e_per_million_goodput_tokens", "gCO2e/M goodput", "{:,.0f}"),
    ("water_m3_per_year", "water m3 a year", "{:,.0f}"),
    ("water_l_per_million_goodput_tokens", "water L/M goodput", "{:,.2f}"),
)


def _cell(value: float | None, spec: str, *, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    text = spec.format(value)
    return f"+{text}" if signed and value > 0 else text


def _ms(value: Any) -> str:
    number = _number(value) if not isinstance(value, str) else None
    return "-" if number is None else f"{number:.1f}"


def _site_line(row: dict[Hashable, Any]) -> str:
    return (
        f"  {row['change']:<9}{row['name']!s:<28}"
        f"MW {mw_text(row['mw_used_a'])} -> {mw_text(row['mw_used_b'])}, "
        f"nodes {row['nodes_a']:,} -> {row['nodes_b']:,}, "
        f"$/h {row['cost_usd_per_h_a']:,.0f} -> {row['cost_usd_per_h_b']:,.0f} "
        f"({_cell(row['cost_usd_per_h_delta'], '{:,.0f}', signed=True)})"
    )


def _moved_line(row: dict[Hashable, Any]) -> str:
    site_a = row["site_a"] if isinstance(row["site_a"], str) else "unserved"
    site_b = row["site_b"] if isinstance(row["site_b"], str) else "unserved"
    return (
        f"  {row['population']} ({row['country_code']}), {row['class']}: {site_a} -> {site_b}; "
        f"RTT {_ms(row['rtt_ms_a'])} -> {_ms(row['rtt_ms_b'])} ms, "
        f"p99 TTFT {_ms(row['ttft_p99_ms_a'])} -> {_ms(row['ttft_p99_ms_b'])} ms"
    )


def render_diff(diff: PlanDiff, *, rows: int = 15) -> str:
    """The diff as a terminal table: headline, $/M per class, changed sites, moved populations.

    Parameters
    ----------
    diff : PlanDiff
        From :func:`diff_plans`.
    rows : int, optional
        At most this many sites and populations are listed (``diff.json`` has them all).

    Returns
    -------
    str
        Text (ms to 0.1, $/M to 3 decimals, MW to 0.1).
    """
    lines = [f"A: {diff.folder_a}", f"B: {diff.folder_b}", f"{'':24}{'A':>14}{'B':>14}{'B - A':>14}"]
    for key, label, spec in _HEADLINE_ROWS:
        figure = diff.headline[key]
        lines.append(
            f"{label:24}{_cell(figure['a'], spec):>14}{_cell(figure['b'], spec):>14}"
            f"{_cell(figure['delta'], spec, signed=True):>14}"
        )
    if diff.classes:  # build-out years carry no per-class figures
        lines.append("$/M goodput tokens by class")
    for row in diff.classes:
        spec = "{:,.3f}"
        cells = f"{_cell(row['a'], spec):>14}{_cell(row['b'], spec):>14}{_cell(row['delta'], spec, signed=True):>14}"
        lines.append(f"  {row['class']:<22}{cells}")
    if len(diff.regions):
        lines.append("by continent of the sites: MW A -> B, $/M goodput A -> B")
        for r in diff.regions.to_dict("records"):
            lines.append(
                f"  {r['region']:<22}MW {mw_text(r['mw_used_a'])} -> {mw_text(r['mw_used_b'])}, "
                f"$/M {_cell(_number(r['usd_per_m_a']), '{:,.3f}')} -> {_cell(_number(r['usd_per_m_b']), '{:,.3f}')}"
            )
    for side in ("a", "b"):
        for price in diff.rule_prices.get(side, []):
            with_m, without_m = _number(price.get("usd_per_m_with")), _number(price.get("usd_per_m_without"))
            lines.append(
                f"rule {price['rule_id']} in {side.upper()}: $/M {_cell(with_m, '{:,.3f}')} with it, "
                f"{_cell(without_m, '{:,.3f}')} without; "
                f"MW {mw_text(price['mw_with'])} with, {mw_text(price['mw_without'])} without"
            )
    counts = diff.sites["change"].value_counts()
    summary = ", ".join(f"{int(counts[k])} {k}" for k in ("opened", "closed", "resized", "repriced") if k in counts)
    lines.append(f"sites changed: {len(diff.sites)}" + (f" ({summary})" if summary else ""))
    lines += [_site_line(row) for row in diff.sites.head(rows).to_dict("records")]
    if len(diff.sites) > rows:
        lines.append(f"  ... and {len(diff.sites) - rows} more (diff.json)")
    lines.append(f"populations whose main serving site changed: {len(diff.moved)} (population, class) pairs")
    lines += [_moved_line(row) for row in diff.moved.head(rows).to_dict("records")]
    if len(diff.moved) > rows:
        lines.append(f"  ... and {len(diff.moved) - rows} more (diff.json)")
    lines += [f"note: {note}" for note in diff.notes]
    return "\n".join(lines)
