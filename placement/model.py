"""The placement MILP on arrays: which sites open, how many nodes each, which shares go where.

Commodities are (population, workload class) pairs with a goodput demand in tokens/s in each
time slice. Each allowed (commodity, site) pair carries a *share* of the commodity's demand, the
same in every slice (DESIGN.md section 7: one assignment for the day, capacity checked in every
hour keeps the model small). Nodes are sized once per site and shared by every class and slice;
each tok/s of a class uses ``1 / (goodput per node x utilisation cap)`` node-equivalents.

Options, each a few rows: locked sites, a minimum / maximum number of open sites, optional
serving (unserved shares), and N+1 fault tolerance by exact single-failure scenarios: for every
site f, the shares it carries are re-routed to other open sites inside each commodity's budget
without exceeding any node count, all other shares staying where they are, at every commodity's
peak demand (conservative across slices).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np
import pulp
from numpy.typing import NDArray

from placement import formulation as fm
from placement._errors import SolverError
from placement.solver import SolverOptions, SolverReport, SolveStatus, relative_gap, solve_problem
from placement.verify import ABS_TOL, check_capacity, check_objective

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class PlacementInput:
    """Everything the MILP needs, as arrays.

    Parameters
    ----------
    slice_demand_tok_s : numpy.ndarray
        ``(c, T)`` goodput demand of each commodity in each time slice. [tokens/s]
    slice_hours : numpy.ndarray
        ``(T,)`` hours of the day each slice stands for (they sum to 24). [h]
    pair_commodity, pair_site : numpy.ndarray
        ``(p,)`` indices of each allowed pair.
    pair_nodes_per_tok_s : numpy.ndarray
        ``(p,)`` node-equivalents used per tok/s on each pair. [nodes/(tokens/s)]
    pair_rtt_ms : numpy.ndarray
        ``(p,)`` round trip of each pair; used to route shares to the nearest open capacity
        once the design is fixed. [ms]
    pair_cost_usd_per_h : numpy.ndarray
        ``(p,)`` cost that scales with the share carried (load-dependent energy), averaged over
        the day, at a share of 1. [USD/h]
    site_fixed_usd_per_h : numpy.ndarray
        ``(m,)`` cost of an open site. [USD/h]
    site_node_usd_per_h : numpy.ndarray
        ``(m,)`` all-in cost of one node at each site, load-independent part. [USD/h]
    site_node_mw : numpy.ndarray
        ``(m,)`` facility power of one node, PUE included. [MW]
    site_mw_available : numpy.ndarray
        ``(m,)`` facility power available. [MW]
    site_locked : numpy.ndarray of bool
        ``(m,)`` sites that must be open.
    min_sites_open, max_sites_open : int or None
        Bounds on the number of open sites.
    fault_tolerant : bool
        Require N+1: every commodity keeps a second open site inside its budget, and the load
        of any single failed site can be re-routed within budget and capacity.
    daily_mean_tok_s : numpy.ndarray, optional
        ``(c,)`` daily mean demand, when the slices do not cover the day in proportion (a single
        peak slice); default: the hour-weighted mean of the slices. [tokens/s]
    """

    slice_demand_tok_s: FloatArray
    slice_hours: FloatArray
    pair_commodity: IntArray
    pair_site: IntArray
    pair_nodes_per_tok_s: FloatArray
    pair_rtt_ms: FloatArray
    pair_cost_usd_per_h: FloatArray
    site_fixed_usd_per_h: FloatArray
    site_node_usd_per_h: FloatArray
    site_node_mw: FloatArray
    site_mw_available: FloatArray
    site_locked: BoolArray
    min_sites_open: int | None = None
    max_sites_open: int | None = None
    fault_tolerant: bool = False
    daily_mean_tok_s: FloatArray | None = None

    @property
    def n_sites(self) -> int:
        """Number of candidate sites."""
        return len(self.site_fixed_usd_per_h)

    @property
    def n_commodities(self) -> int:
        """Number of commodities."""
        return int(self.slice_demand_tok_s.shape[0])

    @property
    def mean_demand_tok_s(self) -> FloatArray:
        """Daily mean demand of each commodity. [tokens/s]"""
        if self.daily_mean_tok_s is not None:
            return self.daily_mean_tok_s
        return np.asarray(self.slice_demand_tok_s @ self.slice_hours / self.slice_hours.sum())

    @property
    def peak_demand_tok_s(self) -> FloatArray:
        """Largest slice demand of each commodity. [tokens/s]"""
        return np.asarray(self.slice_demand_tok_s.max(axis=1))

    @property
    def site_max_nodes(self) -> IntArray:
        """Most nodes each site's power allows."""
        return np.floor(self.site_mw_available / self.site_node_mw + 1e-9).astype(np.int64)

    def pair_slice_load(self) -> FloatArray:
        """``(p, T)`` node-equivalents each pair uses in each slice at a share of 1."""
        return np.asarray(self.slice_demand_tok_s[self.pair_commodity] * self.pair_nodes_per_tok_s[:, None])

    def site_slice_load(self, shares: FloatArray) -> FloatArray:
        """``(m, T)`` node-equivalents each site carries in each slice under the given shares."""
        load = np.zeros((self.n_sites, len(self.slice_hours)))
        np.add.at(load, self.pair_site, self.pair_slice_load() * shares[:, None])
        return load

    def cost_usd_per_h(self, is_open: BoolArray, nodes: IntArray, shares: FloatArray) -> float:
        """Total cost of a design. [USD/h]"""
        return float(
            self.site_fixed_usd_per_h[is_open].sum()
            + (nodes * self.site_node_usd_per_h).sum()
            + (shares * self.pair_cost_usd_per_h).sum()
        )


