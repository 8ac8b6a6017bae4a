"""N+1 on a large instance: the plan without N+1, then protected on the pairs it uses (DESIGN.md section 7).

The exact N+1 model (every failure scenario re-routing over every pair) grows with the square of each
commodity's pairs: the bundled world's holds ~265,000 re-routing columns and its root LP alone outlasts minutes
on 2 cores. Above :data:`FULL_FAILOVER_MAX_VARIABLES` the plan without N+1 is solved (the priced path), then
:func:`placement.optimize.protect.protect_plan` protects every served commodity against every loss on the
pairs that plan uses. Its bound is the plan's without N+1 (protection only adds cost), so the gap reported is
honest, and large: it includes what protection costs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from placement.optimize.milp import empty
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.protect import protect_plan
from placement.optimize.solver import SolverOptions, SolveStatus

SERVED_TOL = 1e-6
"""Unserved shares below this are solver noise, not a shortfall."""

FULL_FAILOVER_MAX_VARIABLES = 40_000
"""N+1 models with more re-routing variables than this are solved without N+1 first, then protected (below).

The bundled world has ~265,000: its root LP alone outlasts minutes on 2 cores.
"""


def failover_variable_count(data: PlacementInput) -> int:
    """Re-routing variables of the full N+1 model, at most: over protected commodities, sites x (pairs - 1).

    A commodity's pairs are lost with any site they load (a cross-metro pair's prefill site too), each loss
    re-routing onto at most its other pairs; without cross-metro pairs a commodity loads as many sites as it has
    pairs, and this is pairs x (pairs - 1).
    """
    pairs = np.bincount(data.pair_commodity, minlength=data.n_commodities)
    entry_pair, entry_site, _ = data.load_entries()
    touched = np.unique(data.pair_commodity[entry_pair] * data.n_sites + entry_site)
    sites = np.bincount(touched // max(data.n_sites, 1), minlength=data.n_commodities)
    protected = data.protected
    return int((sites[protected] * (pairs[protected] - 1)).sum())


SolveWithoutNPlusOne = Callable[..., PlacementSolution]
"""The solve of the plan without N+1 (:func:`placement.optimize.solve.solve_placement`)."""


def solve_large_n_plus_one(
    data: PlacementInput, options: SolverOptions, *, solve_without_n_plus_one: SolveWithoutNPlusOne
) -> PlacementSolution:
    """Solve a large N+1 model: the plan without N+1, then every served commodity protected on its pairs.

    Parameters
    ----------
    data : PlacementInput
        The arrays (``fault_tolerant``).
    options : SolverOptions
        Solver settings; the time limit bounds each of the two steps (a safety net per step).
    solve_without_n_plus_one : callable
        ``(data, options, *, route_nearest) -> PlacementSolution`` for the plan without N+1.

    Returns
    -------
    PlacementSolution
        Verified; an infeasible report when the plan without N+1 is infeasible or protection would leave demand
        unserved (both are a shortfall: :func:`placement.optimize.shortfall.diagnose_shortfall` plans it).
    """
    base = solve_without_n_plus_one(replace(data, fault_tolerant=False), options, route_nearest=False)
    if not base.report.status.has_solution:
        return empty(data, base.report)
    protected = protect_plan(data, base, options)  # its own time limit: a safety net per step
    if not protected.n_plus_one_dropped and float(protected.unserved_share.max(initial=0.0)) > SERVED_TOL:
        message = "protecting every served commodity leaves demand unserved: a shortfall"
        return empty(data, replace(protected.report, status=SolveStatus.INFEASIBLE, message=message))
    return protected
