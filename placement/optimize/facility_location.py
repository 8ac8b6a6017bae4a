"""Capacitated facility location on plain arrays: no geometry, no files.

The placement MILP shares its rows (:mod:`placement.optimize.rows`, on one
:class:`~placement.optimize.linear.LinearModel`), so the same code is tested here against brute force and
hand-worked optima.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from placement._errors import SolverError
from placement.optimize import rows
from placement.optimize.linear import LinearModel, PulpModel, pulp_values, to_pulp
from placement.optimize.solver import SolverOptions, SolverReport, SolveStatus, solve_problem
from placement.optimize.verify import check_capacity, check_flows, check_objective


@dataclass(frozen=True)
class FacilityLocationResult:
    """Solution of :func:`facility_location`.

    Parameters
    ----------
    objective : float
        Total cost: fixed costs of open sites plus assignment costs (``nan`` without a solution).
    open : numpy.ndarray of bool
        ``(m,)`` open sites.
    flow : numpy.ndarray
        ``(n, m)`` amount of demand i served at site j.
    status : SolveStatus
        How the solve ended.
    report : SolverReport
        Bound, gap and runtime.
    """

    objective: float
    open: NDArray[np.bool_]
    flow: NDArray[np.float64]
    status: SolveStatus
    report: SolverReport


def _as_arrays(
    fixed_cost: ArrayLike,
    capacity: ArrayLike,
    demand: ArrayLike,
    cost: ArrayLike,
    allowed: ArrayLike | None,
) -> tuple[
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.bool_],
]:
    f = np.asarray(fixed_cost, dtype=float)
    q = np.asarray(capacity, dtype=float)
    d = np.asarray(demand, dtype=float)
    c = np.asarray(cost, dtype=float)
    a = np.ones(c.shape, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    n, m = len(d), len(f)
    if f.ndim != 1 or q.shape != (m,) or d.ndim != 1 or c.shape != (n, m) or a.shape != (n, m):
        raise ValueError(
            f"shapes disagree: fixed_cost {f.shape}, capacity {q.shape}, demand {d.shape}, cost {c.shape}, "
            f"allowed {a.shape}; expected (m,), (m,), (n,), (n, m), (n, m)"
        )
    for name, arr in (("fixed_cost", f), ("capacity", q), ("demand", d)):
        if not np.isfinite(arr).all() or (arr < 0).any():
            raise ValueError(f"{name} must be finite and >= 0")
    if not np.isfinite(c[a]).all():
        raise ValueError("cost must be finite on allowed pairs")
    return f, q, d, c, a


def _facility_location_model(
    fixed_cost: NDArray[np.float64],
    capacity: NDArray[np.float64],
    demand: NDArray[np.float64],
    pair_pop: NDArray[np.int64],
    pair_site: NDArray[np.int64],
    unit_cost: NDArray[np.float64],
) -> PulpModel:
    """The capacitated facility-location MILP: columns ``open_j`` then ``flow_i_j``, rows demand, link, capacity."""
    model = LinearModel("facility_location")
    opens = rows.open_columns(model, len(fixed_cost), cost=fixed_cost)
    flows = rows.share_columns(model, pair_pop, pair_site, cost=unit_cost)
    rows.demand_rows(model, flows.cols, pair_pop, demand)
    rows.linking_rows(model, flows.cols, opens.cols, pair_pop, pair_site, demand)
    weight = np.ones((len(pair_pop), 1))
    sites, slices = rows.capacity_slices(pair_site, weight, len(fixed_cost))
    rows.capacity_rows(model, flows.cols, pair_site, weight, opens.cols, capacity, sites, slices)
    return to_pulp(model)


def _no_allowed_site(solver: str, n: int, m: int) -> FacilityLocationResult:
    """The answer when a population with demand has no allowed site: infeasible, with nothing solved.

    Parameters
    ----------
    solver : str
        The solver named in the report.
    n, m : int
        Number of populations and of sites.

    Returns
    -------
    FacilityLocationResult
        No site open, no flow, status ``infeasible``.
    """
    report = SolverReport(
        solver,
        SolveStatus.INFEASIBLE,
        math.nan,
        math.nan,
        math.nan,
        0.0,
        "a population has no allowed site",
    )
    return FacilityLocationResult(math.nan, np.zeros(m, dtype=bool), np.zeros((n, m)), SolveStatus.INFEASIBLE, report)


def facility_location(
    fixed_cost: ArrayLike,
    capacity: ArrayLike,
    demand: ArrayLike,
    cost: ArrayLike,
    allowed: ArrayLike | None = None,
    *,
    solver: str = "cbc",
    time_limit_s: float | None = None,
    gap: float = 1e-6,
    threads: int = 1,
) -> FacilityLocationResult:
    """Open sites and split demand among them at least total cost.

    Minimise ``sum_j fixed_cost[j] * open[j] + sum_ij cost[i, j] * flow[i, j] / demand[i]``
    subject to every demand served in full, ``sum_i flow[i, j] <= capacity[j] * open[j]`` and
    flow only on allowed pairs.

    Parameters
    ----------
    fixed_cost : array_like
        ``(m,)`` cost of opening each site.
    capacity : array_like
        ``(m,)`` most demand a site can serve when open.
    demand : array_like
        ``(n,)`` demand of each population.
    cost : array_like
        ``(n, m)`` cost of serving *all* of demand i from site j.
    allowed : array_like of bool, optional
        ``(n, m)`` pairs that may carry flow (default: all).
    solver : {"cbc", "highs"}, optional
        MILP solver.
    time_limit_s : float, optional
        Wall-clock limit. [s]
    gap : float, optional
        Relative gap at which to stop.
    threads : int, optional
        Solver threads.

    Returns
    -------
    FacilityLocationResult
        Objective, open sites, flows and status. A population with no allowed pair, or a
        capacity too small for the demand, gives status ``infeasible``.

    Raises
    ------
    SolverError
        If the solver returns a solution that violates a constraint.
    """
    f, q, d, c, a = _as_arrays(fixed_cost, capacity, demand, cost, allowed)
    n, m = c.shape
    pair_pop, pair_site = (idx.astype(np.int64) for idx in np.nonzero(a))
    with np.errstate(divide="ignore", invalid="ignore"):
        unit_cost = np.where(d[pair_pop] > 0, c[pair_pop, pair_site] / d[pair_pop], 0.0)

    model = _facility_location_model(f, q, d, pair_pop, pair_site, unit_cost)
    opens, flows = model.variables[:m], model.variables[m:]
    problem = model.problem

    unreachable = np.bincount(pair_pop, minlength=n) == 0
    if (unreachable & (d > 0)).any():
        return _no_allowed_site(solver, n, m)

    report = solve_problem(problem, SolverOptions(name=solver, time_limit_s=time_limit_s, gap=gap, threads=threads))
    if not report.status.has_solution:
        return FacilityLocationResult(math.nan, np.zeros(m, dtype=bool), np.zeros((n, m)), report.status, report)

    is_open = pulp_values(opens) > 0.5
    flow = np.zeros((n, m))
    flow[pair_pop, pair_site] = np.maximum(pulp_values(flows), 0.0)
    objective = float(f[is_open].sum() + (unit_cost * flow[pair_pop, pair_site]).sum())
    violations = check_flows(flow, d, a, is_open) + check_capacity(flow.sum(axis=0), q * is_open, what="capacity")
    violations += check_objective(report.objective, objective)
    if violations:
        raise SolverError(f"{report.solver} returned a solution that violates constraints: " + "; ".join(violations))
    return FacilityLocationResult(objective, is_open, flow, report.status, report)
