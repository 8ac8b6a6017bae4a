"""The build-out model on the linear model: its rows against the solved plan, and the exporter options it needs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pulp
import pytest

from placement.optimize import rows
from placement.optimize.buildout.model import build_model, create_model
from placement.optimize.buildout.solve import read_solution
from placement.optimize.linear import LinearModel, pulp_values, to_pulp
from placement.optimize.solver import SolverOptions, solve_problem
from tests.buildout.test_model import instance


def test_to_pulp_interleaves_unnamed_rows_and_keeps_zero_costs_and_the_constant() -> None:
    lm = LinearModel("m", objective_constant=5.0)
    x = lm.add_columns("x", ["0", "1"], cost=[0.0, 2.0])
    y = lm.add_columns("y", ["0"], cost=0.0)
    lm.add_rows("a", ["0", "1"], row=[0, 1], col=[x.start, x.start + 1], value=[1.0, 1.0], upper=[1.0, 2.0])
    lm.add_rows("b", ["0"], row=[0], col=[y.start], value=[1.0], lower=3.0)
    p = to_pulp(lm, row_order=np.array([0, 2, 1]), named_rows=False, objective=[x, y]).problem
    assert list(p._constraints) == ["_C1", "_C2", "_C3"]
    assert [c.getUb() for c in p._constraints.values()] == [1.0, None, 2.0]  # a_0, b_0, a_1
    assert {v.name: c for v, c in p.objective.items()} == {"x_0": 0.0, "x_1": 2.0, "y_0": 0.0}
    assert p.objective.constant == 5.0
    default = to_pulp(lm).problem
    assert list(default._constraints) == ["a_0", "a_1", "b_0"]
    assert {v.name for v in default.objective} == {"x_1"}


def test_capacity_rows_take_several_granting_columns_per_site() -> None:
    lm = LinearModel("m")
    load = lm.add_columns("load", ["0", "1"])
    fleet = lm.add_columns("fleet", ["0", "1", "2"])
    block = rows.capacity_rows(
        lm,
        load.cols,
        np.array([0, 1]),
        np.array([[2.0], [3.0]]),
        None,
        np.array([1.0, 0.0]),
        np.array([0, 1]),
        np.array([0, 0]),
        granted=(np.array([0, 0, 1]), fleet.cols, np.ones(3)),
    )
    assert block.upper.tolist() == [1.0, 0.0]
    dense = np.zeros((2, lm.n_cols))
    np.add.at(dense, (block.row, block.col), block.value)
    assert dense.tolist() == [[2.0, 0.0, -1.0, -1.0, 0.0], [0.0, 3.0, 0.0, 0.0, -1.0]]


@pytest.mark.parametrize("relax", [False, True])
def test_the_solved_plan_keeps_every_row_of_the_array_model_and_its_objective(relax: bool) -> None:
    data = instance([[100, 150], [100, 300], [200, 250]], mw=[[1, 2, 2], [5, 5, 5]], fixed=[10, 20], goodput=[100.0, 150.0])
    existing = np.zeros((2, 2, 3))
    existing[0, 0, :] = 1.0  # an installed node at site 0: its draw and running cost are the rows' constants
    data = replace(data, existing_nodes=existing)
    pm, bm = create_model(data, relax=relax)
    report = solve_problem(pm.problem, SolverOptions(gap=1e-9, time_limit_s=60))
    assert report.status.has_solution
    x = pulp_values(pm.variables)
    lower, upper = bm.model.row_bounds()
    activity = bm.model.activities(x)
    assert (activity >= lower - 1e-6).all() and (activity <= upper + 1e-6).all()
    assert float(bm.model.cost() @ x) + bm.model.objective_constant == pytest.approx(pulp.value(pm.problem.objective))
    plan = read_solution(data, pm, bm, report)
    served = plan.served_tok_s.sum(axis=(0, 1, 2, 5))  # (Y, S): every token served is a demand row's share
    assert served == pytest.approx(data.row_demand_tok_s[0, 0] * (1 - plan.unserved_share[0]))


def test_rows_are_written_site_by_site_and_year_by_year() -> None:
    data = instance([100, 100, 200], mw=[[1, 1, 1], [5, 5, 5]], fixed=[10, 20])
    bm = build_model(data)
    order = bm.rows.order()
    assert sorted(order.tolist()) == list(range(bm.model.n_rows))
    first = bm.model.row_blocks[0]  # MW reserved within power at open sites: site 0 year 0 comes first
    assert order[0] == first.start
    names = [b.prefix for b in bm.model.row_blocks]
    assert names == ["power", "keep_open", "keep_mw", "draw", "running", "demand", "serve", "capacity"]
