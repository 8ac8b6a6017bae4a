"""Slope scaling: the LP of the weak formulation splits load over two sites and its rounding opens both; with the
fixed cost laid on the nodes each site ran, the load gathers on one, the optimum worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from placement.optimize import pricing
from placement.optimize.priced import round_up, solve_priced
from placement.optimize.problem import PlacementInput
from placement.optimize.restricted_lp import RestrictedLP
from placement.optimize.slope import fixed_per_node_usd_per_h, slope_scaled
from placement.optimize.solver import SolverOptions, SolveStatus
from tests.optimize.test_model import make_input
from tests.optimize.test_pricing import full_optimum


def two_sites() -> PlacementInput:
    """Sites A and B: $100/h fixed, $10 per node, 10 nodes of power each. Commodity 0 needs 3 nodes and is
    cheapest at A ($50/h of energy at B); commodity 1 needs 1 node and is cheapest at B ($5/h of energy at A).

    The weak LP charges the fixed cost per node (10 nodes share $100: $20 a node at either site), so it sends
    each commodity to its cheaper site: $80, rounded up to both sites open, 200 + 4 x 10 = $240. Both at A:
    100 + 40 + 5 = $145 (both at B: $190), the optimum.
    """
    data = make_input([30_000, 10_000], [(0, 0), (0, 1), (1, 0), (1, 1)], 1e-4, [100, 100], [10, 10], [0.01, 0.01], [0.1, 0.1])
    return PlacementInput(**{**data.__dict__, "pair_cost_usd_per_h": np.array([0.0, 50.0, 5.0, 0.0])})


def test_fixed_cost_per_node_is_shared_over_the_nodes_run() -> None:
    data = two_sites()
    # A ran 3 nodes: $100 / 3; B none: charged as the median site that ran any (3 nodes).
    assert fixed_per_node_usd_per_h(data, np.array([3.0, 0.0])) == pytest.approx([100 / 3, 100 / 3])
    # Half a node pays the fixed cost once, not twice.
    assert fixed_per_node_usd_per_h(data, np.array([0.5, 4.0])) == pytest.approx([100.0, 25.0])


def test_slope_scaling_gathers_the_load_the_weak_lp_splits() -> None:
    data = two_sites()
    weak, lp = pricing.relax(data, objective="cost", links=False, target=0.0)
    assert weak.value == pytest.approx(80.0)
    is_open, nodes, shares, _ = round_up(data, weak)
    assert is_open.tolist() == [True, True] and data.cost_usd_per_h(is_open, nodes, shares) == pytest.approx(240.0)
    scaled = next(slope_scaled(data, weak, lp))
    is_open, nodes, shares, _ = round_up(data, scaled)
    assert is_open.tolist() == [True, False]
    assert nodes.tolist() == [4, 0]
    assert data.cost_usd_per_h(is_open, nodes, shares) == pytest.approx(145.0)


def test_priced_solve_without_a_milp_finds_and_proves_the_optimum() -> None:
    data = two_sites()
    assert full_optimum(data) == pytest.approx(145.0)
    solution = solve_priced(data, SolverOptions(name="highs", gap=0.01), shortfall=False)
    assert solution.objective_usd_per_h == pytest.approx(145.0)
    assert solution.open.tolist() == [True, False]
    assert solution.report.status == SolveStatus.OPTIMAL  # the strong LP's bound, 145, proves it
    assert "slope-scaled" in solution.report.message


def test_a_time_limit_inside_the_later_rounds_keeps_the_best_design(monkeypatch: pytest.MonkeyPatch) -> None:
    # The least-unserved and least-cost LPs finish; every LP after them is stopped by the time limit (as HiGHS
    # reports it): the rounded LP ($240) is written, with the weak LP's bound ($80) and the time limit named.
    data = two_sites()
    solve = RestrictedLP.solve
    calls = {"n": 0}

    def stopped_after_two(self: RestrictedLP, time_limit_s: float | None = None) -> object:
        calls["n"] += 1
        return solve(self, time_limit_s) if calls["n"] <= 2 else None

    monkeypatch.setattr(RestrictedLP, "solve", stopped_after_two)
    solution = solve_priced(data, SolverOptions(name="highs", gap=0.01), shortfall=False)
    assert calls["n"] > 2
    assert solution.objective_usd_per_h == pytest.approx(240.0)
    assert solution.report.best_bound == pytest.approx(80.0)
    assert solution.report.stopped_by.value == "time_limit"
    assert solution.report.status == SolveStatus.FEASIBLE


def test_an_lp_time_limit_counts_from_now_not_from_the_lps_first_run() -> None:
    # HiGHS adds up the run time of every solve of one object: a later round given 1 s gets 1 s past what is spent.
    data = two_sites()
    _, lp = pricing.relax(data, objective="cost", links=False, target=0.0)
    spent = lp.h.getRunTime()
    assert spent > 0
    assert lp.solve(1.0) is not None
    _, limit = lp.h.getOptionValue("time_limit")
    assert spent + 1.0 <= limit <= lp.h.getRunTime() + 1.0
