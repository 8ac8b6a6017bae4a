"""The placement MILP on arrays: which sites open, how many nodes each, which shares go where.

Commodities are (population, workload class) pairs with a goodput demand in tokens/s in each
time slice. Each allowed (commodity, site) pair carries a *share* of the commodity's demand, the
same in every slice (DESIGN.md section 7: one assignment for the day, capacity checked in every
hour keeps the model small). Nodes are sized once per site and shared by every class and slice;
each tok/s of a class uses ``1 / (goodput per node x utilisation cap)`` node-equivalents.

Options, each a few rows: locked sites, a minimum / maximum number of open sites, optional
serving (unserved shares), and N+1 fault tolerance by exact single-failure scenarios: for every
site f, the shares of the protected commodities it carries are re-routed to other open sites
inside each commodity's budget without exceeding any node count, all other shares staying where
they are, at every commodity's peak demand (conservative across slices). Commodities left out of
``PlacementInput.protect`` (a single site in reach) keep their normal load and have no backup.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pulp

from placement.optimize import formulation as fm
from placement.optimize.problem import BoolArray, FloatArray, IntArray, PlacementInput


@dataclass
class PlacementModel:
    """The PuLP problem and its variables, kept together so a solution can be read back."""

    problem: pulp.LpProblem
    opens: list[pulp.LpVariable]
    nodes: list[pulp.LpVariable]
    shares: list[pulp.LpVariable]
    unserved: list[pulp.LpVariable] | None
    failover: dict[int, tuple[IntArray, list[pulp.LpVariable]]]
    cost_terms: list[tuple[pulp.LpVariable, float]]
    site_peak: list[pulp.LpVariable | None] = field(default_factory=list)


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
    """Every protected commodity keeps at least two open sites inside its budget.

    In an elastic model the requirement falls with the share left unserved (``2 - 2 u``), so a
    commodity that cannot have two sites shows up as unserved instead of making the model infeasible.
    """
    by_commodity = fm.group_by(data.pair_commodity, data.n_commodities)
    for c in np.flatnonzero(data.protected).tolist():
        terms = [(opens[int(data.pair_site[p])], 1.0) for p in by_commodity[c].tolist()]
        if unserved is not None:
            terms.append((unserved[c], 2.0))
        expr = pulp.LpAffineExpression(terms)
        problem.addConstraint(pulp.LpConstraint(expr, pulp.LpConstraintGE, f"cover2_{c}", 2.0))


def _add_peak_load_variables(
    problem: pulp.LpProblem, data: PlacementInput, shares: list[pulp.LpVariable], peak_load: FloatArray
) -> list[pulp.LpVariable | None]:
    """``site_peak[j] = sum_p share[p] * peak_load[p]`` over the pairs at j: one row per site.

    Every failure scenario reads a site's normal load from this variable, so the shares at a site
    appear in one row instead of once per failed site (a factor of m fewer non-zeros).
    """
    site_peak: list[pulp.LpVariable | None] = []
    for j, pairs in enumerate(fm.group_by(data.pair_site, data.n_sites)):
        if len(pairs) == 0:
            site_peak.append(None)
            continue
        var = problem.add_variable(f"site_peak_{j}", lowBound=0)
        terms = [(shares[p], float(peak_load[p])) for p in pairs.tolist()] + [(var, -1.0)]
        problem.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression(terms), pulp.LpConstraintEQ, f"site_peak_{j}", 0.0))
        site_peak.append(var)
    return site_peak


def _failover_pairs(
    data: PlacementInput, f: int, by_site: list[IntArray], by_commodity: list[IntArray]
) -> tuple[IntArray, IntArray]:
    """The protected pairs at site f, and the pairs of the same commodities at other sites."""
    failed = by_site[f][data.protected[data.pair_commodity[by_site[f]]]]
    if len(failed) == 0:
        return failed, failed
    backup = np.concatenate([by_commodity[int(data.pair_commodity[p])] for p in failed.tolist()])
    return failed, backup[data.pair_site[backup] != f].astype(np.int64)


def _add_failure_scenario(
    problem: pulp.LpProblem,
    data: PlacementInput,
    f: int,
    pairs: tuple[IntArray, IntArray],
    variables: tuple[list[pulp.LpVariable], list[pulp.LpVariable], list[pulp.LpVariable], list[pulp.LpVariable | None]],
    peak_load: FloatArray,
) -> list[pulp.LpVariable]:
    """Site f fails: its protected shares move to other open sites, which carry them in their nodes."""
    failed, backup = pairs
    opens, nodes, shares, site_peak = variables
    z = [problem.add_variable(f"failover_{f}_{p}", lowBound=0, upBound=1) for p in backup.tolist()]
    z_by_commodity = fm.group_by(data.pair_commodity[backup], data.n_commodities)
    for p in failed.tolist():
        c = int(data.pair_commodity[p])
        terms = [(z[q], 1.0) for q in z_by_commodity[c].tolist()] + [(shares[p], -1.0)]
        problem.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression(terms), pulp.LpConstraintEQ, f"reroute_{f}_{c}", 0.0))
    for q, p in enumerate(backup.tolist()):
        expr = pulp.LpAffineExpression([(z[q], 1.0), (opens[int(data.pair_site[p])], -1.0)])
        problem.addConstraint(pulp.LpConstraint(expr, pulp.LpConstraintLE, f"failover_link_{f}_{p}", 0.0))
    for j, moved in enumerate(fm.group_by(data.pair_site[backup], data.n_sites)):
        normal = site_peak[j]
        if len(moved) == 0 or normal is None:
            continue
        terms = [(z[q], float(peak_load[backup[q]])) for q in moved.tolist()] + [(normal, 1.0), (nodes[j], -1.0)]
        expr = pulp.LpAffineExpression(terms)
        problem.addConstraint(pulp.LpConstraint(expr, pulp.LpConstraintLE, f"failover_cap_{f}_{j}", 0.0))
    return z


def _add_failover(
    problem: pulp.LpProblem,
    data: PlacementInput,
    opens: list[pulp.LpVariable],
    nodes: list[pulp.LpVariable],
    shares: list[pulp.LpVariable],
) -> tuple[dict[int, tuple[IntArray, list[pulp.LpVariable]]], list[pulp.LpVariable | None]]:
    """Single-failure scenarios: when site f fails, the protected shares it carries move elsewhere.

    For each site f and each protected commodity c allowed at f, variables ``z[f, c, j]``
    (j != f, allowed for c) re-route ``share[c, f]``; at every other site j the normal load plus
    the re-routed load at peak demand stays within ``nodes[j]``. Unprotected commodities keep
    their normal load everywhere and lose what f carried.
    """
    by_commodity = fm.group_by(data.pair_commodity, data.n_commodities)
    by_site = fm.group_by(data.pair_site, data.n_sites)
    peak_load = data.peak_demand_tok_s[data.pair_commodity] * data.pair_nodes_per_tok_s
    site_peak = _add_peak_load_variables(problem, data, shares, peak_load)
    failover: dict[int, tuple[IntArray, list[pulp.LpVariable]]] = {}
    for f in range(data.n_sites):
        pairs = _failover_pairs(data, f, by_site, by_commodity)
        if len(pairs[0]) == 0:
            continue
        z = _add_failure_scenario(problem, data, f, pairs, (opens, nodes, shares, site_peak), peak_load)
        failover[f] = (pairs[1], z)
    return failover, site_peak


def _add_spare_rows(
    problem: pulp.LpProblem,
    data: PlacementInput,
    nodes: list[pulp.LpVariable],
    shares: list[pulp.LpVariable],
) -> list[pulp.LpVariable | None]:
    """A relaxation of the failure scenarios without re-routing variables (a valid lower bound).

    When site f fails, a protected commodity's share at f must fit in the spare nodes
    (``nodes[j] - site_peak[j]``) of the other sites it reaches: the sum of scenario f's capacity
    rows over those sites, with the other commodities' re-routes dropped. One row per pair.
    """
    peak_load = data.peak_demand_tok_s[data.pair_commodity] * data.pair_nodes_per_tok_s
    site_peak = _add_peak_load_variables(problem, data, shares, peak_load)
    by_commodity = fm.group_by(data.pair_commodity, data.n_commodities)
    for p in np.flatnonzero(data.protected[data.pair_commodity]).tolist():
        f = int(data.pair_site[p])
        others = [int(j) for j in data.pair_site[by_commodity[int(data.pair_commodity[p])]].tolist() if j != f]
        terms = [(shares[p], float(peak_load[p]))] + [(nodes[j], -1.0) for j in others]
        terms += [(var, 1.0) for var in (site_peak[j] for j in others) if var is not None]
        expr = pulp.LpAffineExpression(terms)
        problem.addConstraint(pulp.LpConstraint(expr, pulp.LpConstraintLE, f"spare_{p}", 0.0))
    return site_peak


def build_model(
    data: PlacementInput,
    *,
    unserved_penalty_usd_per_tok_s: float | None = None,
    served_value_usd_per_tok_s: float | None = None,
    min_served_tok_s: float = 0.0,
    capacity_slices: list[list[int]] | None = None,
    failover_rows: Literal["exact", "spare"] = "exact",
) -> PlacementModel:
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
    failover_rows : {"exact", "spare"}, optional
        With N+1, the exact single-failure scenarios, or their relaxation by spare capacity
        (no re-routing variables; its optimum is a lower bound of the exact model's).

    Returns
    -------
    PlacementModel
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
    site_peak: list[pulp.LpVariable | None] = []
    if data.fault_tolerant:
        _add_coverage_rows(problem, data, opens, unserved)
        if failover_rows == "exact":
            failover, site_peak = _add_failover(problem, data, opens, nodes, shares)
        else:
            site_peak = _add_spare_rows(problem, data, nodes, shares)
    cost_terms = (
        fm.linear_terms(opens, data.site_fixed_usd_per_h)
        + fm.linear_terms(nodes, data.site_node_usd_per_h)
        + fm.linear_terms(shares, data.pair_cost_usd_per_h)
    )
    mean = data.mean_demand_tok_s
    share_coefficients = data.pair_cost_usd_per_h
    if served_value_usd_per_tok_s is not None:
        # One coefficient per share: PuLP keeps only the last of a variable's repeated terms, so a separate
        # "- lambda x goodput" term would silently drop the share's load-energy cost.
        share_coefficients = share_coefficients - served_value_usd_per_tok_s * mean[data.pair_commodity]
    objective = (
        fm.linear_terms(opens, data.site_fixed_usd_per_h)
        + fm.linear_terms(nodes, data.site_node_usd_per_h)
        + fm.linear_terms(shares, share_coefficients)
    )
    if unserved is not None and unserved_penalty_usd_per_tok_s is not None:
        objective += fm.linear_terms(unserved, unserved_penalty_usd_per_tok_s * mean)
    if optional and min_served_tok_s > 0:
        served = pulp.LpAffineExpression(fm.linear_terms(shares, mean[data.pair_commodity]))
        problem.addConstraint(pulp.LpConstraint(served, pulp.LpConstraintGE, "min_served", min_served_tok_s))
    problem.setObjective(pulp.LpAffineExpression(objective))
    return PlacementModel(problem, opens, nodes, shares, unserved, failover, cost_terms, site_peak)


def set_warm_start(
    model: PlacementModel,
    data: PlacementInput,
    design: tuple[BoolArray, IntArray, FloatArray],
    failover: dict[int, FloatArray] | None = None,
    unserved: FloatArray | None = None,
) -> None:
    """Give the solver a starting design: open flags, node counts, shares and (N+1) re-routes.

    ``failover[f]`` holds the ``(p,)`` shares moved when site f fails; a scenario it does not
    list moves nothing. ``unserved`` holds the ``(c,)`` unserved shares of a model with optional
    serving (default 0).
    """
    is_open, nodes, shares = design
    for var, value in zip(model.opens, is_open.tolist(), strict=True):
        var.setInitialValue(1 if value else 0)
    for var, value in zip(model.nodes, nodes.tolist(), strict=True):
        var.setInitialValue(int(value))
    for var, value in zip(model.shares, shares.tolist(), strict=True):
        var.setInitialValue(value)
    if model.unserved is not None:
        left = np.zeros(len(model.unserved)) if unserved is None else unserved
        for var, value in zip(model.unserved, left.tolist(), strict=True):
            var.setInitialValue(value)
    peak_load = data.peak_demand_tok_s[data.pair_commodity] * data.pair_nodes_per_tok_s
    site_peak = np.bincount(data.pair_site, weights=shares * peak_load, minlength=data.n_sites)
    for var, value in zip(model.site_peak, site_peak.tolist(), strict=False):
        if var is not None:
            var.setInitialValue(value)
    moves = failover or {}
    for f, (pairs, z) in model.failover.items():
        moved = moves.get(f, np.zeros(len(data.pair_site)))[pairs]
        for var, value in zip(z, moved.tolist(), strict=True):
            var.setInitialValue(value)
