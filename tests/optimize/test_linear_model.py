"""The one linear model and its exporters: the placement rows by hand, and PuLP and HiGHS giving the same model."""

from __future__ import annotations

import dataclasses

import numpy as np
import pulp
import pytest

from placement.optimize import rows
from placement.optimize.linear import HighsSync, LinearModel, new_highs, pulp_values, solve_by_pricing, to_highspy, to_pulp
from placement.optimize.model import build_model, placement_blocks
from placement.optimize.problem import PlacementInput
from placement.optimize.solver import SolverOptions, SolveStatus, solve_problem


def two_sites(**options: object) -> PlacementInput:
    """Two commodities, two sites, two slices; commodity 1 reaches site 1 only."""
    return PlacementInput(
        slice_demand_tok_s=np.array([[10_000.0, 30_000.0], [20_000.0, 5_000.0]]),
        slice_hours=np.array([12.0, 12.0]),
        pair_commodity=np.array([0, 0, 1], dtype=np.int64),
        pair_site=np.array([0, 1, 1], dtype=np.int64),
        pair_nodes_per_tok_s=np.array([1e-4, 2e-4, 1e-4]),
        pair_rtt_ms=np.array([5.0, 9.0, 4.0]),
        pair_cost_usd_per_h=np.array([1.0, 2.0, 3.0]),
        site_fixed_usd_per_h=np.array([100.0, 80.0]),
        site_node_usd_per_h=np.array([10.0, 12.0]),
        site_node_mw=np.array([0.01, 0.02]),
        site_mw_available=np.array([0.1, 0.2]),
        site_locked=np.array([False, False]),
        **options,  # type: ignore[arg-type]
    )


def _row(problem: pulp.LpProblem, name: str) -> dict[str, float]:
    constraint = problem.get_constraint_by_name(name)
    assert constraint is not None, name
    return {var.name: coefficient for var, coefficient in constraint.items()}


def test_two_site_rows_by_hand() -> None:
    data = two_sites()
    problem = build_model(data).problem
    names = list(problem._constraints)
    # demand (2), linking (3), capacity (site 0: slice 1 dominates slice 0; site 1: neither dominates), power (2)
    assert names == [
        "demand_0", "demand_1", "link_0_0", "link_0_1", "link_1_1",
        "capacity_0_1", "capacity_1_0", "capacity_1_1", "power_0", "power_1",
    ]  # fmt: skip
    assert _row(problem, "demand_0") == {"flow_0_0": 1.0, "flow_0_1": 1.0}
    assert _row(problem, "link_0_1") == {"flow_0_1": 1.0, "open_1": -1.0}
    # site 1, slice 0: commodity 0 at 10,000 tok/s x 2e-4, commodity 1 at 20,000 x 1e-4 node-equivalents
    assert _row(problem, "capacity_1_0") == pytest.approx({"flow_0_1": 2.0, "flow_1_1": 2.0, "nodes_1": -1.0})
    assert _row(problem, "capacity_1_1") == pytest.approx({"flow_0_1": 6.0, "flow_1_1": 0.5, "nodes_1": -1.0})
    assert _row(problem, "power_1") == {"nodes_1": 0.02, "open_1": -0.2}
    assert problem.get_constraint_by_name("power_1").sense == pulp.LpConstraintLE  # type: ignore[union-attr]
    objective = {var.name: c for var, c in problem.objective.items()}
    assert objective == {"open_0": 100.0, "open_1": 80.0, "nodes_0": 10.0, "nodes_1": 12.0,
                         "flow_0_0": 1.0, "flow_0_1": 2.0, "flow_1_1": 3.0}  # fmt: skip
    variables = {v.name: v for v in problem.variables()}
    assert variables["nodes_1"].upBound == 10 and variables["nodes_1"].cat == pulp.LpInteger
    assert variables["flow_0_1"].lowBound == 0 and variables["flow_0_1"].upBound is None