@dataclass(frozen=True)
class PlacementSolution:
    """A solved placement.

    Parameters
    ----------
    open : numpy.ndarray of bool
        ``(m,)`` open sites.
    nodes : numpy.ndarray of int
        ``(m,)`` nodes per site.
    pair_share : numpy.ndarray
        ``(p,)`` share of each commodity's demand served on each pair.
    unserved_share : numpy.ndarray
        ``(c,)`` share of each commodity's demand left unserved.
    objective_usd_per_h : float
        Cost of the design (penalties and ratio terms excluded). [USD/h]
    report : SolverReport
        The (last) MILP solve.
    routing_report : SolverReport or None
        The routing LP solved with the design fixed.
    failover_share : dict
        ``{site f: (p,) shares re-routed when f fails}`` (N+1 only).
    iterations : list of dict
        Dinkelbach iterations (ratio objective only).
    """

    open: BoolArray
    nodes: IntArray
    pair_share: FloatArray
    unserved_share: FloatArray
    objective_usd_per_h: float
    report: SolverReport
    routing_report: SolverReport | None = None
    failover_share: dict[int, FloatArray] = field(default_factory=dict)
    iterations: list[dict[str, float]] = field(default_factory=list)

    def pair_mean_flow_tok_s(self, data: PlacementInput) -> FloatArray:
        """Daily mean goodput carried on each pair. [tokens/s]"""
        return np.asarray(self.pair_share * data.mean_demand_tok_s[data.pair_commodity])

    def served_mean_tok_s(self, data: PlacementInput) -> float:
        """Daily mean goodput served in total. [tokens/s]"""
        return float(self.pair_mean_flow_tok_s(data).sum())


@dataclass
class _Model:
    problem: pulp.LpProblem
    opens: list[pulp.LpVariable]
    nodes: list[pulp.LpVariable]
    shares: list[pulp.LpVariable]
    unserved: list[pulp.LpVariable] | None
    failover: dict[int, tuple[IntArray, list[pulp.LpVariable]]]
    cost_terms: list[tuple[pulp.LpVariable, float]]


def _add_node_variables(problem: pulp.LpProblem, data: PlacementInput) -> list[pulp.LpVariable]:
    return [
        problem.add_variable(f"nodes_{j}", lowBound=0, upBound=int(n), cat=pulp.LpInteger)
        for j, n in enumerate(data.site_max_nodes)
    ]


