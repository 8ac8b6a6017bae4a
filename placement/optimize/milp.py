"""One solve of the placement MILP and its answer read back: build, warm start, solve, extract, verify, route.

The steps every solve strategy (:mod:`placement.optimize.lazy`, :mod:`~placement.optimize.failover`,
:mod:`~placement.optimize.priced`, :mod:`~placement.optimize.shortfall`, :mod:`~placement.optimize.ratio`)
shares. Every answer is checked against every constraint (:func:`placement.optimize.verify.verify_solution`)
before it is returned; an answer that violates one is a :class:`SolverError`, never "optimal".
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Literal

import numpy as np

from placement._errors import SolverError
from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize.heuristics import greedy_design, greedy_failover_design, route_to_nearest
from placement.optimize.highs_direct import solve_linear
from placement.optimize.linear import pulp_values
from placement.optimize.model import PlacementBlocks, PlacementModel, placement_blocks, warm_start_values
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.routing import route_nearest_arrays
from placement.optimize.solver import SolverOptions, SolverReport, SolveStatus, StopReason
from placement.optimize.verify import verify_solution


def extract(model: PlacementModel, data: PlacementInput, report: SolverReport, routing: SolverReport | None) -> PlacementSolution:
    """The solution a solved PuLP model holds (:func:`solution_of`)."""
    return solution_of(model.blocks, data, pulp_values(model.variables), report, routing)


def solution_of(
    b: PlacementBlocks, data: PlacementInput, values: FloatArray, report: SolverReport, routing: SolverReport | None
) -> PlacementSolution:
    """The solution the column values hold (open sites, node counts, shares, unserved, re-routes)."""
    is_open = values[b.open.cols] > 0.5
    nodes = np.rint(values[b.nodes.cols]).astype(np.int64)
    shares = np.clip(values[b.shares.cols], 0.0, 1.0)
    unserved = values[b.unserved.cols] if b.unserved is not None else np.zeros(data.n_commodities)
    failover = {}
    for f, (pairs, z) in b.failover.items():
        moved = np.zeros(len(data.pair_site))
        moved[pairs] = np.clip(values[z.cols], 0.0, 1.0)
        failover[f] = moved
    objective = data.cost_usd_per_h(is_open, nodes, shares)
    return PlacementSolution(is_open, nodes, shares, unserved, objective, report, routing, failover)


def empty(data: PlacementInput, report: SolverReport) -> PlacementSolution:
    """No solution: every site closed, every commodity unserved, the report saying why."""
    m, p, c = data.n_sites, len(data.pair_site), data.n_commodities
    return PlacementSolution(np.zeros(m, bool), np.zeros(m, np.int64), np.zeros(p), np.ones(c), math.nan, report)


def finish(
    solved: tuple[PlacementBlocks, FloatArray],
    data: PlacementInput,
    options: SolverOptions,
    report: SolverReport,
    *,
    route_nearest: bool,
    optional: bool,
) -> PlacementSolution:
    """Read back and verify the answer; then (without N+1) route it to the nearest open capacity at the same cost.

    ``solved`` holds the model's blocks and the values the solve gave their columns.
    """
    solution = solution_of(solved[0], data, solved[1], report, None)
    violations = verify_solution(data, solution, optional=optional)
    if violations:
        raise SolverError(f"{report.solver} returned a placement that violates constraints: " + "; ".join(violations))
    if route_nearest and not data.fault_tolerant and not optional:
        return route_on_open_sites(data, solution, options)  # the routing LP in HiGHS directly, without PuLP
    if route_nearest and not data.fault_tolerant:
        routing_model, routing = route_to_nearest(data, solution, options, optional=optional)
        if routing.status.has_solution:
            routed = extract(routing_model, data, report, routing)
            if not verify_solution(data, routed, optional=True) and abs(
                routed.objective_usd_per_h - solution.objective_usd_per_h
            ) <= 1e-6 * max(1.0, solution.objective_usd_per_h):
                return routed
    return solution


Warm = tuple[tuple[BoolArray, IntArray, FloatArray], dict[int, FloatArray]]
"""A starting design and its N+1 re-routes."""


def warm_design(data: PlacementInput) -> Warm | None:
    """The greedy design (with N+1, the greedy N+1 design and its re-routes), or None."""
    if data.fault_tolerant:
        return greedy_failover_design(data)
    design = greedy_design(data)
    return None if design is None else (design, {})


def solve_once(
    data: PlacementInput,
    options: SolverOptions,
    *,
    warm: Warm | None,
    capacity_slices: list[list[int]] | None,
    failover_rows: Literal["exact", "spare"] = "exact",
) -> tuple[PlacementBlocks, FloatArray, SolverReport]:
    """Build the MILP (:func:`~placement.optimize.model.placement_blocks`), warm-start it and solve it.

    Returns
    -------
    PlacementBlocks, numpy.ndarray, SolverReport
        The model, its column values and what the solver proved.
    """
    blocks = placement_blocks(data, capacity_slices=capacity_slices, failover_rows=failover_rows)
    start = None if warm is None else warm_start_values(blocks, data, warm[0], warm[1])
    report, values = solve_linear(blocks.model, options, start=start)
    return blocks, values, report


def route_on_open_sites(data: PlacementInput, solution: PlacementSolution, options: SolverOptions) -> PlacementSolution:
    """Route shares to the nearest open capacity (:func:`placement.optimize.routing.route_nearest_arrays`).

    The routed shares are kept only if they pass every check and cost the same. Past the whole solve's deadline
    there is no routing: the design's own shares stand, and the report's message says so.
    """
    late = "; the time limit came before routing: the shares are the design's, not routed to the nearest open capacity"
    if options.past_deadline():
        return replace(solution, report=replace(solution.report, message=solution.report.message + late))
    tic = time.perf_counter()
    routed_shares = route_nearest_arrays(
        data, solution.open, solution.nodes, solution.pair_share, threads=options.threads, time_limit_s=options.remaining_s()
    )
    if routed_shares is None and options.past_deadline():
        return replace(solution, report=replace(solution.report, message=solution.report.message + late))
    if routed_shares is None:
        return solution
    cost = data.cost_usd_per_h(solution.open, solution.nodes, routed_shares)
    routing = SolverReport(options.name, SolveStatus.OPTIMAL, math.nan, math.nan, 0.0, time.perf_counter() - tic,
                           "routing LP: nearest open capacity", StopReason.GAP)  # fmt: skip
    routed = replace(solution, pair_share=routed_shares, objective_usd_per_h=cost, routing_report=routing)
    same_cost = abs(cost - solution.objective_usd_per_h) <= 1e-6 * max(1.0, solution.objective_usd_per_h)
    return routed if same_cost and not verify_solution(data, routed, optional=True) else solution


def verified(data: PlacementInput, solution: PlacementSolution, *, optional: bool) -> PlacementSolution:
    """The solution, once it passes every check (:class:`SolverError` otherwise)."""
    violations = verify_solution(data, solution, optional=optional)
    if violations:
        raise SolverError(f"{solution.report.solver} returned a placement that violates constraints: " + "; ".join(violations))
    return solution


def unserved_shares(data: PlacementInput, shares: FloatArray) -> FloatArray:
    """``(c,)`` share of each commodity's demand the pair shares leave unserved."""
    served = np.bincount(data.pair_commodity, weights=shares, minlength=data.n_commodities)
    return np.asarray(np.clip(1.0 - served, 0.0, 1.0))
