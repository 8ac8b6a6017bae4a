"""One linear model on arrays, written out to PuLP or to HiGHS: every LP and MILP of the package is built here.

In the manner of linopy's one ``Model`` with its exporters, a :class:`LinearModel` holds

- *column blocks* (:class:`ColumnBlock`): a name prefix and a label per column, lower and upper bounds
  (``-inf`` / ``inf`` for none), an objective coefficient, integrality;
- *row blocks* (:class:`RowBlock`): a name prefix and a label per row, lower and upper bounds, and the
  coefficients as COO triplets (local row, global column, value).

Columns and rows are numbered in the order their blocks were added. :func:`to_pulp` writes the model as a
:class:`pulp.LpProblem`: one variable per column named ``prefix_label``, one constraint per row in row order,
each row's terms in the order its triplets were given (PuLP keeps a repeated variable's last coefficient),
the objective over the columns with a non-zero cost. :func:`to_highspy` writes it into a ``highspy.Highs``
with the same numbering (columns in CSC form, built by sorting); :class:`HighsSync` keeps a HiGHS object in
step with a model that grows (columns priced in, rows cut in).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pulp
import scipy.sparse
from numpy.typing import ArrayLike, NDArray

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize.solver import _quiet_stdout

if TYPE_CHECKING:
    import highspy


def _names(prefix: str, labels: list[str] | None, size: int) -> list[str]:
    if labels is None:
        if size != 1:
            raise ValueError(f"block '{prefix}' of {size} entries needs labels")
        return [prefix]
    if len(labels) != size:
        raise ValueError(f"block '{prefix}': {len(labels)} labels for {size} entries")
    return [f"{prefix}_{label}" for label in labels]


def _full(value: ArrayLike, size: int) -> FloatArray:
    return np.broadcast_to(np.asarray(value, dtype=float), (size,)).copy()


@dataclass
class ColumnBlock:
    """Columns sharing a name prefix: ``names[k]`` is global column ``start + k``.

    Parameters
    ----------
    prefix : str
        Name prefix (``"open"``, ``"flow"``, ...).
    names : list of str
        Variable name of each column.
    start : int
        Global index of the first column.
    lower, upper : numpy.ndarray
        Bounds (``-inf`` / ``inf``: none). Change them in place before exporting.
    cost : numpy.ndarray
        Objective coefficient of each column.
    integer : bool
        Integer columns (binary when bounded by 0 and 1).
    """

    prefix: str
    names: list[str]
    start: int
    lower: FloatArray
    upper: FloatArray
    cost: FloatArray
    integer: bool = False

    @property
    def size(self) -> int:
        """Number of columns."""
        return len(self.names)

    @property
    def cols(self) -> IntArray:
        """Global index of every column of the block."""
        return np.arange(self.start, self.start + self.size, dtype=np.int64)

    def fix(self, values: ArrayLike) -> None:
        """Fix every column at a value (both bounds)."""
        self.lower = _full(values, self.size)
        self.upper = self.lower.copy()


@dataclass
class RowBlock:
    """Rows sharing a name prefix: ``names[k]`` is global row ``start + k``.

    Parameters
    ----------
    prefix : str
        Name prefix.
    names : list of str
        Constraint name of each row.
    start : int
        Global index of the first row.
    lower, upper : numpy.ndarray
        Bounds of each row's activity (``-inf`` / ``inf``: none; equal: an equality).
    row, col, value : numpy.ndarray
        Coefficients as triplets: row local to the block, column global. A row's terms keep the order
        of its triplets.
    """

    prefix: str
    names: list[str]
    start: int
    lower: FloatArray
    upper: FloatArray
    row: IntArray
    col: IntArray
    value: FloatArray

    @property
    def size(self) -> int:
        """Number of rows."""
        return len(self.names)

    @property
    def rows(self) -> IntArray:
        """Global index of every row of the block."""
        return np.arange(self.start, self.start + self.size, dtype=np.int64)

    def extend(self, row: ArrayLike, col: ArrayLike, value: ArrayLike) -> None:
        """Append coefficients (e.g. of columns priced in later); they follow each row's earlier terms."""
        self.row = np.concatenate([self.row, np.asarray(row, dtype=np.int64)])
        self.col = np.concatenate([self.col, np.asarray(col, dtype=np.int64)])
        self.value = np.concatenate([self.value, np.asarray(value, dtype=float)])