def _add_power_rows(
    problem: pulp.LpProblem, data: PlacementInput, nodes: list[pulp.LpVariable], opens: list[pulp.LpVariable]
) -> None:
    """``nodes[j] * node_mw[j] <= mw_available[j] * open[j]``."""
    for j in range(data.n_sites):
        expr = pulp.LpAffineExpression([(nodes[j], float(data.site_node_mw[j])), (opens[j], -float(data.site_mw_available[j]))])
        problem.addConstraint(pulp.LpConstraint(expr, pulp.LpConstraintLE, f"power_{j}", 0.0))


def _add_site_count_rows(problem: pulp.LpProblem, data: PlacementInput, opens: list[pulp.LpVariable]) -> None:
    """``min_sites_open <= sum_j open[j] <= max_sites_open``."""
    total = pulp.LpAffineExpression([(y, 1.0) for y in opens])
    if data.min_sites_open is not None:
        problem.addConstraint(pulp.LpConstraint(total, pulp.LpConstraintGE, "min_sites_open", data.min_sites_open))
    if data.max_sites_open is not None:
        problem.addConstraint(pulp.LpConstraint(total, pulp.LpConstraintLE, "max_sites_open", data.max_sites_open))


def _add_coverage_rows(
    problem: pulp.LpProblem,
    data: PlacementInput,
    opens: list[pulp.LpVariable],
    unserved: list[pulp.LpVariable] | None = None,
) -> None:
    """Every commodity with demand keeps at least two open sites inside its budget.

    In an elastic model the requirement falls with the share left unserved (``2 - 2 u``), so a
    commodity that cannot have two sites shows up as unserved instead of making the model infeasible.
    """
    for c, positions in enumerate(fm.group_by(data.pair_commodity, data.n_commodities)):
        if data.peak_demand_tok_s[c] <= 0:
            continue
        terms = [(opens[int(data.pair_site[p])], 1.0) for p in positions.tolist()]
        if unserved is not None:
            terms.append((unserved[c], 2.0))
        expr = pulp.LpAffineExpression(terms)
        problem.addConstraint(pulp.LpConstraint(expr, pulp.LpConstraintGE, f"cover2_{c}", 2.0))


def _add_failover(
    problem: pulp.LpProblem,
    data: PlacementInput,
    opens: list[pulp.LpVariable],
    nodes: list[pulp.LpVariable],
    shares: list[pulp.LpVariable],
) -> dict[int, tuple[IntArray, list[pulp.LpVariable]]]:
    """Single-failure scenarios: when site f fails, the shares it carries move to other sites.

    For each site f and each commodity c allowed at f, variables ``z[f, c, j]`` (j != f, allowed
    for c) re-route ``share[c, f]``; at every other site j the normal load plus the re-routed load
    at peak demand stays within ``nodes[j]``.
    """
    by_commodity = fm.group_by(data.pair_commodity, data.n_commodities)
    by_site = fm.group_by(data.pair_site, data.n_sites)
    peak_load = data.peak_demand_tok_s[data.pair_commodity] * data.pair_nodes_per_tok_s
    failover: dict[int, tuple[IntArray, list[pulp.LpVariable]]] = {}
    for f in range(data.n_sites):
        failed_pairs = by_site[f]
        if len(failed_pairs) == 0:
            continue
        backup_pairs = np.concatenate([by_commodity[int(data.pair_commodity[p])] for p in failed_pairs.tolist()])
        backup_pairs = backup_pairs[data.pair_site[backup_pairs] != f]
        z = [problem.add_variable(f"failover_{f}_{p}", lowBound=0, upBound=1) for p in backup_pairs.tolist()]
        z_by_commodity = fm.group_by(data.pair_commodity[backup_pairs], data.n_commodities)
        for p in failed_pairs.tolist():
            c = int(data.pair_commodity[p])
            terms = [(z[q], 1.0) for q in z_by_commodity[c].tolist()] + [(shares[p], -1.0)]
            problem.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression(terms), pulp.LpConstraintEQ, f"reroute_{f}_{c}", 0.0))
        for q, p in enumerate(backup_pairs.tolist()):
            expr = pulp.LpAffineExpression([(z[q], 1.0), (opens[int(data.pair_site[p])], -1.0)])
            problem.addConstraint(pulp.LpConstraint(expr, pulp.LpConstraintLE, f"failover_link_{f}_{p}", 0.0))
        z_by_site = fm.group_by(data.pair_site[backup_pairs], data.n_sites)
        for j in range(data.n_sites):
            if j == f or len(z_by_site[j]) == 0:
                continue
            terms = [(shares[p], float(peak_load[p])) for p in by_site[j].tolist()]
            terms += [(z[q], float(peak_load[backup_pairs[q]])) for q in z_by_site[j].tolist()]
            terms.append((nodes[j], -1.0))
            problem.addConstraint(
                pulp.LpConstraint(pulp.LpAffineExpression(terms), pulp.LpConstraintLE, f"failover_cap_{f}_{j}", 0.0)
            )
        failover[f] = (backup_pairs.astype(np.int64), z)
    return failover


