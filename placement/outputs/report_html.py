"""The report as one self-contained HTML file, and rebuilding a folder's reports without re-solving.

``report.html`` carries the seeds' five numbers, the cost breakdown, the TTFT budget chart, the
site table and every map of the folder, the PNGs embedded as ``data:`` URIs: it can be mailed on
its own. :func:`rerender_report` rebuilds ``report.md``, ``ttft_budget.png`` and ``report.html``
from the files of an existing results folder (``python cli.py report OUTDIR``).
"""

from __future__ import annotations

import base64
import html
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pandas as pd

from placement.outputs.budget_chart import COMPONENT_LABELS, budget_rows, draw_ttft_budget
from placement.outputs.cost_waterfall import cost_waterfall, draw_cost_waterfall
from placement.outputs.failover_report import Block, plan_protection, protection_blocks, summary_protection
from placement.outputs.report_md import COST_LABELS, adequacy_lines, cost_breakdown, render_markdown
from placement.results.cost_breakdown import CostBreakdown
from placement.results.folder import read_results_folder
from placement.results.record import PlanResults, split_rules
from placement.results.summary import PlanSummary
from placement.results.textfmt import ms_text, mw_text

__all__ = [
    "COMPONENT_LABELS",
    "budget_rows",
    "draw_charts_of_tables",
    "draw_report_charts",
    "draw_ttft_budget",
    "render_html",
    "render_report_html",
    "rerender_report",
    "write_report_html",
]

NOT_MODELLED = "not modelled"
MAP_ORDER = ("map.png", "map_north_america.png", "map_south_america.png", "map_europe.png", "map_africa_middle_east.png")


# ----------------------------------------------------------------------------- HTML


def _fmt(value: Any, spec: str, missing: str = NOT_MODELLED) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return missing
    return format(value, spec)