@dataclass
class LinearModel:
    """Column blocks and row blocks of one LP or MILP, minimised.

    Parameters
    ----------
    name : str
        The model's name (the PuLP problem's).
    objective_constant : float, optional
        A constant added to the objective (costs no column carries, e.g. an installed fleet's running cost).
    """

    name: str
    columns: list[ColumnBlock] = field(default_factory=list)
    row_blocks: list[RowBlock] = field(default_factory=list)
    n_cols: int = 0
    n_rows: int = 0
    objective_constant: float = 0.0

    def add_columns(
        self,
        prefix: str,
        labels: list[str] | None,
        *,
        lower: ArrayLike = 0.0,
        upper: ArrayLike = np.inf,
        cost: ArrayLike = 0.0,
        integer: bool = False,
        size: int | None = None,
    ) -> ColumnBlock:
        """Add a block of columns named ``prefix_label`` (one unlabelled column is named ``prefix``).

        Parameters
        ----------
        prefix : str
            Name prefix.
        labels : list of str or None
            One label per column (None: a single column).
        lower, upper, cost : array_like, optional
            Bounds and objective coefficients (scalars broadcast).
        integer : bool, optional
            Integer columns.
        size : int, optional
            Number of columns (default: the number of labels).

        Returns
        -------
        ColumnBlock
            The block, numbered after every column added before.
        """
        n = (1 if labels is None else len(labels)) if size is None else size
        block = ColumnBlock(
            prefix, _names(prefix, labels, n), self.n_cols, _full(lower, n), _full(upper, n), _full(cost, n), integer
        )
        self.columns.append(block)
        self.n_cols += n
        return block

    def add_rows(
        self,
        prefix: str,
        labels: list[str] | None,
        *,
        row: ArrayLike,
        col: ArrayLike,
        value: ArrayLike,
        lower: ArrayLike = -np.inf,
        upper: ArrayLike = np.inf,
        size: int | None = None,
    ) -> RowBlock:
        """Add a block of rows named ``prefix_label`` with their coefficients as triplets.

        Parameters
        ----------
        prefix : str
            Name prefix.
        labels : list of str or None
            One label per row (None: a single row).
        row, col, value : array_like
            Triplets: row local to the block, global column, coefficient.
        lower, upper : array_like, optional
            Bounds of each row's activity (scalars broadcast).
        size : int, optional
            Number of rows (default: the number of labels).

        Returns
        -------
        RowBlock
            The block, numbered after every row added before.
        """
        n = (1 if labels is None else len(labels)) if size is None else size
        block = RowBlock(
            prefix,
            _names(prefix, labels, n),
            self.n_rows,
            _full(lower, n),
            _full(upper, n),
            np.asarray(row, dtype=np.int64).ravel(),
            np.asarray(col, dtype=np.int64).ravel(),
            np.asarray(value, dtype=float).ravel(),
        )
        if len(block.row) and (block.row.min() < 0 or block.row.max() >= n):
            raise ValueError(f"row block '{prefix}': local row index outside 0..{n - 1}")
        self.row_blocks.append(block)
        self.n_rows += n
        return block

    def cost(self) -> FloatArray:
        """``(n_cols,)`` objective coefficients."""
        return np.concatenate([b.cost for b in self.columns]) if self.columns else np.zeros(0)

    def bounds(self) -> tuple[FloatArray, FloatArray]:
        """``(n_cols,)`` lower and upper bounds of the columns."""
        if not self.columns:
            return np.zeros(0), np.zeros(0)
        return np.concatenate([b.lower for b in self.columns]), np.concatenate([b.upper for b in self.columns])

    def row_bounds(self) -> tuple[FloatArray, FloatArray]:
        """``(n_rows,)`` lower and upper bounds of the rows."""
        if not self.row_blocks:
            return np.zeros(0), np.zeros(0)
        return np.concatenate([b.lower for b in self.row_blocks]), np.concatenate([b.upper for b in self.row_blocks])

    def triplets(self) -> tuple[IntArray, IntArray, FloatArray]:
        """Every coefficient as (global row, global column, value)."""
        if not self.row_blocks:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0)
        rows = np.concatenate([b.start + b.row for b in self.row_blocks])
        cols = np.concatenate([b.col for b in self.row_blocks])
        return rows, cols, np.concatenate([b.value for b in self.row_blocks])

    def column_matrix(self) -> scipy.sparse.csc_matrix:
        """Every coefficient as a ``(n_rows, n_cols)`` CSC matrix (duplicates summed), built a block at a time.

        The same matrix as from :meth:`triplets`, without their int64 copy beside it: indices are filled into int32
        arrays block by block (a 2,000-site world's routing LP peaked there, 0.1 GB above the solve).
        """
        nnz = sum(len(b.row) for b in self.row_blocks)
        rows, cols, values = np.empty(nnz, dtype=np.int32), np.empty(nnz, dtype=np.int32), np.empty(nnz)
        at = 0
        for b in self.row_blocks:
            end = at + len(b.row)
            rows[at:end] = b.row
            rows[at:end] += b.start
            cols[at:end], values[at:end] = b.col, b.value
            at = end
        return scipy.sparse.csc_matrix((values, (rows, cols)), shape=(self.n_rows, self.n_cols))

    def activities(self, x: ArrayLike) -> FloatArray:
        """``(n_rows,)`` activity of every row at the column values ``x``."""
        rows, cols, values = self.triplets()
        return np.asarray(
            np.bincount(rows, weights=values * np.asarray(x, dtype=float)[cols], minlength=self.n_rows), dtype=float
        )