def build_model(
    data: PlacementInput,
    *,
    unserved_penalty_usd_per_tok_s: float | None = None,
    served_value_usd_per_tok_s: float | None = None,
    min_served_tok_s: float = 0.0,
    capacity_slices: list[list[int]] | None = None,
) -> _Model:
    """Build the placement MILP.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    unserved_penalty_usd_per_tok_s : float, optional
        Demand may go unserved at this price per mean tok/s (an elastic model for diagnosis).
    served_value_usd_per_tok_s : float, optional
        Demand may go unserved; each mean tok/s served is worth this much (a Dinkelbach step:
        minimise cost minus lambda times goodput).
    min_served_tok_s : float, optional
        With optional serving, serve at least this much mean goodput. [tokens/s]
    capacity_slices : list of list of int, optional
        Node-capacity rows only for these slices at each site (a relaxation, for row
        generation); default every undominated slice.

    Returns
    -------
    _Model
        The problem and its variables.
    """
    problem = pulp.LpProblem("placement", pulp.LpMinimize)
    opens = fm.add_open_variables(problem, data.n_sites, locked=data.site_locked)
    nodes = _add_node_variables(problem, data)
    shares = fm.add_flow_variables(problem, data.pair_commodity, data.pair_site, upper=1.0)
    optional = unserved_penalty_usd_per_tok_s is not None or served_value_usd_per_tok_s is not None
    unserved = None
    if optional:
        unserved = [problem.add_variable(f"unserved_{c}", lowBound=0, upBound=1) for c in range(data.n_commodities)]
    fm.add_demand_balance(problem, shares, data.pair_commodity, np.ones(data.n_commodities), unserved=unserved)
    fm.add_linking(problem, shares, opens, data.pair_commodity, data.pair_site, np.ones(data.n_commodities))
    fm.add_site_capacity(
        problem, shares, data.pair_site, data.pair_slice_load(), nodes, np.ones(data.n_sites), columns=capacity_slices
    )
    _add_power_rows(problem, data, nodes, opens)
    _add_site_count_rows(problem, data, opens)
    failover: dict[int, tuple[IntArray, list[pulp.LpVariable]]] = {}
    if data.fault_tolerant:
        _add_coverage_rows(problem, data, opens, unserved)
        failover = _add_failover(problem, data, opens, nodes, shares)
    cost_terms = (
        fm.linear_terms(opens, data.site_fixed_usd_per_h)
        + fm.linear_terms(nodes, data.site_node_usd_per_h)
        + fm.linear_terms(shares, data.pair_cost_usd_per_h)
    )
    objective = list(cost_terms)
    mean = data.mean_demand_tok_s
    if unserved is not None and unserved_penalty_usd_per_tok_s is not None:
        objective += fm.linear_terms(unserved, unserved_penalty_usd_per_tok_s * mean)
    if served_value_usd_per_tok_s is not None:
        objective += fm.linear_terms(shares, -served_value_usd_per_tok_s * mean[data.pair_commodity])
    if optional and min_served_tok_s > 0:
        served = pulp.LpAffineExpression(fm.linear_terms(shares, mean[data.pair_commodity]))
        problem.addConstraint(pulp.LpConstraint(served, pulp.LpConstraintGE, "min_served", min_served_tok_s))
    problem.setObjective(pulp.LpAffineExpression(objective))
    return _Model(problem, opens, nodes, shares, unserved, failover, cost_terms)


