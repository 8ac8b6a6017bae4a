"""Solving the placement MILP: warm start, lazy time-slice rows, verification, diagnosis, exact ratio.

Every answer is checked against every constraint (:func:`placement.optimize.verify.verify_solution`)
before it is returned; an answer that violates one is a :class:`SolverError`, never "optimal".
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Literal

import numpy as np

from placement._errors import SolverError
from placement.optimize.heuristics import greedy_design, greedy_failover_design, repair_nodes, route_to_nearest
from placement.optimize.linear import pulp_values
from placement.optimize.model import PlacementModel, build_model, set_warm_start
from placement.optimize.pricing import Relaxation, first_of_each, relax, site_slice_load
from placement.optimize.problem import BoolArray, FloatArray, IntArray, PlacementInput, PlacementSolution
from placement.optimize.routing import route_nearest_arrays
from placement.optimize.rows import group_by
from placement.optimize.solver import SolverOptions, SolverReport, SolveStatus, StopReason, relative_gap, solve_problem
from placement.optimize.verify import verify_solution


def _extract(
    model: PlacementModel, data: PlacementInput, report: SolverReport, routing: SolverReport | None
) -> PlacementSolution:
    is_open = pulp_values(model.opens) > 0.5
    nodes = np.rint(pulp_values(model.nodes)).astype(np.int64)
    shares = np.clip(pulp_values(model.shares), 0.0, 1.0)
    unserved = pulp_values(model.unserved) if model.unserved is not None else np.zeros(data.n_commodities)
    failover = {}
    for f, (pairs, z) in model.failover.items():
        moved = np.zeros(len(data.pair_site))
        moved[pairs] = np.clip(pulp_values(z), 0.0, 1.0)
        failover[f] = moved
    objective = data.cost_usd_per_h(is_open, nodes, shares)
    return PlacementSolution(is_open, nodes, shares, unserved, objective, report, routing, failover)


def _empty(data: PlacementInput, report: SolverReport) -> PlacementSolution:
    m, p, c = data.n_sites, len(data.pair_site), data.n_commodities
    return PlacementSolution(np.zeros(m, bool), np.zeros(m, np.int64), np.zeros(p), np.ones(c), math.nan, report)


def _finish(
    model: PlacementModel,
    data: PlacementInput,
    options: SolverOptions,
    report: SolverReport,
    *,
    route_nearest: bool,
    optional: bool,
) -> PlacementSolution:
    solution = _extract(model, data, report, None)
    violations = verify_solution(data, solution, optional=optional)
    if violations:
        raise SolverError(f"{report.solver} returned a placement that violates constraints: " + "; ".join(violations))
    if route_nearest and not data.fault_tolerant:
        routing_model, routing = route_to_nearest(data, solution, options, optional=optional)
        if routing.status.has_solution:
            routed = _extract(routing_model, data, report, routing)
            if not verify_solution(data, routed, optional=True) and abs(
                routed.objective_usd_per_h - solution.objective_usd_per_h
            ) <= 1e-6 * max(1.0, solution.objective_usd_per_h):
                return routed
    return solution


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


Warm = tuple[tuple[BoolArray, IntArray, FloatArray], dict[int, FloatArray]]
"""A starting design and its N+1 re-routes."""


def _warm_design(data: PlacementInput) -> Warm | None:
    if data.fault_tolerant:
        return greedy_failover_design(data)
    design = greedy_design(data)
    return None if design is None else (design, {})


def _solve_once(
    data: PlacementInput,
    options: SolverOptions,
    *,
    warm: Warm | None,
    capacity_slices: list[list[int]] | None,
    failover_rows: Literal["exact", "spare"] = "exact",
) -> tuple[PlacementModel, SolverReport]:
    model = build_model(data, capacity_slices=capacity_slices, failover_rows=failover_rows)
    if warm is not None:
        set_warm_start(model, data, warm[0], warm[1])
    return model, solve_problem(model.problem, options, warm_start=warm is not None)


def _verified(data: PlacementInput, solution: PlacementSolution, *, optional: bool) -> PlacementSolution:
    violations = verify_solution(data, solution, optional=optional)
    if violations:
        raise SolverError(f"{solution.report.solver} returned a placement that violates constraints: " + "; ".join(violations))
    return solution


def solve_placement(
    data: PlacementInput, options: SolverOptions, *, route_nearest: bool = True, warm_start: bool = True
) -> PlacementSolution:
    """Solve the placement MILP (all demand served) and verify the answer.

    With ``options.lazy_slices`` and many time slices the node-capacity rows are generated
    lazily (it pays on models whose root LP is too slow for the time limit): the model starts with
    each site's two busiest slices, and every (site, slice) the answer overloads is added before
    solving again. Each round is a relaxation of the full model, so its bound is a valid bound,
    and an answer that overloads nothing is an answer of the full model. If time runs out first,
    the last answer's node counts are raised to carry every slice (power permitting).

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
    if data.fault_tolerant and failover_variable_count(data) > FULL_FAILOVER_MAX_VARIABLES:
        return _solve_failover_on_candidates(data, options, warm_start=warm_start)
    if not data.fault_tolerant and len(data.pair_site) > PRICING_FROM_PAIRS:
        return solve_priced(data, options, shortfall=False, route_nearest=route_nearest)
    warm = _warm_design(data) if warm_start else None
    lazy = options.lazy_slices and len(data.slice_hours) >= LAZY_SLICES_FROM and not data.fault_tolerant
    active = _initial_slices(data) if lazy else None
    start = time.perf_counter()
    rounds = 0
    while True:
        rounds += 1
        elapsed = time.perf_counter() - start
        remaining = None if options.time_limit_s is None else max(1.0, options.time_limit_s - elapsed)
        model, report = _solve_once(data, replace(options, time_limit_s=remaining), warm=warm, capacity_slices=active)
        if not report.status.has_solution:
            if report.status == SolveStatus.INFEASIBLE or active is None:
                return _empty(data, report)
            active = None  # no answer on a relaxation in time: the full model gets what is left
            continue
        if active is None:
            break
        solution = _extract(model, data, report, None)
        if _add_violated(data, solution, active) == 0:
            break
        out_of_time = options.time_limit_s is not None and time.perf_counter() - start >= options.time_limit_s
        if out_of_time or rounds >= MAX_ROUNDS:
            repaired = repair_nodes(data, solution, report)
            if repaired is not None:
                return _verified(data, repaired, optional=False)
            active = None
    total = time.perf_counter() - start
    note = f" ({rounds} rounds of capacity rows)" if rounds > 1 else ""
    report = replace(report, runtime_s=total, message=report.message + note)
    return _finish(model, data, options, report, route_nearest=route_nearest, optional=False)


