"""Interactive and deadline classes as the outputs tell them apart, from an assignment table alone."""

from __future__ import annotations

import pandas as pd

__all__ = ["CLASS_COLOURS", "DEADLINE_COLOUR", "DEADLINE_MS", "class_colours", "deadline_classes", "interactive_classes"]

DEADLINE_MS = 60_000.0
"""A class whose p99 TTFT objective exceeds a minute is a deadline (batch) class, drawn apart. [ms]"""


def _objectives(assignments: pd.DataFrame) -> pd.Series:
    """Each class's TTFT objective, in the order the classes first appear. [ms]"""
    return assignments.groupby("class", sort=False)["ttft_objective_ms"].max()


def deadline_classes(assignments: pd.DataFrame) -> list[str]:
    """The classes whose TTFT objective is a deadline (over :data:`DEADLINE_MS`).

    Parameters
    ----------
    assignments : pandas.DataFrame
        An assignment table (``class``, ``ttft_objective_ms``).

    Returns
    -------
    list of str
        Class names, in the order they first appear.
    """
    objectives = _objectives(assignments)
    return [str(c) for c in objectives.index[objectives > DEADLINE_MS]]


def interactive_classes(assignments: pd.DataFrame) -> list[str]:
    """The classes whose TTFT objective is in milliseconds (at most :data:`DEADLINE_MS`).

    Parameters
    ----------
    assignments : pandas.DataFrame
        An assignment table (``class``, ``ttft_objective_ms``).

    Returns
    -------
    list of str
        Class names, in the order they first appear.
    """
    objectives = _objectives(assignments)
    return [str(c) for c in objectives.index[objectives <= DEADLINE_MS]]


CLASS_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#17becf", "#8c564b")
"""Line colours of interactive classes, in the order the classes first appear (then repeated)."""
DEADLINE_COLOUR = "#7b3294"
"""Colour of deadline-class flows (drawn apart from the interactive lines)."""


def class_colours(assignments: pd.DataFrame) -> dict[str, str]:
    """A line colour for each interactive class, stable for a plan (the order classes first appear).

    Parameters
    ----------
    assignments : pandas.DataFrame
        An assignment table (``class``, ``ttft_objective_ms``).

    Returns
    -------
    dict of str to str
        Class name to colour.
    """
    return {name: CLASS_COLOURS[k % len(CLASS_COLOURS)] for k, name in enumerate(interactive_classes(assignments))}