def _route_to_nearest(
    data: PlacementInput, solution: PlacementSolution, options: SolverOptions, *, optional: bool
) -> tuple[_Model, SolverReport]:
    """With open sites and nodes fixed, send each share to the nearest capacity (an LP on the full model).

    Unserved shares, where allowed, keep their values; load-dependent costs keep their total.
    """
    model = build_model(data, unserved_penalty_usd_per_tok_s=0.0 if optional else None)
    for var, value in zip(model.opens, solution.open.tolist(), strict=True):
        var.lowBound = var.upBound = 1 if value else 0
    for var, count in zip(model.nodes, solution.nodes.tolist(), strict=True):
        var.lowBound = var.upBound = int(count)
    if model.unserved is not None:
        for var, share in zip(model.unserved, solution.unserved_share.tolist(), strict=True):
            var.lowBound = var.upBound = max(0.0, min(1.0, share))
    weight = data.pair_rtt_ms * data.mean_demand_tok_s[data.pair_commodity]
    if np.any(data.pair_cost_usd_per_h):
        current = float(solution.pair_share @ data.pair_cost_usd_per_h)
        budget = pulp.LpAffineExpression(fm.linear_terms(model.shares, data.pair_cost_usd_per_h))
        model.problem.addConstraint(
            pulp.LpConstraint(budget, pulp.LpConstraintLE, "routing_cost_budget", current * (1 + 1e-9) + 1e-9)
        )
    model.problem.setObjective(pulp.LpAffineExpression(fm.linear_terms(model.shares, weight)))
    quiet = SolverOptions(name=options.name, time_limit_s=options.time_limit_s, gap=1e-9, threads=options.threads, msg=False)
    return model, solve_problem(model.problem, quiet)


def verify_solution(data: PlacementInput, solution: PlacementSolution, *, optional: bool = False) -> list[str]:
    """Check a placement against every constraint of the model.

    Parameters
    ----------
    data : PlacementInput
        The arrays the model was built from.
    solution : PlacementSolution
        The solution.
    optional : bool, optional
        Whether demand was allowed to go unserved.

    Returns
    -------
    list of str
        One message per violated rule (empty when all hold).
    """
    problems: list[str] = []
    share = solution.pair_share
    if (share < -ABS_TOL).any() or (share > 1 + ABS_TOL).any():
        problems.append("a share outside [0, 1]")
    served = np.bincount(data.pair_commodity, weights=share, minlength=data.n_commodities)
    balance = served + (solution.unserved_share if optional else 0.0)
    off = np.abs(balance - 1.0) > 1e-6
    if off.any():
        problems.append(f"demand balance broken for {int(off.sum())} commodities")
    closed = ~solution.open[data.pair_site] & (share > ABS_TOL)
    if closed.any():
        problems.append(f"demand sent to closed sites on {int(closed.sum())} pairs")
    if (solution.nodes < 0).any() or (solution.nodes > data.site_max_nodes).any():
        problems.append("node count outside [0, max nodes]")
    if not solution.open[data.site_locked].all():
        problems.append("a locked site is closed")
    n_open = int(solution.open.sum())
    if data.min_sites_open is not None and n_open < data.min_sites_open:
        problems.append(f"{n_open} sites open, fewer than the minimum {data.min_sites_open}")
    if data.max_sites_open is not None and n_open > data.max_sites_open:
        problems.append(f"{n_open} sites open, more than the maximum {data.max_sites_open}")
    problems += check_capacity(data.site_slice_load(share).max(axis=1), solution.nodes.astype(float), what="node capacity")
    problems += check_capacity(
        solution.nodes.astype(float) * data.site_node_mw, data.site_mw_available * solution.open, what="site power"
    )
    if data.fault_tolerant:
        problems += _verify_failover(data, solution, optional=optional)
    if not optional and not solution.iterations:
        cost = data.cost_usd_per_h(solution.open, solution.nodes, share)
        problems += check_objective(solution.report.objective, cost, what="objective ($/h)")
    return problems