FULL_FAILOVER_MAX_VARIABLES = 40_000
"""N+1 models with more re-routing variables than this are solved on candidate sites (below).

The bundled world has ~265,000: its root LP alone outlasts minutes on 2 cores.
"""

CHEAPEST_SITES_PER_PROTECTED = 2
"""Each protected commodity's cheapest sites that are always candidates (at least 2: a backup)."""

BASE_TIME_SHARE = 0.2
"""Share of the time limit for the plan without N+1 (it names the candidate sites; it stops early at its gap)."""

BOUND_TIME_SHARE = 0.25
"""Share of the time limit for the spare-capacity relaxation (its bound bounds the N+1 answer)."""


def failover_variable_count(data: PlacementInput) -> int:
    """Re-routing variables of the full N+1 model: sum over protected commodities of pairs x (pairs - 1)."""
    pairs = np.bincount(data.pair_commodity, minlength=data.n_commodities)[data.protected]
    return int((pairs * (pairs - 1)).sum())


def candidate_sites(data: PlacementInput, base_open: BoolArray) -> BoolArray:
    """Sites an N+1 design may use: a design's open sites, locked sites, and every commodity's cheapest.

    Each commodity keeps its cheapest allowed site (by node cost, then fixed cost), a protected
    one its two cheapest, so every protected commodity still has a second site; the greedy N+1
    design's sites are added so that a known feasible design stays inside.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    base_open : numpy.ndarray of bool
        ``(m,)`` open sites of a design (e.g. the optimum without N+1).

    Returns
    -------
    numpy.ndarray of bool
        ``(m,)`` candidate sites.
    """
    keep = base_open | data.site_locked
    rank = np.lexsort((data.site_fixed_usd_per_h, data.site_node_usd_per_h))
    order = np.empty(data.n_sites, dtype=np.int64)
    order[rank] = np.arange(data.n_sites)
    protected = data.protected
    for c, pairs in enumerate(group_by(data.pair_commodity, data.n_commodities)):
        sites = data.pair_site[pairs]
        keep[sites[np.argsort(order[sites])][: CHEAPEST_SITES_PER_PROTECTED if protected[c] else 1]] = True
    greedy = greedy_failover_design(data)
    if greedy is not None:
        keep |= greedy[0][0]
    return keep


