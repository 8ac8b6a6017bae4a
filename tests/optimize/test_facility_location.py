"""The array core against hand-worked optima and brute force over every site subset."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from placement import facility_location
from placement.optimize.solver import SolveStatus
from tests.conftest import SOLVERS


def brute_force(fixed, capacity, demand, cost, allowed):
    """Cheapest total over every subset of open sites; each subset's assignment is an LP (scipy)."""
    n, m = cost.shape
    best, best_open = np.inf, None
    for k in range(1, m + 1):
        for subset in itertools.combinations(range(m), k):
            pairs = [(i, j) for i in range(n) for j in subset if allowed[i, j]]
            if not pairs:
                continue
            c = np.array([cost[i, j] / demand[i] for i, j in pairs])
            a_eq = np.zeros((n, len(pairs)))
            a_ub = np.zeros((len(subset), len(pairs)))
            for p, (i, j) in enumerate(pairs):
                a_eq[i, p] = 1.0
                a_ub[subset.index(j), p] = 1.0
            lp = linprog(c, A_ub=a_ub, b_ub=capacity[list(subset)], A_eq=a_eq, b_eq=demand, bounds=(0, None), method="highs")
            if lp.status != 0:
                continue
            total = fixed[list(subset)].sum() + lp.fun
            if total < best - 1e-9:
                best, best_open = total, set(subset)
    return best, best_open


@pytest.mark.parametrize("solver", SOLVERS)
def test_hand_worked_optimum(solver: str) -> None:
    # Sites: A (fixed 10, cap 5), B (fixed 10, cap 5), C (fixed 1, cap 3); three populations of 2.
    # No single site holds all 6 units. A+C: 11 + (pop0 at A: 0) + 3 units of pops 1, 2 at A (0.5 each)
    # + 1 unit at C (4.5) = 17. B+C is the mirror image but pop0 costs 1 at B: 18.5. A+B: 20 + 1 = 21.
    result = facility_location([10, 10, 1], [5, 5, 3], [2, 2, 2], [[0, 1, 9], [1, 0, 9], [1, 1, 9]], solver=solver)
    assert result.status == SolveStatus.OPTIMAL
    assert result.objective == pytest.approx(17.0)
    assert result.open.tolist() == [True, False, True]
    assert result.flow.sum() == pytest.approx(6.0)
    assert result.flow[:, 2].sum() == pytest.approx(1.0)


@pytest.mark.parametrize("solver", SOLVERS)
def test_uncapacitated_picks_cheapest_single_site(solver: str) -> None:
    result = facility_location([5, 3, 8], [100, 100, 100], [1, 1], [[1, 4, 0], [1, 4, 0]], solver=solver)
    # Site 0 alone: 5 + 2 = 7; site 1 alone: 3 + 8 = 11; site 2 alone: 8 + 0 = 8.
    assert result.objective == pytest.approx(7.0)
    assert result.open.tolist() == [True, False, False]


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("seed", range(6))
def test_matches_brute_force(solver: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = 7, 5
    fixed = rng.uniform(5, 40, m)
    capacity = rng.uniform(3, 12, m)
    demand = rng.uniform(0.5, 4, n)
    cost = rng.uniform(0, 20, (n, m))
    allowed = rng.random((n, m)) < 0.75
    allowed[np.arange(n), rng.integers(0, m, n)] = True
    expected, expected_open = brute_force(fixed, capacity, demand, cost, allowed)
    result = facility_location(fixed, capacity, demand, cost, allowed, solver=solver)
    if not np.isfinite(expected):
        assert result.status == SolveStatus.INFEASIBLE
        return
    assert result.status == SolveStatus.OPTIMAL
    assert result.objective == pytest.approx(expected, rel=1e-6)
    # The solution itself holds every constraint.
    assert np.allclose(result.flow.sum(axis=1), demand)
    assert (result.flow.sum(axis=0) <= capacity * result.open + 1e-6).all()
    assert (result.flow[~allowed] <= 1e-9).all()
    recomputed = fixed[result.open].sum() + (cost / demand[:, None] * result.flow).sum()
    assert recomputed == pytest.approx(result.objective, rel=1e-9)
    # Ties aside, the open set is the brute-force one; with ties it must cost the same.
    if set(np.flatnonzero(result.open)) != expected_open:
        alternative, _ = brute_force(fixed * np.where(result.open, 1.0, 1e6), capacity, demand, cost, allowed)
        assert alternative == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("solver", SOLVERS)
def test_population_without_allowed_site_is_infeasible(solver: str) -> None:
    result = facility_location([1, 1], [10, 10], [1, 1], np.zeros((2, 2)), [[True, True], [False, False]], solver=solver)
    assert result.status == SolveStatus.INFEASIBLE
    assert np.isnan(result.objective)


@pytest.mark.parametrize("solver", SOLVERS)
def test_capacity_shortfall_is_infeasible(solver: str) -> None:
    result = facility_location([1, 1], [1, 1], [1.5, 1.0], np.zeros((2, 2)), solver=solver)
    assert result.status == SolveStatus.INFEASIBLE


def test_shape_mismatch_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="shapes disagree"):
        facility_location([1, 1], [1, 1, 1], [1.0], np.zeros((1, 2)))
