"""The placement MILP on arrays: which sites open, how many nodes each, which flows go where.

Commodities are (population, workload class) pairs with a goodput demand in tokens/s; flows
exist only on (commodity, site) pairs whose p99 TTFT meets the class objective. Nodes are sized
once per site and shared by every class; each unit of flow uses ``1 / (goodput per node x (1 -
headroom))`` node-equivalents. The objective is total $/h, which with all demand served is the
cost per million goodput tokens times a constant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pulp
from numpy.typing import NDArray

from placement import formulation as fm
from placement._errors import SolverError
from placement.solver import SolverOptions, SolverReport, solve_problem
from placement.verify import ABS_TOL, check_capacity, check_objective

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class PlacementInput:
    """Everything the MILP needs, as arrays.

    Parameters
    ----------
    demand_tok_s : numpy.ndarray
        ``(c,)`` goodput demand per commodity. [tokens/s]
    pair_commodity, pair_site : numpy.ndarray
        ``(p,)`` indices of each allowed pair.
    pair_nodes_per_tok_s : numpy.ndarray
        ``(p,)`` node-equivalents used per tok/s of flow. [nodes/(tokens/s)]
    pair_rtt_ms : numpy.ndarray
        ``(p,)`` round trip of each pair, used to route flows to the nearest open capacity
        once the design is fixed. [ms]
    site_fixed_usd_per_h : numpy.ndarray
        ``(m,)`` cost of an open site. [USD/h]
    site_node_usd_per_h : numpy.ndarray
        ``(m,)`` all-in cost of one node at each site. [USD/h]
    site_node_mw : numpy.ndarray
        ``(m,)`` facility power of one node, PUE included. [MW]
    site_mw_available : numpy.ndarray
        ``(m,)`` facility power available. [MW]
    site_locked : numpy.ndarray of bool
        ``(m,)`` sites that must be open.
    """

    demand_tok_s: FloatArray
    pair_commodity: IntArray
    pair_site: IntArray
    pair_nodes_per_tok_s: FloatArray
    pair_rtt_ms: FloatArray
    site_fixed_usd_per_h: FloatArray
    site_node_usd_per_h: FloatArray
    site_node_mw: FloatArray
    site_mw_available: FloatArray
    site_locked: BoolArray

    @property
    def n_sites(self) -> int:
        """Number of candidate sites."""
        return len(self.site_fixed_usd_per_h)

    @property
    def site_max_nodes(self) -> IntArray:
        """Most nodes each site's power allows."""
        return np.floor(self.site_mw_available / self.site_node_mw + 1e-9).astype(np.int64)


@dataclass(frozen=True)
class PlacementSolution:
    """A solved placement.

    Parameters
    ----------
    open : numpy.ndarray of bool
        ``(m,)`` open sites.
    nodes : numpy.ndarray of int
        ``(m,)`` nodes per site.
    pair_flow_tok_s : numpy.ndarray
        ``(p,)`` goodput served on each pair. [tokens/s]
    unserved_tok_s : numpy.ndarray
        ``(c,)`` demand left unserved (non-zero only in a diagnosis). [tokens/s]
    objective_usd_per_h : float
        Fixed plus node costs. [USD/h]
    report : SolverReport
        The MILP solve.
    routing_report : SolverReport or None
        The routing LP solved with the design fixed.
    """

    open: BoolArray
    nodes: IntArray
    pair_flow_tok_s: FloatArray
    unserved_tok_s: FloatArray
    objective_usd_per_h: float
    report: SolverReport
    routing_report: SolverReport | None


@dataclass
class _Model:
    problem: pulp.LpProblem
    opens: list[pulp.LpVariable]
    nodes: list[pulp.LpVariable]
    flows: list[pulp.LpVariable]
    unserved: list[pulp.LpVariable] | None
    cost_terms: list[tuple[pulp.LpVariable, float]]


def _add_node_variables(problem: pulp.LpProblem, data: PlacementInput) -> list[pulp.LpVariable]:
    return [
        problem.add_variable(f"nodes_{j}", lowBound=0, upBound=int(n), cat=pulp.LpInteger)
        for j, n in enumerate(data.site_max_nodes)
    ]


