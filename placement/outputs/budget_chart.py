"""``ttft_budget.png``: where the p99 TTFT goes, one panel per interactive class and one for deadline classes.

Each interactive class gets its own millisecond axis with its objective drawn as a line: the median
population (by p99 TTFT) and the populations with the least slack, component by component. Deadline
(batch) classes, whose objective is an hour, get a small panel of their own in hours, so they no
longer flatten the interactive bars.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from placement.outputs.classes import deadline_classes, interactive_classes
from placement.outputs.png import save_png

__all__ = ["COMPONENT_COLOURS", "COMPONENT_LABELS", "budget_rows", "draw_ttft_budget"]

COMPONENT_LABELS = {
    "network_ms": "network (round trips x RTT)",
    "queue_ms": "prefill queue",
    "slot_wait_ms": "decode-slot wait",
    "retrieval_ms": "retrieval",
    "prefill_ms": "prefill (every chunk step)",
    "safety_tokenization_ms": "safety and tokenization",
    "first_decode_ms": "first decode step",
}
"""TTFT components in the order they are spent, with the words the report uses."""
COMPONENT_COLOURS = ("#4a78b5", "#e3a33b", "#c9784a", "#8c6bb1", "#d1495b", "#66a182", "#7f7f7f")
MS_PER_HOUR = 3_600_000.0


def _main_assignments(assignments: pd.DataFrame) -> pd.DataFrame:
    """Each (population, class)'s main assignment (the site carrying most of its goodput), with its slack."""
    main = assignments.sort_values("goodput_tok_s", ascending=False, kind="mergesort").drop_duplicates(["population_id", "class"])
    if "ttft_slack_ms" not in main:  # older folders
        main = main.assign(ttft_slack_ms=main["ttft_objective_ms"] - main["ttft_p99_ms"])
    return main


