"""The placement MILP solved directly, with node-capacity rows generated lazily when there are many time slices.

With ``options.lazy_slices`` and many time slices (it pays on models whose root LP is too slow for the time
limit) the model starts with each site's two busiest slices, and every (site, slice) the answer overloads is
added before solving again. Each round is a relaxation of the full model, so its bound is a valid bound, and
an answer that overloads nothing is an answer of the full model. If time runs out first, the last answer's
node counts are raised to carry every slice (power permitting). Otherwise it is one solve of the full MILP.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from placement.optimize.heuristics import repair_nodes
from placement.optimize.milp import empty, finish, solution_of, solve_once, verified, warm_design
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.solver import SolverOptions, SolveStatus

LAZY_SLICES_FROM = 6
"""With at least this many time slices, node-capacity rows are generated lazily."""


INITIAL_SLICES_PER_SITE = 2


MAX_ROUNDS = 8


def _initial_slices(data: PlacementInput) -> list[list[int]]:
    """Each site's busiest slices if it served every pair it may serve."""
    potential = data.site_slice_load(np.ones(len(data.pair_site)))
    return [sorted(np.argsort(-potential[j])[:INITIAL_SLICES_PER_SITE].tolist()) for j in range(data.n_sites)]


def _add_violated(data: PlacementInput, solution: PlacementSolution, active: list[list[int]]) -> int:
    """Add every (site, slice) whose capacity the solution exceeds; return how many were added."""
    load = data.site_slice_load(solution.pair_share)
    over = load > solution.nodes[:, None] + 1e-6 * np.maximum(1.0, solution.nodes[:, None])
    added = 0
    for j, t in zip(*np.nonzero(over), strict=True):
        if int(t) not in active[int(j)]:
            active[int(j)].append(int(t))
            added += 1
    return added


def _remaining(options: SolverOptions, start: float) -> SolverOptions:
    """The options with what is left of the time limit (at least 1 s) since ``start``."""
    elapsed = time.perf_counter() - start
    remaining = None if options.time_limit_s is None else max(1.0, options.time_limit_s - elapsed)
    return replace(options, time_limit_s=remaining)


def solve_lazy(data: PlacementInput, options: SolverOptions, *, route_nearest: bool, warm_start: bool) -> PlacementSolution:
    """Solve the placement MILP (all demand served), with lazy slice rows when they pay, and verify the answer.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    options : SolverOptions
        Solver, time limit (for all rounds together) and gap.
    route_nearest : bool
        After the cost-optimal design is found, re-route shares to the nearest open capacity
        (an LP with the design fixed; the cost does not change).
    warm_start : bool
        Start the solver from a greedy design (CBC and HiGHS).

    Returns
    -------
    PlacementSolution
        The solution; check ``report.status`` (an infeasible model has no solution).

    Raises
    ------
    SolverError
        If the solver's answer violates a constraint.
    """
    warm = warm_design(data) if warm_start else None
    lazy = options.lazy_slices and len(data.slice_hours) >= LAZY_SLICES_FROM and not data.fault_tolerant
    active = _initial_slices(data) if lazy else None
    start = time.perf_counter()
    rounds = 0
    while True:
        rounds += 1
        blocks, values, report = solve_once(data, _remaining(options, start), warm=warm, capacity_slices=active)
        if not report.status.has_solution:
            if report.status == SolveStatus.INFEASIBLE or active is None:
                return empty(data, report)
            active = None  # no answer on a relaxation in time: the full model gets what is left
            continue
        if active is None:
            break
        solution = solution_of(blocks, data, values, report, None)
        if _add_violated(data, solution, active) == 0:
            break
        out_of_time = options.time_limit_s is not None and time.perf_counter() - start >= options.time_limit_s
        if out_of_time or rounds >= MAX_ROUNDS:
            repaired = repair_nodes(data, solution, report)
            if repaired is not None:
                return verified(data, repaired, optional=False)
            active = None
    total = time.perf_counter() - start
    note = f" ({rounds} rounds of capacity rows)" if rounds > 1 else ""
    report = replace(report, runtime_s=total, message=report.message + note)
    return finish((blocks, values), data, options, report, route_nearest=route_nearest, optional=False)