def restrict_to_sites(data: PlacementInput, keep: BoolArray) -> tuple[PlacementInput, IntArray]:
    """The same problem with only the pairs at the kept sites (the others stay closed).

    Returns
    -------
    tuple
        The restricted arrays and, for each of their pairs, its index in ``data``.
    """
    pairs = np.flatnonzero(keep[data.pair_site]).astype(np.int64)
    return restrict_to_pairs(data, pairs), pairs


def restrict_to_pairs(data: PlacementInput, pairs: IntArray) -> PlacementInput:
    """The same problem with only these pairs (indices into ``data``'s pairs, sorted)."""
    return replace(
        data,
        pair_commodity=data.pair_commodity[pairs],
        pair_site=data.pair_site[pairs],
        pair_nodes_per_tok_s=data.pair_nodes_per_tok_s[pairs],
        pair_rtt_ms=data.pair_rtt_ms[pairs],
        pair_cost_usd_per_h=data.pair_cost_usd_per_h[pairs],
    )


def _lift(data: PlacementInput, pairs: IntArray, small: PlacementSolution, report: SolverReport) -> PlacementSolution:
    """A solution of the restricted arrays as a solution of the full ones."""
    shares = np.zeros(len(data.pair_site))
    shares[pairs] = small.pair_share
    failover = {}
    for f, moved in small.failover_share.items():
        full = np.zeros(len(data.pair_site))
        full[pairs] = moved
        failover[f] = full
    return PlacementSolution(
        small.open, small.nodes, shares, small.unserved_share, small.objective_usd_per_h, report, None, failover
    )


def _solve_failover_on_candidates(data: PlacementInput, options: SolverOptions, *, warm_start: bool) -> PlacementSolution:
    """N+1 on a large instance: exact N+1 on candidate sites, bounded by a relaxation on all sites.

    DESIGN.md section 7 (a MIP restricted to the sites a relaxation opens): the plan without N+1
    names the sites worth having, and the exact N+1 model (every failure scenario) is solved on
    them plus each protected commodity's cheapest sites. That answer is feasible for the full
    model. Its bound comes from the spare-capacity relaxation of the failure scenarios on every
    site (no re-routing variables, see :func:`placement.optimize.model.build_model`) or the plan
    without N+1, whichever is higher: both are valid, so the reported gap is honest and "optimal"
    is claimed only when it is within ``options.gap``. An infeasible relaxation proves the N+1
    model infeasible.
    """
    start = time.perf_counter()
    limit = options.time_limit_s

    def share(fraction: float) -> SolverOptions:
        return replace(options, time_limit_s=None if limit is None else max(1.0, fraction * limit))

    base = solve_placement(
        replace(data, fault_tolerant=False), share(BASE_TIME_SHARE), route_nearest=False, warm_start=warm_start
    )
    if not base.report.status.has_solution:
        return _empty(data, base.report)  # without N+1 there is no plan: with it neither
    _, relaxed = _solve_once(data, share(BOUND_TIME_SHARE), warm=None, capacity_slices=None, failover_rows="spare")
    if relaxed.status == SolveStatus.INFEASIBLE:
        return _empty(data, replace(relaxed, message=f"the spare-capacity relaxation of N+1 is infeasible: {relaxed.message}"))
    keep = candidate_sites(data, base.open)
    small, pairs = restrict_to_sites(data, keep)
    remaining = None if limit is None else max(1.0, limit - (time.perf_counter() - start))
    model, report = _solve_once(
        small, replace(options, time_limit_s=remaining), warm=_warm_design(small) if warm_start else None, capacity_slices=None
    )
    scope = (
        f"N+1 on {int(keep.sum())} of {data.n_sites} candidate sites "
        "(those of the plan without N+1 and each population's cheapest)"
    )
    if not report.status.has_solution:
        status = SolveStatus.NO_SOLUTION if report.status == SolveStatus.INFEASIBLE else report.status
        return _empty(data, replace(report, status=status, message=f"{scope}: {report.message}"))
    lifted = _lift(data, pairs, _extract(model, small, report, None), report)
    cost = lifted.objective_usd_per_h
    proven = [base.report.best_bound] + ([relaxed.best_bound] if relaxed.status != SolveStatus.ERROR else [])
    bound = max((b for b in proven if math.isfinite(b)), default=math.nan)
    gap = relative_gap(cost, bound)
    status = SolveStatus.OPTIMAL if gap <= options.gap + 1e-12 else SolveStatus.FEASIBLE
    message = (
        f"{scope}: {report.message} (gap on them {report.gap:.2%}); the bound is the best of the plan without N+1 "
        f"({base.report.best_bound:,.0f}) and the spare-capacity relaxation on every site ({relaxed.best_bound:,.0f})"
    )
    total = replace(report, status=status, objective=cost, best_bound=bound, gap=gap,
                    runtime_s=time.perf_counter() - start, message=message)  # fmt: skip
    return _verified(data, replace(lifted, report=total), optional=False)


