"""A solve stopped by its time limit is never reported as optimal."""

from __future__ import annotations

import math

import numpy as np
import pulp
import pytest

from placement.optimize import rows
from placement.optimize.linear import LinearModel, to_pulp
from placement.optimize.solver import SolverOptions, SolveStatus, StopReason, _read_cbc_log, relative_gap, solve_problem
from tests.conftest import SOLVERS

CBC_TIME_LIMIT_LOG = """
Cbc0010I After 79 nodes, 6 on tree, 4287.9748 best solution, best possible 4233.6 (1.97 seconds)
Result - Stopped on time limit

Objective value:                4287.97477431
Lower bound:                    4233.600
Gap:                            0.01
Enumerated nodes:               79
"""


def hard_instance(seed: int = 0, n: int = 120, m: int = 35) -> pulp.LpProblem:
    rng = np.random.default_rng(seed)
    model = LinearModel("hard")
    demand = np.ones(n)
    pair_pop = np.repeat(np.arange(n), m).astype(np.int64)
    pair_site = np.tile(np.arange(m), n).astype(np.int64)
    capacity = rng.uniform(5, 15, m)
    cost = rng.uniform(1, 100, len(pair_pop))
    opens = rows.open_columns(model, m, cost=rng.uniform(200, 400, m))
    flows = rows.share_columns(model, pair_pop, pair_site, cost=cost)
    rows.demand_rows(model, flows.cols, pair_pop, demand)
    weight = np.ones((len(pair_pop), 1))
    sites, slices = rows.capacity_slices(pair_site, weight, m)
    rows.capacity_rows(model, flows.cols, pair_site, weight, opens.cols, capacity, sites, slices)
    return to_pulp(model).problem


def test_cbc_time_limit_log_is_feasible_with_gap() -> None:
    problem = hard_instance(n=3, m=2)
    problem.sol_status = pulp.LpSolutionIntegerFeasible
    problem.status = pulp.LpStatusOptimal  # what PuLP says after a time limit
    for var in problem.variables():
        var.varValue = 0.0
    status, _, bound, message = _read_cbc_log(CBC_TIME_LIMIT_LOG, problem)
    assert status == SolveStatus.FEASIBLE
    assert bound == pytest.approx(4233.6)
    assert "time limit" in message


@pytest.mark.parametrize("solver", SOLVERS)
def test_short_time_limit_reports_honestly(solver: str) -> None:
    # Proving hard_instance() optimal takes 7 s (HiGHS) to 11 s (CBC) on the 2-core test machine,
    # over ten times the limit: the limit must stop the solve, and the answer must not say optimal.
    time_limit_s = 0.5
    problem = hard_instance()
    report = solve_problem(problem, SolverOptions(name=solver, time_limit_s=time_limit_s, gap=0.0))
    assert report.stopped_by == StopReason.TIME_LIMIT
    assert report.status in (SolveStatus.FEASIBLE, SolveStatus.NO_SOLUTION)
    if report.status == SolveStatus.FEASIBLE:
        assert math.isfinite(report.objective)
        assert report.best_bound <= report.objective + 1e-6
        assert report.gap > 0
        assert report.gap == pytest.approx(relative_gap(report.objective, report.best_bound))
    assert time_limit_s <= report.runtime_s < time_limit_s + 10


def test_relative_gap() -> None:
    assert relative_gap(100.0, 99.0) == pytest.approx(0.01)
    assert relative_gap(0.0, 0.0) == 0.0
    assert math.isnan(relative_gap(math.nan, 1.0))


def test_unknown_solver_is_refused() -> None:
    from placement._errors import SolverError

    with pytest.raises(SolverError, match="unknown solver"):
        solve_problem(hard_instance(n=2, m=2), SolverOptions(name="gurobi"))


CBC_WITHIN_GAP_LOG = """
Result - Optimal solution found (within gap tolerance)

Objective value:                103754.52246758
Lower bound:                    103690.678
Gap:                            0.00
"""


def test_cbc_within_gap_tolerance_keeps_its_bound() -> None:
    problem = hard_instance(n=3, m=2)
    problem.sol_status = pulp.LpSolutionOptimal
    problem.status = pulp.LpStatusOptimal
    for var in problem.variables():
        var.varValue = 0.0
    status, _, bound, _ = _read_cbc_log(CBC_WITHIN_GAP_LOG, problem)
    assert status == SolveStatus.OPTIMAL
    assert bound == pytest.approx(103690.678)