def test_two_site_n_plus_one_rows_by_hand() -> None:
    data = two_sites(fault_tolerant=True)  # only commodity 0 has two sites: protect it alone
    data = dataclasses.replace(data, protect=np.array([True, False]))
    problem = build_model(data).problem
    assert _row(problem, "cover2_0") == {"open_0": 1.0, "open_1": 1.0}
    # peak load: commodity 0 at 30,000 tok/s x 1e-4 at site 0, x 2e-4 at site 1; commodity 1 at 20,000 x 1e-4
    assert _row(problem, "site_peak_1") == pytest.approx({"flow_0_1": 6.0, "flow_1_1": 2.0, "site_peak_1": -1.0})
    assert _row(problem, "reroute_0_0") == {"failover_0_1": 1.0, "flow_0_0": -1.0}
    assert _row(problem, "failover_cap_0_1") == pytest.approx({"failover_0_1": 6.0, "site_peak_1": 1.0, "nodes_1": -1.0})
    spare = build_model(data, failover_rows="spare").problem
    assert _row(spare, "spare_0") == pytest.approx({"flow_0_0": 3.0, "nodes_1": -1.0, "site_peak_1": 1.0})
    assert "failover_0_1" not in {v.name for v in spare.variables()}


def test_site_count_and_served_rows() -> None:
    data = two_sites(min_sites_open=1, max_sites_open=1)
    problem = build_model(data, served_value_usd_per_tok_s=1e-3, min_served_tok_s=100.0).problem
    assert _row(problem, "min_sites_open") == {"open_0": 1.0, "open_1": 1.0}
    assert problem.get_constraint_by_name("max_sites_open").getUb() == 1.0  # type: ignore[union-attr]
    mean = data.mean_demand_tok_s  # 20,000 and 12,500 tok/s
    assert _row(problem, "min_served") == pytest.approx({"flow_0_0": mean[0], "flow_0_1": mean[0], "flow_1_1": mean[1]})
    objective = {var.name: c for var, c in problem.objective.items()}
    assert objective["flow_1_1"] == pytest.approx(3.0 - 1e-3 * mean[1])  # one coefficient per share


def random_instance(seed: int, n: int = 6, m: int = 4, slices: int = 3) -> PlacementInput:
    rng = np.random.default_rng(seed)
    allowed = rng.uniform(size=(n, m)) < 0.7
    allowed[np.arange(n), rng.integers(0, m, n)] = True
    pair_c, pair_s = (a.astype(np.int64) for a in np.nonzero(allowed))
    return PlacementInput(
        slice_demand_tok_s=rng.uniform(1_000, 20_000, (n, slices)),
        slice_hours=np.full(slices, 24.0 / slices),
        pair_commodity=pair_c,
        pair_site=pair_s,
        pair_nodes_per_tok_s=rng.uniform(5e-5, 2e-4, len(pair_c)),
        pair_rtt_ms=rng.uniform(1, 50, len(pair_c)),
        pair_cost_usd_per_h=rng.uniform(0, 5, len(pair_c)),
        site_fixed_usd_per_h=rng.uniform(50, 200, m),
        site_node_usd_per_h=rng.uniform(8, 14, m),
        site_node_mw=np.full(m, 0.01),
        site_mw_available=rng.uniform(0.05, 0.3, m),
        site_locked=np.zeros(m, dtype=bool),
    )


def _highs_solution(highs: object) -> tuple[float, np.ndarray, np.ndarray]:
    highs.run()  # type: ignore[attr-defined]
    assert highs.modelStatusToString(highs.getModelStatus()) == "Optimal"  # type: ignore[attr-defined]
    solution = highs.getSolution()  # type: ignore[attr-defined]
    objective = float(highs.getInfo().objective_function_value)  # type: ignore[attr-defined]
    return objective, np.asarray(solution.col_value), np.asarray(solution.row_value)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("elastic", [False, True])
def test_pulp_and_highspy_exports_are_the_same_model(seed: int, elastic: bool) -> None:
    data = random_instance(seed)
    blocks = placement_blocks(data, unserved_penalty_usd_per_tok_s=50.0 if elastic else None)
    for block in blocks.model.columns:
        block.integer = False  # the LP: a unique optimum value and row activities to compare
    exported = to_pulp(blocks.model)
    report = solve_problem(exported.problem, SolverOptions(name="highs"))
    if not report.status.has_solution:
        pytest.skip("an infeasible draw")
    objective, x, activity = _highs_solution(to_highspy(blocks.model))
    assert report.status == SolveStatus.OPTIMAL
    assert objective == pytest.approx(report.objective, rel=1e-9, abs=1e-9)
    # Same columns (by name), and every row's activity computed from the arrays matches HiGHS's.
    x_pulp = pulp_values(exported.variables)
    assert activity == pytest.approx(blocks.model.activities(x), abs=1e-7)
    assert blocks.model.cost() @ x_pulp == pytest.approx(objective, rel=1e-9)
    lower, upper = blocks.model.row_bounds()
    pulp_activity = blocks.model.activities(x_pulp)
    assert (pulp_activity >= lower - 1e-6).all() and (pulp_activity <= upper + 1e-6).all()


