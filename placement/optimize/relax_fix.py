"""Relax, fix, search: a MILP's sites fixed where its LP relaxation already opens or closes every one.

A placement MILP's hard part is which sites open; once they are chosen, what is left (whole nodes per site, the
shares of each pair) is a small search. With the strong linking rows the LP relaxation often opens whole sites
only, and then HiGHS's own root search spends seconds in sub-MIP heuristics re-finding that choice (the bundled
world: 5.3 of 5.9 s). Here the LP relaxation is solved first; when it leaves every binary column at 0 or 1, they are
fixed there and the MILP left (whole nodes) is searched to :data:`FIXED_GAP`. Its answer is a design of the full MILP
and the LP's value bounds the full MILP from below, so when the two are within the requested gap the answer is
certified as the full MILP's would be; otherwise the bounds are restored and the full MILP starts from that answer.
When the LP leaves some site fractional, the full MILP runs as it would have without the relaxation: searching the
sites left free was slower than HiGHS's own search (the bundled arrangement world without its TTFT ladder, 8 to 25
sites free: 10 to 20 s a search at the plan's gap, against its 25 s limit).

The steps work on a ``highspy.Highs`` that holds the model; the caller runs the full MILP when :func:`relax_and_fix`
does not certify.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

FIXED_GAP = 1e-4
"""Relative gap to which the MILP on fixed sites is searched. Tighter than a plan's gap on purpose: with every site
fixed the search is over whole nodes, which the LP nearly decides, so a tight gap costs about a second and saves the
node-rounding slack a looser one leaves (the bundled world: $163/h, about 11 nodes, at 5e-4)."""

WHOLE_TOLERANCE = 1e-3
"""How close to 0 or 1 an LP value of a binary column must be to count as decided."""


@dataclass(frozen=True)
class FixedAnswer:
    """What relaxing and fixing found.

    Parameters
    ----------
    lp_bound : float
        The LP relaxation's optimum: a lower bound on the full MILP's.
    objective : float
        The objective of the answer on the fixed columns (``nan`` without one).
    fixed : int
        Binary columns fixed at the LP's value (every one; 0 when the LP left one fractional).
    runtime_s : float
        Wall-clock seconds of both steps. [s]
    whole : bool, optional
        Whether the LP left every binary whole (False: nothing was fixed or searched, ``objective`` is ``nan``).
    """

    lp_bound: float
    objective: float
    fixed: int
    runtime_s: float
    whole: bool = True

    def certifies(self, gap: float) -> bool:
        """Whether the answer is within relative ``gap`` of the LP bound (and so of the full MILP's optimum)."""
        if not (math.isfinite(self.objective) and math.isfinite(self.lp_bound)):
            return False
        return self.objective - self.lp_bound <= gap * max(abs(self.objective), 1e-9)  # solver.relative_gap's measure


def _binary_columns(highs: Any) -> np.ndarray:
    """Indices of the integer columns bounded to [0, 1]."""
    lp = highs.getLp()
    if len(lp.integrality_) == 0:
        return np.empty(0, dtype=np.int32)
    integer = np.array([int(kind) == 1 for kind in lp.integrality_])
    lower, upper = np.asarray(lp.col_lower_), np.asarray(lp.col_upper_)
    return np.flatnonzero(integer & (lower == 0.0) & (upper == 1.0)).astype(np.int32)


def _whole(values: np.ndarray) -> bool:
    """Whether every value is within :data:`WHOLE_TOLERANCE` of 0 or 1."""
    return bool(((values <= WHOLE_TOLERANCE) | (values >= 1.0 - WHOLE_TOLERANCE)).all())


def _solve_relaxation(highs: Any) -> tuple[float, np.ndarray] | None:
    """The LP relaxation's value and column values, or None when it did not solve to optimality."""
    import highspy

    highs.setOptionValue("solve_relaxation", True)
    highs.setOptionValue("solver", "ipm")  # interior point with crossover: a vertex, in about half the simplex's time
    try:
        highs.run()
    finally:
        highs.setOptionValue("solve_relaxation", False)
        highs.setOptionValue("solver", "choose")
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return float(highs.getInfo().objective_function_value), np.asarray(highs.getSolution().col_value)


def relax_and_fix(highs: Any, *, time_limit_s: float | None) -> FixedAnswer | None:
    """Solve the LP relaxation and, when it decides every binary, fix them there and search the rest.

    Parameters
    ----------
    highs : highspy.Highs
        The MILP, options set (its ``mip_rel_gap`` and ``time_limit`` are put back after the search). On return with
        a certifying answer the model's binaries stay fixed and it holds that answer; otherwise its bounds are
        restored and it holds the answer (if any) as a starting solution; with None, its solver state is cleared.
    time_limit_s : float or None
        Seconds both steps may take together. [s]

    Returns
    -------
    FixedAnswer or None
        None when there is no binary column or the LP did not solve; an answer with ``whole`` False (and no
        objective) when the LP leaves a binary fractional, the model then as it was before the relaxation.
    """
    start = time.perf_counter()
    binaries = _binary_columns(highs)
    if binaries.size == 0:
        return None
    relaxed = _solve_relaxation(highs)
    if relaxed is None or not _whole(relaxed[1][binaries]):
        highs.clearSolver()  # the full MILP starts afresh, as it would have without the relaxation
        _time_left(highs, time_limit_s, start)
        if relaxed is None:
            return None
        return FixedAnswer(relaxed[0], math.nan, 0, time.perf_counter() - start, whole=False)
    lp_bound, columns, whole = relaxed[0], binaries, np.round(relaxed[1][binaries])
    gap = float(highs.getOptionValue("mip_rel_gap")[1])  # (status, value)
    highs.setOptionValue("mip_rel_gap", min(gap, FIXED_GAP))
    _time_left(highs, time_limit_s, start)
    highs.changeColsBounds(len(columns), columns, whole, whole)
    highs.run()
    highs.setOptionValue("mip_rel_gap", gap)
    info = highs.getInfo()
    found = info.primal_solution_status == 2  # kSolutionStatusFeasible
    answer = FixedAnswer(
        lp_bound=lp_bound,
        objective=float(info.objective_function_value) if found else math.nan,
        fixed=len(columns),
        runtime_s=time.perf_counter() - start,
    )
    if answer.certifies(gap):
        return answer
    solution = highs.getSolution() if found else None
    highs.changeColsBounds(len(columns), columns, np.zeros(len(columns)), np.ones(len(columns)))
    if solution is not None:
        highs.setSolution(solution)
    _time_left(highs, time_limit_s, start)
    return answer


def _time_left(highs: Any, time_limit_s: float | None, start: float) -> None:
    """Give the next run what is left of ``time_limit_s`` since ``start`` (at least a second)."""
    if time_limit_s is not None:
        highs.setOptionValue("time_limit", max(time_limit_s - (time.perf_counter() - start), 1.0))
