"""The short report planners read: the seeds' five numbers, the cost breakdown, the sites."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from placement.outputs.failover_report import Block, protection_blocks
from placement.results.cost_breakdown import CostBreakdown, cost_breakdown_of_site_table
from placement.results.record import split_rules
from placement.results.summary import PlanSummary
from placement.results.textfmt import ms_text, mw_text

NOT_MODELLED = "not modelled (per-node goodput is a scenario input)"


def _fmt(value: Any, spec: str = ",.2f", missing: str = "n/a") -> str:
    if value is None:
        return missing
    try:
        return format(value, spec)
    except (TypeError, ValueError):
        return str(value)


def _table(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


COST_LABELS = {
    "node_capex": "node capex",
    "facility_capex": "facility capex",
    "idle_power": "idle power",
    "load_energy": "load energy",
    "opex": "opex",
    "site_fixed": "site fixed",
    "wan_transport": "WAN transport of KV (cross-metro prefill)",
}
"""Words the reports use for the cost components (``summary.json``'s ``cost_breakdown_usd_per_h`` keys)."""


def cost_breakdown(summary: PlanSummary, sites: pd.DataFrame) -> CostBreakdown:
    """The plan's cost by component: the summary's, or from the site table for an older folder.

    Parameters
    ----------
    summary : PlanSummary
        Headline figures.
    sites : pandas.DataFrame
        The plan's site table (read only when the summary predates the breakdown).

    Returns
    -------
    CostBreakdown
        Components adding up to the objective. [USD/h]
    """
    if summary.cost_breakdown_usd_per_h is not None:
        return summary.cost_breakdown_usd_per_h
    return cost_breakdown_of_site_table(sites)


def _headline_lines(summary: PlanSummary) -> list[str]:
    return [
        f"# Placement report: {summary.scenario}",
        "",
        f"Status **{summary.status}** ({summary.solver}: {summary.solver_message}, gap {_fmt(summary.gap, '.3%')} "
        f"on the {(summary.gap_basis or 'solved').replace('_', ' ')} model, "
        f"{summary.runtime_s:.1f} s solve). {summary.sites_open} of {summary.sites_candidate} candidate sites open, "
        f"{summary.nodes:,} nodes, {mw_text(summary.mw_used)} MW of facility power.",
        "",
        f"**Cost per million goodput tokens: ${_fmt(summary.cost_per_million_goodput_tokens_usd, '.3f')}** "
        f"(${summary.objective_usd_per_h:,.0f}/h for {summary.goodput_tok_s:,.0f} goodput tok/s).",
        "",
        *_footprint_lines(summary),
    ]


def _footprint_lines(summary: PlanSummary) -> list[str]:
    """Energy and grid emissions a year, when the plan recorded them."""
    if summary.energy_mwh_per_year is None:
        return []
    carbon = (
        "emissions unknown (the catalog has no carbon_intensity_g_per_kwh for some open site)"
        if summary.tco2e_per_year is None
        else f"{summary.tco2e_per_year:,.0f} tCO2e of grid emissions "
        f"({_fmt(summary.gco2e_per_million_goodput_tokens, ',.0f')} gCO2e per million goodput tokens)"
    )
    charge = (
        ""
        if summary.carbon_charge_usd_per_h is None
        else f" The carbon price adds ${summary.carbon_charge_usd_per_h:,.0f}/h "
        f"({summary.carbon_charge_usd_per_h / max(summary.objective_usd_per_h, 1e-12):.1%} of the cost, inside idle power "
        "and load energy)."
    )
    embodied = (
        ""
        if summary.embodied_tco2e_per_year is None
        else f" The nodes' embodied carbon adds {summary.embodied_tco2e_per_year:,.0f} tCO2e a year over their life "
        "(an A100-era estimate per server and GPU; not in the grid figure, the price or the caps)."
    )
    lines = [
        f"Energy and carbon: {summary.energy_mwh_per_year / 1e3:,.0f} GWh a year, PUE included; {carbon}.{charge}{embodied}",
        "",
    ]
    return lines + _water_lines(summary) + _cap_cost_lines(summary)


def _cap_cost_lines(summary: PlanSummary) -> list[str]:
    """What the carbon and water caps cost, against the same model solved without them."""
    cost = summary.cap_cost
    if not cost:
        return []
    parts = [
        f"Caps: ${_fmt(summary.cost_per_million_goodput_tokens_usd, ',.3f')} per million goodput tokens against "
        f"${_fmt(cost.get('uncapped_usd_per_million_goodput_tokens'), ',.3f')} without them "
        f"(${(summary.objective_usd_per_h - float(cost['uncapped_objective_usd_per_h'])):,.0f}/h more)"
    ]
    for unit, used, before, per in (
        ("tCO2e", summary.tco2e_per_year, cost.get("uncapped_tco2e_per_year"), cost.get("usd_per_t_avoided")),
        ("m3 of water", summary.water_m3_per_year, cost.get("uncapped_water_m3_per_year"), cost.get("usd_per_m3_avoided")),
    ):
        if used is not None and before is not None and before - used > 0:
            price = f" at ${per:,.2f} each" if per is not None else " (partly by serving less: no price per unit)"
            parts.append(f"{before - used:,.0f} {unit} a year avoided{price}")
    return ["; ".join(parts) + ".", ""]


def _water_lines(summary: PlanSummary) -> list[str]:
    """Water a year, when the plan recorded it (every open site's water known)."""
    if summary.water_m3_per_year is None:
        return []
    on_site = summary.water_on_site_m3_per_year or 0.0
    charge = "" if summary.water_charge_usd_per_h is None else f" The water price adds ${summary.water_charge_usd_per_h:,.0f}/h."
    return [
        f"Water: {summary.water_m3_per_year:,.0f} m3 a year ({_fmt(summary.water_l_per_million_goodput_tokens, ',.2f')} L "
        f"per million goodput tokens): {on_site:,.0f} m3 evaporated by the sites' cooling (WUE by climate and cooling, "
        f"estimates) and {summary.water_m3_per_year - on_site:,.0f} m3 consumed by the grid's generation "
        f"(Macknick et al. 2012 medians on each country's mix).{charge}",
        "",
    ]


def _five_number_lines(summary: PlanSummary) -> list[str]:
    return [
        "## The five numbers",
        "",
        "| number | value |",
        "|---|---|",
        f"| tokens/s per MW (facility yield) | {_fmt(summary.tokens_per_s_per_mw, ',.0f')} |",
        f"| goodput (tokens/s delivered inside the SLO) | {_fmt(summary.goodput_tok_s, ',.0f')} "
        f"of {_fmt(summary.demand_tok_s, ',.0f')} demanded |",
        f"| p99 inter-token latency (slowest interactive class) | {_fmt(summary.p99_itl_ms, '.1f')} ms |",
        f"| KV cache hit rate | {_fmt(summary.cache_hit_rate, '.0%', NOT_MODELLED)} |",
        f"| fault-domain coverage (demand with a second open site inside its budget) | "
        f"{_fmt(summary.fault_domain_coverage, '.1%')} |",
        "",
        f"p99 TTFT: demand-weighted mean {_fmt(summary.p99_ttft_ms_mean, ',.1f')} ms, "
        f"worst {_fmt(summary.p99_ttft_ms_max, ',.1f')} ms. "
        f"Unserved share of demand: {summary.unserved_share:.2%}.",
        "",
    ]


def adequacy_lines(figures: Mapping[str, Any]) -> list[str]:
    """The expected unserved goodput over a year of outages, in words (the report's section and the console's).

    Parameters
    ----------
    figures : mapping
        ``summary.json``'s ``adequacy`` (:class:`placement.analyses.adequacy.Adequacy`'s figures).

    Returns
    -------
    list of str
        Lines of Markdown-safe text.
    """
    exact = figures.get("method") == "exact"
    error = (
        f" (exact enumeration; Monte Carlo {100 * figures['monte_carlo_share']:.4f}% +/- "
        f"{100 * figures['monte_carlo_std_error_share']:.4f}%)"
        if exact
        else f" +/- {100 * figures['std_error_share']:.4f}% (Monte Carlo standard error, {figures['years']:,} years)"
    )
    lines = [
        f"Expected unserved goodput: {figures['expected_unserved_tokens_per_year']:,.4g} tokens a year, "
        f"{100 * figures['expected_unserved_share']:.4f}% of the {figures['served_tokens_per_year']:,.4g} the plan serves"
        f"{error}.",
        f"A year loses more than {100 * figures['threshold_share']:.3g}% with probability "
        f"{100 * figures['p_year_loss_above_threshold']:.2f}% "
        f"(+/- {100 * figures['p_year_loss_above_threshold_std_error']:.2f}%{_upper(figures)}); "
        f"CVaR {100 * figures['cvar_level']:.0f}%: the worst {100 * (1 - figures['cvar_level']):.0f}% of years lose "
        f"{100 * figures['cvar_share']:.4f}% on average ({figures['years']:,} years drawn, seed {figures['seed']}).",
        f"{figures['sources']} outage sources on the open sites; {figures['failed_sets_solved']} sets of sites down "
        "re-routed on the plan's capacity.",
    ]
    top = [s for s in figures.get("top_sources") or [] if s["alone_unserved_tokens_per_year"] > 0][:5]
    if top:
        lines.append(
            "Largest sources (alone): "
            + "; ".join(f"{s['source']} {100 * s['contribution_share']:.1f}%" for s in top)
            + " (adequacy.csv)."
        )
    for step in figures.get("iterations") or []:
        lines.append(
            f"Round {step['round']}: expected unserved {100 * step['expected_unserved_share']:.4f}% "
            f"(target {100 * step['target_share']:.4f}%), {step['nodes']:,} nodes{step.get('note', '')}"
        )
    return lines


def _upper(figures: Mapping[str, Any]) -> str:
    """``, at most X % (95 %)`` when the figures hold the bound (folders written before it do not)."""
    upper = figures.get("p_year_loss_above_threshold_upper_95")
    return "" if upper is None else f", at most {100 * upper:.2f}% at 95 % confidence"


def _adequacy_section(summary: PlanSummary) -> list[str]:
    """The report's adequacy section, when the plan was evaluated."""
    if not summary.adequacy:
        return []
    return [
        "## Expected unserved goodput (a year of outages)",
        "",
        *[f"{line}  " for line in adequacy_lines(summary.adequacy)],
        "",
    ]


def _cost_lines(breakdown: CostBreakdown) -> list[str]:
    total = breakdown.total_usd_per_h
    share = max(total, 1e-12)
    return [
        "## Cost breakdown",
        "",
        "| component | $/h | share |",
        "|---|---|---|",
        *(f"| {COST_LABELS[key]} | {value:,.0f} | {value / share:.1%} |" for key, value in breakdown.lines()),
        f"| **total** | **{total:,.0f}** | 100% |",
        "",
    ]


def _site_lines(sites: pd.DataFrame) -> list[str]:
    opened = sites[sites["open"]].sort_values("goodput_tok_s", ascending=False)
    rows = pd.DataFrame(
        {
            "site": opened["name"],
            "MW used": opened["mw_used"].map(mw_text),
            "MW avail.": opened["mw_available"].map(lambda v: f"{v:g}"),
            "nodes": opened["nodes"],
            "$/h": opened["cost_usd_per_h"].map(lambda v: f"{v:,.0f}"),
            "goodput share": opened["goodput_share"].map(lambda v: f"{v:.1%}"),
            "$/M goodput": opened["cost_per_million_goodput_tokens_usd"].map(
                lambda v: f"{v:.3f}" if math.isfinite(v) else "no goodput"
            ),
            "power $/MWh": opened["power_price_usd_per_mwh"].map(lambda v: f"{v:g}"),
        }
    )
    return ["## Open sites", "", _table(rows), "", "![map](map.png)", ""]


def _unserved_lines(populations: pd.DataFrame, *, limit: int = 15) -> list[str]:
    unserved = populations[populations["unserved_tok_s"] > 1e-6 * populations["demand_tok_s"].clip(lower=1.0)]
    if unserved.empty:
        return []
    top = unserved.sort_values("unserved_tok_s", ascending=False).head(limit)
    rows = pd.DataFrame(
        {
            "population": top["name"],
            "country": top["country_code"],
            "unserved tok/s": top["unserved_tok_s"].map(lambda v: f"{v:,.0f}"),
            "nearest site RTT ms": top["nearest_site_rtt_ms"].map(ms_text),
        }
    )
    return ["## Populations not served inside their objective", "", _table(rows), ""]


def blocks_markdown(blocks: Sequence[Block]) -> list[str]:
    """Report blocks (:mod:`placement.outputs.failover_report`) as Markdown lines.

    Parameters
    ----------
    blocks : sequence of Block
        Headings, paragraphs and tables.

    Returns
    -------
    list of str
        Lines, each block followed by an empty line.
    """
    lines: list[str] = []
    for block in blocks:
        if block.kind == "heading":
            lines += [f"## {block.text}", ""]
        elif block.kind == "table" and block.table is not None:
            lines += [_table(block.table), ""]
        else:
            lines += [block.text, ""]
    return lines


def render_markdown(
    summary: PlanSummary,
    sites: pd.DataFrame,
    populations: pd.DataFrame,
    notes: list[str],
    *,
    protection: Sequence[Block] | None = None,
) -> str:
    """The report as Markdown.

    Parameters
    ----------
    summary : PlanSummary
        Headline figures.
    sites, populations : pandas.DataFrame
        The plan's tables.
    notes : list of str
        Diagnoses to show.
    protection : sequence of Block, optional
        The 24x7 section (:func:`placement.outputs.failover_report.protection_blocks`); None: a plan
        without N+1 (one line saying so).

    Returns
    -------
    str
        Markdown text.
    """
    rules, notes = split_rules(notes)
    lines = [
        *_headline_lines(summary),
        *_five_number_lines(summary),
        *(["## Rules that shaped the plan", "", *[f"- {rule}" for rule in rules], ""] if rules else []),
        *_cost_lines(cost_breakdown(summary, sites)),
        "![$ per million goodput tokens by class, step by step](cost_waterfall.png)",
        "",
        *blocks_markdown(protection_blocks(None) if protection is None else protection),
        *_adequacy_section(summary),
        "## TTFT budget",
        "",
        "![p99 TTFT budget by class: the median population and those with the least slack](ttft_budget.png)",
        "",
        *_site_lines(sites),
        *_unserved_lines(populations),
    ]
    if notes:
        lines += ["## Notes", "", *notes, ""]
    return "\n".join(lines)