def _add_power_rows(
    problem: pulp.LpProblem,
    data: PlacementInput,
    nodes: list[pulp.LpVariable],
    opens: list[pulp.LpVariable],
) -> None:
    """``nodes[j] * node_mw[j] <= mw_available[j] * open[j]``."""
    for j in range(data.n_sites):
        expr = pulp.LpAffineExpression([(nodes[j], float(data.site_node_mw[j])), (opens[j], -float(data.site_mw_available[j]))])
        problem.addConstraint(pulp.LpConstraint(expr, pulp.LpConstraintLE, f"power_{j}", 0.0))


def build_model(data: PlacementInput, *, unserved_penalty_usd_per_tok_s: float | None = None) -> _Model:
    """Build the placement MILP.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    unserved_penalty_usd_per_tok_s : float, optional
        When given, demand may go unserved at this price (an elastic model for diagnosis).

    Returns
    -------
    _Model
        The problem and its variables.
    """
    problem = pulp.LpProblem("placement", pulp.LpMinimize)
    opens = fm.add_open_variables(problem, data.n_sites, locked=data.site_locked)
    nodes = _add_node_variables(problem, data)
    flows = fm.add_flow_variables(problem, data.pair_commodity, data.pair_site)
    unserved = None
    if unserved_penalty_usd_per_tok_s is not None:
        unserved = [problem.add_variable(f"unserved_{c}", lowBound=0) for c in range(len(data.demand_tok_s))]
    fm.add_demand_balance(problem, flows, data.pair_commodity, data.demand_tok_s, unserved=unserved)
    fm.add_linking(problem, flows, opens, data.pair_commodity, data.pair_site, data.demand_tok_s)
    fm.add_site_capacity(problem, flows, data.pair_site, data.pair_nodes_per_tok_s, nodes, np.ones(data.n_sites))
    _add_power_rows(problem, data, nodes, opens)
    cost_terms = fm.linear_terms(opens, data.site_fixed_usd_per_h) + fm.linear_terms(nodes, data.site_node_usd_per_h)
    objective = list(cost_terms)
    if unserved is not None and unserved_penalty_usd_per_tok_s is not None:
        objective += [(u, unserved_penalty_usd_per_tok_s) for u in unserved]
    problem.setObjective(pulp.LpAffineExpression(objective))
    return _Model(problem, opens, nodes, flows, unserved, cost_terms)


def _route_to_nearest(model: _Model, data: PlacementInput, options: SolverOptions) -> SolverReport:
    """With open sites and nodes fixed, send each flow to the nearest capacity (an LP)."""
    for var in model.opens + model.nodes:
        value = round(var.varValue or 0.0)
        var.lowBound = value
        var.upBound = value
    model.problem.setObjective(pulp.LpAffineExpression(fm.linear_terms(model.flows, data.pair_rtt_ms)))
    return solve_problem(
        model.problem,
        SolverOptions(
            name=options.name,
            time_limit_s=options.time_limit_s,
            gap=1e-9,
            threads=options.threads,
            msg=options.msg,
        ),
    )


