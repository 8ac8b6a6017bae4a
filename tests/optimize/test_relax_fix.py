"""Relax, fix, search: certified only when the fixed answer is within the gap of the LP bound, else the full MILP."""

from __future__ import annotations

import itertools
import math

import highspy
import pulp
import pytest

from placement.optimize.relax_fix import relax_and_fix
from placement.optimize.solver import SolverOptions, SolveStatus, solve_problem


def two_site_world() -> pulp.LpProblem:
    """Two sites (fixed cost 10 each), two customers of demand 1, whole nodes of 0.8 tok/s at $1 each.

    By hand: site A alone costs 10 + 1 + 2 (shares) + 3 nodes (2 / 0.8 rounded up) = 16; B alone 10 + 5 + 1 + 3 = 19;
    both 20 + 1 + 1 + 2 + 2 = 26. The LP relaxation opens A whole and needs 2.5 nodes there (15.5).
    """
    problem = pulp.LpProblem("two_sites", pulp.LpMinimize)
    fixed = {"a": 10.0, "b": 10.0}
    unit = {("1", "a"): 1.0, ("1", "b"): 5.0, ("2", "a"): 2.0, ("2", "b"): 1.0}
    is_open = {s: problem.add_variable(f"open_{s}", 0, 1, cat="Binary") for s in fixed}
    nodes = {s: problem.add_variable(f"nodes_{s}", 0, 10, cat="Integer") for s in fixed}
    share = {k: problem.add_variable(f"share_{k[0]}_{k[1]}", 0, None) for k in unit}
    problem += pulp.lpSum(fixed[s] * is_open[s] + nodes[s] for s in fixed) + pulp.lpSum(unit[k] * share[k] for k in unit)
    for customer in ("1", "2"):
        problem += pulp.lpSum(share[(customer, s)] for s in fixed) == 1
    for (_customer, site), column in share.items():
        problem += column <= is_open[site]
    for site in fixed:
        problem += 0.8 * nodes[site] >= pulp.lpSum(share[(c, site)] for c in ("1", "2"))
        problem += nodes[site] <= 10 * is_open[site]
    return problem


def covering(odd: bool) -> pulp.LpProblem:
    """Three binaries a, b, c (costs 1, 1, 1.4) covering ``2a + 2b + 3c >= 4``, or a triangle's edges (``odd``).

    The first: LP c = 1, a = 0.5 (1.9); the optimum a = b = 1 (2.0). The triangle (every edge covered, costs 1): LP 0.5
    everywhere (1.5); optimum 2.
    """
    problem = pulp.LpProblem("cover", pulp.LpMinimize)
    a, b, c = (problem.add_variable(name, 0, 1, cat="Binary") for name in "abc")
    if odd:
        problem += a + b + c
        problem += a + b >= 1
        problem += b + c >= 1
        problem += a + c >= 1
    else:
        problem += a + b + 1.4 * c
        problem += 2 * a + 2 * b + 3 * c >= 4
    return problem


def brute_force(problem: pulp.LpProblem) -> float:
    """The optimum over every setting of the binaries, the rest solved as a MILP."""
    binaries = [v.name for v in problem.variables() if v.cat == "Integer" and v.upBound == 1]
    best = float("inf")
    for setting in itertools.product((0, 1), repeat=len(binaries)):
        fixed = problem.deepcopy()
        columns = fixed.variablesDict()
        for name, value in zip(binaries, setting, strict=True):
            columns[name].lowBound = columns[name].upBound = value
        fixed.solve(pulp.HiGHS(msg=False))
        if fixed.status == pulp.LpStatusOptimal:
            best = min(best, pulp.value(fixed.objective))
    return best


