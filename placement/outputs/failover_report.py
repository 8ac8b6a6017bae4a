"""What an N+1 plan's loss of each site or domain moves where, and what protection costs, as report blocks.

Both report writers (Markdown and HTML) render the same blocks: a heading, a paragraph, or a table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from placement.results.folder import read_table
from placement.results.record import FailoverTables, PlanResults, no_failover_rows
from placement.results.summary import PlanSummary

SCENARIO_LIMIT = 15
"""Failure scenarios listed in the report; the rest are counted ("and N more")."""
NOT_PROTECTED = (
    "This plan is not protected against the loss of a site: set `fault_tolerance.n_plus_one: true` to protect it, "
    "or run `placement failover RESULTS --site ID` to see what one loss would do."
)


@dataclass(frozen=True)
class Block:
    """One piece of a report section.

    Attributes
    ----------
    kind : {"heading", "text", "table"}
        What it is.
    text : str
        The heading or paragraph (Markdown inline code in backticks); empty for a table.
    table : pandas.DataFrame or None
        The table's cells, already formatted as text.
    """

    kind: Literal["heading", "text", "table"]
    text: str = ""
    table: pd.DataFrame | None = None


def top_destinations(to_sites: Any, *, count: int = 3) -> str:
    """The first ``count`` destinations of a ``to_sites`` cell, as "site (tok/s), ...".

    Parameters
    ----------
    to_sites : str
        ``failover_scenarios.csv``'s ';'-joined "site_id:tok_s", by tok/s descending.
    count : int, optional
        Destinations kept.

    Returns
    -------
    str
        "none" when nothing moves.
    """
    if not isinstance(to_sites, str) or not to_sites.strip():
        return "none"
    pairs = [item.rsplit(":", 1) for item in to_sites.split(";") if item]
    parsed = sorted(((site, float(tok)) for site, tok in pairs), key=lambda pair: -pair[1])
    return ", ".join(f"{site} ({tok:,.0f})" for site, tok in parsed[:count])


def scenario_table(scenarios: pd.DataFrame, *, limit: int = SCENARIO_LIMIT) -> tuple[pd.DataFrame, int]:
    """The failure scenarios by goodput at risk (served at the failed sites), largest first.

    Parameters
    ----------
    scenarios : pandas.DataFrame
        ``failover_scenarios.csv``.
    limit : int, optional
        Rows kept.

    Returns
    -------
    tuple of (pandas.DataFrame, int)
        The formatted rows and how many were left off.
    """
    ranked = scenarios.sort_values(["served_tok_s", "failed"], ascending=[False, True], kind="mergesort")
    top = ranked.head(limit)
    table = pd.DataFrame(
        {
            "failed": top["failed"].astype(str),
            "kind": top["failed_kind"].astype(str),
            "served there tok/s": top["served_tok_s"].map(lambda v: f"{v:,.0f}"),
            "re-routed tok/s": top["moved_tok_s"].map(lambda v: f"{v:,.0f}"),
            "unprotected tok/s": top["unprotected_tok_s"].map(lambda v: f"{v:,.0f}"),
            "populations moved": top["populations_moved"].map(lambda v: f"{int(v):,}"),
            "top destinations (tok/s)": top["to_sites"].map(top_destinations),
        }
    )
    return table, len(ranked) - len(top)


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _domain_text(fault_domains: Mapping[str, Any] | None, *, largest: int = 3) -> str:
    if not fault_domains or not fault_domains.get("domains"):
        return "Failure scenarios: every open site on its own (no fault domains configured)."
    domains: Mapping[str, list[str]] = fault_domains["domains"]
    biggest = sorted(domains.items(), key=lambda item: (-len(item[1]), item[0]))[:largest]
    listed = ", ".join(f"{name} ({len(ids)} site{'s' if len(ids) != 1 else ''})" for name, ids in biggest)
    return (
        f"Failure scenarios: every open site, and {len(domains):,} fault domains grouped by "
        f"`{fault_domains.get('grouping', '?')}` (largest: {listed})."
    )


def rise(with_value: float | None, without_value: float | None) -> float | None:
    """Relative rise of a cost from without protection to with it (0.1 = 10 % dearer); None when undefined."""
    if with_value is None or without_value is None or without_value <= 0:
        return None
    return with_value / without_value - 1.0


def _money(value: Any, spec: str) -> str:
    return "n/a" if value is None else "$" + format(value, spec)


def cost_blocks(cost: Mapping[str, Any]) -> list[Block]:
    """The section "The cost of 24x7": the plan's $/h and $/M with and without protection, and per class.

    Parameters
    ----------
    cost : Mapping
        ``summary.json``'s ``n_plus_one_cost``.

    Returns
    -------
    list of Block
    """
    overall = rise(cost.get("usd_per_m_with"), cost.get("usd_per_m_without"))
    text = (
        f"Protected, the plan costs {_money(cost.get('usd_per_h_with'), ',.0f')}/h and "
        f"{_money(cost.get('usd_per_m_with'), '.3f')} per million goodput tokens; without protection "
        f"{_money(cost.get('usd_per_h_without'), ',.0f')}/h and {_money(cost.get('usd_per_m_without'), '.3f')}/M "
        f"({'n/a' if overall is None else f'{overall:+.1%}'}), for {cost.get('extra_nodes', 0):,} extra nodes and "
        f"{cost.get('extra_mw', 0.0):,.1f} extra MW."
    )
    classes: Mapping[str, Mapping[str, Any]] = cost.get("classes") or {}
    names = sorted(classes)
    rises = [rise(classes[n].get("usd_per_m_with"), classes[n].get("usd_per_m_without")) for n in names]
    table = pd.DataFrame(
        {
            "class": names,
            "$/M with": [_money(classes[n].get("usd_per_m_with"), ".3f") for n in names],
            "$/M without": [_money(classes[n].get("usd_per_m_without"), ".3f") for n in names],
            "rise": ["n/a" if r is None else f"{r:+.1%}" for r in rises],
        }
    )
    return [Block("heading", "The cost of 24x7"), Block("text", text), *([Block("table", table=table)] if names else [])]


def protection_blocks(
    failover: FailoverTables | None,
    *,
    protected_share: float | None = None,
    unprotectable_share: float | None = None,
    fault_domains: Mapping[str, Any] | None = None,
    n_plus_one_cost: Mapping[str, Any] | None = None,
    limit: int = SCENARIO_LIMIT,
) -> list[Block]:
    """The report's 24x7 section: what each loss moves where, then what protection costs.

    Parameters
    ----------
    failover : FailoverTables or None
        The plan's failover tables; None for a plan without N+1 (one line saying so).
    protected_share, unprotectable_share : float, optional
        Of served goodput.
    fault_domains : Mapping, optional
        ``summary.json``'s ``fault_domains`` ({"grouping", "domains": {name: [site ids]}}).
    n_plus_one_cost : Mapping, optional
        ``summary.json``'s ``n_plus_one_cost``.
    limit : int, optional
        Failure scenarios listed.

    Returns
    -------
    list of Block
    """
    if failover is None:
        return [Block("text", NOT_PROTECTED)]
    table, more = scenario_table(failover.scenarios, limit=limit)
    plural = "s" if more != 1 else ""
    blocks = [
        Block("heading", "24x7: what each loss moves where"),
        Block(
            "text",
            f"Protected against the loss of any one failure scenario: {_share(protected_share)} of served goodput; "
            f"unprotectable (no second site in reach): {_share(unprotectable_share)}.",
        ),
        Block("text", _domain_text(fault_domains)),
        Block("table", table=table),
        *([Block("text", f"... and {more:,} more failure scenario{plural} (failover_scenarios.csv).")] if more else []),
    ]
    return blocks + (cost_blocks(n_plus_one_cost) if n_plus_one_cost else [])


def summary_protection(summary: PlanSummary, folder: Path | None = None) -> list[Block]:
    """The 24x7 section from a plan's summary and, when present, its folder's ``failover_scenarios.csv``.

    Parameters
    ----------
    summary : PlanSummary
        The plan's figures (the N+1 fields are read when present).
    folder : Path, optional
        A results folder to read ``failover_scenarios.csv`` from (``placement report``).

    Returns
    -------
    list of Block
    """
    failover = None
    if folder is not None and (folder / "failover_scenarios.csv").exists():
        scenarios = read_table(folder / "failover_scenarios.csv")
        failover = FailoverTables(sites=pd.DataFrame(), scenarios=scenarios, row_chunks=no_failover_rows)
    return protection_blocks(
        failover,
        protected_share=summary.n_plus_one_protected_share,
        unprotectable_share=summary.unprotectable_share,
        fault_domains=summary.fault_domains,
        n_plus_one_cost=summary.n_plus_one_cost,
    )


def plan_protection(results: PlanResults) -> list[Block]:
    """The 24x7 section of a solved plan (one line when it has no failover tables).

    Parameters
    ----------
    results : PlanResults
        A solved plan's results.

    Returns
    -------
    list of Block
    """
    summary = results.summary
    return protection_blocks(
        results.failover,
        protected_share=summary.n_plus_one_protected_share,
        unprotectable_share=summary.unprotectable_share,
        fault_domains=summary.fault_domains,
        n_plus_one_cost=summary.n_plus_one_cost,
    )


def if_lost_texts(scenarios: pd.DataFrame) -> dict[str, str]:
    """Per site, what its loss moves where: "If lost: X tok/s move to A (..), B (..), C (..); Y tok/s unprotected".

    Parameters
    ----------
    scenarios : pandas.DataFrame
        ``failover_scenarios.csv``; only rows of ``failed_kind == "site"`` are read.

    Returns
    -------
    dict of str to str
        Site id to its sentence (daily mean tok/s).
    """
    single = scenarios[scenarios["failed_kind"] == "site"]
    return {
        str(row["failed"]): (
            f"If lost: {row['moved_tok_s']:,.0f} tok/s move to {top_destinations(row['to_sites'])}; "
            f"{row['unprotected_tok_s']:,.0f} tok/s unprotected"
        )
        for row in single.to_dict("records")
    }
