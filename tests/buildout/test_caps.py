"""Carbon and water caps in the build-out: worked by hand on arrays, held after rounding, refused when out of reach."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from placement._errors import SolverError
from placement.buildout.evaluate import plan_costs, violations
from placement.buildout.solve import checked, solve_plans
from placement.optimize.buildout.caps import cap_breaches, cap_use_per_year, site_energy_mwh_per_year
from placement.optimize.buildout.input import BuildoutInput, YearCap
from placement.optimize.buildout.solve import solve_buildout
from placement.optimize.solver import SolverOptions
from tests.buildout.test_model import EXACT, H, instance

DIRTY_T_PER_MWH = 0.5
"""Grid intensity of the cheap site 0 (500 gCO2e/kWh); site 1 is clean (0)."""


def two_sites(demand: list[float], cap_t: float | None, **changes: object) -> BuildoutInput:
    """Site 0 cheap, dirty and open, site 1 dearer (10 $/h open, 0.02 against 0.01 $/h per token/s) and clean.

    One accelerator, 100 tok/s a node, 1 MW a node: 0.5 MW idle all year and 0.5 MW more at full load.
    """
    base = instance(demand, mw=[[5.0] * len(demand), [5.0] * len(demand)], fixed=[0.0, 10.0])
    base = replace(base, site_locked=np.array([True, False]))  # site 0 stays open (an existing site)
    caps = () if cap_t is None else (YearCap("carbon", "tCO2e", np.array([DIRTY_T_PER_MWH, 0.0]), cap_t),)
    data = replace(
        base,
        energy_usd_per_h_per_tok_s=np.array([[[0.01]], [[0.02]]]),
        node_idle_mw=np.full((2, 1), 0.5),
        node_load_mw=np.full((2, 1), 0.5),
        caps=caps,
    )
    return replace(data, **changes)  # type: ignore[arg-type]


def test_a_binding_carbon_cap_moves_load_to_the_clean_site_by_hand() -> None:
    # Uncapped: one node at site 0 serves all 100 tok/s: 1 MW reserved + 1 running + 1 annuity + 100 x 0.01 = 4 $/h,
    # drawing 0.5 + 0.5 MW all year: 8760 MWh x 0.5 t = 4,380 tCO2e. Capped at 3,285 t (0.75 MW at site 0): site 0
    # serves 50 tok/s (3 + 0.5 = 3.5 $/h), site 1 opens for the other 50 (10 + 1 + 1 + 1 + 50 x 0.02 = 14 $/h):
    # 17.5 $/h, 13.5 $/h dearer, and the year emits exactly the cap.
    free = solve_buildout(two_sites([100.0], None), EXACT)
    assert plan_costs(two_sites([100.0], None), free).expected_npv_usd == pytest.approx(4.0 * H)
    assert free.pair_share[:, 0, 0].tolist() == pytest.approx([1.0, 0.0])
    cap = 8760 * 0.75 * DIRTY_T_PER_MWH
    data = two_sites([100.0], cap)
    assert cap_use_per_year(data, free, data.caps[0])[0, 0] == pytest.approx(4380.0)
    assert cap_breaches(data, free) != []  # the uncapped plan is over the cap
    plan = solve_buildout(data, EXACT)
    assert violations(data, plan) == []
    assert plan.first.open[:, 0].tolist() == [True, True]
    assert plan.pair_share[:, 0, 0].tolist() == pytest.approx([0.5, 0.5])
    assert plan_costs(data, plan).expected_npv_usd == pytest.approx(17.5 * H)
    assert cap_use_per_year(data, plan, data.caps[0])[0, 0] == pytest.approx(cap)
    energy = site_energy_mwh_per_year(data, plan)[:, 0, 0]
    assert energy.tolist() == pytest.approx([8760 * 0.75, 8760 * 0.75])  # site 1: its node idle plus half its load


def test_the_cap_holds_in_every_year_and_scenario() -> None:
    # Demand 100 then 200 tok/s in the high future, 100 in the low; cap 3,285 t a year. Site 0's one node serves
    # 50 tok/s in every year and scenario; the clean site carries the rest (and more nodes in the high second year).
    demand = np.array([[100.0, 100.0], [100.0, 200.0]])
    data = two_sites([0.0, 0.0], 3285.0)
    data = replace(data, row_demand_tok_s=demand[None, None, :, :], probability=np.array([0.5, 0.5]))
    plans = solve_plans(data, EXACT)
    use = cap_use_per_year(data, plans.plan, data.caps[0])
    assert use.shape == (2, 2)
    assert (use <= 3285.0 * (1 + 1e-9)).all()
    assert use == pytest.approx(np.full((2, 2), 3285.0))
    assert plans.plan.nodes[1, 0, :, :].tolist() == [[1.0, 1.0], [1.0, 2.0]]


def test_rounding_purchases_up_is_backed_off_below_the_cap() -> None:
    # Continuous nodes, 300 tok/s, cap 6,570 t. Site 0 emits (0.5 n + 0.005 f) MW x 4,380 t: with n = f / 100 nodes
    # the LP serves f = 150 there on 1.5 nodes; two whole nodes would emit (1 + 0.75) x 4,380 = 7,665 t. The model is
    # solved again with the cap held lower until the whole-node plan is within it (site 0 back on one node).
    cap = 6570.0
    data = two_sites([300.0], cap, integer_nodes=False, power_margin_mw=np.ones(2))
    plan = solve_buildout(data, EXACT)
    assert plan.rounded
    assert violations(data, plan) == []
    assert cap_use_per_year(data, plan, data.caps[0])[0, 0] <= cap * (1 + 1e-9)
    assert plan.nodes[0, 0, 0, 0] == 1.0
    assert plan.pair_share[0, 0, 0] * 300 <= 100 + 1e-6


def test_a_plan_over_a_cap_is_refused_never_written() -> None:
    data = two_sites([100.0], 1000.0)
    free = solve_buildout(two_sites([100.0], None), EXACT)
    with pytest.raises(SolverError, match=r"the carbon cap of 1,000 tCO2e a year is broken in 1 year-scenarios"):
        checked(data, free, "stochastic plan (RP)")


def test_a_cap_the_installed_fleet_breaks_is_infeasible_and_says_which_cap() -> None:
    # Two nodes installed at the dirty site idle at 1 MW: 4,380 t a year whatever the plan does; the cap is 1,000 t.
    data = two_sites([100.0], 1000.0)
    data = replace(data, existing_nodes=np.array([[[2.0]], [[0.0]]]), site_locked=np.array([True, False]))
    plan = solve_buildout(data, SolverOptions(gap=1e-9, time_limit_s=60))
    with pytest.raises(SolverError, match=r"carbon 1,000 tCO2e\): no plan may meet them"):
        checked(data, plan, "stochastic plan (RP)")
