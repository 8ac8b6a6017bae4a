"""HiGHS from the arrays: the very model PuLP's HiGHS interface hands over, so the same search and the same answer."""

from __future__ import annotations

import dataclasses
from typing import Any

import highspy
import numpy as np
import pulp
import pytest

from placement.optimize.heuristics import greedy_design
from placement.optimize.highs_direct import load_as_pulp, pulp_layout, solve_linear
from placement.optimize.linear import LinearModel, pulp_values, to_pulp
from placement.optimize.model import placement_blocks, set_warm_start, to_placement_model, warm_start_values
from placement.optimize.problem import PlacementInput
from placement.optimize.solver import SolverOptions, solve_problem
from tests.optimize.test_linear_model import random_instance


def _through_pulp(model: LinearModel) -> Any:
    """The HiGHS object PuLP's interface loads for the model (not run)."""
    problem = to_pulp(model).problem
    solver = pulp.HiGHS(msg=False)
    solver.createAndConfigureSolver(problem)
    solver.buildSolverModel(problem)
    return problem.solverModel


def _direct(model: LinearModel) -> Any:
    highs = highspy.Highs()  # type: ignore[no-untyped-call]
    highs.setOptionValue("output_flag", False)
    load_as_pulp(model, highs)
    return highs


def _arrays(highs: Any) -> dict[str, np.ndarray]:
    """Every number of the loaded model, the matrix column-wise."""
    lp = highs.getLp()
    matrix = lp.a_matrix_
    if matrix.format_ != highspy.MatrixFormat.kColwise:
        highs.passModel(lp)  # (a no-op on the numbers) so that the matrix is read column-wise
        matrix = highs.getLp().a_matrix_
    return {
        "cost": np.asarray(lp.col_cost_),
        "col_lower": np.asarray(lp.col_lower_),
        "col_upper": np.asarray(lp.col_upper_),
        "row_lower": np.asarray(lp.row_lower_),
        "row_upper": np.asarray(lp.row_upper_),
        "integrality": np.array([int(k) for k in lp.integrality_]),
        "start": np.asarray(matrix.start_),
        "index": np.asarray(matrix.index_),
        "value": np.asarray(matrix.value_),
    }


def _same_model(a: Any, b: Any) -> None:
    left, right = _arrays(a), _arrays(b)
    for key in left:
        np.testing.assert_array_equal(left[key], right[key], err_msg=key)


def _variants(data: PlacementInput) -> list[dict[str, Any]]:
    total = float(data.mean_demand_tok_s.sum())
    return [
        {},
        {"unserved_penalty_usd_per_tok_s": 50.0},
        {"served_value_usd_per_tok_s": 0.0, "min_served_tok_s": 0.8 * total},
        {"served_value_usd_per_tok_s": 1e-3},
        {"capacity_slices": [[0], [2, 1], [], [1]]},
    ]


@pytest.mark.parametrize("seed", range(3))
def test_the_model_is_the_one_pulp_hands_over(seed: int) -> None:
    data = random_instance(seed)
    for options in _variants(data):
        model = placement_blocks(data, **options).model
        _same_model(_through_pulp(model), _direct(model))


def test_n_plus_one_models_are_the_same() -> None:
    data = dataclasses.replace(random_instance(2, n=5, m=4), fault_tolerant=True)
    for rows in ("exact", "spare"):
        model = placement_blocks(data, failover_rows=rows).model  # type: ignore[arg-type]
        _same_model(_through_pulp(model), _direct(model))


def test_a_repeated_term_keeps_its_first_place_and_last_coefficient() -> None:
    model = LinearModel("repeats")
    a = model.add_columns("a", None, upper=4.0, cost=-1.0)
    b = model.add_columns("b", None, upper=4.0, cost=-2.0)
    unused = model.add_columns("unused", None, upper=9.0)  # in no row, without cost: PuLP does not send it
    # Row 0: b + 5a + 1a (a is 1 in the end) <= 6; row 1: 0 * b + a >= 1 (the zero is dropped).
    model.add_rows("r", ["0", "1"], row=[0, 0, 0, 1, 1], col=[b.start, a.start, a.start, b.start, a.start],
                   value=[1.0, 5.0, 1.0, 0.0, 1.0], lower=[-np.inf, 1.0], upper=[6.0, np.inf])  # fmt: skip
    layout = pulp_layout(model)
    assert layout.columns.tolist() == [a.start, b.start] and layout.position[unused.start] == -1
    _same_model(_through_pulp(model), _direct(model))
    # By hand: maximise a + 2b with a + b <= 6, a >= 1, both <= 4: b = 4, a = 2, objective -10.
    report, values = solve_linear(model, SolverOptions(name="highs"), start=np.array([1.0, 1.0, 7.0]))
    assert report.objective == pytest.approx(-10.0)
    assert values.tolist() == pytest.approx([2.0, 4.0, 7.0])  # the unsent column keeps its start, as in PuLP


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("relax_first", [False, True])
def test_the_answer_is_pulps_to_the_last_bit(seed: int, relax_first: bool) -> None:
    data = random_instance(seed, n=8, m=5)
    blocks = placement_blocks(data)
    greedy = greedy_design(data)
    assert greedy is not None
    options = SolverOptions(name="highs", gap=1e-4, relax_first=relax_first)
    pulp_model = to_placement_model(placement_blocks(data))
    set_warm_start(pulp_model, data, greedy)
    pulp_report = solve_problem(pulp_model.problem, options, warm_start=True)
    report, values = solve_linear(blocks.model, options, start=warm_start_values(blocks, data, greedy))
    assert report.status == pulp_report.status
    if not report.status.has_solution:
        return
    assert report.objective == pulp_report.objective and report.best_bound == pulp_report.best_bound
    assert report.message == pulp_report.message
    np.testing.assert_array_equal(values, pulp_values(pulp_model.variables))


def test_cbc_goes_through_pulp_to_the_same_optimum() -> None:
    data = random_instance(1)
    blocks = placement_blocks(data)
    highs_report, _ = solve_linear(blocks.model, SolverOptions(name="highs", gap=1e-9))
    cbc_report, values = solve_linear(blocks.model, SolverOptions(name="cbc", gap=1e-9))
    assert cbc_report.solver == "cbc"
    assert cbc_report.objective == pytest.approx(highs_report.objective, rel=1e-6)
    assert blocks.model.cost() @ values == pytest.approx(cbc_report.objective, rel=1e-6)
