"""Least cost per goodput token when serving is optional: Dinkelbach's method on the placement MILP, with bounds.

It starts from a design serving at least the minimum (greedy, or the most-served LP rounded up), whose
ratio is lambda. Each iteration solves ``min cost - lambda * goodput`` over all designs and serving shares,
warm-started from the best design so far, to an *absolute* gap of a quarter of ``options.gap`` x lambda x
the least goodput (a relative gap means nothing on a value that tends to 0); lambda is then set to the best
ratio found. Every step's proven bound gives a lower bound of the ratio (:func:`ratio_bound`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize.heuristics import greedy_design
from placement.optimize.highs_direct import solve_linear
from placement.optimize.milp import empty, finish, solution_of, unserved_shares
from placement.optimize.model import PlacementBlocks, placement_blocks, warm_start_values
from placement.optimize.priced import SHORTFALL_TOL, round_up
from placement.optimize.pricing import relax
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.solver import SolverOptions, SolverReport, SolveStatus, StopReason, relative_gap
from placement.optimize.verify import cap_excess_per_h, verify_solution

RATIO_ABS_GAP_SHARE = 0.25
"""Each Dinkelbach MILP stops within this share of the ratio gap, as an absolute gap on ``cost - lambda x goodput``."""


RATIO_STEP_GAP = 0.1
"""Relative gap on ``cost - lambda x goodput`` at which a Dinkelbach MILP may stop as well: far from the optimal
ratio finding a better design is what counts; near it the value tends to 0 and the absolute gap governs."""


def _ratio_start(
    data: PlacementInput, min_served: float, options: SolverOptions
) -> tuple[BoolArray, IntArray, FloatArray] | None:
    """A design serving at least ``min_served``: the greedy one, or the LP of the most that can be served rounded up.

    Under carbon or water caps, when that design breaks one: the design in whole nodes that serves the most within
    them (:func:`_most_served_within_caps`).
    """
    start = _uncapped_start(data, min_served, options.gap)
    if data.caps and (start is None or cap_excess_per_h(data, *start).any()):
        return _most_served_within_caps(data, min_served, options)
    return start


def _most_served_within_caps(
    data: PlacementInput, min_served: float, options: SolverOptions
) -> tuple[BoolArray, IntArray, FloatArray] | None:
    """The design that serves the most within the caps: the MILP with no cost and a value on every token served."""
    free = data.free_of_cost()
    blocks = placement_blocks(free, served_value_usd_per_tok_s=1.0, min_served_tok_s=min_served)
    report, values = solve_linear(blocks.model, replace(options, gap=min(options.gap, 1e-4)))
    if not report.status.has_solution:
        return None
    design = solution_of(blocks, free, values, report, None)
    served = design.served_mean_tok_s(data)
    return (design.open, design.nodes, design.pair_share) if served >= min_served and served > 0 else None


def _uncapped_start(data: PlacementInput, min_served: float, gap: float) -> tuple[BoolArray, IntArray, FloatArray] | None:
    """The greedy design, or the LP of the most that can be served rounded up (caps aside)."""
    start = greedy_design(data)
    if start is not None:
        return start
    least, lp = relax(data, objective="unserved")
    cap = max(least.value, 0.0) * (1 + 1e-9) + SHORTFALL_TOL * max(float(data.mean_demand_tok_s.sum()), 1.0)
    cost, _ = relax(data, objective="cost", unserved_cap_tok_s=cap, target=gap, lp=lp)
    is_open, nodes, shares, _ = round_up(data, cost)
    served = float((shares * data.mean_demand_tok_s[data.pair_commodity]).sum())
    return (is_open, nodes, shares) if served >= min_served and served > 0 else None


def ratio_bound(lam: float, value_bound: float, served_min: float, served_max: float) -> float:
    """A lower bound of the least cost / goodput from one Dinkelbach step's bound.

    Every design has ``cost - lam * goodput >= value_bound``, so ``cost / goodput >= lam + value_bound / goodput``,
    and goodput lies in ``[served_min, served_max]``.

    Parameters
    ----------
    lam : float
        The step's lambda. [USD/h per tokens/s]
    value_bound : float
        The MILP's proven bound on ``min cost - lam * goodput``. [USD/h]
    served_min, served_max : float
        Least and most goodput any design may serve (``served_min > 0``). [tokens/s]

    Returns
    -------
    float
        The bound. [USD/h per tokens/s]
    """
    return lam + value_bound / (served_max if value_bound >= 0 else served_min)


Design = tuple[BoolArray, IntArray, FloatArray]
"""Open sites, node counts and shares."""


Solved = tuple[PlacementBlocks, FloatArray]
"""A step's model and its column values."""