PRICING_FROM_PAIRS = 30_000
"""Models (without N+1) with more pairs than this are solved by :func:`solve_priced`.

The bundled world at full resolution has ~15,000 pairs on 74 sites and its MILP closes in seconds; on ~300
sites it has ~190,000 and HiGHS's root LP alone takes minutes on 2 cores.
"""

PRICING_TARGET_SHARE = 0.5
"""Pricing stops once the bound is within this share of ``solver.gap`` of the restricted LP (the MILP's answer,
at least the full LP's optimum, then needs the rest of the gap; pricing resumes if it does not make it)."""

MILP_PAIRS_PER_COMMODITY = 2
"""Pairs each commodity brings to the restricted MILP besides those the LP uses: its lowest reduced costs."""

SHORTFALL_TOL = 1e-9
"""Unserved mean goodput, as a share of demand, below which everything counts as served."""


def _round_up(data: PlacementInput, relaxation: Relaxation) -> tuple[BoolArray, IntArray, FloatArray, FloatArray]:
    """A feasible design from the LP: its shares, every site they use open, nodes raised to the busiest slice.

    The LP's nodes carry its shares and stay within the sites' power, which allows an integer number of nodes,
    so rounding them up stays within it.
    """
    shares = np.clip(relaxation.shares, 0.0, 1.0)
    served = np.bincount(data.pair_commodity, weights=shares, minlength=data.n_commodities)
    shares = shares / np.maximum(served, 1.0)[data.pair_commodity]
    load = site_slice_load(data, shares).max(axis=1)
    # The LP meets its rows within a tolerance: where that would round up past the power, trim the shares.
    trim = np.where(load > data.site_max_nodes, data.site_max_nodes / np.maximum(load, 1e-300), 1.0)
    shares = shares * trim[data.pair_site]
    load = load * trim
    unserved = _unserved(data, shares)
    is_open = data.site_locked | (np.bincount(data.pair_site, weights=shares, minlength=data.n_sites) > 0)
    nodes = np.minimum(np.ceil(load - 1e-9), data.site_max_nodes).astype(np.int64)
    return is_open, np.maximum(nodes, 0), shares, unserved


def _milp_pairs(data: PlacementInput, *relaxations: Relaxation) -> IntArray:
    """The pairs the restricted MILP may use: those the LPs use, and each commodity's lowest reduced costs."""
    keep = np.zeros(len(data.pair_site), dtype=bool)
    for relaxation in relaxations:
        keep |= relaxation.shares > 1e-9
    last = relaxations[-1].reduced_cost
    order = np.argsort(last, kind="stable")
    keep[first_of_each(order, data.pair_commodity, MILP_PAIRS_PER_COMMODITY)] = True
    return np.flatnonzero(keep).astype(np.int64)