def test_highspy_keeps_integrality_and_numbering() -> None:
    data = random_instance(1)
    blocks = placement_blocks(data)
    highs = to_highspy(blocks.model)
    lp = highs.getLp()
    assert lp.num_col_ == blocks.model.n_cols and lp.num_row_ == blocks.model.n_rows
    integrality = [int(v) for v in lp.integrality_]
    assert integrality[blocks.open.start] == 1 and integrality[blocks.shares.start] == 0
    milp, _, _ = _highs_solution(highs)
    report = solve_problem(build_model(data).problem, SolverOptions(name="highs", gap=1e-9))
    assert milp == pytest.approx(report.objective, rel=1e-6)


def test_highs_sync_adds_priced_columns_like_a_full_export() -> None:
    # Two pairs first, a third priced in later: its coefficient goes into the demand row already in HiGHS.
    pair_c, pair_s = np.array([0, 1, 0]), np.array([0, 1, 1])
    model = LinearModel("grown")
    opens = rows.open_columns(model, 2, cost=np.array([5.0, 1.0]))
    first = model.add_columns("flow", ["0_0", "1_1"], cost=np.array([3.0, 1.0]))
    demand = rows.demand_rows(model, first.cols, pair_c[:2], np.ones(2))
    rows.linking_rows(model, first.cols, opens.cols, pair_c[:2], pair_s[:2], np.ones(2))
    sync = HighsSync(model, new_highs())
    grown, _, _ = _highs_solution(sync.sync())
    assert grown == pytest.approx(5.0 + 3.0 + 1.0 + 1.0)
    later = model.add_columns("flow", ["0_1"], cost=np.array([1.0]))
    demand.extend([0], later.cols, [1.0])
    rows.linking_rows(model, later.cols, opens.cols, pair_c[2:], pair_s[2:], np.ones(2))
    grown, _, row_value = _highs_solution(sync.sync())
    full, _, full_rows = _highs_solution(to_highspy(model))
    assert grown == pytest.approx(full) and full == pytest.approx(1.0 + 1.0 + 1.0)  # site 1 serves both
    assert row_value == pytest.approx(full_rows)
    assert list(to_pulp(model).problem._constraints) == ["demand_0", "demand_1", "link_0_0", "link_1_1", "link_0_1"]


def test_pulp_export_refuses_a_ranged_row() -> None:
    model = LinearModel("ranged")
    x = model.add_columns("x", ["0"])
    model.add_rows("r", None, row=[0], col=x.cols, value=[1.0], lower=1.0, upper=2.0)
    with pytest.raises(ValueError, match="one finite side"):
        to_pulp(model)


def test_lazy_capacity_slices_are_a_subset_of_the_rows() -> None:
    data = random_instance(2)
    full = set(build_model(data).problem._constraints)
    lazy = set(build_model(data, capacity_slices=[[0], [2, 1], [], [1]]).problem._constraints)
    assert {n for n in lazy if n.startswith("capacity_")} == {"capacity_0_0", "capacity_1_2", "capacity_1_1", "capacity_3_1"}
    assert {n for n in full - lazy} == {n for n in full if n.startswith("capacity_")} - lazy


def test_fixed_design_capacity_and_power_rows_bound_by_value() -> None:
    data = two_sites()
    model = LinearModel("fixed")
    shares = rows.share_columns(model, data.pair_commodity, data.pair_site)
    nodes = model.add_columns("nodes", ["0", "1"])
    load = data.pair_slice_load()
    capacity = rows.capacity_rows(model, shares.cols, data.pair_site, load, None, np.array([4.0, 7.0]),
                                  np.array([1, 1]), np.array([0, 1]))  # fmt: skip
    power = rows.power_rows(model, nodes.cols, None, data.site_node_mw, np.array([0.0, 0.2]))
    assert capacity.upper.tolist() == [7.0, 7.0] and power.upper.tolist() == [0.0, 0.2]
    assert _row(to_pulp(model).problem, "capacity_1_1") == pytest.approx({"flow_0_1": 6.0, "flow_1_1": 0.5})
    assert _row(to_pulp(model).problem, "power_1") == {"nodes_1": 0.02}


