"""Diagnosing a model that cannot serve everything: the most it can serve, at least cost, and who is left out.

The priced solve with ``shortfall`` (:func:`placement.optimize.priced.solve_priced`) finds it; with N+1 the
plan is then protected (:func:`placement.optimize.protect.protect_plan`): the most of what is served is
protected against every loss, at least cost, and what cannot be is named per loss, never dropped.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from placement.optimize.priced import PRICING_FROM_PAIRS, solve_priced
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.protect import protect_plan
from placement.optimize.solver import SolverOptions


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
    """Serve as much as the sites can, at least cost (and with N+1 protect the most of it): a plan with a shortfall.

    :func:`solve_priced` with ``shortfall`` finds the least unserved goodput (by LP, which a design with
    integer nodes attains), then the least cost with at most that much unserved; the bound and gap are of
    the cost among plans serving as much. With N+1, :func:`placement.optimize.protect.protect_plan` adds
    the spare nodes and standby sites that protect the most of the served goodput against every loss.

    The commodities left unserved are those that no feasible placement can cover inside their
    latency budget (the power of the sites they reach is too small).

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    options : SolverOptions
        Solver settings.

    Returns
    -------
    PlacementSolution
        With ``unserved_share`` set (with N+1: ``failover_share`` and ``unprotected_share`` too, or
        ``n_plus_one_dropped`` when no protected design was found in the time limit).
    """
    without = replace(data, fault_tolerant=False)
    all_pairs = len(data.pair_site) <= PRICING_FROM_PAIRS
    base = solve_priced(without, options, shortfall=True, route_nearest=False, all_pairs=all_pairs)
    if not data.fault_tolerant or not base.report.status.has_solution:
        return base
    return protect_plan(data, base, options)  # its own time limit: a safety net per step
