"""Running a PuLP model on CBC or HiGHS and reading back what the solver really proved.

PuLP's ``LpStatus`` says "Optimal" for a MIP stopped at its time limit, so this module reads the
solver's own termination, incumbent, dual bound and gap (HiGHS through its in-process API, CBC
from its log) and reports them in a typed :class:`SolverReport`.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pulp

from placement._errors import SolverError

SOLVERS = ("highs", "cbc")


class SolveStatus(StrEnum):
    """How a solve ended."""

    OPTIMAL = "optimal"
    """Proven optimal within the requested relative gap."""
    FEASIBLE = "feasible"
    """Stopped (time limit) with a feasible solution; the gap says how far from proven."""
    INFEASIBLE = "infeasible"
    """No solution satisfies the constraints."""
    NO_SOLUTION = "no_solution"
    """Stopped before any feasible solution was found."""
    ERROR = "error"
    """The solver failed."""

    @property
    def has_solution(self) -> bool:
        """Whether a feasible solution came back."""
        return self in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE)


@dataclass(frozen=True)
class SolverOptions:
    """What to run and when to stop.

    Parameters
    ----------
    name : str
        ``"highs"`` or ``"cbc"``.
    time_limit_s : float or None
        Wall-clock limit. [s]
    gap : float
        Relative MIP gap at which the solver may stop.
    threads : int
        Solver threads.
    msg : bool
        Show the solver's log.
    lazy_slices : bool
        Generate node-capacity rows of time slices lazily (placement models with many slices).
    """

    name: str = "highs"
    time_limit_s: float | None = None
    gap: float = 1e-6
    threads: int = 1
    msg: bool = False
    lazy_slices: bool = False


@dataclass(frozen=True)
class SolverReport:
    """What the solver proved.

    Parameters
    ----------
    solver : str
        Solver name.
    status : SolveStatus
        How the solve ended.
    objective : float
        Objective of the returned solution (``nan`` without one).
    best_bound : float
        Proven lower bound on the optimum (``nan`` when unknown).
    gap : float
        Relative gap ``(objective - bound) / |objective|`` (``nan`` when unknown).
    runtime_s : float
        Wall-clock time in the solver, hand-over included. [s]
    message : str
        The solver's own words for its termination.
    """

    solver: str
    status: SolveStatus
    objective: float
    best_bound: float
    gap: float
    runtime_s: float
    message: str


def relative_gap(objective: float, bound: float) -> float:
    """Relative optimality gap, 0 when both are 0.

    Parameters
    ----------
    objective : float
        Incumbent objective (minimisation).
    bound : float
        Proven lower bound.

    Returns
    -------
    float
        ``max(0, objective - bound) / max(|objective|, 1e-9)``.
    """
    if math.isnan(objective) or math.isnan(bound):
        return math.nan
    return max(0.0, objective - bound) / max(abs(objective), 1e-9)


@contextlib.contextmanager
def _quiet_stdout(enabled: bool) -> Iterator[None]:
    """Silence file descriptor 1 (HiGHS prints its banner from C++ before options apply)."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def _cbc_command(options: SolverOptions, log_path: Path, *, warm_start: bool) -> pulp.LpSolver:
    """CBC through PuLP: the bundled binary in PuLP 3.x, else a ``cbc`` found on the PATH."""
    kwargs = {
        "msg": options.msg,
        "timeLimit": options.time_limit_s,
        "gapRel": options.gap,
        "threads": options.threads,
        "logPath": str(log_path),
        "warmStart": warm_start,
    }
    bundled = getattr(pulp, "PULP_CBC_CMD", None)
    if bundled is not None:
        with warnings.catch_warnings():
            # PuLP 3.3 warns that the bundled binary goes away in 4.0; the README says what replaces it.
            warnings.simplefilter("ignore", DeprecationWarning)
            solver = bundled(**kwargs)
        if solver.available():
            return solver
    solver = pulp.COIN_CMD(**kwargs)
    if not solver.available():
        raise SolverError("CBC is not available: install PuLP 3.x (bundles CBC) or put a 'cbc' binary on the PATH")
    return solver


_CBC_RESULT = re.compile(r"^Result - (.+)$", re.MULTILINE)
_CBC_BOUND = re.compile(r"^Lower bound:\s+(\S+)", re.MULTILINE)


