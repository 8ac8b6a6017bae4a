"""``cost_waterfall.png``: what makes up each class's $/M goodput, as a waterfall.

The cost of a site is split between classes as the plan splits it (by node-equivalent usage over the
day, plus each class's own load energy). Of a class's share of a site's node cost, the part its mean
load keeps busy is what a node costs when it is used every hour; the rest is what the plan pays on top:

- **tail headroom**: the share of a node's capacity kept free so the p99 TTFT stays inside its budget
  (``1 - utilisation_cap`` for a given goodput; ``1 - serving_load_share`` where the serving model computes
  the goodput: the node's capacity at its batch that the goodput leaves unused; 0 in folders written before
  that figure was recorded);
- **idle hours (follow-the-sun valleys)**: nodes sized for the site's busiest hour stand partly idle in
  the others (the site's peak over mean node-equivalents);
- **whole nodes**: the site's nodes over its busiest hour's node-equivalents (rounding up, and sites
  kept for reach rather than load).

So, per class: busy node capex, facility capex, idle power and opex, then load energy and site fixed
(the bars of an every-node-busy plan), then the three additions, ending at the class's $/M goodput.
Unserved demand adds nothing: a plan pays only for the tokens it serves. Everything is read from
``summary.json``, ``sites.csv`` and ``assignments.csv``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from placement.outputs.png import save_png
from placement.results.class_summary import ClassSummary

__all__ = ["STEPS", "cost_waterfall", "draw_cost_waterfall"]

NODE_PARTS = {
    "node_capex": "node_capex_usd_per_h",
    "facility_capex": "facility_capex_usd_per_h",
    "idle_power": "power_usd_per_h",
    "opex": "opex_usd_per_h",
}
"""Per-node cost components of ``sites.csv``. [USD/h per node]"""
STEPS = {
    "node_capex": "node capex (busy nodes)",
    "facility_capex": "facility capex (busy nodes)",
    "idle_power": "idle power (busy nodes)",
    "opex": "opex (busy nodes)",
    "load_energy": "load energy",
    "site_fixed": "site fixed",
    "tail_headroom": "+ tail headroom (p99 queue)",
    "idle_hours": "+ idle hours (follow-the-sun valleys)",
    "whole_nodes": "+ whole nodes",
}
"""The waterfall's steps in order; they add up to the class's $/M goodput."""
USD_PER_H_TO_PER_M = 1e6 / 3600.0
ALL = "all classes"


def _usage(assignments: pd.DataFrame, classes: Sequence[ClassSummary]) -> tuple[pd.DataFrame, dict[str, float]]:
    """Mean node-equivalents by site and class, and each class's utilisation cap."""
    per_node, caps = {}, {}
    for c in classes:
        cap = c.utilisation_cap if c.utilisation_cap else 1.0
        per_node[c.name] = (c.goodput_tok_s_per_node or np.inf) * cap
        caps[c.name] = cap * (c.serving_load_share or 1.0)  # the serving model's headroom is inside its goodput
    ne = assignments["goodput_tok_s"] / assignments["class"].map(per_node).astype(float)
    if "goodput_tok_s_per_node" in assignments.columns:  # serving.node_ttft_ladder: each pair's own rung
        class_cap = assignments["class"].map({c.name: c.utilisation_cap or 1.0 for c in classes}).astype(float)
        ne = assignments["goodput_tok_s"] / (assignments["goodput_tok_s_per_node"] * class_cap)
    usage = assignments.assign(ne=ne).pivot_table(index="site_id", columns="class", values="ne", aggfunc="sum", fill_value=0.0)
    return usage, caps


def _site_figures(sites: pd.DataFrame, usage: pd.DataFrame) -> pd.DataFrame:
    """Per site with usage: nodes, mean and peak node-equivalents, node cost parts, fixed cost, load energy."""
    table = sites.assign(site_id=sites["site_id"].astype(str)).set_index("site_id").reindex(usage.index)
    figures = pd.DataFrame(index=usage.index)
    figures["nodes"] = table["nodes"].astype(float)
    figures["mean_ne"] = usage.sum(axis=1)
    peak = table["peak_utilisation"].astype(float) * figures["nodes"] if "peak_utilisation" in table else figures["nodes"]
    figures["peak_ne"] = np.clip(
        peak.fillna(figures["nodes"]), figures["mean_ne"], figures["nodes"].clip(lower=figures["mean_ne"])
    )
    for key, column in NODE_PARTS.items():
        figures[key] = table[column].astype(float)
    figures["site_fixed"] = table["fixed_cost_usd_per_h"].astype(float) * table["open"].astype(bool)
    figures["load_energy"] = table["load_energy_usd_per_h"].astype(float) if "load_energy_usd_per_h" in table else 0.0
    return figures.fillna(0.0)


def _class_steps(mean_ne: pd.Series, cap: float, sites: pd.DataFrame) -> dict[str, float]:
    """One class's steps in $/h, from its mean node-equivalents by site."""
    weight = mean_ne / sites["mean_ne"].where(sites["mean_ne"] > 0)
    node_cost = sites[list(NODE_PARTS)].sum(axis=1)
    steps = {key: float((mean_ne * cap * sites[key]).sum()) for key in NODE_PARTS}
    steps["load_energy"] = float((weight * sites["load_energy"]).sum())
    steps["site_fixed"] = float((weight * sites["site_fixed"]).sum())
    steps["tail_headroom"] = float((mean_ne * (1.0 - cap) * node_cost).sum())
    valley = (sites["peak_ne"] / sites["mean_ne"].where(sites["mean_ne"] > 0) - 1.0).fillna(0.0)
    steps["idle_hours"] = float((mean_ne * valley * node_cost).sum())
    rounding = ((sites["nodes"] - sites["peak_ne"]) / sites["mean_ne"].where(sites["mean_ne"] > 0)).fillna(0.0)
    steps["whole_nodes"] = float((mean_ne * rounding * node_cost).sum())
    return steps


