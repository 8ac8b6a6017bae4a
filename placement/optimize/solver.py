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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, cast

import pulp

from placement._errors import SolverError
from placement.optimize.relax_fix import FixedAnswer, relax_and_fix

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


class StopReason(StrEnum):
    """Which limit ended a solve (``summary.json``'s ``stopped_by``).

    Only ``time_limit`` depends on the machine and its load; the others are reached after the same
    work on any machine, so a solve that ends on them gives the same answer everywhere.
    """

    GAP = "gap"
    """The requested relative gap was proven (an LP: solved to optimality)."""
    NODE_LIMIT = "node_limit"
    """The branch-and-bound node limit was reached (deterministic)."""
    ITERATION_LIMIT = "iteration_limit"
    """The simplex iteration limit was reached (deterministic)."""
    TIME_LIMIT = "time_limit"
    """The wall-clock safety net was reached: the answer may differ between machines and loads."""
    INFEASIBLE = "infeasible"
    """The solver proved that nothing is feasible."""
    OTHER = "other"
    """Anything else (an error, an interrupt, an unrecognised termination)."""


@dataclass(frozen=True)
class SolverOptions:
    """What to run and when to stop.

    Parameters
    ----------
    name : str
        ``"highs"`` or ``"cbc"``.
    time_limit_s : float or None
        Wall-clock limit, a safety net: an answer it cuts short depends on the machine. [s]
    gap : float
        Relative MIP gap at which the solver may stop.
    threads : int
        Solver threads (fixed: the search, and so the answer, depends on it).
    msg : bool
        Show the solver's log.
    lazy_slices : bool
        Generate node-capacity rows of time slices lazily (placement models with many slices).
    node_limit : int or None
        Branch-and-bound nodes after which a MIP stops (HiGHS ``mip_max_nodes``, CBC ``maxNodes``): a
        deterministic work limit. None: none.
    iteration_limit : int or None
        Simplex iterations after which an LP stops (HiGHS ``simplex_iteration_limit``; HiGHS 1.16's MIP search
        does not honour it, so MIPs are bounded by ``node_limit``). None: none.
    random_seed : int
        Seed of HiGHS's randomised choices (``random_seed``; CBC keeps its fixed default seeds).
    abs_gap : float or None
        Absolute MIP gap at which the solver may stop as well (HiGHS ``mip_abs_gap``, CBC ``allowableGap``), in
        the objective's unit: for objectives whose optimum is near 0 (a Dinkelbach step) or offset by a
        constant. None: none.
    progress : callable or None
        Receives a line per step of long work (each LP pricing round with its bound and gap); None: quiet.
    deadline : float or None
        ``time.perf_counter()`` by which the whole solve must end (every LP and MILP of it gets what is left, at
        least :data:`LEAST_STEP_S`); None: each step has ``time_limit_s``.
    relax_first : bool
        HiGHS only: solve the LP relaxation first and, when it leaves every binary at 0 or 1, fix them there and
        search whole nodes (:mod:`placement.optimize.relax_fix`); the full MILP runs when the LP leaves a binary
        fractional or that answer is not within ``gap`` of the LP's bound.
    """

    name: str = "highs"
    time_limit_s: float | None = None
    gap: float = 1e-6
    threads: int = 1
    msg: bool = False
    lazy_slices: bool = False
    node_limit: int | None = None
    iteration_limit: int | None = None
    random_seed: int = 0
    abs_gap: float | None = None
    progress: Callable[[str], None] | None = field(default=None, compare=False, repr=False)
    deadline: float | None = None
    relax_first: bool = False

    def remaining_s(self) -> float | None:
        """Seconds a solver step may take: ``time_limit_s``, no more than what is left before ``deadline``."""
        left = None if self.deadline is None else max(self.deadline - time.perf_counter(), LEAST_STEP_S)
        if self.time_limit_s is None:
            return left
        return self.time_limit_s if left is None else min(self.time_limit_s, left)

    def past_deadline(self) -> bool:
        """Whether the whole solve's time is up."""
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def with_deadline(self, start: float) -> SolverOptions:
        """These options with the whole solve's deadline: ``time_limit_s`` from ``start``, or an earlier one they carry."""
        ends = [d for d in (self.deadline, None if self.time_limit_s is None else start + self.time_limit_s) if d is not None]
        return replace(self, deadline=min(ends)) if ends else self