def _verify_failover(data: PlacementInput, solution: PlacementSolution, *, optional: bool) -> list[str]:
    problems: list[str] = []
    peak_load = data.peak_demand_tok_s[data.pair_commodity] * data.pair_nodes_per_tok_s
    coverage = np.bincount(data.pair_commodity, weights=solution.open[data.pair_site].astype(float), minlength=data.n_commodities)
    required = 2.0 - 2.0 * solution.unserved_share if optional else np.full(data.n_commodities, 2.0)
    thin = (coverage < required - 1e-6) & (data.peak_demand_tok_s > 0)
    if thin.any():
        problems.append(f"{int(thin.sum())} commodities have fewer than two open sites inside their budget")
    normal = np.bincount(data.pair_site, weights=solution.pair_share * peak_load, minlength=data.n_sites)
    for f, moved in solution.failover_share.items():
        if solution.pair_share[data.pair_site == f].sum() <= ABS_TOL:
            continue
        to_closed = (moved > ABS_TOL) & (~solution.open[data.pair_site] | (data.pair_site == f))
        if to_closed.any():
            problems.append(f"failure of site {f} re-routes demand to closed or failed sites")
        extra = np.bincount(data.pair_site, weights=moved * peak_load, minlength=data.n_sites)
        after = normal + extra
        after[f] = 0.0
        over = after > solution.nodes + 1e-6 * np.maximum(1.0, solution.nodes)
        if over.any():
            problems.append(f"failure of site {f} overloads {int(over.sum())} sites")
        moved_by_commodity = np.bincount(data.pair_commodity, weights=moved, minlength=data.n_commodities)
        lost = np.bincount(
            data.pair_commodity[data.pair_site == f],
            weights=solution.pair_share[data.pair_site == f],
            minlength=data.n_commodities,
        )
        if np.abs(moved_by_commodity - lost).max() > 1e-6:
            problems.append(f"failure of site {f} leaves demand without a backup")
    return problems


def _extract(model: _Model, data: PlacementInput, report: SolverReport, routing: SolverReport | None) -> PlacementSolution:
    is_open = fm.values(model.opens) > 0.5
    nodes = np.rint(fm.values(model.nodes)).astype(np.int64)
    shares = np.clip(fm.values(model.shares), 0.0, 1.0)
    unserved = fm.values(model.unserved) if model.unserved is not None else np.zeros(data.n_commodities)
    failover = {}
    for f, (pairs, z) in model.failover.items():
        moved = np.zeros(len(data.pair_site))
        moved[pairs] = np.clip(fm.values(z), 0.0, 1.0)
        failover[f] = moved
    objective = data.cost_usd_per_h(is_open, nodes, shares)
    return PlacementSolution(is_open, nodes, shares, unserved, objective, report, routing, failover)


def _empty(data: PlacementInput, report: SolverReport) -> PlacementSolution:
    m, p, c = data.n_sites, len(data.pair_site), data.n_commodities
    return PlacementSolution(np.zeros(m, bool), np.zeros(m, np.int64), np.zeros(p), np.ones(c), math.nan, report)


def _finish(
    model: _Model, data: PlacementInput, options: SolverOptions, report: SolverReport, *, route_nearest: bool, optional: bool
) -> PlacementSolution:
    solution = _extract(model, data, report, None)
    violations = verify_solution(data, solution, optional=optional)
    if violations:
        raise SolverError(f"{report.solver} returned a placement that violates constraints: " + "; ".join(violations))
    if route_nearest and not data.fault_tolerant:
        routing_model, routing = _route_to_nearest(data, solution, options, optional=optional)
        if routing.status.has_solution:
            routed = _extract(routing_model, data, report, routing)
            if not verify_solution(data, routed, optional=True) and abs(
                routed.objective_usd_per_h - solution.objective_usd_per_h
            ) <= 1e-6 * max(1.0, solution.objective_usd_per_h):
                return routed
    return solution