def _route_on_open_sites(data: PlacementInput, solution: PlacementSolution, options: SolverOptions) -> PlacementSolution:
    """Route shares to the nearest open capacity (:func:`placement.optimize.routing.route_nearest_arrays`).

    The routed shares are kept only if they pass every check and cost the same.
    """
    tic = time.perf_counter()
    routed_shares = route_nearest_arrays(data, solution.open, solution.nodes, solution.pair_share, threads=options.threads)
    if routed_shares is None:
        return solution
    cost = data.cost_usd_per_h(solution.open, solution.nodes, routed_shares)
    routing = SolverReport(options.name, SolveStatus.OPTIMAL, math.nan, math.nan, 0.0, time.perf_counter() - tic,
                           "routing LP: nearest open capacity", StopReason.GAP)  # fmt: skip
    routed = replace(solution, pair_share=routed_shares, objective_usd_per_h=cost, routing_report=routing)
    same_cost = abs(cost - solution.objective_usd_per_h) <= 1e-6 * max(1.0, solution.objective_usd_per_h)
    return routed if same_cost and not verify_solution(data, routed, optional=True) else solution


def solve_priced(
    data: PlacementInput,
    options: SolverOptions,
    *,
    shortfall: bool,
    route_nearest: bool = True,
    all_pairs: bool = False,
) -> PlacementSolution:
    """Solve the full model by an LP priced over every pair, and a MILP on the pairs it singles out.

    1. Least unserved goodput: the LP relaxation with ``objective="unserved"`` (:func:`placement.optimize.pricing.relax`).
       Its bound is a bound of the MILP: above 0, no design serves everything (the sites' power in reach is
       short), and without ``shortfall`` the model is reported infeasible.
    2. Least cost, every commodity served (or, with ``shortfall``, at most the least unserved goodput of
       step 1 left unserved): the LP relaxation over every pair and slice, priced and cut until its
       Lagrangian bound is within a quarter of ``options.gap``. That bound is a bound of the full MILP.
    3. The LP rounded up (a feasible design in itself) is the answer if it is proven within ``options.gap``;
       otherwise the MILP on the pairs the LPs use plus each commodity's two lowest reduced costs, warm-started
       from it. Its answer is feasible for the full model; the gap is
       measured against the bound of step 2 (the restricted MILP's own bound is not one of the full model,
       unless it holds every pair). If the gap is above ``options.gap``, pricing goes on to tighten the bound.

    Every step stops on a count (rounds, nodes) or the gap, so the answer does not depend on the machine
    unless the wall-clock safety net is reached.

    Parameters
    ----------
    data : PlacementInput
        The arrays (without N+1).
    options : SolverOptions
        Solver, gap, node and time limits (the time limit applies to the MILP).
    shortfall : bool
        Allow unserved demand: the least there is, at least cost (a diagnosis of a model that cannot serve
        everything). The bound and gap are then of the cost among plans serving as much.
    route_nearest : bool, optional
        Re-route shares to the nearest open capacity once the design is fixed (the cost does not change).
    all_pairs : bool, optional
        Start the LPs with every pair (small models: nothing to price).

    Returns
    -------
    PlacementSolution
        Verified against the full model; ``report`` holds the full-model bound and gap.
    """
    start = time.perf_counter()
    total = float(data.mean_demand_tok_s.sum())
    every = np.arange(len(data.pair_site), dtype=np.int64)
    least, lp = relax(data, objective="unserved", pairs=every if all_pairs else None)
    tolerance = SHORTFALL_TOL * max(total, 1.0)
    if not shortfall and least.bound > tolerance:
        message = (
            f"no design serves every commodity: the LP relaxation leaves at least {least.bound:,.6g} of "
            f"{total:,.6g} mean tok/s unserved (the power of the sites in reach is short)"
        )
        report = SolverReport(options.name, SolveStatus.INFEASIBLE, math.nan, math.nan, math.nan,
                              time.perf_counter() - start, message, StopReason.INFEASIBLE)  # fmt: skip
        return _empty(data, report)
    if not shortfall and least.value > tolerance:
        raise SolverError(f"pricing did not decide in {least.rounds} rounds whether every commodity can be served")
    cap = max(least.value, 0.0) * (1 + 1e-9) + tolerance if shortfall else None
    cost, lp = relax(data, objective="cost", unserved_cap_tok_s=cap, target=options.gap * PRICING_TARGET_SHARE, lp=lp)
    pairs = every if all_pairs else _milp_pairs(data, least, cost)
    small = restrict_to_pairs(data, pairs)
    is_open, nodes, shares, unserved = _round_up(data, cost)
    rounded_cost = data.cost_usd_per_h(is_open, nodes, shares)
    rounded = PlacementSolution(
        is_open, nodes, shares, unserved, rounded_cost,
        SolverReport(options.name, SolveStatus.FEASIBLE, rounded_cost, math.nan, math.nan, 0.0, "LP rounded up"),
    )  # fmt: skip
    optional = cap is not None
    candidates = [rounded]
    report = rounded.report
    rounded_valid = not verify_solution(data, rounded, optional=optional) and _within_cap(data, rounded, cap)
    if not (rounded_valid and relative_gap(rounded_cost, cost.bound) <= options.gap) or all_pairs:
        # The MILP runs only when the rounded LP is not already proven within the gap: that decision, like every
        # stop below, does not depend on the clock. Its time limit is the scenario's, a safety net of its own.
        if cap is None:
            model = build_model(small)
        else:
            model = build_model(small, served_value_usd_per_tok_s=0.0, min_served_tok_s=total - cap)
        set_warm_start(model, small, (is_open, nodes, shares[pairs]), unserved=unserved)
        report = solve_problem(model.problem, replace(options, gap=options.gap / 2), warm_start=True)
        if report.status.has_solution:
            candidates.append(_lift(data, pairs, _extract(model, small, report, None), report))
        del model  # routing and the plan's tables need the room
    valid = [c for c in candidates if not verify_solution(data, c, optional=optional) and _within_cap(data, c, cap)]
    if not valid and not all_pairs:
        # Neither works (a site-count bound the LP's rounding breaks, and too few pairs for the MILP to meet it):
        # the MILP on every pair, slow on large models but an answer of the full model.
        return solve_priced(data, options, shortfall=shortfall, route_nearest=route_nearest, all_pairs=True)
    if not valid:
        raise SolverError("neither the MILP nor the rounded LP gave a design that passes every check")
    best = min(valid, key=lambda c: c.objective_usd_per_h)
    bound = cost.bound
    if all_pairs and report.status.has_solution and math.isfinite(report.best_bound):
        bound = max(bound, report.best_bound)  # the MILP holds every pair: its bound is the full model's
    rounds = least.rounds + cost.rounds
    if relative_gap(best.objective_usd_per_h, bound) > options.gap and not cost.converged:
        cost, lp = relax(data, objective="cost", unserved_cap_tok_s=cap, lp=lp)
        bound = max(bound, cost.bound)
        rounds += cost.rounds
    del lp  # the restricted LP is done with: routing and the plan's tables need the room
    gap = relative_gap(best.objective_usd_per_h, bound)
    closed = gap <= options.gap + 1e-12
    # Open with the restricted MILP at its own gap: what is left is the LP bound's distance to integer designs.
    stopped_by = StopReason.GAP if closed else (StopReason.OTHER if report.stopped_by == StopReason.GAP else report.stopped_by)
    if report is not rounded.report and report.stopped_by == StopReason.TIME_LIMIT:
        stopped_by = StopReason.TIME_LIMIT  # the MILP's answer (or its absence) depended on the clock, gap closed or not
    served = "every commodity served" if cap is None else f"at most {cap:,.6g} mean tok/s unserved (the least possible)"
    message = (
        f"LP priced over all {len(data.pair_site):,} pairs in {rounds} rounds ({int(cost.in_model.sum()):,} pairs, "
        f"{cost.rows:,} rows), bound {bound:,.2f}; "
        + (
            f"MILP on {len(pairs):,} pairs: {report.message}, "
            if report is not rounded.report
            else "the rounded LP within the gap, no MILP; "
        )
        + f"{'its answer' if best is not rounded else 'the rounded LP'} kept; {served}"
    )
    total_report = SolverReport(
        options.name, SolveStatus.OPTIMAL if closed else SolveStatus.FEASIBLE, best.objective_usd_per_h, bound, gap,
        time.perf_counter() - start, message, stopped_by,
    )  # fmt: skip
    solution = replace(
        best, report=total_report, unserved_share=_unserved(data, best.pair_share) if optional else best.unserved_share
    )
    if route_nearest:
        solution = _route_on_open_sites(data, solution, options)
    return _verified(data, solution, optional=optional)