def _read_cbc_log(text: str, problem: pulp.LpProblem) -> tuple[SolveStatus, float, float, str]:
    """Termination, objective and bound from CBC's log."""
    result = _CBC_RESULT.search(text)
    message = result.group(1).strip() if result else "no result line in the CBC log"
    lowered = message.lower()
    has_solution = problem.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    if "infeasible" in lowered or problem.status == pulp.LpStatusInfeasible:
        return SolveStatus.INFEASIBLE, math.nan, math.nan, message
    if "unbounded" in lowered or problem.status == pulp.LpStatusUnbounded:
        return SolveStatus.ERROR, math.nan, math.nan, message
    objective = pulp.value(problem.objective) if has_solution else math.nan
    objective = math.nan if objective is None else float(objective)
    bound_match = _CBC_BOUND.search(text)
    if "optimal" in lowered and has_solution:
        # "Optimal solution found (within gap tolerance)" prints the bound it proved; plain optimal may not.
        return SolveStatus.OPTIMAL, objective, float(bound_match.group(1)) if bound_match else objective, message
    bound = float(bound_match.group(1)) if bound_match else math.nan
    if not problem.isMIP() and has_solution and problem.status == pulp.LpStatusOptimal:
        return SolveStatus.OPTIMAL, objective, objective, message or "LP optimal"
    if has_solution:
        return SolveStatus.FEASIBLE, objective, bound, message
    return SolveStatus.NO_SOLUTION, math.nan, bound, message


def _solve_cbc(problem: pulp.LpProblem, options: SolverOptions, *, warm_start: bool) -> SolverReport:
    with tempfile.TemporaryDirectory(prefix="placement-cbc-") as tmp:
        log_path = Path(tmp) / "cbc.log"
        solver = _cbc_command(options, log_path, warm_start=warm_start)
        start = time.perf_counter()
        problem.solve(solver)
        runtime_s = time.perf_counter() - start
        text = log_path.read_text() if log_path.exists() else ""
    status, objective, bound, message = _read_cbc_log(text, problem)
    return SolverReport("cbc", status, objective, bound, relative_gap(objective, bound), runtime_s, message)


class _HiGHSWithStart(pulp.HiGHS):  # type: ignore[misc]
    """PuLP's in-process HiGHS, handing the variables' initial values to HiGHS as a starting solution."""

    def callSolver(self, lp: pulp.LpProblem) -> None:  # noqa: N802 (PuLP's name)
        import highspy

        variables = lp.variables()
        start = [var.varValue for var in variables]
        if all(value is not None for value in start):
            solution = highspy.HighsSolution()
            values = [0.0] * len(variables)
            for var, value in zip(variables, start, strict=True):
                values[var.index] = float(value)
            solution.col_value = values
            solution.value_valid = True
            lp.solverModel.setSolution(solution)
        super().callSolver(lp)


def _solve_highs(problem: pulp.LpProblem, options: SolverOptions, *, warm_start: bool) -> SolverReport:
    import highspy

    kind = _HiGHSWithStart if warm_start else pulp.HiGHS
    solver = kind(msg=options.msg, timeLimit=options.time_limit_s, gapRel=options.gap, threads=options.threads)
    start = time.perf_counter()
    with _quiet_stdout(not options.msg):
        problem.solve(solver)
    runtime_s = time.perf_counter() - start
    highs = problem.solverModel
    model_status = highs.getModelStatus()
    info = highs.getInfo()
    message = highs.modelStatusToString(model_status)
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    statuses = highspy.HighsModelStatus
    if model_status in (statuses.kInfeasible, statuses.kUnboundedOrInfeasible):
        return SolverReport("highs", SolveStatus.INFEASIBLE, math.nan, math.nan, math.nan, runtime_s, message)
    if not has_solution:
        return SolverReport("highs", SolveStatus.NO_SOLUTION, math.nan, math.nan, math.nan, runtime_s, message)
    objective = float(info.objective_function_value)
    if problem.isMIP():
        bound = float(info.mip_dual_bound)
    else:
        bound = objective if model_status == statuses.kOptimal else math.nan
    status = SolveStatus.OPTIMAL if model_status == statuses.kOptimal else SolveStatus.FEASIBLE
    return SolverReport("highs", status, objective, bound, relative_gap(objective, bound), runtime_s, message)


def solve_problem(problem: pulp.LpProblem, options: SolverOptions, *, warm_start: bool = False) -> SolverReport:
    """Solve a PuLP problem and report what the solver proved.

    Parameters
    ----------
    problem : pulp.LpProblem
        A minimisation model.
    options : SolverOptions
        Solver name, limits and verbosity.
    warm_start : bool, optional
        Pass the variables' current values to the solver as a starting solution (every
        variable needs a value).

    Returns
    -------
    SolverReport
        Status, objective, bound, gap and runtime. Variable values are left on the problem.
    """
    if options.name not in SOLVERS:
        raise SolverError(f"unknown solver '{options.name}': choose one of {', '.join(SOLVERS)}")
    if options.name == "cbc":
        return _solve_cbc(problem, options, warm_start=warm_start)
    return _solve_highs(problem, options, warm_start=warm_start)
