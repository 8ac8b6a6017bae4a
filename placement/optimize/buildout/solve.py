"""Solving the build-out model: relax and fix, a polish from the plan found, whole nodes, the min-max-regret model.

With continuous node purchases the LP relaxation is solved first (its objective is a lower bound), the
sites it uses are fixed open and the LP is solved again for the MW, nodes and routes; when that leaves a
gap above the target, the MILP with binary sites is started from the plan (:func:`_polish`). Purchases
are then rounded up (:func:`round_up`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from placement._types import BoolArray, FloatArray
from placement.optimize.buildout.caps import cap_excess, held_back
from placement.optimize.buildout.input import BuildoutInput, BuildoutSolution, FirstStage, nodes_in_service
from placement.optimize.buildout.model import BuildoutModel, create_model, regret_model
from placement.optimize.buildout.spares import with_spares
from placement.optimize.linear import PulpModel, pulp_values
from placement.optimize.solver import SolverOptions, SolverReport, solve_problem

BACK_OFFS = 6
"""Re-solves with the caps held lower by what rounding purchases up added, at most."""

TINY = 1e-9
"""Solver values below this are read as 0 (a solver's 1e-16 MW is no commitment)."""


def _at_least_zero(values: FloatArray) -> FloatArray:
    """``max(v, 0.0)`` as Python takes it (a -0.0 stays -0.0)."""
    return np.asarray(np.where(values < 0.0, 0.0, values))


def _share(values: FloatArray) -> FloatArray:
    """``min(max(v, 0.0), 1.0)`` as Python takes it."""
    low = _at_least_zero(values)
    return np.asarray(np.where(low > 1.0, 1.0, low))


def read_solution(data: BuildoutInput, pm: PulpModel, bm: BuildoutModel, report: SolverReport) -> BuildoutSolution:
    """The variables' values as arrays.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    pm : PulpModel
        The solved PuLP problem.
    bm : BuildoutModel
        Its model.
    report : SolverReport
        What the solver proved.

    Returns
    -------
    BuildoutSolution
        The plan.
    """
    m, k_count, a, n_years, n_scen, n_slices = data.shape
    opened = (pulp_values(pm.of(bm.open)) > 0.5).reshape(m, n_years)
    mw = pulp_values(pm.of(bm.mw))
    reserved = np.where(mw > TINY, mw, 0.0).reshape(m, n_years)
    buy = np.zeros((m, a, n_years, n_scen))
    buy[tuple(bm.buy_key.T)] = _at_least_zero(pulp_values(pm.of(bm.buy)))
    share = np.zeros((data.pair_row.size, n_years, n_scen))
    share[tuple(bm.share_key.T)] = _share(pulp_values(pm.of(bm.share)))
    unserved = np.zeros((data.row_class.size, n_years, n_scen))
    unserved[tuple(bm.unserved_key.T)] = _share(pulp_values(pm.of(bm.unserved)))
    served = np.zeros((m, k_count, a, n_years, n_scen, n_slices))
    served[tuple(bm.served_key.T)] = _at_least_zero(pulp_values(pm.of(bm.served)))
    return BuildoutSolution(FirstStage(opened, reserved), buy, nodes_in_service(data, buy), share, unserved, served, report)


def _empty(data: BuildoutInput, report: SolverReport) -> BuildoutSolution:
    zeros, empty = np.zeros(data.site_mw_available.shape), np.zeros(0)
    return BuildoutSolution(FirstStage(zeros > 0, zeros), empty, empty, empty, empty, empty, report)


def _solve(
    data: BuildoutInput,
    options: SolverOptions,
    *,
    fixed: FirstStage | None = None,
    relax: bool = False,
    opened: BoolArray | None = None,
) -> tuple[BuildoutSolution, SolverReport]:
    pm, bm = create_model(data, fixed=fixed, relax=relax, opened=opened)
    report = solve_problem(pm.problem, options)
    if not report.status.has_solution:
        return _empty(data, report), report
    return read_solution(data, pm, bm, report), report


def sites_of_relaxation(data: BuildoutInput, relaxed: BuildoutSolution) -> BoolArray:
    """``(M, Y)`` sites the LP relaxation uses in any scenario (any share open, any MW, any route), kept open after."""
    used = relaxed.first.mw_reserved > 1e-9
    routed = np.zeros(used.shape, dtype=bool)
    np.logical_or.at(routed, data.pair_site, (relaxed.pair_share > 1e-9).any(axis=2))
    second = np.flatnonzero(data.remote_site >= 0)  # a cross-metro column's prefill site
    np.logical_or.at(routed, data.remote_site[second], (relaxed.pair_share[second] > 1e-9).any(axis=2))
    return np.asarray(np.logical_or.accumulate(used | routed | data.site_locked[:, None], axis=1))


def solve_buildout(data: BuildoutInput, options: SolverOptions, *, fixed: FirstStage | None = None) -> BuildoutSolution:
    """Solve the build-out; continuous purchases are rounded up (:func:`round_up`), within the caps.

    Rounding purchases up adds nodes, whose idle draw can take a year over a carbon or water cap. The model is
    then solved again with the caps held lower (:func:`backed_off`); the plan returned may still break a cap, so
    check it (:func:`placement.optimize.buildout.caps.cap_breaches`). With ``data.n_plus_one`` each rounded plan gets
    its spares (:func:`~placement.optimize.buildout.spares.with_spares`) before the caps are checked, so their idle
    draw is held within the caps too.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    options : SolverOptions
        Solver and limits.
    fixed : FirstStage, optional
        Sites and MW to hold fixed.

    Returns
    -------
    BuildoutSolution
        The plan (see :func:`_solve_rounded`).
    """
    return backed_off(data, lambda held: with_spares(held, _solve_rounded(held, options, fixed=fixed), options))


def backed_off(data: BuildoutInput, solve: Callable[[BuildoutInput], BuildoutSolution]) -> BuildoutSolution:
    """``solve(data)``; while its rounded plan breaks a cap, ``solve`` again with the caps held lower.

    Each step holds every cap lower by what the last rounded plan is over it, twice as far as the step before
    (:data:`BACK_OFFS` steps at most). A step that finds no plan ends the back-off with the last plan found. The
    proven bound stays the first solve's (a solve held below the caps bounds a tighter problem).

    Parameters
    ----------
    data : BuildoutInput
        The arrays and their caps.
    solve : callable
        Solves arrays like ``data`` (only their caps' ``held_back`` differ) and rounds purchases up.

    Returns
    -------
    BuildoutSolution
        The last plan found; it may still break a cap (check it with :func:`~placement.optimize.buildout.caps.cap_breaches`).
    """
    solution = solve(data)
    held, bound = data, solution.report.best_bound
    for step in range(BACK_OFFS):
        if not solution.rounded or not solution.report.status.has_solution:
            break
        excess = cap_excess(data, solution)
        if not any((e > 0).any() for e in excess):
            break
        held = held_back(held, excess, factor=2.0**step)
        again = solve(held)
        if not again.report.status.has_solution:
            break
        solution = again
    if solution.report.status.has_solution and held is not data:
        lower = min(bound, solution.report.best_bound)
        report = replace(solution.report, best_bound=lower, gap=_gap(solution.report.objective, lower))
        solution = replace(solution, report=report)
    return solution


def _solve_rounded(data: BuildoutInput, options: SolverOptions, *, fixed: FirstStage | None = None) -> BuildoutSolution:
    """Solve the build-out once; continuous purchases are rounded up (:func:`round_up`).

    With ``fixed`` sites and MW the model is an LP (integer nodes aside). Otherwise, with continuous
    nodes, the LP relaxation is solved first (its objective is a lower bound), the sites it uses are
    fixed open and the LP is solved again for the MW, nodes and routes: the site costs are small
    beside the nodes', so the gap to the bound is small, and it is reported. With integer nodes the
    MILP is solved as it is.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    options : SolverOptions
        Solver and limits.
    fixed : FirstStage, optional
        Sites and MW to hold fixed.

    Returns
    -------
    BuildoutSolution
        The plan; its report's ``best_bound`` is a proven lower bound (check it with
        :func:`placement.buildout.evaluate.violations`).
    """
    if fixed is not None or data.integer_nodes:
        solution, _ = _solve(data, options, fixed=fixed)
        return solution if data.integer_nodes or not solution.report.status.has_solution else round_up(data, solution)
    relaxed, bound = _solve(data, options, relax=True)
    if not bound.status.has_solution:
        return relaxed
    solution, report = _solve(data, options, opened=sites_of_relaxation(data, relaxed))
    if not report.status.has_solution:
        return solution
    best, lower = solution, bound.objective
    if _gap(report.objective, lower) > options.gap:
        polished = _polish(data, options, solution)
        lower = max(lower, polished.report.best_bound) if np.isfinite(polished.report.best_bound) else lower
        if polished.report.status.has_solution and polished.report.objective < report.objective:
            best, report = polished, polished.report
    proven = replace(report, best_bound=lower, gap=_gap(report.objective, lower))
    return round_up(data, replace(best, report=proven))


def _gap(objective: float, bound: float) -> float:
    return max(objective - bound, 0.0) / max(abs(objective), 1e-9)


def set_start(pm: PulpModel, bm: BuildoutModel, start: BuildoutSolution) -> None:
    """Give every variable its value in a plan, as the solver's starting solution.

    Parameters
    ----------
    pm : PulpModel
        The PuLP problem.
    bm : BuildoutModel
        Its model.
    start : BuildoutSolution
        A plan of the same arrays.
    """
    starts = [
        (bm.open, [int(v) for v in start.first.open.ravel().tolist()]),
        (bm.mw, start.first.mw_reserved.astype(float).ravel().tolist()),
        (bm.buy, start.buy[tuple(bm.buy_key.T)].tolist()),
        (bm.share, start.pair_share[tuple(bm.share_key.T)].tolist()),
        (bm.unserved, start.unserved_share[tuple(bm.unserved_key.T)].tolist()),
        (bm.served, start.served_tok_s[tuple(bm.served_key.T)].tolist()),
    ]
    for block, values in starts:
        for var, value in zip(pm.of(block), values, strict=True):
            var.setInitialValue(value)


def _polish(data: BuildoutInput, options: SolverOptions, start: BuildoutSolution) -> BuildoutSolution:
    """The MILP with binary sites, started from a feasible plan (when relax-and-fix leaves a gap above the target)."""
    pm, bm = create_model(data)
    set_start(pm, bm, start)
    report = solve_problem(pm.problem, options, warm_start=True)
    if not report.status.has_solution:
        return _empty(data, report)
    return read_solution(data, pm, bm, report)


def round_up(data: BuildoutInput, solution: BuildoutSolution) -> BuildoutSolution:
    """Whole nodes: every purchase rounded up, MW reserved raised (never above energized power) to hold them.

    Parameters
    ----------
    data : BuildoutInput
        The arrays (their ``power_margin_mw`` keeps room for the rounding).
    solution : BuildoutSolution
        A solve with continuous purchases.

    Returns
    -------
    BuildoutSolution
        Integer purchases; MW reserved and open sites made consistent with them.
    """
    buy = np.maximum(np.ceil(solution.buy - 1e-6), 0.0) + 0.0  # + 0.0: no -0.0 in the tables
    nodes = nodes_in_service(data, buy)
    need = np.einsum("mays,ma->mys", nodes, data.node_mw).max(axis=2)
    reserved = np.maximum.accumulate(np.maximum(solution.first.mw_reserved, need), axis=1)
    reserved = np.minimum(reserved, np.maximum(data.site_mw_available, solution.first.mw_reserved))
    opened = np.logical_or.accumulate(solution.first.open | (reserved > 0), axis=1)
    return replace(solution, first=FirstStage(opened, reserved), buy=buy, nodes=nodes, rounded=True)


def solve_regret(
    data: BuildoutInput,
    alone_usd: list[float],
    options: SolverOptions,
    *,
    relax: bool = False,
    opened: BoolArray | None = None,
) -> BuildoutSolution:
    """Solve the model whose objective is the largest regret against each scenario's own optimum.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    alone_usd : list of float
        ``(S,)`` each scenario's own optimum (wait-and-see). [USD]
    options : SolverOptions
        Solver and limits.
    relax, opened
        As :func:`placement.optimize.buildout.model.build_model`.

    Returns
    -------
    BuildoutSolution
        The plan (read whatever the solver returned).
    """
    pm, bm = regret_model(data, alone_usd, relax=relax, opened=opened)
    return read_solution(data, pm, bm, solve_problem(pm.problem, options))
