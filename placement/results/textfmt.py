"""How figures read in every text output: milliseconds to 0.1, $/M goodput to 3 decimals, MW to 0.1.

One place for the rule, so the terminal, ``report.md``, ``report.html`` and the plan's notes agree.
"""

from __future__ import annotations

__all__ = ["ms_text", "mw_text", "share_text", "usd_per_m_text"]


def ms_text(value: float) -> str:
    """A duration to 0.1 ms (``"281.3"``), thousands separated.

    Parameters
    ----------
    value : float
        Milliseconds. [ms]

    Returns
    -------
    str
        The number, without the unit.
    """
    return f"{value:,.1f}"


def mw_text(value: float) -> str:
    """Power to 0.1 MW (``"2,774.3"``); below 1 MW, three significant digits (``"0.315"``).

    A test-sized site does not read as 0.0.

    Parameters
    ----------
    value : float
        Megawatts. [MW]

    Returns
    -------
    str
        The number, without the unit.
    """
    return f"{value:,.1f}" if abs(value) >= 1 or value == 0 else f"{value:.3g}"


def usd_per_m_text(value: float) -> str:
    """A cost per million goodput tokens to 3 decimals (``"14.584"``).

    Parameters
    ----------
    value : float
        [USD per million tokens]

    Returns
    -------
    str
        The number, without the unit or the dollar sign.
    """
    return f"{value:,.3f}"


def share_text(value: float) -> str:
    """A share as a percentage: whole from 10 % (``"31%"``), one decimal below (``"3.1%"``), ``"<0.1%"`` for a sliver.

    Never ``"0%"`` for a share that is not zero.

    Parameters
    ----------
    value : float
        A share of 1.

    Returns
    -------
    str
        The percentage, with its sign.
    """
    if value >= 0.1:
        return f"{value:.0%}"
    return f"{value:.1%}" if value >= 0.001 else "<0.1%"
