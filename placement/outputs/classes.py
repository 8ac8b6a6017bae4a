"""Interactive and deadline classes as the outputs tell them apart, from an assignment table alone."""

from __future__ import annotations

import pandas as pd

__all__ = ["DEADLINE_MS", "deadline_classes", "interactive_classes"]

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
