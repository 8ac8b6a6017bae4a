"""N+1 on a large instance: the exact failure scenarios on candidate sites, bounded by a relaxation on every site.

DESIGN.md section 7 (a MIP restricted to the sites a relaxation opens): the plan without N+1 names the sites
worth having, and the exact N+1 model (every failure scenario) is solved on them plus each protected
commodity's cheapest sites. That answer is feasible for the full model. Its bound comes from the
spare-capacity relaxation of the failure scenarios on every site (no re-routing variables, see
:func:`placement.optimize.rows.spare_rows`) or the plan without N+1, whichever is higher: both are valid, so
the reported gap is honest and "optimal" is claimed only when it is within ``options.gap``. An infeasible
relaxation proves the N+1 model infeasible.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from placement.optimize.heuristics import greedy_failover_design
from placement.optimize.milp import empty, extract, solve_once, verified, warm_design
from placement.optimize.problem import BoolArray, PlacementInput, PlacementSolution
from placement.optimize.restrict import lift, restrict_to_sites
from placement.optimize.rows import group_by
from placement.optimize.solver import SolverOptions, SolverReport, SolveStatus, relative_gap

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


SolveWithoutNPlusOne = Callable[..., PlacementSolution]
"""The solve of the plan without N+1 (:func:`placement.optimize.solve.solve_placement`)."""


def _time_share(options: SolverOptions, fraction: float) -> SolverOptions:
    """The options with this share of the time limit (at least 1 s)."""
    limit = options.time_limit_s
    return replace(options, time_limit_s=None if limit is None else max(1.0, fraction * limit))


def _scope(data: PlacementInput, keep: BoolArray) -> str:
    return (
        f"N+1 on {int(keep.sum())} of {data.n_sites} candidate sites "
        "(those of the plan without N+1 and each population's cheapest)"
    )


def _certify(
    data: PlacementInput,
    lifted: PlacementSolution,
    bounds: tuple[SolverReport, SolverReport],
    options: SolverOptions,
    *,
    scope: str,
    start: float,
) -> PlacementSolution:
    """The answer on the candidates with the best bound of the plan without N+1 and the spare-capacity relaxation."""
    base, relaxed = bounds
    report = lifted.report
    cost = lifted.objective_usd_per_h
    proven = [base.best_bound] + ([relaxed.best_bound] if relaxed.status != SolveStatus.ERROR else [])
    bound = max((b for b in proven if math.isfinite(b)), default=math.nan)
    gap = relative_gap(cost, bound)
    status = SolveStatus.OPTIMAL if gap <= options.gap + 1e-12 else SolveStatus.FEASIBLE
    message = (
        f"{scope}: {report.message} (gap on them {report.gap:.2%}); the bound is the best of the plan without N+1 "
        f"({base.best_bound:,.0f}) and the spare-capacity relaxation on every site ({relaxed.best_bound:,.0f})"
    )
    total = replace(report, status=status, objective=cost, best_bound=bound, gap=gap,
                    runtime_s=time.perf_counter() - start, message=message)  # fmt: skip
    return verified(data, replace(lifted, report=total), optional=False)


def solve_failover_on_candidates(
    data: PlacementInput, options: SolverOptions, *, warm_start: bool, solve_without_n_plus_one: SolveWithoutNPlusOne
) -> PlacementSolution:
    """Solve a large N+1 model: the plan without N+1, the spare-capacity bound, exact N+1 on the candidates.

    Parameters
    ----------
    data : PlacementInput
        The arrays (``fault_tolerant``).
    options : SolverOptions
        Solver settings; the time limit is shared between the three solves.
    warm_start : bool
        Start the MILPs from greedy designs.
    solve_without_n_plus_one : callable
        ``(data, options, *, route_nearest, warm_start) -> PlacementSolution`` for the plan without N+1.

    Returns
    -------
    PlacementSolution
        Verified against the full model, with the full model's bound and gap.
    """
    start = time.perf_counter()
    without = replace(data, fault_tolerant=False)
    base = solve_without_n_plus_one(without, _time_share(options, BASE_TIME_SHARE), route_nearest=False, warm_start=warm_start)
    if not base.report.status.has_solution:
        return empty(data, base.report)  # without N+1 there is no plan: with it neither
    _, relaxed = solve_once(data, _time_share(options, BOUND_TIME_SHARE), warm=None, capacity_slices=None, failover_rows="spare")
    if relaxed.status == SolveStatus.INFEASIBLE:
        return empty(data, replace(relaxed, message=f"the spare-capacity relaxation of N+1 is infeasible: {relaxed.message}"))
    keep = candidate_sites(data, base.open)
    small, pairs = restrict_to_sites(data, keep)
    limit = options.time_limit_s
    remaining = None if limit is None else max(1.0, limit - (time.perf_counter() - start))
    model, report = solve_once(
        small, replace(options, time_limit_s=remaining), warm=warm_design(small) if warm_start else None, capacity_slices=None
    )
    scope = _scope(data, keep)
    if not report.status.has_solution:
        status = SolveStatus.NO_SOLUTION if report.status == SolveStatus.INFEASIBLE else report.status
        return empty(data, replace(report, status=status, message=f"{scope}: {report.message}"))
    lifted = lift(data, pairs, extract(model, small, report, None), report)
    return _certify(data, lifted, (base.report, relaxed), options, scope=scope, start=start)