@dataclass
class _Search:
    """Where the Dinkelbach iterations stand: the best ratio and its design, the ratio bound, every step."""

    best_design: Design
    upper: float
    lower: float = 0.0
    history: list[dict[str, float]] = field(default_factory=list)
    best: tuple[Solved, SolverReport] | None = None
    last: SolverReport | None = None


def _no_start(data: PlacementInput, options: SolverOptions, min_served: float, begin: float) -> PlacementSolution:
    message = f"no design serves {min_served:,.6g} tok/s"
    report = SolverReport(options.name, SolveStatus.INFEASIBLE, math.nan, math.nan, math.nan,
                          time.perf_counter() - begin, message, StopReason.INFEASIBLE)  # fmt: skip
    return empty(data, report)


def _step(
    data: PlacementInput, options: SolverOptions, lam: float, search: _Search, *, min_served: float, floor: float, begin: float
) -> tuple[Solved, SolverReport]:
    """One MILP ``min cost - lam * goodput``, warm-started from the best design so far."""
    blocks = placement_blocks(data, served_value_usd_per_tok_s=lam, min_served_tok_s=min_served)
    start = warm_start_values(blocks, data, search.best_design, unserved=unserved_shares(data, search.best_design[2]))
    elapsed = time.perf_counter() - begin
    remaining = None if options.time_limit_s is None else max(1.0, options.time_limit_s - elapsed)
    step = replace(options, gap=RATIO_STEP_GAP, abs_gap=RATIO_ABS_GAP_SHARE * options.gap * lam * floor, time_limit_s=remaining)
    report, values = solve_linear(blocks.model, step, start=start)
    return (blocks, values), report


def _absorb(
    data: PlacementInput,
    search: _Search,
    lam: float,
    step: tuple[Solved, SolverReport],
    served_range: tuple[float, float],
) -> tuple[float, float]:
    """Record one step: the ratio bound, the history, the best design. Returns the step's cost and value."""
    solved, report = step
    solution = solution_of(solved[0], data, solved[1], report, None)
    cost = solution.objective_usd_per_h
    served = solution.served_mean_tok_s(data)
    value = cost - lam * served
    if math.isfinite(report.best_bound):
        search.lower = max(search.lower, ratio_bound(lam, report.best_bound, *served_range))
    record = {"lambda_usd_per_tok_s": lam, "cost_usd_per_h": cost, "goodput_tok_s": served, "value_usd_per_h": value,
              "value_bound_usd_per_h": report.best_bound, "ratio_bound_usd_per_tok_s": search.lower}  # fmt: skip
    search.history.append(record)
    if served > 0 and cost / served < search.upper and not verify_solution(data, solution, optional=True):
        search.upper = cost / served
        search.best_design = (solution.open, solution.nodes, solution.pair_share)
        search.best = (solved, report)
    elif search.best is None and served > 0 and abs(cost / served - search.upper) <= 1e-12 * search.upper:
        search.best = (solved, report)
    return cost, value


def _answer(data: PlacementInput, options: SolverOptions, search: _Search, *, route_nearest: bool) -> PlacementSolution:
    """The best step's answer (finished and routed), or the start when no step beat it."""
    if search.best is not None:
        solved, report = search.best
        return finish(solved, data, options, report, route_nearest=route_nearest, optional=True)
    is_open, nodes, shares = search.best_design
    base = (
        search.last
        if search.last is not None
        else SolverReport(options.name, SolveStatus.FEASIBLE, math.nan, math.nan, math.nan, 0.0, "")
    )
    cost = data.cost_usd_per_h(is_open, nodes, shares)
    return PlacementSolution(is_open, nodes, shares, unserved_shares(data, shares), cost, base)


