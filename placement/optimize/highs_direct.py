"""A linear model solved in HiGHS from its arrays, laid out exactly as PuLP's HiGHS interface lays it out.

PuLP's in-process HiGHS interface (``pulp.HiGHS``) hands HiGHS

- one column per variable the objective or a constraint names, numbered in ``LpProblem.variables()`` order: sorted
  by name;
- the constraints in the order they were added, each one's terms in its expression's order (a repeated variable
  keeps its first place and its last coefficient), zero coefficients dropped;
- a constraint's sides as PuLP holds them: ``-(0.0 - rhs)``;
- the objective's coefficient of each column, integrality, and the options of :class:`pulp.HiGHS`.

Writing a :class:`~placement.optimize.linear.LinearModel` as PuLP objects first is a large part of the solve it
feeds: the bundled world's solve spent 0.6 s of its 2.3 s in PuLP (building the variables and expressions, handing
them over, reading the values back). :func:`solve_linear` writes the same HiGHS model straight from the arrays: the
same columns in the same order, the same rows and the same options, so HiGHS runs the same search and returns the
same answer (``tests/optimize/test_highs_direct.py`` compares the two loaded models number by number, and the answers
bit for bit). CBC still goes through PuLP.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize.linear import LinearModel, RowBlock, pulp_row_kinds, pulp_values, to_pulp
from placement.optimize.relax_fix import FixedAnswer, relax_and_fix
from placement.optimize.solver import SolverOptions, SolverReport, _quiet_stdout, highs_report, solve_problem

if TYPE_CHECKING:
    import highspy

__all__ = ["HighsLayout", "load_as_pulp", "pulp_layout", "solve_linear"]


@dataclass(frozen=True)
class HighsLayout:
    """Where PuLP's HiGHS interface puts a model's columns.

    Parameters
    ----------
    columns : numpy.ndarray of int
        The model's global column of each HiGHS column, in HiGHS's order (the variables' names sorted).
    position : numpy.ndarray of int
        ``(n_cols,)`` HiGHS column of each of the model's columns, -1 for one PuLP does not send (named by no row
        and without cost).
    integer : numpy.ndarray of bool
        Whether each HiGHS column is integer.
    """

    columns: IntArray
    position: IntArray
    integer: BoolArray

    @property
    def is_mip(self) -> bool:
        """Whether any column sent is integer (PuLP's ``isMIP``)."""
        return bool(self.integer.any())


def pulp_layout(model: LinearModel) -> HighsLayout:
    """The columns PuLP would send to HiGHS for ``model``, in its order.

    Parameters
    ----------
    model : LinearModel
        The model.

    Returns
    -------
    HighsLayout
        The columns sent and where each goes.

    Raises
    ------
    ValueError
        When two columns sent share a name (PuLP would order them by first appearance, which this does not model).
    """
    named = model.cost() != 0.0
    for block in model.row_blocks:
        named[block.col] = True
    sent = np.flatnonzero(named)
    names = [name for block in model.columns for name in block.names]
    order = sorted(sent.tolist(), key=names.__getitem__)
    if len({names[k] for k in order}) != len(order):
        raise ValueError(f"model '{model.name}': two columns share a name; PuLP's order of them is not modelled")
    columns = np.asarray(order, dtype=np.int64)
    position = np.full(model.n_cols, -1, dtype=np.int64)
    position[columns] = np.arange(len(columns))
    integer = np.concatenate([np.full(b.size, b.integer) for b in model.columns]) if model.columns else np.zeros(0, bool)
    return HighsLayout(columns, position, integer[columns])


def _row_terms(block: RowBlock) -> tuple[IntArray, IntArray, FloatArray]:
    """A block's terms as PuLP keeps them: by row, in triplet order, a repeat at its first place with its last value."""
    order = np.argsort(block.row, kind="stable")
    row, col, value = block.row[order], block.col[order], block.value[order]
    key = row * (int(col.max()) + 1 if len(col) else 1) + col
    first = np.unique(key, return_index=True)[1]
    if len(first) != len(key):  # repeats: first place, last coefficient (a dict built from the terms)
        last = len(key) - 1 - np.unique(key[::-1], return_index=True)[1]
        keep = np.sort(first)
        value = value.copy()
        value[first] = value[last]
        row, col, value = row[keep], col[keep], value[keep]
    nonzero = value != 0.0
    return row[nonzero], col[nonzero], value[nonzero]


def _row_sides(block: RowBlock) -> tuple[FloatArray, FloatArray]:
    """Each row's lower and upper side as PuLP's constraint holds them (``-(0.0 - rhs)``; none: infinite)."""
    _, at_most, at_least = pulp_row_kinds(block)
    side = -(0.0 - np.where(at_most, block.upper, block.lower))
    return np.where(at_most, -np.inf, side), np.where(at_least, np.inf, side)


def load_as_pulp(model: LinearModel, highs: highspy.Highs) -> HighsLayout:
    """Write ``model`` into an empty HiGHS object as PuLP's HiGHS interface would (see the module's notes).

    Parameters
    ----------
    model : LinearModel
        The model (minimised; its objective constant is not sent, as PuLP does not send it).
    highs : highspy.Highs
        Empty; its options are the caller's.

    Returns
    -------
    HighsLayout
        Where each column went.
    """
    import highspy

    layout = pulp_layout(model)
    cols = layout.columns
    lower, upper = model.bounds()
    finite_lower, finite_upper = np.isfinite(lower[cols]), np.isfinite(upper[cols])
    col_lower = np.where(finite_lower, lower[cols], -np.inf)  # PuLP: a bound that is not finite is none
    col_upper = np.where(finite_upper, upper[cols], np.inf)
    cost = model.cost()[cols]
    highs.addCols(len(cols), np.where(cost != 0.0, cost, 0.0), col_lower, col_upper, 0, np.zeros(0, np.int32),
                  np.zeros(0, np.int32), np.zeros(0))  # fmt: skip
    if layout.is_mip:
        index = np.flatnonzero(layout.integer).astype(np.int32)
        kinds = np.full(len(index), int(highspy.HighsVarType.kInteger), dtype=np.uint8)
        highs.changeColsIntegrality(len(index), index, kinds)
    for block in model.row_blocks:
        row, col, value = _row_terms(block)
        starts = np.searchsorted(row, np.arange(block.size)).astype(np.int32)
        row_lower, row_upper = _row_sides(block)
        highs.addRows(block.size, row_lower, row_upper, len(row), starts, layout.position[col].astype(np.int32), value)
    return layout


def _configured(options: SolverOptions, time_limit_s: float | None) -> highspy.Highs:
    """An empty HiGHS object with the options :class:`pulp.HiGHS` would set for ``options``."""
    import highspy

    with _quiet_stdout(not options.msg):
        highs = highspy.Highs()  # type: ignore[no-untyped-call]
        if not options.msg:
            highs.setOptionValue("output_flag", False)
    highs.setOptionValue("mip_rel_gap", options.gap)
    if options.abs_gap is not None:
        highs.setOptionValue("mip_abs_gap", options.abs_gap)
    highs.setOptionValue("threads", options.threads)
    if time_limit_s is not None:
        highs.setOptionValue("time_limit", float(time_limit_s))
    highs.setOptionValue("random_seed", options.random_seed)
    if options.node_limit is not None:
        highs.setOptionValue("mip_max_nodes", options.node_limit)
    if options.iteration_limit is not None:
        highs.setOptionValue("simplex_iteration_limit", options.iteration_limit)
    return highs


def _set_start(highs: highspy.Highs, start: FloatArray) -> None:
    import highspy

    solution = highspy.HighsSolution()
    solution.col_value = start.tolist()
    solution.value_valid = True
    highs.setSolution(solution)


def _run(
    highs: highspy.Highs, options: SolverOptions, start: FloatArray | None, time_limit_s: float | None
) -> FixedAnswer | None:
    """The search ``solve_problem`` runs: relax and fix first (``relax_first``), else from the start when given."""
    fixed = None
    if options.relax_first:
        fixed = relax_and_fix(highs, time_limit_s=time_limit_s)
        if fixed is not None and math.isfinite(fixed.objective):
            if not fixed.certifies(options.gap):
                highs.run()  # the full MILP from the fixed answer, which relax_and_fix left as the start
            return fixed
    if start is not None:
        _set_start(highs, start)
    highs.run()
    return fixed


def solve_linear(
    model: LinearModel, options: SolverOptions, *, start: FloatArray | None = None
) -> tuple[SolverReport, FloatArray]:
    """Solve a linear model: HiGHS from the arrays (as PuLP would hand it over), CBC through PuLP.

    Parameters
    ----------
    model : LinearModel
        The model, minimised.
    options : SolverOptions
        Solver, limits and verbosity (as :func:`~placement.optimize.solver.solve_problem` takes them).
    start : numpy.ndarray, optional
        ``(n_cols,)`` starting value of each column, NaN where none: handed to the solver only when every column
        sent has one (as PuLP hands over its variables' initial values).

    Returns
    -------
    SolverReport
        What the solver proved.
    numpy.ndarray
        ``(n_cols,)`` value of each column: the solver's, or for a column no row names and without cost its starting
        value (0 without one), as PuLP leaves such a variable.
    """
    if options.name != "highs":
        return _solve_through_pulp(model, options, start)
    tic = time.perf_counter()
    time_limit_s = options.remaining_s()  # read once, as PuLP's solver object is made once
    highs = _configured(options, time_limit_s)
    layout = load_as_pulp(model, highs)
    sent_start = None if start is None else start[layout.columns]
    if sent_start is not None and np.isnan(sent_start).any():
        sent_start = None
    with _quiet_stdout(not options.msg):
        fixed = _run(highs, options, sent_start, time_limit_s)
    report = highs_report(highs, options, fixed, is_mip=layout.is_mip, runtime_s=time.perf_counter() - tic)
    values = np.zeros(model.n_cols) if start is None else np.nan_to_num(start, nan=0.0)
    solved = np.asarray(highs.getSolution().col_value)
    if len(solved) == len(layout.columns):  # none without a solution
        values[layout.columns] = solved
    return report, values


def _solve_through_pulp(model: LinearModel, options: SolverOptions, start: FloatArray | None) -> tuple[SolverReport, FloatArray]:
    """The model written as a PuLP problem and solved there (CBC)."""
    written = to_pulp(model)
    if start is not None:
        for var, value in zip(written.variables, start.tolist(), strict=True):
            if not math.isnan(value):
                var.setInitialValue(value)
    report = solve_problem(written.problem, options, warm_start=start is not None)
    return report, pulp_values(written.variables)