LEAST_STEP_S = 1.0
"""Seconds a solver step gets even when the deadline has passed (so that it can hand back what it has)."""


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
    stopped_by : StopReason
        Which limit ended the solve.
    relaxation_whole : bool or None
        With ``relax_first``: whether the LP relaxation left every binary whole (None: not solved first).
    """

    solver: str
    status: SolveStatus
    objective: float
    best_bound: float
    gap: float
    runtime_s: float
    message: str
    stopped_by: StopReason = StopReason.OTHER
    relaxation_whole: bool | None = None


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
        "timeLimit": options.remaining_s(),
        "gapRel": options.gap,
        "gapAbs": options.abs_gap,
        "threads": options.threads,
        "logPath": str(log_path),
        "warmStart": warm_start,
        "maxNodes": options.node_limit,  # CBC's own seeds are fixed: one thread gives the same search every run
    }
    bundled = getattr(pulp, "PULP_CBC_CMD", None)
    if bundled is not None:
        with warnings.catch_warnings():
            # PuLP 3.3 warns that the bundled binary goes away in 4.0; docs/models/optimisation.md says what replaces it.
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
    gap = relative_gap(objective, bound)
    return SolverReport("cbc", status, objective, bound, gap, runtime_s, message, _cbc_stop_reason(status, message))


def _cbc_stop_reason(status: SolveStatus, message: str) -> StopReason:
    """The limit CBC's result line names."""
    lowered = message.lower()
    if status == SolveStatus.INFEASIBLE:
        return StopReason.INFEASIBLE
    if status == SolveStatus.OPTIMAL:
        return StopReason.GAP
    if "node" in lowered:
        return StopReason.NODE_LIMIT
    if "time" in lowered:
        return StopReason.TIME_LIMIT
    return StopReason.OTHER


class _HiGHS(pulp.HiGHS):  # type: ignore[misc]
    """PuLP's in-process HiGHS, reading the status a node limit ends on (PuLP 3.3 has no entry for it)."""

    def findSolutionValues(self, lp: pulp.LpProblem) -> tuple[int, int]:  # noqa: N802 (PuLP's name)
        import highspy

        highs = lp.solverModel
        if highs.getModelStatus() != highspy.HighsModelStatus.kSolutionLimit:
            return cast(tuple[int, int], super().findSolutionValues(lp))
        solution = highs.getSolution()
        for var, value in zip(lp.variables(), solution.col_value, strict=True):
            var.varValue = value
        if highs.getInfo().primal_solution_status == 2:  # kSolutionStatusFeasible
            return pulp.LpStatusOptimal, pulp.LpSolutionIntegerFeasible
        return pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound


class _HiGHSWithStart(_HiGHS):
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


class _HiGHSRelaxFirst(_HiGHSWithStart):
    """HiGHS relaxing and fixing first (:func:`relax_and_fix`); the full MILP only when that does not certify the gap."""

    fixed: FixedAnswer | None = None

    def callSolver(self, lp: pulp.LpProblem) -> None:  # noqa: N802 (PuLP's name)
        self.fixed = relax_and_fix(lp.solverModel, time_limit_s=self.timeLimit)
        if self.fixed is None or not math.isfinite(self.fixed.objective):
            super().callSolver(lp)  # from the caller's starting solution
        elif not self.fixed.certifies(self.gapRel):
            _HiGHS.callSolver(self, lp)  # from the fixed answer, which relax_and_fix left as the start


UNSCALED_INFEASIBILITY = 1e-6
"""Largest residual infeasibility accepted in a model HiGHS proved optimal: it solves a scaled model, and after
unscaling a row can miss HiGHS' own 1e-7 tolerance by a hair (the bundled build-out's RP relaxation, objective
~2.5e11 USD, came back Optimal with one row 1.3e-7 off once the calibrated goodput changed its coefficients);
every caller then checks the solution against its rules with its own tolerance."""


