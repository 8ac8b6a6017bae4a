"""Charts (PNG) for reports: placements side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from placement.outputs.png import save_png


def draw_comparison(rows: list[dict[str, Any]], path: Path, *, title: str) -> None:
    """Bar charts of $/M goodput, served share, tokens/s per MW and MW used per placement.

    Parameters
    ----------
    rows : list of dict
        One per placement, with ``placement``, ``cost_per_million_goodput_tokens_usd``,
        ``served_share``, ``tokens_per_s_per_mw`` and ``mw_used``.
    path : Path
        PNG to write.
    title : str
        Figure title.
    """
    names = [r["placement"] for r in rows]
    colours = ["#1b9e77" if n == "optimal" else "#7fc9b1" if n.startswith("optimal") else "#9e9e9e" for n in names]
    panels = [
        ("cost_per_million_goodput_tokens_usd", "$ per million goodput tokens", "{:.2f}"),
        ("served_share", "share of demand served inside SLO", "{:.0%}"),
        ("tokens_per_s_per_mw", "goodput tokens/s per MW", "{:,.0f}"),
        ("mw_used", "MW of facility power", "{:.1f}"),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(16, 4.2), dpi=110)
    for ax, (key, label, fmt) in zip(axes, panels, strict=True):
        values = [float(r[key]) for r in rows]
        bars = ax.bar(names, values, color=colours)
        for bar, value in zip(bars, values, strict=True):
            ax.annotate(
                fmt.format(value), (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom", fontsize=8
            )
        ax.set_title(label, fontsize=10)
        ax.tick_params(axis="x", rotation=25, labelsize=8)
        ax.margins(y=0.15)
    fig.suptitle(title)
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)