def _image(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    caption = html.escape(alt)
    return f'<figure><img alt="{caption}" src="data:image/png;base64,{data}"><figcaption>{caption}</figcaption></figure>'


def _table(frame: pd.DataFrame, *, numeric: tuple[str, ...] = ()) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{"num" if c in numeric else ""}">{html.escape(str(v))}</td>'
            for c, v in zip(frame.columns, row, strict=True)
        )
        + "</tr>"
        for row in frame.itertuples(index=False)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _inline(text: str) -> str:
    """A paragraph's text as HTML, Markdown `code` spans as <code>."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{part}</code>" if index % 2 else part for index, part in enumerate(parts))


def _blocks(blocks: Sequence[Block]) -> list[str]:
    out: list[str] = []
    for block in blocks:
        if block.kind == "heading":
            out.append(f"<h2>{html.escape(block.text)}</h2>")
        elif block.kind == "table" and block.table is not None:
            out.append(_table(block.table, numeric=tuple(c for c in block.table.columns if "tok/s" in c or "$" in c)))
        else:
            out.append(f"<p>{_inline(block.text)}</p>")
    return out


def _five_numbers(summary: PlanSummary) -> str:
    rows = [
        ("tokens/s per MW", _fmt(summary.tokens_per_s_per_mw, ",.0f"), "goodput per MW of facility power used"),
        (
            "goodput (not throughput)",
            f"{_fmt(summary.goodput_tok_s, ',.0f')} tok/s of {summary.demand_tok_s:,.0f} demanded",
            "tokens delivered inside the TTFT and ITL objectives (daily mean)",
        ),
        (
            "p99 inter-token latency",
            f"{_fmt(summary.p99_itl_ms, '.1f')} ms",
            "slowest interactive class; inside its objective, as every counted token",
        ),
        ("KV cache hit rate", _fmt(summary.cache_hit_rate, ".0%"), "prefix-cache hits (per-node goodput is an input)"),
        (
            "fault-domain coverage",
            _fmt(summary.fault_domain_coverage, ".1%"),
            "share of demand with a second open site inside its budget",
        ),
    ]
    cells = "".join(
        f'<div class="card"><div class="value">{html.escape(v)}</div><div class="name">{html.escape(n)}</div>'
        f'<div class="hint">{html.escape(h)}</div></div>'
        for n, v, h in rows
    )
    return f'<div class="cards">{cells}</div>'


def _costs(breakdown: CostBreakdown) -> str:
    total = breakdown.total_usd_per_h
    share = max(total, 1e-12)
    rows = "".join(
        f"<tr><td>{html.escape(COST_LABELS[key])}</td><td class='num'>{value:,.0f}</td>"
        f"<td><div class='bar' style='width:{100 * value / share:.1f}%'></div>{value / share:.1%}</td></tr>"
        for key, value in breakdown.lines()
    )
    return (
        "<table><thead><tr><th>component</th><th>$/h</th><th>share</th></tr></thead>"
        f"<tbody>{rows}<tr><th>total</th><th class='num'>{total:,.0f}</th><th>100%</th></tr></tbody></table>"
    )


def _site_table(sites: pd.DataFrame) -> str:
    opened = sites[sites["open"].astype(bool)].sort_values("goodput_tok_s", ascending=False)
    frame = pd.DataFrame(
        {
            "site": opened["name"],
            "MW used": opened["mw_used"].map(mw_text),
            "MW avail.": opened["mw_available"].map(lambda v: f"{v:g}"),
            "nodes": opened["nodes"].map(lambda v: f"{int(v):,}"),
            "$/h": opened["cost_usd_per_h"].map(lambda v: f"{v:,.0f}"),
            "goodput tok/s": opened["goodput_tok_s"].map(lambda v: f"{v:,.0f}"),
            "goodput share": opened["goodput_share"].map(lambda v: f"{v:.1%}"),
            "$/M goodput": opened["cost_per_million_goodput_tokens_usd"].map(
                lambda v: f"{v:.3f}" if math.isfinite(v) else "no goodput"
            ),
            "tok/s per MW": opened["tokens_per_s_per_mw"].map(lambda v: f"{v:,.0f}"),
            "power $/MWh": opened["power_price_usd_per_mwh"].map(lambda v: f"{v:g}"),
        }
    )
    return _table(frame, numeric=tuple(frame.columns[1:]))


def _rejected(sites: pd.DataFrame) -> str:
    closed = sites[~sites["open"].astype(bool)]
    counts = closed["reason"].fillna("").value_counts()
    items = "".join(f"<li>{n} sites: {html.escape(str(reason))}</li>" for reason, n in counts.items())
    names = ", ".join(html.escape(str(n)) for n in closed["name"])
    return f"<ul>{items}</ul><details><summary>the {len(closed)} sites not opened</summary><p>{names}</p></details>"


def _unserved(populations: pd.DataFrame) -> str:
    short = populations[populations["unserved_tok_s"] > 1e-6 * populations["demand_tok_s"].clip(lower=1.0)]
    if short.empty:
        return "<p>Every population is served inside its objective.</p>"
    top = short.sort_values("unserved_tok_s", ascending=False).head(15)
    frame = pd.DataFrame(
        {
            "population": top["name"],
            "country": top["country_code"],
            "unserved tok/s": top["unserved_tok_s"].map(lambda v: f"{v:,.0f}"),
            "nearest site RTT ms": top["nearest_site_rtt_ms"].map(ms_text),
        }
    )
    more = f"<p>... and {len(short) - len(top)} more (populations.csv).</p>" if len(short) > len(top) else ""
    return _table(frame, numeric=("unserved tok/s", "nearest site RTT ms")) + more


def _maps(folder: Path) -> str:
    names = [n for n in MAP_ORDER if (folder / n).exists()]
    names += sorted(p.name for p in folder.glob("map_*.png") if p.name not in names)
    captions = {"map.png": "World"}
    figures = [
        _image(folder / n, captions.get(n, n.removeprefix("map_").removesuffix(".png").replace("_", " ").title())) for n in names
    ]
    link = (
        '<p>Interactive map (layers, popups; works offline): <a href="map.html">map.html</a></p>'
        if (folder / "map.html").exists()
        else ""
    )
    return link + "".join(figures)


STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.8em}
.headline{font-size:1.15em}.cards{display:flex;flex-wrap:wrap;gap:.8em}
.card{flex:1 1 190px;border:1px solid #ddd;border-radius:6px;padding:.7em;background:#fafafa}
.card .value{font-size:1.3em;font-weight:600}.card .name{font-weight:600;margin-top:.2em}.card .hint{font-size:.8em;color:#666}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border-bottom:1px solid #e5e5e5;padding:.25em .6em;text-align:left}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:inline-block;height:.8em;background:#4a78b5;margin-right:.4em;vertical-align:middle}
figure{margin:1em 0}img{max-width:100%;border:1px solid #eee}figcaption{font-size:.85em;color:#555}
.notes{font-size:.85em;white-space:pre-wrap;background:#f6f6f6;padding:.7em;border-radius:4px}
"""