def cost_waterfall(classes: Sequence[ClassSummary], sites: pd.DataFrame, assignments: pd.DataFrame) -> pd.DataFrame:
    """Each class's $/M goodput broken into the waterfall's steps, and the plan's as a whole.

    Parameters
    ----------
    classes : sequence of ClassSummary
        The plan's classes (``summary.json``'s ``classes``: per-node goodput, utilisation cap, goodput).
    sites, assignments : pandas.DataFrame
        The plan's tables (``sites.csv``, ``assignments.csv``).

    Returns
    -------
    pandas.DataFrame
        One row per class and one for ``"all classes"`` (columns ``class``, ``goodput_tok_s``, one per
        :data:`STEPS` key in USD per million goodput tokens, and ``total``, their sum). Site fixed costs
        of open sites that serve nothing are in no class's row but in the plan's.
    """
    usage, caps = _usage(assignments, classes)
    figures = _site_figures(sites, usage)
    rows = []
    per_h_all = dict.fromkeys(STEPS, 0.0)
    goodput_all = 0.0
    for c in classes:
        if c.name not in usage or c.goodput_tok_s <= 0:
            continue
        steps = _class_steps(usage[c.name], caps[c.name], figures)
        rows.append(
            {
                "class": c.name,
                "goodput_tok_s": c.goodput_tok_s,
                **{k: v * USD_PER_H_TO_PER_M / c.goodput_tok_s for k, v in steps.items()},
            }
        )
        per_h_all = {k: per_h_all[k] + steps[k] for k in STEPS}
        goodput_all += c.goodput_tok_s
    unused = sites[sites["open"].astype(bool) & ~sites["site_id"].astype(str).isin(usage.index)]
    per_h_all["site_fixed"] += float(unused["fixed_cost_usd_per_h"].sum())  # open for N+1 or locked, serving nothing
    if goodput_all > 0:
        rows.append(
            {
                "class": ALL,
                "goodput_tok_s": goodput_all,
                **{k: v * USD_PER_H_TO_PER_M / goodput_all for k, v in per_h_all.items()},
            }
        )
    table = pd.DataFrame(rows, columns=["class", "goodput_tok_s", *STEPS])
    return table.assign(total=table[list(STEPS)].sum(axis=1))


def _draw_one(ax: Axes, row: pd.Series) -> None:
    """One class's waterfall: floating bars from 0 to its $/M goodput, the total as a last bar."""
    values = [float(row[k]) for k in STEPS]
    starts = np.concatenate([[0.0], np.cumsum(values)[:-1]])
    colours = ["#4a78b5"] * 4 + ["#e3a33b", "#8c6bb1"] + ["#d1495b"] * 3
    labels = [*STEPS.values(), "= $/M goodput"]
    y = np.arange(len(labels))[::-1]
    ax.barh(y[:-1], values, left=starts, color=colours, height=0.65)
    ax.barh(y[-1], float(row["total"]), color="#333333", height=0.65)
    ax.set_yticks(y, labels, fontsize=8)
    for k, (start, value) in enumerate(zip([*starts, 0.0], [*values, float(row["total"])], strict=True)):
        ax.annotate(f"{value:.3f}", (start + max(value, 0.0), y[k]), xytext=(4, -3), textcoords="offset points", fontsize=7.5)
    ax.set_xlim(0, float(row["total"]) * 1.22 if row["total"] > 0 else 1.0)
    ax.set_xlabel("$ per million goodput tokens", fontsize=8)
    ax.set_title(f"{row['class']}: ${row['total']:.3f}/M goodput ({row['goodput_tok_s']:,.0f} tok/s)", fontsize=9.5, loc="left")


def draw_cost_waterfall(table: pd.DataFrame, path: Path, *, unserved_share: float = 0.0) -> Path:
    """The waterfall of :func:`cost_waterfall`, one panel per class and one for the whole plan.

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`cost_waterfall`.
    path : Path
        PNG to write.
    unserved_share : float, optional
        Share of demand the plan leaves unserved (said in the title: it adds no cost).

    Returns
    -------
    Path
        The file written.
    """
    panels = max(len(table), 1)
    columns = min(panels, 2)
    rows = -(-panels // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6.6 * columns, 3.3 * rows + 0.6), dpi=100, squeeze=False)
    # fixed margins, not a layout engine: constrained layout costs more than drawing the bars
    fig.subplots_adjust(left=0.2, right=0.98, bottom=0.08, top=1 - 0.75 / (3.3 * rows + 0.6), wspace=0.62, hspace=0.45)
    for ax, (_, row) in zip(axes.ravel(), table.iterrows(), strict=False):
        _draw_one(ax, row)
    for ax in axes.ravel()[len(table) :]:
        ax.set_axis_off()
    fig.suptitle(
        "What makes up $ per million goodput tokens: busy nodes, energy and sites, then what headroom, idle hours and whole "
        f"nodes add\n(unserved demand, {unserved_share:.2%} of it, adds nothing: only served tokens are paid for)".replace(
            "$", r"\$"
        ),
        fontsize=10,
    )
    save_png(fig, path)
    plt.close(fig)
    return path