def _solve_highs(problem: pulp.LpProblem, options: SolverOptions, *, warm_start: bool) -> SolverReport:
    kind = _HiGHSRelaxFirst if options.relax_first else _HiGHSWithStart if warm_start else _HiGHS
    limits = {"mip_max_nodes": options.node_limit, "simplex_iteration_limit": options.iteration_limit}
    solver = kind(
        msg=options.msg,
        timeLimit=options.remaining_s(),
        gapRel=options.gap,
        gapAbs=options.abs_gap,
        threads=options.threads,
        random_seed=options.random_seed,
        **{key: value for key, value in limits.items() if value is not None},
    )
    start = time.perf_counter()
    with _quiet_stdout(not options.msg):
        problem.solve(solver)
    fixed = solver.fixed if isinstance(solver, _HiGHSRelaxFirst) else None
    return highs_report(problem.solverModel, options, fixed, is_mip=problem.isMIP(), runtime_s=time.perf_counter() - start)


def highs_report(
    highs: Any, options: SolverOptions, fixed: FixedAnswer | None, *, is_mip: bool, runtime_s: float
) -> SolverReport:
    """What a HiGHS object that has run proved: status, objective, bound, gap and the limit that stopped it.

    Parameters
    ----------
    highs : highspy.Highs
        The object, after its last run.
    options : SolverOptions
        The options it ran with (their ``gap``).
    fixed : FixedAnswer or None
        What relaxing and fixing found, when it ran first.
    is_mip : bool
        Whether the model has integer columns.
    runtime_s : float
        Seconds the solve took, hand-over included. [s]

    Returns
    -------
    SolverReport
        The report.
    """
    import highspy

    model_status = highs.getModelStatus()
    info = highs.getInfo()
    message = highs.modelStatusToString(model_status)
    has_solution = info.primal_solution_status == 2 or (  # kSolutionStatusFeasible
        model_status == highspy.HighsModelStatus.kOptimal and info.max_primal_infeasibility <= UNSCALED_INFEASIBILITY
    )
    statuses = highspy.HighsModelStatus
    stopped_by = _highs_stop_reasons().get(model_status, StopReason.OTHER)
    if model_status in (statuses.kInfeasible, statuses.kUnboundedOrInfeasible):
        return SolverReport("highs", SolveStatus.INFEASIBLE, math.nan, math.nan, math.nan, runtime_s, message, stopped_by)
    if not has_solution:
        return SolverReport("highs", SolveStatus.NO_SOLUTION, math.nan, math.nan, math.nan, runtime_s, message, stopped_by)
    objective = float(info.objective_function_value)
    if fixed is not None and fixed.certifies(options.gap):
        bound = fixed.lp_bound  # the search ran on fixed binaries: only the LP relaxation bounds the full MILP
        message = f"{message}, its {fixed.fixed} binaries fixed where the LP relaxation left them"
    elif is_mip:
        searched = fixed.lp_bound if fixed is not None and fixed.whole else -math.inf  # a fractional LP's: the MILP's own
        bound = max(float(info.mip_dual_bound), searched)
    else:
        bound = objective if model_status == statuses.kOptimal else math.nan
    status = SolveStatus.OPTIMAL if model_status == statuses.kOptimal else SolveStatus.FEASIBLE
    whole = None if fixed is None else fixed.whole
    return SolverReport("highs", status, objective, bound, relative_gap(objective, bound), runtime_s, message, stopped_by, whole)


def _highs_stop_reasons() -> dict[object, StopReason]:
    import highspy

    statuses = highspy.HighsModelStatus
    return {
        statuses.kOptimal: StopReason.GAP,
        statuses.kSolutionLimit: StopReason.NODE_LIMIT,  # mip_max_nodes (the only solution-count limit set here)
        statuses.kIterationLimit: StopReason.ITERATION_LIMIT,
        statuses.kTimeLimit: StopReason.TIME_LIMIT,
        statuses.kInfeasible: StopReason.INFEASIBLE,
        statuses.kUnboundedOrInfeasible: StopReason.INFEASIBLE,
    }


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