def greedy_design(data: PlacementInput) -> tuple[BoolArray, IntArray, FloatArray] | None:
    """A quick feasible design for a warm start: cheapest reachable site first.

    Commodities with the fewest options go first; each goes whole to the open site with the
    lowest node cost that reaches it and has power left, opening sites as needed.

    Parameters
    ----------
    data : PlacementInput
        The arrays.

    Returns
    -------
    tuple or None
        ``(open, nodes, shares)``, or None when the greedy rule finds no feasible design
        (N+1 and site-count bounds are not attempted).
    """
    if data.fault_tolerant or data.min_sites_open is not None or data.max_sites_open is not None:
        return None
    load = data.pair_slice_load()
    by_commodity = fm.group_by(data.pair_commodity, data.n_commodities)
    site_load = np.zeros((data.n_sites, load.shape[1]))
    is_open = data.site_locked.copy()
    shares = np.zeros(len(data.pair_site))
    order = sorted(range(data.n_commodities), key=lambda c: len(by_commodity[c]))
    for c in order:
        options = by_commodity[c]
        if len(options) == 0:
            return None
        ranked = sorted(
            options.tolist(), key=lambda p: (not is_open[data.pair_site[p]], data.site_node_usd_per_h[data.pair_site[p]])
        )
        for p in ranked:
            j = int(data.pair_site[p])
            if np.ceil((site_load[j] + load[p]).max() - 1e-9) <= data.site_max_nodes[j]:
                site_load[j] += load[p]
                shares[p] = 1.0
                is_open[j] = True
                break
        else:
            return None
    nodes = np.ceil(site_load.max(axis=1) - 1e-9).astype(np.int64)
    return is_open, np.maximum(nodes, 0), shares


def _set_warm_start(model: _Model, design: tuple[BoolArray, IntArray, FloatArray]) -> None:
    is_open, nodes, shares = design
    for var, value in zip(model.opens, is_open.tolist(), strict=True):
        var.setInitialValue(1 if value else 0)
    for var, value in zip(model.nodes, nodes.tolist(), strict=True):
        var.setInitialValue(int(value))
    for var, value in zip(model.shares, shares.tolist(), strict=True):
        var.setInitialValue(value)


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


def _solve_once(
    data: PlacementInput,
    options: SolverOptions,
    *,
    warm: tuple[BoolArray, IntArray, FloatArray] | None,
    capacity_slices: list[list[int]] | None,
) -> tuple[_Model, SolverReport]:
    model = build_model(data, capacity_slices=capacity_slices)
    if warm is not None:
        _set_warm_start(model, warm)
    return model, solve_problem(model.problem, options, warm_start=warm is not None)


def _repair_nodes(data: PlacementInput, solution: PlacementSolution, report: SolverReport) -> PlacementSolution | None:
    """Raise node counts so every slice fits; None if a site's power does not allow it."""
    load = data.site_slice_load(solution.pair_share).max(axis=1)
    nodes = np.maximum(solution.nodes, np.ceil(load - 1e-9).astype(np.int64))
    if (nodes > data.site_max_nodes).any():
        return None
    cost = data.cost_usd_per_h(solution.open, nodes, solution.pair_share)
    repaired = replace(
        report,
        status=SolveStatus.FEASIBLE,
        objective=cost,
        gap=relative_gap(cost, report.best_bound),
        message=f"{report.message}; node counts raised to carry every slice",
    )
    return replace(solution, nodes=nodes, objective_usd_per_h=cost, report=repaired)


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
    warm = greedy_design(data) if warm_start else None
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
            repaired = _repair_nodes(data, solution, report)
            if repaired is not None:
                return _verified(data, repaired, optional=False)
            active = None
    total = time.perf_counter() - start
    note = f" ({rounds} rounds of capacity rows)" if rounds > 1 else ""
    report = replace(report, runtime_s=total, message=report.message + note)
    return _finish(model, data, options, report, route_nearest=route_nearest, optional=False)


