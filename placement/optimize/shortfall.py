"""Diagnosing a model that cannot serve everything: the most it can serve, at least cost, and who is left out.

Without N+1 it is the priced solve with ``shortfall`` (:func:`placement.optimize.priced.solve_priced`); with
N+1, an elastic MILP in which demand may go unserved at a price far above any way of serving it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from placement._errors import SolverError
from placement.optimize import failover
from placement.optimize.milp import extract
from placement.optimize.model import build_model
from placement.optimize.priced import PRICING_FROM_PAIRS, solve_priced
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.solver import SolverOptions, SolverReport, relative_gap, solve_problem
from placement.optimize.verify import verify_solution


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
    # Too large to diagnose with every failure scenario in a bounded time: the plan is solved without N+1, and
    # the solution says so (never a silent drop: the plan's status, summary and notes carry it).
    dropped = data.fault_tolerant and failover.failover_variable_count(data) > failover.FULL_FAILOVER_MAX_VARIABLES
    if dropped:
        data = replace(data, fault_tolerant=False)
    if not data.fault_tolerant:
        all_pairs = len(data.pair_site) <= PRICING_FROM_PAIRS
        solution = solve_priced(data, options, shortfall=True, route_nearest=False, all_pairs=all_pairs)
        return replace(solution, n_plus_one_dropped=dropped)
    return _elastic(data, options)


def _elastic(data: PlacementInput, options: SolverOptions) -> PlacementSolution:
    """The elastic N+1 MILP, its answer verified, its bound and gap of the cost."""
    penalty = shortfall_penalty_usd_per_tok_s(data)
    model = build_model(data, unserved_penalty_usd_per_tok_s=penalty)
    report = solve_problem(model.problem, options)
    if not report.status.has_solution:
        raise SolverError(f"the elastic diagnosis model could not be solved ({report.message})")
    solution = extract(model, data, report, None)
    violations = verify_solution(data, solution, optional=True)
    if violations:
        raise SolverError("the diagnosis model returned a placement that violates constraints: " + "; ".join(violations))
    return replace(solution, report=_cost_report(data, solution, report, penalty))


def _cost_report(data: PlacementInput, solution: PlacementSolution, report: SolverReport, penalty: float) -> SolverReport:
    """The elastic MILP's report with the bound and gap of the cost alone."""
    # The MILP's bound is of cost + penalty x unserved. Less the penalty of this answer's unserved goodput it
    # bounds the cost of any plan serving at least as much: the bound and gap reported are of the cost.
    left = float((solution.unserved_share * data.mean_demand_tok_s).sum())
    bound = report.best_bound - penalty * left
    cost = solution.objective_usd_per_h
    return replace(report, objective=cost, best_bound=bound, gap=relative_gap(cost, bound))