def _ratio_report(
    data: PlacementInput, options: SolverOptions, search: _Search, solution: PlacementSolution, begin: float
) -> SolverReport:
    """The ratio's gap and bound (the ratio bound times the answer's goodput) and what the MILPs did."""
    gap = relative_gap(search.upper, search.lower)
    closed = gap <= options.gap + 1e-12
    served = solution.served_mean_tok_s(data)
    last = search.last
    stopped_by = StopReason.GAP if closed else (last.stopped_by if last is not None else StopReason.OTHER)
    message = (
        f"Dinkelbach: {len(search.history)} MILPs; cost per goodput {search.upper:.6g} USD/h per tok/s, proven at least "
        f"{search.lower:.6g} (gap {gap:.3%})" + ("" if last is None else f"; last MILP: {last.message}")
    )
    return SolverReport(
        options.name, SolveStatus.OPTIMAL if closed else SolveStatus.FEASIBLE, solution.objective_usd_per_h,
        search.lower * served, gap, time.perf_counter() - begin, message, stopped_by,
    )  # fmt: skip


def solve_ratio(
    data: PlacementInput,
    options: SolverOptions,
    *,
    min_served_share: float = 0.0,
    tolerance: float = 1e-6,
    max_iterations: int = 30,
    route_nearest: bool = True,
) -> PlacementSolution:
    """Minimise cost per goodput token exactly when serving is optional (Dinkelbach), with a bound at every step.

    It starts from a design serving at least the minimum (greedy, or the most-served LP rounded up), whose
    ratio is lambda. Each iteration solves ``min cost - lambda * goodput`` over all designs and serving shares,
    warm-started from the best design so far, to an *absolute* gap of a quarter of ``options.gap`` x lambda x
    the least goodput (a relative gap means nothing on a value that tends to 0); lambda is then set to the best
    ratio found. Every step's proven bound gives a lower bound of the ratio (:func:`ratio_bound`); the loop
    stops when the best ratio is within ``options.gap`` of it, or when a step finds nothing better (the MILP's
    optimum is, within ``tolerance`` of the cost, zero). ``report.gap`` is the ratio's gap and
    ``report.best_bound`` the ratio bound times the answer's goodput: no design serving as much costs less.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    options : SolverOptions
        Solver settings; the MILP gap should be tight for an exact ratio.
    min_served_share : float, optional
        Serve at least this share of total mean demand (0 allows any positive amount).
    tolerance : float, optional
        Stop when ``|cost - lambda * goodput| <= tolerance * cost``.
    max_iterations : int, optional
        Safety bound on iterations.
    route_nearest : bool, optional
        Re-route served shares to the nearest open capacity at the end.

    Returns
    -------
    PlacementSolution
        The best ratio design; ``iterations`` lists lambda, cost, goodput, the MILP value, its bound and the
        ratio bound after each step.
    """
    total = float(data.mean_demand_tok_s.sum())
    min_served = min_served_share * total
    floor = max(min_served, 1e-9 * max(total, 1.0))  # a design must serve something
    begin = time.perf_counter()
    start = _ratio_start(data, min_served, options)
    if start is None:
        return _no_start(data, options, min_served, begin)
    mean_of_pair = data.mean_demand_tok_s[data.pair_commodity]
    search = _Search(start, data.cost_usd_per_h(*start) / float((start[2] * mean_of_pair).sum()))
    lam = search.upper
    for _ in range(max_iterations):
        step = _step(data, options, lam, search, min_served=min_served, floor=floor, begin=begin)
        search.last = step[1]
        if not step[1].status.has_solution:
            break
        cost, value = _absorb(data, search, lam, step, (floor, total))
        if search.upper - search.lower <= options.gap * search.upper or value >= -tolerance * max(cost, 1e-9):
            break
        lam = search.upper
    solution = _answer(data, options, search, route_nearest=route_nearest)
    return replace(solution, report=_ratio_report(data, options, search, solution, begin), iterations=search.history)