def _unserved(data: PlacementInput, shares: FloatArray) -> FloatArray:
    served = np.bincount(data.pair_commodity, weights=shares, minlength=data.n_commodities)
    return np.asarray(np.clip(1.0 - served, 0.0, 1.0))


def _within_cap(data: PlacementInput, solution: PlacementSolution, cap: float | None) -> bool:
    """Whether the unserved mean goodput stays within the cap (all served when None)."""
    left = float((_unserved(data, solution.pair_share) * data.mean_demand_tok_s).sum())
    limit = 0.0 if cap is None else cap
    return left <= limit * (1 + 1e-6) + 1e-6 * max(1.0, float(data.mean_demand_tok_s.sum()))


def shortfall_penalty_usd_per_tok_s(data: PlacementInput) -> float:
    """Price of a mean tok/s left unserved in an elastic model: far above any way of serving it. [USD/h per tok/s]"""
    per_node = float(np.max(data.site_node_usd_per_h)) if data.n_sites else 1.0
    return (
        1e3
        * per_node
        * float(np.max(data.pair_nodes_per_tok_s, initial=1.0))
        * float(np.max(data.peak_demand_tok_s / np.maximum(data.mean_demand_tok_s, 1e-12), initial=1.0))
        + 1.0
    )


def diagnose_shortfall(data: PlacementInput, options: SolverOptions) -> PlacementSolution:
    """Serve as much as the sites can, at least cost: the plan of a model that cannot serve everything.

    Without N+1: :func:`solve_priced` with ``shortfall`` (least unserved goodput by LP, which a design
    with integer nodes attains, then least cost with at most that much unserved); the bound and gap are
    of the cost among plans serving as much. With N+1: an elastic model in which demand may go unserved
    at a high price; its bound, less that price on the answer's unserved goodput, is reported.

    The commodities left unserved are those that no feasible placement can cover inside their
    latency budget (the power of the sites they reach is too small, or N+1 cannot be met).

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    options : SolverOptions
        Solver settings.

    Returns
    -------
    PlacementSolution
        With ``unserved_share`` set.
    """
    if data.fault_tolerant and failover_variable_count(data) > FULL_FAILOVER_MAX_VARIABLES:
        # Too large to diagnose with every failure scenario in a bounded time; it is only reached
        # when the plan without N+1 is infeasible, and that shortfall is what is named.
        data = replace(data, fault_tolerant=False)
    if not data.fault_tolerant:
        return solve_priced(
            data, options, shortfall=True, route_nearest=False, all_pairs=len(data.pair_site) <= PRICING_FROM_PAIRS
        )
    penalty = shortfall_penalty_usd_per_tok_s(data)
    model = build_model(data, unserved_penalty_usd_per_tok_s=penalty)
    report = solve_problem(model.problem, options)
    if not report.status.has_solution:
        raise SolverError(f"the elastic diagnosis model could not be solved ({report.message})")
    solution = _extract(model, data, report, None)
    violations = verify_solution(data, solution, optional=True)
    if violations:
        raise SolverError("the diagnosis model returned a placement that violates constraints: " + "; ".join(violations))
    # The MILP's bound is of cost + penalty x unserved. Less the penalty of this answer's unserved goodput it
    # bounds the cost of any plan serving at least as much: the bound and gap reported are of the cost.
    left = float((solution.unserved_share * data.mean_demand_tok_s).sum())
    bound = report.best_bound - penalty * left
    cost = solution.objective_usd_per_h
    return replace(solution, report=replace(report, objective=cost, best_bound=bound, gap=relative_gap(cost, bound)))


