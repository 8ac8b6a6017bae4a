"""The serving model's arrangement tables, from a results folder: regenerated, not pasted.

Usage::

    placement solve world-arrangement --out DIR      # about 2.5 min on 2 cores
    .venv/bin/python scripts/arrangement_table.py DIR

Prints Markdown tables from the folder's ``summary.json`` (its ``arrangement``): per class, the mode chosen, $/M and
goodput per node with the fixed arrangement and with the one chosen, the node TTFT budgets its tokens ran at and its
prefix-cache hits, and a row for the plan; each option's value, from the solves with that one option off; per class,
why it runs as it does at most of its sites (``mode_reasons``: the goodput per node of the modes compared); and with
cross-metro prefill, the node-equivalents a class needs served whole and split at each allowance, and what it took.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

CLASS_HEADER = (
    "| class | mode chosen (share of its tokens) | $/M, fixed arrangement | $/M, arrangement chosen "
    "| goodput per node, fixed → chosen (tok/s) | node TTFT budgets run | prefix hits, fixed → chosen |",
    "|---|---|---|---|---|---|---|",
)
REASON_HEADER = ("| class | sites giving it, of those serving the class | why, in the serving model's words |", "|---|---|---|")
OPTION_HEADER = (
    "| option off (the others on) | $/M | against all options | unserved | what the option is worth ($/M) |",
    "|---|---|---|---|---|",
)


def _change(new: float, old: float) -> str:
    return f"{(new / old - 1) * 100:+.1f} %".replace("-", "−")


def _modes(figures: dict[str, Any]) -> str:
    """The mode serving most of a class, and the others' shares where there are others."""
    shares = sorted(figures.get("serving_mode_shares", {}).items(), key=lambda kv: -kv[1])
    if len(shares) <= 1:
        return str(figures["serving_mode"])
    return ", ".join(f"{mode} {share * 100:.1f} %" for mode, share in shares if share >= 0.0005)


def _budgets(figures: dict[str, Any]) -> str:
    """The node TTFT budgets a class's tokens ran at, tightest last (one budget: the class's own)."""
    shares = sorted(figures.get("node_ttft_budget_shares", {}).items(), key=lambda kv: -float(kv[0]))
    if len(shares) <= 1:
        return "its own only"
    return ", ".join(f"{float(ms):,.0f} ms {share * 100:.1f} %" for ms, share in shares)


def class_row(name: str, figures: dict[str, Any]) -> str:
    """One class's row."""
    usd, usd_fixed = figures["usd_per_million_goodput_tokens"], figures["usd_per_million_goodput_tokens_fixed_arrangement"]
    per_node = f"{figures['goodput_tok_s_per_node_fixed_arrangement']:,.0f} → {figures['goodput_tok_s_per_node']:,.0f}"
    hits, hits_fixed = figures["prefix_hit_rate"], figures["prefix_hit_rate_fixed_arrangement"]
    reuse = "no reuse" if hits == hits_fixed == 0 else f"{hits_fixed * 100:.1f} % → {hits * 100:.1f} %"
    return (
        f"| {name} | {_modes(figures)} | {usd_fixed:.3f} | **{usd:.3f}** ({_change(usd, usd_fixed)}) | {per_node} "
        f"| {_budgets(figures)} | {reuse} |"
    )


def plan_row(summary: dict[str, Any]) -> str:
    """The plan's row: $/M and unserved share both ways, and the plan's sites and MW."""
    arrangement = summary["arrangement"]
    usd, usd_fixed = (
        arrangement["usd_per_million_goodput_tokens"],
        arrangement["usd_per_million_goodput_tokens_fixed_arrangement"],
    )
    fixed = f"{usd_fixed:.3f}, {arrangement['unserved_share_fixed_arrangement'] * 100:.2f} % unserved"
    chosen = (
        f"**{usd:.3f}** ({_change(usd, usd_fixed)}), {arrangement['unserved_share'] * 100:.2f} % unserved, "
        f"{summary['sites_open']} sites, {summary['mw_used']:,.0f} MW"
    )
    return f"| the plan | | {fixed} | {chosen} | | | |"


