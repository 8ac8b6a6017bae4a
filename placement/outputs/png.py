"""Writing figures as PNG: one place for how (fast zlib: the maps are line-heavy and large)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

__all__ = ["save_png"]

PIL_KWARGS = {"compress_level": 1}
"""zlib level 1: on these line-heavy figures about 40 % faster to write than the default, and no larger."""


def save_png(fig: Figure, path: Path, **savefig_kwargs: Any) -> None:
    """Save a figure as PNG with the package's compression settings.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : Path
        Destination (the format is PNG whatever the suffix: the writer stages files under temporary names).
    **savefig_kwargs
        Passed to :meth:`matplotlib.figure.Figure.savefig` (``bbox_inches``, ...).
    """
    fig.savefig(path, format="png", pil_kwargs=PIL_KWARGS, **savefig_kwargs)