# ----------------------------------------------------------------------------- PuLP


@dataclass
class PulpModel:
    """A :class:`LinearModel` written as a PuLP problem.

    Parameters
    ----------
    problem : pulp.LpProblem
        The problem.
    variables : list of pulp.LpVariable
        The variable of every global column.
    """

    problem: pulp.LpProblem
    variables: list[pulp.LpVariable]

    def of(self, block: ColumnBlock) -> list[pulp.LpVariable]:
        """The variables of a column block."""
        return self.variables[block.start : block.start + block.size]


def _bound(value: float) -> float | int | None:
    if not np.isfinite(value):
        return None
    return int(value) if float(value).is_integer() else float(value)


def _pulp_variables(problem: pulp.LpProblem, model: LinearModel) -> list[pulp.LpVariable]:
    variables = []
    for block in model.columns:
        cat = pulp.LpInteger if block.integer else pulp.LpContinuous
        for name, lo, hi in zip(block.names, block.lower.tolist(), block.upper.tolist(), strict=True):
            variables.append(problem.add_variable(name, lowBound=_bound(lo), upBound=_bound(hi), cat=cat))
    return variables


def pulp_row_kinds(block: RowBlock) -> tuple[BoolArray, BoolArray, BoolArray]:
    """Which rows of a block PuLP writes as equalities, as ``<=`` and as ``>=``.

    Raises
    ------
    ValueError
        A row bounded on both sides by different values, or on neither (PuLP takes one finite side or an equality).
    """
    lower, upper = block.lower, block.upper
    equal = lower == upper
    at_most = ~equal & np.isneginf(lower) & np.isfinite(upper)
    at_least = ~equal & np.isposinf(upper) & np.isfinite(lower)
    bad = ~(equal | at_most | at_least)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"row '{block.names[k]}' bounded by [{lower[k]}, {upper[k]}]: PuLP takes one finite side or an equality")
    return equal, at_most, at_least


def _senses(block: RowBlock) -> list[tuple[int, float]]:
    """PuLP's sense and right-hand side of every row of a block."""
    equal, at_most, _ = pulp_row_kinds(block)
    sense = np.where(equal, pulp.LpConstraintEQ, np.where(at_most, pulp.LpConstraintLE, pulp.LpConstraintGE))
    rhs = np.where(at_most, block.upper, block.lower)
    return list(zip(sense.tolist(), rhs.tolist(), strict=True))