def _class_rows(main: pd.DataFrame, *, least: int) -> pd.DataFrame:
    """One class's median population and its ``least`` populations with the least slack (least first)."""
    by_slack = main.sort_values(["ttft_slack_ms", "population_id"], kind="mergesort").reset_index(drop=True)
    by_ttft = main.sort_values(["ttft_p99_ms", "population_id"], kind="mergesort").reset_index(drop=True)
    median = by_ttft.iloc[[len(by_ttft) // 2]]
    picks = by_slack.head(least)
    labels = [f"least slack #{k + 1}" for k in range(len(picks))]
    if not (picks["population_id"] == median["population_id"].iloc[0]).any():
        picks = pd.concat([picks, median], ignore_index=True)
        labels.append("median")
    else:
        at = int(np.flatnonzero(picks["population_id"].to_numpy() == median["population_id"].iloc[0])[0])
        labels[at] += ", also the median"
    picks = picks.copy()
    picks["label"] = [
        f"{label}: {row['population']} ({row['country_code']}) -> {row['site']}"
        for label, (_, row) in zip(labels, picks.iterrows(), strict=True)
    ]
    return picks


def budget_rows(assignments: pd.DataFrame, *, least: int = 4) -> pd.DataFrame:
    """Per class, the median population and those with the least TTFT slack, with their components.

    Each (population, class) is represented by its main assignment (the site carrying most of its
    goodput).

    Parameters
    ----------
    assignments : pandas.DataFrame
        The plan's assignment table (``assignments.csv``).
    least : int, optional
        How many of the least-slack populations to show per class.

    Returns
    -------
    pandas.DataFrame
        Rows from ``assignments`` (class by class, least slack first, the median last) with ``label``
        and ``deadline`` (the class's objective is over a minute) columns.
    """
    main = _main_assignments(assignments)
    deadline = set(deadline_classes(assignments))
    parts = [
        _class_rows(main[main["class"] == name], least=least).assign(deadline=name in deadline)
        for name in interactive_classes(assignments) + deadline_classes(assignments)
    ]
    if not parts:
        return main.head(0).assign(label=pd.Series(dtype=str), deadline=pd.Series(dtype=bool))
    return pd.concat(parts, ignore_index=True)


LABEL_CHARS = 58
"""Longest bar label drawn (the margin is fixed); longer ones end in an ellipsis."""


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def _draw_panel(ax: Axes, rows: pd.DataFrame, *, per_unit_ms: float, unit: str, title: str) -> None:
    """Stacked component bars of one panel, its objective line and a slack note per bar."""
    rows = rows.iloc[::-1]
    y = np.arange(len(rows))
    left = np.zeros(len(rows))
    for (column, label), colour in zip(COMPONENT_LABELS.items(), COMPONENT_COLOURS, strict=True):
        width = rows[column].to_numpy(float) / per_unit_ms if column in rows else np.zeros(len(rows))
        ax.barh(y, width, left=left, color=colour, label=label, height=0.6)
        left += width
    objective = float(rows["ttft_objective_ms"].max()) / per_unit_ms
    ax.axvline(objective, color="black", linewidth=1.6, label="p99 TTFT objective")
    budgeted = "rtt_budget_ms" if "rtt_budget_ms" in rows else "rtt_ms"  # older folders have no budget column
    rtt = rows[budgeted].to_numpy(float)
    slack = rows["ttft_slack_ms"].to_numpy(float) / per_unit_ms
    digits = 1 if unit == "ms" else 2
    for k, (total, trip, spare) in enumerate(zip(left, rtt, slack, strict=True)):
        text = f"{total:.{digits}f} {unit}; RTT {trip:.1f} ms; slack {spare:.{digits}f} {unit}"
        ax.annotate(text, (max(total, objective), k), xytext=(6, -3), textcoords="offset points", fontsize=7.5)
    ax.set_xlim(0, max(objective, float(left.max(initial=0.0))) * 1.42)
    ax.set_yticks(y, [_short(label) for label in rows["label"]])
    ax.tick_params(axis="y", labelsize=8)
    ax.set_xlabel(f"p99 time to first token [{unit}]", fontsize=8)
    ax.set_title(title, fontsize=9.5, loc="left")


def _panels(rows: pd.DataFrame) -> list[tuple[pd.DataFrame, float, str, str]]:
    """(rows, ms per unit, unit, title) of each panel: one per interactive class, deadline classes together."""
    panels = []
    for name, group in rows[~rows["deadline"]].groupby("class", sort=False):
        objective = float(group["ttft_objective_ms"].max())
        panels.append((group, 1.0, "ms", f"{name}: p99 TTFT objective {objective:.1f} ms"))
    late = rows[rows["deadline"]]
    if len(late):
        label = late["class"].astype(str) + ": " + late["label"]
        objectives = late.groupby("class", sort=False)["ttft_objective_ms"].max()
        hours = ", ".join(f"{n} {v / MS_PER_HOUR:.1f} h" for n, v in objectives.items())
        panels.append((late.assign(label=label), MS_PER_HOUR, "h", f"deadline classes (first token within hours): {hours}"))
    return panels


def draw_ttft_budget(assignments: pd.DataFrame, path: Path, *, least: int = 4) -> Path:
    """Stacked bars of the p99 TTFT budget, one panel per interactive class and one for deadline classes.

    Parameters
    ----------
    assignments : pandas.DataFrame
        The plan's assignment table with the columns of :data:`COMPONENT_LABELS`,
        ``ttft_objective_ms`` and ``ttft_p99_ms``.
    path : Path
        PNG to write.
    least : int, optional
        How many of the least-slack populations to show per class (deadline classes: 2).

    Returns
    -------
    Path
        The file written.
    """
    rows = budget_rows(assignments, least=least)
    late = rows[rows["deadline"]]
    few = late["label"].str.startswith(("least slack #1", "least slack #2", "median"))  # a small panel
    rows = pd.concat([rows[~rows["deadline"]], late[few]])
    panels = _panels(rows)
    heights = [len(p[0]) + 1.2 for p in panels] or [1.0]
    height_in = 1.6 + 0.42 * sum(heights)
    fig, axes = plt.subplots(len(heights), 1, figsize=(12, height_in), dpi=110, gridspec_kw={"height_ratios": heights},
                             squeeze=False)  # fmt: skip
    # fixed margins (labels are at most ~60 characters), not a layout engine: it cost more than the bars
    fig.subplots_adjust(
        left=0.31, right=0.985, top=1 - 0.55 / height_in, bottom=0.85 / height_in, hspace=0.9 / max(len(heights), 1) ** 0.5
    )
    for ax, (group, per_unit_ms, unit, title) in zip(axes[:, 0], panels, strict=False):
        _draw_panel(ax, group, per_unit_ms=per_unit_ms, unit=unit, title=title)
    if not panels:
        axes[0, 0].set_axis_off()
        axes[0, 0].text(0.5, 0.5, "no population is served", ha="center", va="center")
    else:
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle("Where the p99 TTFT budget goes: each class's median population and those with the least slack", fontsize=10)
    save_png(fig, path)
    plt.close(fig)
    return path
