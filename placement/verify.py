"""Independent checks of a solution against every constraint, run after each solve.

Nothing here trusts the solver: the arrays are re-read and every row is re-evaluated, so an
answer that violates a constraint is never reported as optimal (spopt issue #314).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

ABS_TOL = 1e-6
REL_TOL = 1e-6


def _tolerance(scale: FloatArray | float) -> FloatArray:
    return np.asarray(ABS_TOL + REL_TOL * np.abs(scale))


def check_flows(
    flow: FloatArray,
    demand: FloatArray,
    allowed: NDArray[np.bool_],
    is_open: NDArray[np.bool_],
    *,
    served_in_full: NDArray[np.bool_] | None = None,
) -> list[str]:
    """Check non-negativity, demand balance, allowed pairs and closed sites.

    Parameters
    ----------
    flow : numpy.ndarray
        ``(n, m)`` flow from population i to site j.
    demand : numpy.ndarray
        ``(n,)`` demand.
    allowed : numpy.ndarray of bool
        ``(n, m)`` pairs that may carry flow.
    is_open : numpy.ndarray of bool
        ``(m,)`` open sites.
    served_in_full : numpy.ndarray of bool, optional
        Populations that must be served in full (default: all).

    Returns
    -------
    list of str
        One message per violated rule (empty when all hold).
    """
    problems: list[str] = []
    tol = _tolerance(demand)
    if (flow < -ABS_TOL).any():
        problems.append(f"negative flow on {int((flow < -ABS_TOL).sum())} pairs")
    served = flow.sum(axis=1)
    must = np.ones(len(demand), dtype=bool) if served_in_full is None else served_in_full
    short = must & (np.abs(served - demand) > tol)
    if short.any():
        i = int(np.flatnonzero(short)[0])
        problems.append(
            f"demand balance broken for {int(short.sum())} populations (first: {i}: served {served[i]:.6g} of {demand[i]:.6g})"
        )
    over = ~must & (served > demand + tol)
    if over.any():
        problems.append(f"{int(over.sum())} populations served more than their demand")
    forbidden = ~allowed & (flow > ABS_TOL)
    if forbidden.any():
        problems.append(f"flow on {int(forbidden.sum())} pairs that are not allowed (over the latency objective)")
    closed = ~is_open[None, :] & (flow > ABS_TOL)
    if closed.any():
        problems.append(f"flow to closed sites on {int(closed.sum())} pairs")
    return problems


def check_capacity(used: FloatArray, capacity: FloatArray, *, what: str) -> list[str]:
    """Check ``used <= capacity`` site by site.

    Parameters
    ----------
    used : numpy.ndarray
        Capacity used per site.
    capacity : numpy.ndarray
        Capacity available per site.
    what : str
        Name of the resource, for the message.

    Returns
    -------
    list of str
        One message if any site is over (empty otherwise).
    """
    over = used > capacity + _tolerance(capacity)
    if not over.any():
        return []
    j = int(np.flatnonzero(over)[0])
    return [f"{what} exceeded at {int(over.sum())} sites (first: site {j}: {used[j]:.6g} > {capacity[j]:.6g})"]


def check_objective(claimed: float, recomputed: float, *, what: str = "objective") -> list[str]:
    """Check that the cost the solver claims equals the cost recomputed from the solution.

    Parameters
    ----------
    claimed : float
        Objective reported by the solver.
    recomputed : float
        The same objective evaluated from the solution arrays.
    what : str, optional
        Name for the message.

    Returns
    -------
    list of str
        One message if they differ beyond tolerance.
    """
    if abs(claimed - recomputed) <= 1e-6 * max(1.0, abs(recomputed)):
        return []
    return [f"{what} claimed {claimed:.9g} but the solution costs {recomputed:.9g}"]