RATIO_ABS_GAP_SHARE = 0.25
"""Each Dinkelbach MILP stops within this share of the ratio gap, as an absolute gap on ``cost - lambda x goodput``."""


RATIO_STEP_GAP = 0.1
"""Relative gap on ``cost - lambda x goodput`` at which a Dinkelbach MILP may stop as well: far from the optimal
ratio finding a better design is what counts; near it the value tends to 0 and the absolute gap governs."""


def _ratio_start(data: PlacementInput, min_served: float, gap: float) -> tuple[BoolArray, IntArray, FloatArray] | None:
    """A design serving at least ``min_served``: the greedy one, or the LP of the most that can be served rounded up."""
    start = greedy_design(data)
    if start is not None:
        return start
    least, lp = relax(data, objective="unserved")
    cap = max(least.value, 0.0) * (1 + 1e-9) + SHORTFALL_TOL * max(float(data.mean_demand_tok_s.sum()), 1.0)
    cost, _ = relax(data, objective="cost", unserved_cap_tok_s=cap, target=gap, lp=lp)
    is_open, nodes, shares, _ = _round_up(data, cost)
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
    start = _ratio_start(data, min_served, options.gap)
    if start is None:
        message = f"no design serves {min_served:,.6g} tok/s"
        report = SolverReport(options.name, SolveStatus.INFEASIBLE, math.nan, math.nan, math.nan,
                              time.perf_counter() - begin, message, StopReason.INFEASIBLE)  # fmt: skip
        return _empty(data, report)
    mean_of_pair = data.mean_demand_tok_s[data.pair_commodity]
    best_design = start
    best_cost = data.cost_usd_per_h(*start)
    best_served = float((start[2] * mean_of_pair).sum())
    upper = best_cost / best_served
    lower = 0.0
    history: list[dict[str, float]] = []
    best: tuple[PlacementModel, SolverReport] | None = None
    last: SolverReport | None = None
    lam = upper
    for _ in range(max_iterations):
        model = build_model(data, served_value_usd_per_tok_s=lam, min_served_tok_s=min_served)
        set_warm_start(model, data, best_design, unserved=_unserved(data, best_design[2]))
        elapsed = time.perf_counter() - begin
        remaining = None if options.time_limit_s is None else max(1.0, options.time_limit_s - elapsed)
        step = replace(
            options, gap=RATIO_STEP_GAP, abs_gap=RATIO_ABS_GAP_SHARE * options.gap * lam * floor, time_limit_s=remaining
        )
        report = solve_problem(model.problem, step, warm_start=True)
        last = report
        if not report.status.has_solution:
            break
        solution = _extract(model, data, report, None)
        cost = solution.objective_usd_per_h
        served = solution.served_mean_tok_s(data)
        value = cost - lam * served
        if math.isfinite(report.best_bound):
            lower = max(lower, ratio_bound(lam, report.best_bound, floor, total))
        record = {"lambda_usd_per_tok_s": lam, "cost_usd_per_h": cost, "goodput_tok_s": served, "value_usd_per_h": value,
                  "value_bound_usd_per_h": report.best_bound, "ratio_bound_usd_per_tok_s": lower}  # fmt: skip
        history.append(record)
        if served > 0 and cost / served < upper and not verify_solution(data, solution, optional=True):
            upper = cost / served
            best_design = (solution.open, solution.nodes, solution.pair_share)
            best = (model, report)
        elif best is None and served > 0 and abs(cost / served - upper) <= 1e-12 * upper:
            best = (model, report)
        if upper - lower <= options.gap * upper or value >= -tolerance * max(cost, 1e-9):
            break
        lam = upper
    gap = relative_gap(upper, lower)
    closed = gap <= options.gap + 1e-12
    if best is not None:
        model, report = best
        solution = _finish(model, data, options, report, route_nearest=route_nearest, optional=True)
    else:  # no step beat the start: the start is the answer
        is_open, nodes, shares = best_design
        base = (
            last if last is not None else SolverReport(options.name, SolveStatus.FEASIBLE, math.nan, math.nan, math.nan, 0.0, "")
        )
        solution = PlacementSolution(
            is_open, nodes, shares, _unserved(data, shares), data.cost_usd_per_h(is_open, nodes, shares), base
        )
    served = solution.served_mean_tok_s(data)
    stopped_by = StopReason.GAP if closed else (last.stopped_by if last is not None else StopReason.OTHER)
    message = (
        f"Dinkelbach: {len(history)} MILPs; cost per goodput {upper:.6g} USD/h per tok/s, proven at least {lower:.6g} "
        f"(gap {gap:.3%})" + ("" if last is None else f"; last MILP: {last.message}")
    )
    report = SolverReport(
        options.name, SolveStatus.OPTIMAL if closed else SolveStatus.FEASIBLE, solution.objective_usd_per_h,
        lower * served, gap, time.perf_counter() - begin, message, stopped_by,
    )  # fmt: skip
    return replace(solution, report=report, iterations=history)