def one_customer_world() -> pulp.LpProblem:
    """One customer of demand 1; site a (fixed cost 10, nodes of 0.55 tok/s at $1), site b (10.9, nodes of 1 tok/s).

    By hand: the LP opens a whole (10 + 1 / 0.55 = 11.82 against b's 11.9), but in whole nodes a costs 12 and b 11.9.
    """
    problem = pulp.LpProblem("one_customer", pulp.LpMinimize)
    fixed, per_node = {"a": 10.0, "b": 10.9}, {"a": 0.55, "b": 1.0}
    is_open = {s: problem.add_variable(f"open_{s}", 0, 1, cat="Binary") for s in fixed}
    nodes = {s: problem.add_variable(f"nodes_{s}", 0, 10, cat="Integer") for s in fixed}
    share = {s: problem.add_variable(f"share_{s}", 0, None) for s in fixed}
    problem += pulp.lpSum(fixed[s] * is_open[s] + nodes[s] for s in fixed)
    problem += pulp.lpSum(share.values()) == 1
    for site in fixed:
        problem += share[site] <= is_open[site]
        problem += per_node[site] * nodes[site] >= share[site]
        problem += nodes[site] <= 10 * is_open[site]
    return problem


def test_the_lp_decided_world_is_certified_on_its_fixed_sites() -> None:
    problem = two_site_world()
    report = solve_problem(problem, SolverOptions(gap=0.05, relax_first=True))
    assert report.status == SolveStatus.OPTIMAL
    assert report.objective == pytest.approx(16.0) == pytest.approx(brute_force(two_site_world()))
    assert report.best_bound == pytest.approx(15.5)  # the LP relaxation's, not the fixed search's own
    assert "binaries fixed where the LP relaxation left them" in report.message and report.relaxation_whole is True
    assert pulp.value(problem.variablesDict()["open_a"]) == pytest.approx(1.0)
    assert solve_problem(two_site_world(), SolverOptions(gap=0.05)).relaxation_whole is None  # not relaxed first
    # a's 12 is within 5 % of the LP's 11.82: certified, though b's 11.9 is cheaper
    report = solve_problem(one_customer_world(), SolverOptions(gap=0.05, relax_first=True))
    assert (report.objective, report.best_bound) == (pytest.approx(12.0), pytest.approx(10 + 1 / 0.55))


def test_a_gap_the_fixed_answer_misses_runs_the_full_milp_with_the_bounds_restored() -> None:
    # 12 is 1.5 % over 11.82: at 0.5 % the full MILP runs, and reaches b only because b's bounds are restored
    problem = one_customer_world()
    report = solve_problem(problem, SolverOptions(gap=0.005, relax_first=True))
    assert report.objective == pytest.approx(11.9) == pytest.approx(brute_force(one_customer_world()))
    assert "fixed" not in report.message
    assert pulp.value(problem.variablesDict()["open_b"]) == pytest.approx(1.0)


def test_a_site_the_lp_leaves_fractional_leaves_the_milp_to_the_solver() -> None:
    problem = covering(odd=False)
    problem.solve(pulp.HiGHS(msg=False, gapRel=1e-6))  # PuLP builds the highspy model
    highs: highspy.Highs = problem.solverModel
    highs.clearSolver()
    fractional = relax_and_fix(highs, time_limit_s=None)  # the LP: c = 1, a = 0.5
    assert fractional is not None and not fractional.whole and fractional.fixed == 0
    assert fractional.lp_bound == pytest.approx(1.9) and math.isnan(fractional.objective)
    assert list(highs.getLp().col_upper_) == [1.0, 1.0, 1.0]  # nothing left fixed
    # fixing c = 1 would leave 2.4; the optimum sets c = 0
    problem = covering(odd=False)
    report = solve_problem(problem, SolverOptions(gap=1e-6, relax_first=True))
    assert report.objective == pytest.approx(2.0) == pytest.approx(brute_force(covering(odd=False)))
    assert report.relaxation_whole is False  # what the report says of it (the every-pair MILP reads it)
    assert pulp.value(problem.variablesDict()["c"]) == pytest.approx(0.0)
    report = solve_problem(covering(odd=True), SolverOptions(gap=1e-6, relax_first=True))
    assert report.objective == pytest.approx(2.0)  # the triangle: 0.5 everywhere in the LP
