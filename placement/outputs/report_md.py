"""The short report planners read: the seeds' five numbers, the cost breakdown, the sites."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

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


def cost_breakdown(sites: pd.DataFrame) -> dict[str, float]:
    """Total $/h by component over the open sites.

    Parameters
    ----------
    sites : pandas.DataFrame
        The plan's site table.

    Returns
    -------
    dict of str to float
        ``node_capex, facility_capex, power, opex, site_fixed`` and ``total``. [USD/h]
    """
    nodes = sites["nodes"]
    parts = {
        "node_capex": float((nodes * sites["node_capex_usd_per_h"]).sum()),
        "facility_capex": float((nodes * sites["facility_capex_usd_per_h"]).sum()),
        "power": float((nodes * sites["power_usd_per_h"]).sum()),
        "opex": float((nodes * sites["opex_usd_per_h"]).sum()),
        "site_fixed": float(sites.loc[sites["open"], "fixed_cost_usd_per_h"].sum()),
    }
    parts["total"] = sum(parts.values())
    return parts


def render_markdown(summary: dict[str, Any], sites: pd.DataFrame, populations: pd.DataFrame, notes: list[str]) -> str:
    """The report as Markdown.

    Parameters
    ----------
    summary : dict
        Headline figures (``summary.json``).
    sites, populations : pandas.DataFrame
        The plan's tables.
    notes : list of str
        Diagnoses to show.

    Returns
    -------
    str
        Markdown text.
    """
    parts = cost_breakdown(sites)
    total = max(parts["total"], 1e-12)
    opened = sites[sites["open"]].sort_values("goodput_tok_s", ascending=False)
    site_rows = pd.DataFrame(
        {
            "site": opened["name"],
            "MW used": opened["mw_used"].map(lambda v: f"{v:.2f}"),
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
    unserved = populations[populations["unserved_tok_s"] > 1e-6 * populations["demand_tok_s"].clip(lower=1.0)]
    unserved = unserved.sort_values("unserved_tok_s", ascending=False).head(15)
    coverage = summary.get("fault_domain_coverage")
    lines = [
        f"# Placement report: {summary['scenario']}",
        "",
        f"Status **{summary['status']}** ({summary['solver']}: {summary['solver_message']}, gap {_fmt(summary['gap'], '.3%')}, "
        f"{summary['runtime_s']:.1f} s solve). {summary['sites_open']} of {summary['sites_candidate']} candidate sites open, "
        f"{summary['nodes']:,} nodes, {summary['mw_used']:.1f} MW of facility power.",
        "",
        f"**Cost per million goodput tokens: ${_fmt(summary['cost_per_million_goodput_tokens_usd'], '.3f')}** "
        f"(${summary['objective_usd_per_h']:,.0f}/h for {summary['goodput_tok_s']:,.0f} goodput tok/s).",
        "",
        "## The five numbers",
        "",
        "| number | value |",
        "|---|---|",
        f"| tokens/s per MW (facility yield) | {_fmt(summary['tokens_per_s_per_mw'], ',.0f')} |",
        f"| goodput (tokens/s delivered inside the SLO) | {_fmt(summary['goodput_tok_s'], ',.0f')} "
        f"of {_fmt(summary['demand_tok_s'], ',.0f')} demanded |",
        f"| p99 inter-token latency objective | {_fmt(summary['p99_itl_ms'], 'g')} ms |",
        f"| KV cache hit rate | {_fmt(summary.get('cache_hit_rate'), '.0%', NOT_MODELLED)} |",
        f"| fault-domain coverage (demand with a second open site inside its budget) | {_fmt(coverage, '.1%')} |",
        "",
        f"p99 TTFT: demand-weighted mean {_fmt(summary['p99_ttft_ms_mean'], '.0f')} ms, "
        f"worst {_fmt(summary['p99_ttft_ms_max'], '.0f')} ms. "
        f"Unserved share of demand: {summary['unserved_share']:.2%}.",
        "",
        "## Cost breakdown",
        "",
        "| component | $/h | share |",
        "|---|---|---|",
        *(
            f"| {name.replace('_', ' ')} | {value:,.0f} | {value / total:.1%} |"
            for name, value in parts.items()
            if name != "total"
        ),
        f"| **total** | **{parts['total']:,.0f}** | 100% |",
        "",
        "## Open sites",
        "",
        _table(site_rows),
        "",
        "![map](map.png)",
        "",
    ]
    if len(unserved):
        lines += [
            "## Populations not served inside their objective",
            "",
            _table(
                pd.DataFrame(
                    {
                        "population": unserved["name"],
                        "country": unserved["country_code"],
                        "unserved tok/s": unserved["unserved_tok_s"].map(lambda v: f"{v:,.0f}"),
                        "nearest site RTT ms": unserved["nearest_site_rtt_ms"].map(lambda v: f"{v:.0f}"),
                    }
                )
            ),
            "",
        ]
    if notes:
        lines += ["## Notes", "", *notes, ""]
    return "\n".join(lines)