def _pulp_rows(block: RowBlock, variables: list[pulp.LpVariable], *, named: bool) -> list[pulp.LpConstraint]:
    order = np.argsort(block.row, kind="stable")
    bounds = np.searchsorted(block.row[order], np.arange(block.size + 1)).tolist()
    terms = [(variables[c], v) for c, v in zip(block.col[order].tolist(), block.value[order].tolist(), strict=True)]
    constraints = []
    for k, (name, (sense, rhs)) in enumerate(zip(block.names, _senses(block), strict=True)):
        expr = pulp.LpAffineExpression(terms[bounds[k] : bounds[k + 1]])
        constraints.append(pulp.LpConstraint(expr, sense, name if named else None, rhs))
    return constraints


def _objective(
    model: LinearModel, variables: list[pulp.LpVariable], blocks: Sequence[ColumnBlock] | None
) -> pulp.LpAffineExpression:
    """The columns with a non-zero cost, in column order; or every column of ``blocks``, zero costs included."""
    if blocks is None:
        cost = model.cost().tolist()
        terms = [(v, c) for v, c in zip(variables, cost, strict=True) if c != 0.0]
    else:
        terms = [(variables[k], c) for b in blocks for k, c in zip(b.cols.tolist(), b.cost.tolist(), strict=True)]
    return pulp.LpAffineExpression(terms, constant=model.objective_constant)


def to_pulp(
    model: LinearModel,
    *,
    row_order: IntArray | None = None,
    named_rows: bool = True,
    objective: Sequence[ColumnBlock] | None = None,
) -> PulpModel:
    """Write the model as a PuLP problem (minimise).

    Variables are named after their columns, constraints after their rows and added in row order; each
    row's terms keep the order of its triplets; the objective holds the columns with a non-zero cost,
    in column order (plus the model's constant).

    Parameters
    ----------
    model : LinearModel
        The model.
    row_order : numpy.ndarray of int, optional
        Every global row once, in the order PuLP receives them (rows of several blocks interleaved, as a
        model written loop by loop adds them; default: row order).
    named_rows : bool, optional
        Name the constraints after their rows; False leaves them unnamed, and PuLP numbers them
        ``_C1``, ``_C2``, ... in the order they are added.
    objective : sequence of ColumnBlock, optional
        The blocks whose columns make the objective, zero costs included (PuLP then writes their terms);
        default: every column with a non-zero cost.

    Returns
    -------
    PulpModel
        The problem and the variable of every column.
    """
    problem = pulp.LpProblem(model.name, pulp.LpMinimize)
    variables = _pulp_variables(problem, model)
    constraints = [c for block in model.row_blocks for c in _pulp_rows(block, variables, named=named_rows)]
    for k in range(len(constraints)) if row_order is None else row_order.tolist():
        problem.addConstraint(constraints[k])
    problem.setObjective(_objective(model, variables, objective))
    return PulpModel(problem, variables)


def pulp_values(variables: list[pulp.LpVariable]) -> FloatArray:
    """Solution values of PuLP variables (0 where the solver left none).

    Parameters
    ----------
    variables : list of pulp.LpVariable
        The variables.

    Returns
    -------
    numpy.ndarray
        Their values.
    """
    return np.array([v.varValue if v.varValue is not None else 0.0 for v in variables], dtype=float)


# ----------------------------------------------------------------------------- HiGHS


def new_highs(*, threads: int = 1) -> highspy.Highs:
    """A silent, single-seeded HiGHS object.

    Parameters
    ----------
    threads : int, optional
        HiGHS threads.

    Returns
    -------
    highspy.Highs
        The object, empty.
    """
    import highspy

    with _quiet_stdout(True):  # HiGHS prints its banner from C++ before any option applies
        highs = highspy.Highs()  # type: ignore[no-untyped-call]
        highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", threads)
    highs.setOptionValue("random_seed", 0)
    return highs