def _headline(summary: PlanSummary) -> str:
    cost = _fmt(summary.cost_per_million_goodput_tokens_usd, ".3f", "n/a")
    return (
        f"<p class='headline'><b>${cost} per million goodput tokens</b>: "
        f"${summary.objective_usd_per_h:,.0f}/h for {summary.goodput_tok_s:,.0f} goodput tok/s.</p>"
    )


def _status(summary: PlanSummary) -> str:
    return (
        f"<p>Status <b>{html.escape(summary.status)}</b> ({html.escape(summary.solver)}: "
        f"{html.escape(summary.solver_message)}, gap {_fmt(summary.gap, '.3%', 'n/a')}). "
        f"{summary.sites_open} of {summary.sites_candidate} candidate sites open, "
        f"{summary.nodes:,} nodes, {mw_text(summary.mw_used)} MW. "
        f"p99 TTFT: demand-weighted mean {_fmt(summary.p99_ttft_ms_mean, ',.1f', 'n/a')} ms, "
        f"worst {_fmt(summary.p99_ttft_ms_max, ',.1f', 'n/a')} ms. "
        f"Unserved share of demand: {summary.unserved_share:.2%}.</p>"
    )


def _rules(rules: list[str]) -> list[str]:
    """The rules that shaped the plan (residency, where power binds) as a section; nothing when there are none."""
    if not rules:
        return []
    items = "".join(f"<li>{html.escape(rule)}</li>" for rule in rules)
    return ["<h2>Rules that shaped the plan</h2>", f"<ul>{items}</ul>"]


def _adequacy(summary: PlanSummary) -> list[str]:
    """The expected unserved goodput over a year of outages, when the plan was evaluated."""
    if not summary.adequacy:
        return []
    lines = "".join(f"<p>{html.escape(line)}</p>" for line in adequacy_lines(summary.adequacy))
    return ["<h2>Expected unserved goodput (a year of outages)</h2>", lines]