def diagnose_shortfall(data: PlacementInput, options: SolverOptions) -> PlacementSolution:
    """Solve an elastic model in which demand may go unserved at a high price.

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
    per_node = float(np.max(data.site_node_usd_per_h)) if data.n_sites else 1.0
    penalty = (
        1e3
        * per_node
        * float(np.max(data.pair_nodes_per_tok_s, initial=1.0))
        * float(np.max(data.peak_demand_tok_s / np.maximum(data.mean_demand_tok_s, 1e-12), initial=1.0))
        + 1.0
    )
    model = build_model(data, unserved_penalty_usd_per_tok_s=penalty)
    report = solve_problem(model.problem, options)
    if not report.status.has_solution:
        raise SolverError(f"the elastic diagnosis model could not be solved ({report.message})")
    solution = _extract(model, data, report, None)
    violations = verify_solution(data, solution, optional=True)
    if violations:
        raise SolverError("the diagnosis model returned a placement that violates constraints: " + "; ".join(violations))
    return solution


def solve_ratio(
    data: PlacementInput,
    options: SolverOptions,
    *,
    min_served_share: float = 0.0,
    tolerance: float = 1e-6,
    max_iterations: int = 30,
    route_nearest: bool = True,
) -> PlacementSolution:
    """Minimise cost per goodput token exactly when serving is optional (Dinkelbach).

    Each iteration solves ``min cost - lambda * goodput`` over all designs and serving shares;
    lambda is then set to the ratio of the design found. The sequence decreases and stops when
    the MILP's optimum is (within ``tolerance`` of the cost) zero: lambda is then the minimum of
    cost / goodput.

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
        The best ratio design; ``iterations`` lists lambda, cost, goodput and the MILP value.
    """
    total = float(data.mean_demand_tok_s.sum())
    min_served = min_served_share * total
    start = greedy_design(data)
    if start is not None:
        is_open, nodes, shares = start
        served = float((shares * data.mean_demand_tok_s[data.pair_commodity]).sum())
        lam = data.cost_usd_per_h(is_open, nodes, shares) / served
    else:
        lam = float(np.min(data.site_node_usd_per_h)) * float(np.min(data.pair_nodes_per_tok_s))
    history: list[dict[str, float]] = []
    best: tuple[_Model, SolverReport] | None = None
    for _ in range(max_iterations):
        model = build_model(data, served_value_usd_per_tok_s=lam, min_served_tok_s=min_served)
        report = solve_problem(model.problem, options)
        if not report.status.has_solution:
            if best is None:
                return _empty(data, report)
            break
        solution = _extract(model, data, report, None)
        cost = solution.objective_usd_per_h
        served = solution.served_mean_tok_s(data)
        value = cost - lam * served
        history.append({"lambda_usd_per_tok_s": lam, "cost_usd_per_h": cost, "goodput_tok_s": served, "value_usd_per_h": value})
        if served <= 0 and best is not None:
            break  # at the optimal lambda, serving nothing ties at 0: keep the last design that serves
        if value > tolerance * max(cost, 1.0) and best is not None:
            # The previous design is worth exactly 0 at this lambda, so a positive optimum is a solver
            # failure (seen with HiGHS presolve on tiny instances): keep the previous design.
            history[-1]["rejected"] = 1.0
            break
        best = (model, report)
        if served <= 0 or value >= -tolerance * max(cost, 1e-9):
            break
        lam = cost / served
    assert best is not None
    model, report = best
    solution = _finish(model, data, options, report, route_nearest=route_nearest, optional=True)
    return PlacementSolution(
        solution.open,
        solution.nodes,
        solution.pair_share,
        solution.unserved_share,
        solution.objective_usd_per_h,
        report,
        solution.routing_report,
        solution.failover_share,
        history,
    )