def csc(
    n_cols: int, row: IntArray, col: IntArray, value: FloatArray, *, key: IntArray | None = None
) -> tuple[NDArray[np.int32], NDArray[np.int32], FloatArray]:
    """Triplets as compressed sparse columns: column starts, row indices, values (rows ascending in a column).

    Parameters
    ----------
    n_cols : int
        Number of columns (local: ``col`` in ``0..n_cols-1``).
    row, col, value : numpy.ndarray
        Triplets.
    key : numpy.ndarray, optional
        Order of the entries within a column (default: ``row``, ascending).

    Returns
    -------
    tuple of numpy.ndarray
        ``starts`` (int32), ``index`` (int32) and ``value`` (float64).
    """
    order = np.lexsort((row if key is None else key, col))
    starts = np.searchsorted(col[order], np.arange(n_cols)).astype(np.int32)
    return starts, row[order].astype(np.int32), value[order].astype(np.float64)


class HighsSync:
    """A HiGHS object kept in step with a :class:`LinearModel` that grows.

    :meth:`sync` sends the columns and rows added since the last call, with the same global numbering:
    new columns first (with their coefficients in rows already sent, which :meth:`RowBlock.extend`
    appended), then new rows (with every coefficient). Bounds and costs changed on blocks already sent
    are not resent: change them in HiGHS too (``changeColsBounds``, ``changeColsCost``, ...).

    HiGHS keeps a column's entries in the order they are sent (rows added later go after them, ascending):
    by row unless ``entry_rank`` says otherwise.

    Parameters
    ----------
    model : LinearModel
        The model.
    highs : highspy.Highs
        The HiGHS object (e.g. :func:`new_highs`), empty.
    entry_rank : callable, optional
        Rank of each of a new column's entries among that column's, from their global rows (an array in,
        an array out); entries are sent in ascending rank. Default: the row itself.
    """

    def __init__(
        self, model: LinearModel, highs: highspy.Highs, *, entry_rank: Callable[[IntArray], IntArray] | None = None
    ) -> None:
        self.model, self.highs = model, highs
        self.entry_rank = entry_rank
        self.cols_sent = 0
        self.rows_sent = 0
        self.entries_sent: dict[int, int] = {}  # id(row block) -> triplets sent

    def _new_entries(self) -> tuple[IntArray, IntArray, FloatArray]:
        rows, cols, values = [], [], []
        for block in self.model.row_blocks:
            if block.start >= self.rows_sent:
                break
            sent = self.entries_sent.get(id(block), len(block.row))
            rows.append(block.start + block.row[sent:])
            cols.append(block.col[sent:])
            values.append(block.value[sent:])
            self.entries_sent[id(block)] = len(block.row)
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate(rows), np.concatenate(cols), np.concatenate(values)

    def _send_columns(self) -> None:
        blocks = [b for b in self.model.columns if b.start >= self.cols_sent]
        row, col, value = self._new_entries()
        if (col < self.cols_sent).any():
            raise ValueError("coefficients appended for columns already in HiGHS: change them with changeCoeff")
        n = self.model.n_cols - self.cols_sent
        if n == 0:
            return
        cost = np.concatenate([b.cost for b in blocks])
        lower = np.concatenate([b.lower for b in blocks])
        upper = np.concatenate([b.upper for b in blocks])
        key = None if self.entry_rank is None else np.asarray(self.entry_rank(row))
        starts, index, values = csc(n, row, col - self.cols_sent, value, key=key)
        self.highs.addCols(n, cost, lower, upper, len(index), starts, index, values)
        integer = np.concatenate([np.full(b.size, b.integer) for b in blocks])
        if integer.any():
            import highspy

            cols = (self.cols_sent + np.flatnonzero(integer)).astype(np.int32)
            kinds = np.full(len(cols), highspy.HighsVarType.kInteger)
            self.highs.changeColsIntegrality(len(cols), cols, kinds)
        self.cols_sent = self.model.n_cols

    def _send_rows(self) -> None:
        blocks = [b for b in self.model.row_blocks if b.start >= self.rows_sent]
        if not blocks:
            return
        row = np.concatenate([b.start - self.rows_sent + b.row for b in blocks])
        col = np.concatenate([b.col for b in blocks])
        value = np.concatenate([b.value for b in blocks])
        n = self.model.n_rows - self.rows_sent
        # Row-wise: the same sort as the columns, with rows and columns swapped.
        starts, index, values = csc(n, col, row, value)
        lower = np.concatenate([b.lower for b in blocks])
        upper = np.concatenate([b.upper for b in blocks])
        self.highs.addRows(n, lower, upper, len(index), starts, index, values)
        for b in blocks:
            self.entries_sent[id(b)] = len(b.row)
        self.rows_sent = self.model.n_rows

    def sync(self) -> highspy.Highs:
        """Send what was added since the last call; return the HiGHS object."""
        self._send_columns()
        self._send_rows()
        return self.highs