def _three_ways() -> LinearModel:
    """One unit of demand over three routes costing 3, 1 and 2, the cheapest capped at 0.4, and a fourth costing 5."""
    lm = LinearModel("three_ways")
    x = lm.add_columns("x", ["a", "b", "c", "d"], cost=[3.0, 1.0, 2.0, 5.0], upper=1.0)
    lm.add_rows("demand", None, row=[0, 0, 0, 0], col=x.cols, value=np.ones(4), lower=1.0, upper=1.0)
    lm.add_rows("cap_b", None, row=[0], col=[x.cols[1]], value=[1.0], upper=0.4)
    return lm


def test_pricing_reaches_the_hand_worked_optimum_from_one_column() -> None:
    # From route a alone (cost 3): the duals price in b and c; the optimum is b at its cap, c the rest: 0.4 + 1.2.
    status, x = solve_by_pricing(_three_ways(), np.array([True, False, False, False]))
    assert status == "Optimal"
    np.testing.assert_allclose(x, [0.0, 0.4, 0.6, 0.0], atol=1e-9)
    assert x @ _three_ways().cost() == pytest.approx(1.6)


@pytest.mark.parametrize("seed", range(4))
def test_pricing_matches_the_lp_over_every_column(seed: int) -> None:
    # A transportation LP: every commodity's demand met, sites within capacity; pricing from one feasible
    # column per commodity (an uncapacitated dear one) reaches the same optimum as HiGHS over every column.
    rng = np.random.default_rng(seed)
    n, m = 30, 6
    lm = LinearModel("transport")
    commodity, site = np.repeat(np.arange(n), m + 1), np.tile(np.arange(m + 1), n)
    cost = np.where(site == m, 1e3, rng.uniform(1.0, 50.0, len(site)))
    demand = rng.uniform(1.0, 5.0, n)
    x = lm.add_columns("x", [f"{c}_{j}" for c, j in zip(commodity, site, strict=True)], cost=cost)
    lm.add_rows(
        "demand",
        row=commodity,
        col=x.cols,
        value=np.ones(len(site)),
        lower=demand,
        upper=demand,
        size=n,
        labels=[str(c) for c in range(n)],
    )
    real = site < m
    lm.add_rows(
        "cap",
        row=site[real],
        col=x.cols[real],
        value=np.ones(real.sum()),
        upper=demand.sum() / m * 1.2,
        labels=[str(j) for j in range(m)],
    )
    highs = to_highspy(lm)
    highs.run()
    status, values = solve_by_pricing(lm, site == m)
    assert status == "Optimal"
    assert values @ cost == pytest.approx(highs.getInfo().objective_function_value, rel=1e-9)
    assert np.all(lm.activities(values)[:n] == pytest.approx(demand))
    assert values[site == m].sum() == pytest.approx(0.0, abs=1e-9)  # the dear route priced out


def test_pricing_needs_columns_bounded_below_by_zero() -> None:
    lm = LinearModel("shifted")
    lm.add_columns("x", ["a"], lower=1.0, cost=1.0)
    with pytest.raises(ValueError, match="bounded below by 0"):
        solve_by_pricing(lm, np.array([True]))


@pytest.mark.parametrize("seed", range(3))
def test_the_column_matrix_is_the_triplets_summed(seed: int) -> None:
    model = placement_blocks(random_instance(seed), unserved_penalty_usd_per_tok_s=50.0).model
    twice = model.add_rows("twice", None, row=np.zeros(2), col=np.array([0, 0]), value=np.array([1.5, 2.0]), upper=1.0)
    rows, cols, values = model.triplets()
    matrix = model.column_matrix()
    assert matrix.shape == (model.n_rows, model.n_cols) and matrix.indices.dtype == np.int32
    dense = np.zeros(matrix.shape)
    np.add.at(dense, (rows, cols), values)
    np.testing.assert_array_equal(matrix.toarray(), dense)
    assert matrix[twice.start, 0] == 3.5  # one column twice in a row: summed
