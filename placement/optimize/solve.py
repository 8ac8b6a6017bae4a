"""Solving the placement MILP: which strategy a problem takes.

- N+1 with more re-routing variables than a full model can hold: the plan without N+1, then protected on
  the pairs it uses (:mod:`placement.optimize.failover`, :mod:`placement.optimize.protect`);
- without N+1 and with more pairs than a direct MILP closes, or with cross-metro columns (pairs that load two
  sites, most of which never pay): an LP priced over every pair, then a MILP on the pairs it singles out
  (:mod:`placement.optimize.priced`);
- otherwise the MILP itself, with lazy time-slice rows when there are many slices (:mod:`placement.optimize.lazy`).

A model that cannot serve everything is diagnosed by :func:`placement.optimize.shortfall.diagnose_shortfall`;
the least cost per goodput token is :func:`placement.optimize.ratio.solve_ratio`. Every answer is checked against
every constraint (:func:`placement.optimize.verify.verify_solution`) before it is returned.
"""

from __future__ import annotations

from placement.optimize import failover
from placement.optimize.lazy import solve_lazy
from placement.optimize.priced import PRICING_FROM_PAIRS, solve_priced
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.solver import SolverOptions


def solve_placement(
    data: PlacementInput, options: SolverOptions, *, route_nearest: bool = True, warm_start: bool = True
) -> PlacementSolution:
    """Solve the placement MILP (all demand served) and verify the answer.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    options : SolverOptions
        Solver, time limit (for all rounds together) and gap.
    route_nearest : bool, optional
        After the cost-optimal design is found, re-route shares to the nearest open capacity
        (an LP with the design fixed; the cost does not change).
    warm_start : bool, optional
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
    if data.fault_tolerant and failover.failover_variable_count(data) > failover.FULL_FAILOVER_MAX_VARIABLES:
        return failover.solve_large_n_plus_one(data, options, solve_without_n_plus_one=solve_placement)
    if not data.fault_tolerant and len(data.pair_site) > PRICING_FROM_PAIRS:
        return solve_priced(data, options, shortfall=False, route_nearest=route_nearest)
    if data.has_remote and not data.fault_tolerant:  # cross-metro columns: priced in by the LP, the MILP on those it singles out
        return solve_priced(data, options, shortfall=False, route_nearest=route_nearest, all_pairs=True)
    return solve_lazy(data, options, route_nearest=route_nearest, warm_start=warm_start)