def verify_solution(data: PlacementInput, solution: PlacementSolution, *, elastic: bool = False) -> list[str]:
    """Check a placement against every constraint of the model.

    Parameters
    ----------
    data : PlacementInput
        The arrays the model was built from.
    solution : PlacementSolution
        The solution.
    elastic : bool, optional
        Whether unserved demand was allowed.

    Returns
    -------
    list of str
        One message per violated rule (empty when all hold).
    """
    problems: list[str] = []
    flow = solution.pair_flow_tok_s
    if (flow < -ABS_TOL).any():
        problems.append("negative flow")
    served = np.bincount(data.pair_commodity, weights=flow, minlength=len(data.demand_tok_s))
    balance = served + (solution.unserved_tok_s if elastic else 0.0)
    off = np.abs(balance - data.demand_tok_s) > 1e-6 * np.maximum(1.0, data.demand_tok_s)
    if off.any():
        problems.append(f"demand balance broken for {int(off.sum())} commodities")
    closed_flow = ~solution.open[data.pair_site] & (flow > ABS_TOL)
    if closed_flow.any():
        problems.append(f"flow to closed sites on {int(closed_flow.sum())} pairs")
    if (solution.nodes < 0).any() or (solution.nodes > data.site_max_nodes).any():
        problems.append("node count outside [0, max nodes]")
    if solution.open[data.site_locked].size and not solution.open[data.site_locked].all():
        problems.append("a locked site is closed")
    node_load = np.bincount(data.pair_site, weights=flow * data.pair_nodes_per_tok_s, minlength=data.n_sites)
    problems += check_capacity(np.asarray(node_load, dtype=float), solution.nodes.astype(float), what="node capacity")
    problems += check_capacity(
        solution.nodes.astype(float) * data.site_node_mw,
        data.site_mw_available * solution.open,
        what="site power",
    )
    cost = float(data.site_fixed_usd_per_h[solution.open].sum() + (solution.nodes * data.site_node_usd_per_h).sum())
    if not elastic:
        problems += check_objective(solution.report.objective, cost, what="objective ($/h)")
    return problems


def _extract(model: _Model, data: PlacementInput, report: SolverReport, routing: SolverReport | None) -> PlacementSolution:
    is_open = fm.values(model.opens) > 0.5
    nodes = np.rint(fm.values(model.nodes)).astype(np.int64)
    flows = np.maximum(fm.values(model.flows), 0.0)
    unserved = fm.values(model.unserved) if model.unserved is not None else np.zeros(len(data.demand_tok_s))
    objective = float(data.site_fixed_usd_per_h[is_open].sum() + (nodes * data.site_node_usd_per_h).sum())
    return PlacementSolution(is_open, nodes, flows, unserved, objective, report, routing)


def solve_placement(data: PlacementInput, options: SolverOptions, *, route_nearest: bool = True) -> PlacementSolution:
    """Solve the placement MILP and verify the answer.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    options : SolverOptions
        Solver, time limit and gap.
    route_nearest : bool, optional
        After the cost-optimal design is found, re-route flows to the nearest open capacity
        (an LP with the design fixed; the cost does not change).

    Returns
    -------
    PlacementSolution
        The solution; check ``report.status`` (infeasible models have no solution).

    Raises
    ------
    SolverError
        If the solver's answer violates a constraint.
    """
    model = build_model(data)
    report = solve_problem(model.problem, options)
    if not report.status.has_solution:
        m, p, c = data.n_sites, len(data.pair_site), len(data.demand_tok_s)
        return PlacementSolution(
            np.zeros(m, bool),
            np.zeros(m, np.int64),
            np.zeros(p),
            np.zeros(c),
            math.nan,
            report,
            None,
        )
    solution = _extract(model, data, report, None)
    violations = verify_solution(data, solution)
    if violations:
        raise SolverError(f"{report.solver} returned a placement that violates constraints: " + "; ".join(violations))
    if route_nearest:
        routing = _route_to_nearest(model, data, options)
        if routing.status.has_solution:
            routed = _extract(model, data, report, routing)
            if not verify_solution(data, routed):
                solution = routed
    return solution


def diagnose_shortfall(data: PlacementInput, options: SolverOptions) -> PlacementSolution:
    """Solve an elastic model in which demand may go unserved at a high price.

    The commodities left unserved are those that no feasible placement can cover inside
    their latency budget (power of the reachable sites is too small).

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    options : SolverOptions
        Solver settings.

    Returns
    -------
    PlacementSolution
        With ``unserved_tok_s`` set.
    """
    per_node = float(np.max(data.site_node_usd_per_h)) if data.n_sites else 1.0
    penalty = 1e3 * per_node * float(np.max(data.pair_nodes_per_tok_s, initial=1.0)) + 1.0
    model = build_model(data, unserved_penalty_usd_per_tok_s=penalty)
    report = solve_problem(model.problem, options)
    if not report.status.has_solution:
        raise SolverError(f"the elastic diagnosis model could not be solved ({report.message})")
    return _extract(model, data, report, None)