def render_html(
    summary: PlanSummary,
    sites: pd.DataFrame,
    populations: pd.DataFrame,
    notes: list[str],
    folder: Path,
    *,
    protection: Sequence[Block] | None = None,
) -> str:
    """The report as one HTML document with the folder's PNGs embedded.

    Parameters
    ----------
    summary : PlanSummary
        Headline figures; ``cache_hit_rate`` and other absent figures are reported as
        "not modelled".
    sites, populations : pandas.DataFrame
        The plan's tables.
    notes : list of str
        Diagnoses to show.
    folder : Path
        Results folder whose ``map*.png`` and ``ttft_budget.png`` are embedded.

    Returns
    -------
    str
        HTML text.
    """
    folder = Path(folder)
    rules, notes = split_rules(notes)
    name = html.escape(summary.scenario)
    budget = _image(folder / "ttft_budget.png", "p99 TTFT budget by component") if (folder / "ttft_budget.png").exists() else ""
    waterfall = (
        _image(folder / "cost_waterfall.png", "$ per million goodput tokens by class, step by step")
        if (folder / "cost_waterfall.png").exists()
        else ""
    )
    body = [
        f"<h1>Placement report: {name}</h1>",
        _headline(summary),
        _status(summary),
        "<h2>The five numbers</h2>",
        _five_numbers(summary),
        *_rules(rules),
        "<h2>Cost breakdown</h2>",
        _costs(cost_breakdown(summary, sites)),
        waterfall,
        *_blocks(protection_blocks(None) if protection is None else protection),
        *_adequacy(summary),
        "<h2>TTFT budget</h2>",
        budget,
        "<h2>Open sites</h2>",
        _site_table(sites),
        "<h2>Sites not opened</h2>",
        _rejected(sites),
        "<h2>Maps</h2>",
        _maps(folder),
        "<h2>Populations not served inside their objective</h2>",
        _unserved(populations),
    ]
    if notes:
        body += ["<h2>Notes</h2>", f"<div class='notes'>{html.escape(chr(10).join(notes))}</div>"]
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
        f"<title>Placement report: {name}</title><style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _write_atomic(path: Path, write: Callable[[Path], object]) -> Path:
    """Write a file through a temporary sibling, then rename it into place."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(handle)
    try:
        write(Path(temporary))
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def _write_text(path: Path, text: str) -> Path:
    return _write_atomic(path, lambda target: target.write_text(text, encoding="utf-8"))


def draw_charts_of_tables(summary: PlanSummary, sites: pd.DataFrame, assignments: pd.DataFrame, folder: Path) -> Path:
    """Draw ``cost_waterfall.png`` into a results folder.

    Parameters
    ----------
    summary : PlanSummary
        The plan's figures.
    sites, assignments : pandas.DataFrame
        The plan's tables.
    folder : Path
        Results folder.

    Returns
    -------
    Path
        The file written.
    """
    table = cost_waterfall(summary.classes, sites, assignments)
    return draw_cost_waterfall(table, folder / "cost_waterfall.png", unserved_share=summary.unserved_share)


def draw_report_charts(results: PlanResults, folder: Path) -> list[Path]:
    """Draw the report's charts, ``ttft_budget.png`` and ``cost_waterfall.png``, into a results folder.

    Parameters
    ----------
    results : PlanResults
        A solved plan's results.
    folder : Path
        Results folder.

    Returns
    -------
    list of Path
        The files written.
    """
    folder = Path(folder)
    budget = draw_ttft_budget(results.assignments, folder / "ttft_budget.png")
    return [budget, draw_charts_of_tables(results.summary, results.sites, results.assignments, folder)]


def render_report_html(results: PlanResults, folder: Path) -> Path:
    """Write ``report.html`` into a results folder whose maps and charts are drawn: it embeds every PNG it finds.

    Parameters
    ----------
    results : PlanResults
        A solved plan's results.
    folder : Path
        Results folder.

    Returns
    -------
    Path
        ``report.html``.
    """
    folder = Path(folder)
    text = render_html(
        results.summary, results.sites, results.populations, results.notes, folder, protection=plan_protection(results)
    )
    return _write_text(folder / "report.html", text)


def write_report_html(results: PlanResults, folder: Path) -> Path:
    """:func:`draw_report_charts`, then :func:`render_report_html` (after the maps: it embeds every ``map*.png``)."""
    draw_report_charts(results, folder)
    return render_report_html(results, folder)


# ----------------------------------------------------------------------------- re-rendering


def rerender_report(out_dir: str | Path) -> list[Path]:
    """Rebuild ``report.md``, ``ttft_budget.png``, ``cost_waterfall.png`` and ``report.html`` of a results folder.

    Reads ``summary.json``, ``sites.csv``, ``assignments.csv`` and ``populations.csv``, re-uses
    the maps already in the folder, and does not solve anything. Each file is replaced whole.
    A folder written before ``summary.json`` held ``cost_breakdown_usd_per_h`` gets its
    breakdown from ``sites.csv``.

    Parameters
    ----------
    out_dir : str or Path
        A folder written by ``cli.py solve``.

    Returns
    -------
    list of Path
        The files written.

    Raises
    ------
    InputError
        If the folder lacks one of the files read (:func:`placement.results.folder.read_results_folder`).
    PlacementError
        If ``summary.json`` lacks a figure every version has written.
    """
    folder = Path(out_dir)
    results = read_results_folder(folder, require=("populations.csv",))
    summary, notes, populations = results.plan_summary(), results.notes, results.populations
    assert populations is not None  # required
    budget = _write_atomic(folder / "ttft_budget.png", lambda target: draw_ttft_budget(results.assignments, target))
    table = cost_waterfall(summary.classes, results.sites, results.assignments)
    waterfall = _write_atomic(
        folder / "cost_waterfall.png",
        lambda target: draw_cost_waterfall(table, target, unserved_share=summary.unserved_share),
    )
    protection = summary_protection(summary, folder)
    markdown = _write_text(
        folder / "report.md", render_markdown(summary, results.sites, populations, notes, protection=protection)
    )
    report = _write_text(
        folder / "report.html", render_html(summary, results.sites, populations, notes, folder, protection=protection)
    )
    return [markdown, budget, waterfall, report]
