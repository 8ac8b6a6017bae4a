"""The Pareto curve of a node as a PNG: throughput per GPU against speed per user, one line per TP degree.

The curve itself is computed in serving (:func:`placement.serving.pareto.pareto_curve`); ``placement goodput
--plot`` draws it here.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd


def plot_pareto(curve: pd.DataFrame, path: str | Path, *, title: str | None = None, itl_p99_ms: float | None = None) -> Path:
    """Write the Pareto curve as a PNG (matplotlib, Agg backend).

    Parameters
    ----------
    curve : pandas.DataFrame
        Output of :func:`placement.serving.pareto.pareto_curve`.
    path : str or Path
        PNG to write.
    title : str, optional
        Figure title.
    itl_p99_ms : float, optional
        Draws the speed-per-user floor ``1000 / itl_p99_ms`` of an ITL objective. [ms]

    Returns
    -------
    Path
        The file written.
    """
    fig, ax = plt.subplots(figsize=(7, 4.5))
    methods = curve["speculative"].unique().tolist() if "speculative" in curve else [""]
    for method in methods:
        own = curve[curve["speculative"] == method] if "speculative" in curve else curve
        suffix = f", {method}" if method else ""
        for tp, group in own.groupby("tp"):
            ax.plot(
                group["tok_s_per_user"],
                group["tok_s_per_gpu"],
                lw=1,
                alpha=0.6,
                ls="-" if not method else ":",
                label=f"TP{tp}{suffix}",
            )
        front = own[own["on_frontier"].astype(bool)].sort_values("tok_s_per_user")
        ax.plot(front["tok_s_per_user"], front["tok_s_per_gpu"], "k-" if not method else "r-", lw=2, label=f"frontier{suffix}")
    if itl_p99_ms:
        ax.axvline(1e3 / itl_p99_ms, color="grey", ls="--", label=f"ITL {itl_p99_ms:g} ms")
    ax.set_xscale("log")
    ax.set_xlabel("tokens/s per user")
    ax.set_ylabel("tokens/s per GPU")
    ax.set_title(title or "throughput per GPU vs interactivity")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    out = Path(path)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