def option_rows(summary: dict[str, Any]) -> list[str]:
    """One row per option: the plan's $/M and unserved share with it off, and what it is worth."""
    arrangement = summary["arrangement"]
    usd = arrangement["usd_per_million_goodput_tokens"]
    rows = []
    for option, figures in arrangement.get("option_values", {}).items():
        without, worth = figures["usd_per_million_goodput_tokens_without"], figures["worth_usd_per_million_goodput_tokens"]
        if without is None or worth is None:
            rows.append(f"| `{option}` | no plan | | | |")
            continue
        unserved = figures["unserved_share_without"] * 100
        signed = f"{worth:+.3f}".replace("-", "−")
        rows.append(f"| `{option}` | {without:.3f} | {_change(without, usd)} | {unserved:.2f} % | {signed} |")
    return rows


def reason_rows(summary: dict[str, Any]) -> list[str]:
    """Per class, the reason most of its open sites give, and at how many of them."""
    by_class: dict[str, Counter[str]] = {}
    for reasons in summary["arrangement"].get("mode_reasons", {}).values():
        for name, reason in reasons.items():
            by_class.setdefault(name, Counter())[reason] += 1
    rows = []
    for name in summary["arrangement"]["classes"]:
        if name in by_class:
            reason, count = by_class[name].most_common(1)[0]
            rows.append(f"| {name} | {count} of {sum(by_class[name].values())} | {reason} |")
    return rows


def cross_metro_rows(summary: dict[str, Any]) -> tuple[tuple[str, str], list[str]]:
    """Per class: node-equivalents per 1,000 tok/s served whole and split at each allowance, and the share it took."""
    cross = summary["arrangement"].get("cross_metro") or {}
    allowances = [f"{float(ms):g}" for ms in cross.get("options", {}).get("rtt_ms", [])]
    header = (
        "| class | node-equivalents per 1,000 tok/s, served whole | "
        + " | ".join(f"split, partner within {ms} ms" for ms in allowances)
        + " | share of the class split | why none |",
        "|---|---|" + "---|" * len(allowances) + "---|---|",
    )
    rows = []
    for name, figures in cross.get("classes", {}).items():
        if not figures.get("columns"):
            rows.append(f"| {name} | |" + " |" * len(allowances) + f" 0 % | {figures.get('why_none', '')} |")
            continue
        split = figures["by_site_rtt_ms"]
        cells = [
            f"{split[ms]['decode_nodes_per_1000_tok_s'] + split[ms]['prefill_nodes_per_1000_tok_s']:.3f}" if ms in split else ""
            for ms in allowances
        ]
        share = figures["share_of_class"] * 100
        rows.append(f"| {name} | {figures['whole_nodes_per_1000_tok_s']:.3f} | {' | '.join(cells)} | {share:.1f} % | |")
    return header, rows


def tables(summary: dict[str, Any]) -> str:
    """The tables (the options' only with more than one option on), separated by blank lines."""
    classes = summary["arrangement"]["classes"]
    first = [*CLASS_HEADER, *(class_row(name, figures) for name, figures in classes.items()), plan_row(summary)]
    options = option_rows(summary)
    parts = first + (["", *OPTION_HEADER, *options] if options else [])
    reasons = reason_rows(summary)
    parts += ["", *REASON_HEADER, *reasons] if reasons else []
    header, cross = cross_metro_rows(summary)
    parts += ["", *header, *cross] if cross else []
    return "\n".join(parts) + "\n"


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if len(argv) == 1 else None
    if folder is None or not (folder / "summary.json").is_file():
        print("usage: scripts/arrangement_table.py DIR  (a results folder: placement solve world-arrangement --out DIR)")
        return 2
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    if "arrangement" not in summary:
        print(f"{folder}: its plan has no arrangement option on (no arrangement in summary.json)")
        return 2
    print(tables(summary), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