def to_highspy(model: LinearModel, highs: highspy.Highs | None = None, *, threads: int = 1) -> highspy.Highs:
    """Write the model into HiGHS: columns and rows numbered as in the model.

    Parameters
    ----------
    model : LinearModel
        The model.
    highs : highspy.Highs, optional
        An empty HiGHS object (default :func:`new_highs`).
    threads : int, optional
        Threads of the default HiGHS object.

    Returns
    -------
    highspy.Highs
        Loaded, not run.
    """
    loaded = HighsSync(model, new_highs(threads=threads) if highs is None else highs).sync()
    if model.objective_constant:
        loaded.changeObjectiveOffset(model.objective_constant)
    return loaded


PRICING_TOLERANCE = 1e-7
"""A column out of the LP enters when its reduced cost is below ``-PRICING_TOLERANCE * max(1, |its cost|)`` (HiGHS's
own dual feasibility tolerance, relative to the column's cost)."""


def solve_by_pricing(
    model: LinearModel, first: BoolArray, *, threads: int = 1, time_limit_s: float | None = None
) -> tuple[str, FloatArray]:
    """Solve an LP by column generation: the columns in ``first``, then every column its duals price in.

    The restricted LP starts from the ``first`` columns (they must admit a feasible point); each round adds every
    column out of it with a negative reduced cost (cost minus the column's coefficients times the row duals) and
    re-solves from the last basis. With none left the restricted optimum is the model's: the same LP as
    :func:`to_highspy` on every column, solved over far fewer where few columns are ever in a basis.

    Parameters
    ----------
    model : LinearModel
        A minimisation LP whose columns are bounded below by 0 (a column out of the LP stands at 0).
    first : numpy.ndarray of bool
        ``(n_cols,)`` the columns of the first restricted LP.
    threads : int, optional
        HiGHS threads.
    time_limit_s : float, optional
        Wall-clock limit of every round together (None: none).

    Returns
    -------
    tuple
        HiGHS's model status of the last round (``"Optimal"`` once no column prices in), and ``(n_cols,)`` the
        column values (0 for columns never priced in).
    """
    lower, upper = model.bounds()
    if len(lower) and lower.min() != 0.0:
        raise ValueError("solve_by_pricing: every column must be bounded below by 0 (a column out of the LP is at 0)")
    start = time.perf_counter()
    matrix = model.column_matrix()
    cost = model.cost()
    highs = new_highs(threads=threads)
    row_lower, row_upper = model.row_bounds()
    no_entries = np.zeros(0, dtype=np.int32)
    highs.addRows(model.n_rows, row_lower, row_upper, 0, np.zeros(model.n_rows, dtype=np.int32), no_entries, np.zeros(0))
    in_lp = np.zeros(model.n_cols, dtype=bool)
    order: list[IntArray] = []
    entering = np.flatnonzero(first)
    threshold = -PRICING_TOLERANCE * np.maximum(1.0, np.abs(cost))
    while True:
        block = matrix[:, entering]
        highs.addCols(len(entering), cost[entering], lower[entering], upper[entering], block.nnz,
                      block.indptr[:-1].astype(np.int32), block.indices.astype(np.int32), block.data)  # fmt: skip
        in_lp[entering] = True
        order.append(entering)
        if time_limit_s is not None:
            highs.setOptionValue("time_limit", max(float(time_limit_s) - (time.perf_counter() - start), 1e-3))
        highs.run()
        status = highs.modelStatusToString(highs.getModelStatus())
        if status != "Optimal":
            break
        reduced = cost - matrix.T @ np.asarray(highs.getSolution().row_dual, dtype=float)
        entering = np.flatnonzero((reduced < threshold) & ~in_lp)
        if not len(entering):
            break
    x = np.zeros(model.n_cols)
    x[np.concatenate(order)] = np.asarray(highs.getSolution().col_value, dtype=float)
    return status, x
