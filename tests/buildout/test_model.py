"""The build-out model on hand-worked instances, against brute force, and its rules."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from placement.buildout.evaluate import plan_costs, violations
from placement.buildout.solve import min_max_regret, solve_plans
from placement.optimize.buildout.input import BuildoutInput, FirstStage
from placement.optimize.buildout.solve import solve_buildout
from placement.optimize.solver import SolverOptions

EXACT = SolverOptions(gap=1e-9, time_limit_s=60)
H = 8760.0


def instance(
    demand: list[float] | np.ndarray,
    *,
    mw: list[list[float]],
    fixed: list[float],
    goodput: list[float] | None = None,
    annuity: list[float] | None = None,
    allowed: list[int] | None = None,
) -> BuildoutInput:
    """One demand row of one class, sites ``j`` with ``mw[j][y]`` energized, 1 MW per node, discount rate 0.

    ``demand`` is ``(Y,)`` or ``(Y, S)``; site ``j`` costs ``fixed[j]`` $/h open, 1 $/h per reserved MW, and each
    node 1 $/h to run plus its annuity (1 $/h unless given, per accelerator).
    """
    demand = np.asarray(demand, dtype=float)
    demand = demand[:, None] if demand.ndim == 1 else demand
    n_years, n_scen = demand.shape
    n_sites = len(mw)
    goodput = goodput or [100.0]
    annuity = annuity or [1.0] * len(goodput)
    n_acc = len(goodput)
    sites = allowed if allowed is not None else list(range(n_sites))
    return BuildoutInput(
        year_weight_h=np.full(n_years, H),
        slice_weight=np.ones(1),
        row_class=np.zeros(1, dtype=np.int64),
        row_demand_tok_s=demand[None, None, :, :],
        pair_row=np.zeros(len(sites), dtype=np.int64),
        pair_site=np.array(sites, dtype=np.int64),
        site_fixed_usd_per_h=np.array(fixed, dtype=float),
        site_usd_per_h_per_mw=np.ones(n_sites),
        site_mw_available=np.array(mw, dtype=float),
        site_locked=np.zeros(n_sites, dtype=bool),
        goodput_tok_s=np.array([goodput], dtype=float),
        node_mw=np.ones((n_sites, n_acc)),
        node_usd_per_h=np.ones((n_sites, n_acc)),
        energy_usd_per_h_per_tok_s=np.zeros((n_sites, 1, n_acc)),
        offered=np.ones((n_acc, n_years), dtype=bool),
        node_capex_usd=np.array(annuity, dtype=float)[:, None] * H * np.ones((n_acc, n_years)),
        node_annuity_usd_per_h=np.array(annuity, dtype=float)[:, None] * np.ones((n_acc, n_years)),
        life_years=10,
        existing_nodes=np.zeros((n_sites, n_acc, n_years)),
        probability=np.full(n_scen, 1.0 / n_scen),
        unserved_usd_per_million_tokens=1e6,
        integer_nodes=True,
    )


def test_the_second_site_opens_in_the_year_the_first_is_full() -> None:
    # Site 0 (fixed 10 $/h) holds 1 node = 100 tok/s; site 1 costs 20 $/h. Demand 100, 100, 200:
    # site 1 opens in the third year, not before. By hand: 13 $/h in each of the first two years
    # (10 + 1 MW + node 1 + annuity 1), then 13 + (20 + 1 + 2) = 36 $/h.
    data = instance([100, 100, 200], mw=[[1, 1, 1], [5, 5, 5]], fixed=[10, 20])
    plan = solve_buildout(data, EXACT)
    assert violations(data, plan) == []
    assert plan.first.open.tolist() == [[True, True, True], [False, False, True]]
    assert plan_costs(data, plan).expected_npv_usd == pytest.approx((13 + 13 + 36) * H)
    assert plan.report.objective == pytest.approx((13 + 13 + 36) * H)


def test_a_late_interconnection_forces_the_farther_site_first() -> None:
    # The cheap site 0 has no power until the second year, so the dearer site 1 serves year one and
    # stays open (sites never close, its MW are never given back); when demand doubles, site 0 opens.
    data = instance([100, 200], mw=[[0, 1], [1, 1]], fixed=[10, 20])
    plan = solve_buildout(data, EXACT)
    assert violations(data, plan) == []
    assert plan.first.open.tolist() == [[False, True], [True, True]]
    assert plan.pair_share[:, 0, 0].tolist() == [0.0, 1.0]
    assert plan_costs(data, plan).expected_npv_usd == pytest.approx((23 + 23 + 13) * H)


def test_the_cheaper_per_token_accelerator_wins_only_past_a_utilisation_level() -> None:
    # Small node: 100 tok/s for 10 $/h (0.10 $/h per tok/s); big node: 1,000 tok/s for 50 $/h
    # (0.05, cheaper per token at full load). Whole nodes: below 500 tok/s the small nodes cost less.
    def bought(load: float) -> list[float]:
        data = replace(instance([load], mw=[[100]], fixed=[0], goodput=[100, 1000], annuity=[9, 49]))
        plan = solve_buildout(data, EXACT)
        assert violations(data, plan) == []
        return plan.nodes[0, :, 0, 0].tolist()

    assert bought(300) == [3.0, 0.0]
    assert bought(900) == [0.0, 1.0]
    assert bought(1900) == [0.0, 2.0]


def test_continuous_nodes_are_rounded_up_and_priced_as_rounded() -> None:
    data = replace(instance([150, 250], mw=[[5, 5]], fixed=[10]), integer_nodes=False, power_margin_mw=np.ones(1))
    plan = solve_buildout(data, EXACT)
    assert plan.rounded
    assert violations(data, plan) == []
    assert plan.nodes[0, 0, :, 0].tolist() == [2.0, 3.0]
    assert plan_costs(data, plan).expected_npv_usd >= plan.report.best_bound - 1e-6


def _recourse(data: BuildoutInput, first: FirstStage) -> float:
    return plan_costs(data, solve_buildout(data, EXACT, fixed=first)).expected_npv_usd


def test_vss_against_brute_force_over_every_first_stage() -> None:
    # Two sites, two years, two equally likely demand futures. Every first stage (open sites and whole MW,
    # never going back) is priced by re-optimising nodes and routes per scenario; the best is RP, the
    # mean-value plan's first stage priced the same way is EEV.
    demand = np.array([[100.0, 100.0], [100.0, 400.0]])  # (Y, S): low stays at 100, high quadruples
    data = instance(demand, mw=[[2, 4], [4, 4]], fixed=[5, 40])
    data = replace(data, site_usd_per_h_per_mw=np.array([30.0, 30.0]))
    best = np.inf
    levels = range(5)
    for mw in itertools.product(levels, repeat=4):
        reserved = np.array(mw, dtype=float).reshape(2, 2)
        if (np.diff(reserved, axis=1) < 0).any() or (reserved > data.site_mw_available).any():
            continue
        first = FirstStage(reserved > 0, reserved)
        best = min(best, _recourse(data, first))
    mean_plan = solve_buildout(data.mean_value(), EXACT)
    eev = _recourse(data, mean_plan.first)
    plans = solve_plans(data, EXACT)
    assert plans.costs.expected_npv_usd == pytest.approx(best, rel=1e-9)
    assert plans.eev_usd == pytest.approx(eev, rel=1e-9)
    assert plans.vss_usd == pytest.approx(eev - best, rel=1e-9)
    assert plans.vss_usd > 0  # hedging pays here: the mean plan under-reserves for the high future


def test_commitments_never_reverse_on_random_instances() -> None:
    rng = np.random.default_rng(7)
    for _ in range(5):
        growth = rng.uniform(0.5, 2.0, size=(3, 2)).cumprod(axis=0) * 100
        mw = np.sort(rng.integers(0, 4, size=(3, 3)), axis=1).astype(float)
        mw[0, :] = np.maximum(mw[0, :], 1)
        data = instance(growth, mw=mw.tolist(), fixed=rng.uniform(1, 30, 3).tolist())
        plans = solve_plans(data, EXACT)
        first = plans.plan.first
        assert violations(data, plans.plan) == []
        assert (np.diff(first.open.astype(int), axis=1) >= 0).all()
        assert (np.diff(first.mw_reserved, axis=1) >= -1e-9).all()
        assert (first.mw_reserved <= data.site_mw_available + 1e-9).all()
        assert plans.vss_usd >= 0


def test_the_min_max_regret_plan_has_no_larger_regret_than_the_stochastic_plan() -> None:
    demand = np.array([[100.0, 100.0], [100.0, 400.0]])
    data = replace(instance(demand, mw=[[2, 4], [4, 4]], fixed=[5, 40]), site_usd_per_h_per_mw=np.array([30.0, 30.0]))
    regret = min_max_regret(data, EXACT, ["low", "high"])
    alone = np.array(list(regret["wait_and_see_usd"].values()))  # type: ignore[union-attr]
    plans = solve_plans(data, EXACT)
    rp_regret = float((plans.costs.scenario_npv_usd - alone).max())
    assert 0 <= float(regret["max_regret_usd"]) <= rp_regret + 1e-6  # type: ignore[arg-type]


def test_a_larger_model_in_one_scenario_needs_more_nodes_from_its_year() -> None:
    # Scenario "bigger model": from the second year a node serves half the tokens, so twice the nodes;
    # the shared MW must hold them, so both futures reserve 2 MW in the second year.
    data = instance(np.array([[100.0, 100.0], [100.0, 100.0]]), mw=[[5, 5]], fixed=[10])
    goodput = np.full((1, 1, 2, 2), 100.0)
    goodput[0, 0, 1, 1] = 50.0
    data = replace(data, goodput_tok_s=goodput)
    plans = solve_plans(data, EXACT)
    assert violations(data, plans.plan) == []
    assert plans.plan.nodes[0, 0, :, :].tolist() == [[1.0, 1.0], [1.0, 2.0]]
    assert plans.plan.first.mw_reserved[0].tolist() == [1.0, 2.0]
    assert data.mean_value().goodput_kays[0, 0, :, 0].tolist() == [100.0, 75.0]


def test_a_solve_cut_short_by_its_time_limit_says_how_to_give_it_more_time() -> None:
    import math

    from placement._errors import SolverError
    from placement.buildout.solve import checked
    from placement.optimize.buildout.solve import _empty
    from placement.optimize.solver import SolverReport, SolveStatus, StopReason

    data = instance([1.0, 2.0], mw=[[10.0, 10.0]], fixed=[1.0])
    for stop, hint in ((StopReason.TIME_LIMIT, True), (StopReason.NODE_LIMIT, False)):
        report = SolverReport("highs", SolveStatus.NO_SOLUTION, math.nan, math.nan, math.nan, 60.0, "Time limit reached", stop)
        with pytest.raises(SolverError) as raised:
            checked(data, _empty(data, report), "stochastic plan (RP)")
        assert str(raised.value).startswith("stochastic plan (RP): the solver returned no solution (Time limit reached)")
        assert ("--time-limit" in str(raised.value)) is hint


def test_a_running_cost_that_rises_by_year_moves_the_purchases_by_hand() -> None:
    # A carbon price path makes a node's running cost change by year ((M, A, Y)). Nodes serve one year (life 1),
    # 100 tok/s each; demand 100, 100, then 200 tok/s; no site fixed cost, 1 $/h a reserved MW (kept once reserved),
    # 1 $/h of annuity; an open site keeps at least one node. Site 0 (2 MW) runs a node at 1, 1, then 5 $/h; site 1 at
    # 3 $/h throughout. By hand: one node at site 0 in the first two years (3 $/h each); in the third, a second node
    # at site 1 (site 0: 1 MW + 5 + 1; site 1: 1 MW + 3 + 1; 12 $/h) beats both at site 0 (2 MW + 2 x (5 + 1) = 14).
    # With site 0 at 1 $/h in every year both stay there (2 + 2 x 2 = 6 $/h against 1 + 2 + 1 + 4 = 8).
    from dataclasses import replace

    base = replace(instance([100, 100, 200], mw=[[2, 2, 2], [1, 1, 1]], fixed=[0, 0]), life_years=1)
    for site0, nodes, total in (
        ([1.0, 1.0, 5.0], [[1, 1, 1], [0, 0, 1]], 3 + 3 + 12),
        ([1.0, 1.0, 1.0], [[1, 1, 2], [0, 0, 0]], 3 + 3 + 6),
    ):
        data = replace(base, node_usd_per_h=np.array([[site0], [[3.0, 3.0, 3.0]]]))
        plan = solve_buildout(data, EXACT)
        assert violations(data, plan) == []
        assert plan.nodes[:, 0, :, 0].round().tolist() == nodes
        assert plan_costs(data, plan).expected_npv_usd == pytest.approx(total * H)
        assert plan.report.objective == pytest.approx(total * H)
