"""Solving a build-out under uncertainty: the stochastic plan, the mean-value plan and what hedging is worth.

- RP (recourse problem): one model over every demand scenario, sites and MW shared, nodes and routing per
  scenario; its expected NPV is the stochastic plan's cost.
- EV: the same model on the probability-weighted mean demand; its first stage (sites, MW) is the plan a
  planner who ignores the spread would commit.
- EEV: that first stage held fixed, nodes and routing re-optimised in every scenario; its expected NPV.
- VSS = EEV - RP >= 0. A MILP stops at a gap, so RP can come back dearer than EEV; the EEV plan is then a
  better stochastic plan (it is feasible for RP), it is adopted and VSS is 0 — and this is stated.
- Optional min-max regret: the first stage minimising the largest regret against each scenario's own optimum.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields

import numpy as np

from placement._errors import InputError, Problem, SolverError
from placement.buildout.arrays import Buildout
from placement.buildout.evaluate import PlanCosts, plan_costs, violations
from placement.optimize.buildout.caps import HOURS_PER_YEAR, installed_use_per_year
from placement.optimize.buildout.input import BuildoutInput, BuildoutSolution, FirstStage, YearCap
from placement.optimize.buildout.solve import backed_off, round_up, sites_of_relaxation, solve_buildout, solve_regret
from placement.optimize.buildout.spares import with_spares
from placement.optimize.solver import SolverOptions, StopReason
from placement.progress import Progress, quiet


@dataclass(frozen=True)
class StochasticPlans:
    """The plans of a two-stage problem, solved on arrays.

    Parameters
    ----------
    plan : BuildoutSolution
        The adopted stochastic plan (RP, or EEV when that was cheaper).
    costs : PlanCosts
        Its costs.
    rp_usd : float
        Expected NPV of the RP solve's plan. [USD]
    rp_bound_usd : float
        The RP solve's proven lower bound. [USD]
    ev_usd : float
        Objective of the mean-value problem. [USD]
    eev_usd : float
        Expected NPV of the mean-value plan's first stage in every scenario. [USD]
    eev_scenario_usd : numpy.ndarray
        ``(S,)`` its NPV per scenario. [USD]
    adopted : str
        ``"rp"`` or ``"eev"``.
    timings_s : dict
        Seconds per phase.
    notes : list of str
        What the reader should know (adopted plan, rounding, gaps).
    """

    plan: BuildoutSolution
    costs: PlanCosts
    rp_usd: float
    rp_bound_usd: float
    ev_usd: float
    eev_usd: float
    eev_scenario_usd: np.ndarray
    adopted: str
    timings_s: dict[str, float]
    notes: list[str]

    @property
    def expected_usd(self) -> float:
        """Expected NPV of the adopted plan. [USD]"""
        return self.costs.expected_npv_usd

    @property
    def vss_usd(self) -> float:
        """Value of the stochastic solution: EEV minus the adopted plan's expected NPV (>= 0). [USD]"""
        return max(self.eev_usd - self.expected_usd, 0.0)

    @property
    def gap(self) -> float:
        """Relative gap of the adopted plan against the RP bound."""
        return max(self.expected_usd - self.rp_bound_usd, 0.0) / max(abs(self.expected_usd), 1e-9)


@dataclass(frozen=True)
class StochasticResult(StochasticPlans):
    """The plans of a build-out (:class:`StochasticPlans`), what was solved and the min-max-regret plan.

    Parameters
    ----------
    buildout : Buildout
        What was solved.
    regret : dict or None
        Min-max-regret plan's figures, when asked for.
    """

    buildout: Buildout
    regret: dict[str, object] | None


def solver_options(buildout: Buildout, *, msg: bool = False) -> SolverOptions:
    """The scenario's solver with the horizon's gap and time limit."""
    base = buildout.loaded.scenario.solver
    return SolverOptions(
        name=base.name,
        time_limit_s=buildout.horizon.time_limit_s,
        gap=buildout.horizon.gap,
        threads=base.threads,
        msg=msg,
        node_limit=base.node_limit,
        random_seed=base.random_seed,
    )


def checked(data: BuildoutInput, solution: BuildoutSolution, what: str) -> BuildoutSolution:
    """The solution if it has one and keeps every rule; else a :class:`SolverError` naming what broke."""
    if not solution.report.status.has_solution:
        fix = ""
        if solution.report.stopped_by == StopReason.TIME_LIMIT:  # a wall-clock safety net, hit first on a loaded machine
            fix = ". Fix: give the solve more time (--time-limit S, or horizon.time_limit_s in the scenario)"
        if data.caps and not fix:
            caps = ", ".join(f"{c.name} {c.limit_per_year:,.6g} {c.unit}" for c in data.caps)
            fix = f". The plan is held to caps a year ({caps}): no plan may meet them; raise the tightest"
        raise SolverError(f"{what}: the solver returned no solution ({solution.report.message}){fix}")
    broken = violations(data, solution)
    if broken:
        raise SolverError(f"{what}: the solution breaks the model's rules: {'; '.join(broken)}")
    return solution


def least_use_per_year(data: BuildoutInput, cap: YearCap) -> np.ndarray:
    """``(Y,)`` the least any plan uses of a cap each year: the installed nodes idle, one node at a locked site without.

    Every open site runs at least one node and a locked site is open from the first year, so a locked site with no
    installed node runs the least-drawing part it may buy there. [unit]
    """
    idle_mw = data.node_idle_mw if data.node_idle_mw is not None else np.zeros_like(data.node_mw)
    buyable = data.buyable_at_site.any(axis=2)  # (M, A)
    least = np.where(buyable, idle_mw * cap.per_mwh[:, None], np.inf).min(axis=1)  # (M,)
    bare = data.site_locked[:, None] & (data.existing_nodes.sum(axis=1) < 1)  # (M, Y)
    extra = np.where(bare & np.isfinite(least)[:, None], least[:, None], 0.0).sum(axis=0) * HOURS_PER_YEAR
    return np.asarray(installed_use_per_year(data, cap) + extra)


def unreachable_caps(buildout: Buildout) -> list[Problem]:
    """A problem per cap and year the installed fleet and locked sites alone break (no plan can meet it)."""
    data, source = buildout.data, str(buildout.scenario_path)
    problems = []
    for cap in data.caps:
        least = least_use_per_year(data, cap)
        for y in np.flatnonzero(least > cap.limit_per_year * (1 + 1e-9)).tolist():
            problems.append(
                Problem(
                    source,
                    "objective",
                    f"{cap.name} cap",
                    f"no plan meets the {cap.name} cap of {cap.limit_per_year:,.6g} {cap.unit} a year in {buildout.years[y]}: "
                    f"the installed fleet and the locked sites alone use {least[y]:,.6g} {cap.unit} running idle",
                    "raise the cap, or retire part of horizon.existing_fleet or unlock sites",
                )
            )
    return problems


def evaluate_first_stage(data: BuildoutInput, first: FirstStage, options: SolverOptions) -> BuildoutSolution:
    """Hold sites and MW fixed and re-optimise nodes and routing in every scenario."""
    return solve_buildout(data, options, fixed=first)


def min_max_regret(
    data: BuildoutInput, options: SolverOptions, names: list[str], progress: Progress = quiet
) -> dict[str, object]:
    """The first stage minimising the largest regret against each scenario's own optimum (wait-and-see).

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    options : SolverOptions
        Solver and limits.
    names : list of str
        Scenario names.
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    dict
        Wait-and-see cost and the regret plan's cost per scenario, its largest regret and expected cost. [USD]
    """
    alone = []
    for s in range(data.probability.size):
        single = data.scenario(s)
        alone.append(plan_costs(single, checked(single, solve_buildout(single, options), "wait-and-see")).expected_npv_usd)
        progress(f"wait-and-see {names[s]}: ${alone[-1] / 1e9:,.3f} B")
    if data.integer_nodes:
        solution = with_spares(data, solve_regret(data, alone, options), options)
    else:  # as the RP: the LP relaxation, its sites fixed open, the LP again; then whole nodes, within the caps

        def rounded(held: BuildoutInput) -> BuildoutSolution:
            relaxed = solve_regret(held, alone, options, relax=True)
            if relaxed.report.status.has_solution:
                relaxed = solve_regret(held, alone, options, opened=sites_of_relaxation(held, relaxed))
            return with_spares(held, round_up(held, relaxed), options) if relaxed.report.status.has_solution else relaxed

        solution = backed_off(data, rounded)
    solution = checked(data, solution, "min-max regret")
    costs = plan_costs(data, solution)
    regrets = costs.scenario_npv_usd - np.array(alone)
    return {
        "wait_and_see_usd": dict(zip(names, alone, strict=True)),
        "scenario_costs_usd": dict(zip(names, costs.scenario_npv_usd.tolist(), strict=True)),
        "max_regret_usd": float(regrets.max()),
        "expected_cost_usd": costs.expected_npv_usd,
        "sites_open_last_year": int(solution.first.open[:, -1].sum()),
    }


def solve_plans(data: BuildoutInput, options: SolverOptions, *, progress: Progress = quiet) -> StochasticPlans:
    """RP, EV and EEV on arrays; the cheaper of the RP and EEV plans is adopted.

    Parameters
    ----------
    data : BuildoutInput
        The arrays (every scenario).
    options : SolverOptions
        Solver and limits.
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    StochasticPlans
        The adopted plan and the figures of VSS.

    Raises
    ------
    SolverError
        If a solve returns no solution or a solution that breaks a rule.
    """
    timings: dict[str, float] = {}
    start = time.perf_counter()
    rp = checked(data, solve_buildout(data, options), "stochastic plan (RP)")
    rp_costs = plan_costs(data, rp)
    timings["rp_s"] = time.perf_counter() - start
    progress(
        f"stochastic plan: ${rp_costs.expected_npv_usd / 1e9:,.3f} B expected NPV "
        f"(gap {rp.report.gap:.2%}, {timings['rp_s']:.1f} s)"
    )
    start = time.perf_counter()
    if data.probability.size == 1:  # one demand future: the mean-value plan is the plan, the VSS is 0 by definition
        ev_usd, eev, eev_costs = rp_costs.expected_npv_usd, rp, rp_costs
    else:
        mean = data.mean_value()
        ev = checked(mean, solve_buildout(mean, options), "mean-value plan (EV)")
        ev_usd = plan_costs(mean, ev).expected_npv_usd
        eev = checked(data, evaluate_first_stage(data, ev.first, options), "mean-value plan in every scenario (EEV)")
        eev_costs = plan_costs(data, eev)
        progress(
            f"mean-value plan: ${ev_usd / 1e9:,.3f} B on mean demand; ${eev_costs.expected_npv_usd / 1e9:,.3f} B expected (EEV)"
        )
    timings["ev_eev_s"] = time.perf_counter() - start
    notes = []
    adopted, plan, costs = "rp", rp, rp_costs
    if eev_costs.expected_npv_usd < rp_costs.expected_npv_usd:
        adopted, plan, costs = "eev", eev, eev_costs
        notes.append(
            f"the RP solve stopped at a gap and its plan (${rp_costs.expected_npv_usd / 1e9:,.3f} B) is dearer than the "
            f"mean-value plan evaluated in every scenario (${eev_costs.expected_npv_usd / 1e9:,.3f} B); "
            "that plan is feasible for the stochastic problem, so it is adopted and the VSS is 0"
        )
    if plan.rounded:
        notes.append("node purchases were solved as continuous and rounded up; the costs are of the rounded plan")
    if plan.protection is not None:
        notes.append(
            "N+1: each year's spare nodes were sized after the solve, years in order, and are in the costs; the bound "
            "is the plan's without N+1 (summary.json n_plus_one says what the spares add)"
        )
    return StochasticPlans(
        plan,
        costs,
        rp_costs.expected_npv_usd,
        rp.report.best_bound,
        ev_usd,
        eev_costs.expected_npv_usd,
        eev_costs.scenario_npv_usd,
        adopted,
        timings,
        notes,
    )


def solve_stochastic(buildout: Buildout, *, msg: bool = False, progress: Progress = quiet) -> StochasticResult:
    """RP, EV, EEV and VSS (and the min-max-regret plan when the horizon asks for it).

    Parameters
    ----------
    buildout : Buildout
        The arrays.
    msg : bool, optional
        Show the solver's log.
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    StochasticResult
        The adopted plan, its costs, EEV and VSS; every plan checked against the model's rules.

    Raises
    ------
    SolverError
        If a solve returns no solution or a solution that breaks a rule.
    """
    problems = unreachable_caps(buildout)
    if problems:
        raise InputError(problems)
    options = solver_options(buildout, msg=msg)
    plans = solve_plans(buildout.data, options, progress=progress)
    timings = dict(plans.timings_s)
    regret, notes = None, [*plans.notes, *(f"goodput 0: {line}" for line in buildout.fleet.cannot_serve)]
    if buildout.horizon.regret:
        start = time.perf_counter()
        try:
            regret = min_max_regret(buildout.data, options, buildout.scenario_names, progress)
        except SolverError as exc:  # an optional extra: the stochastic plan stands without it
            notes.append(f"no min-max-regret plan: {exc} (raise horizon.time_limit_s)")
        timings["regret_s"] = time.perf_counter() - start
    shared = {f.name: getattr(plans, f.name) for f in fields(StochasticPlans)}
    return StochasticResult(**{**shared, "timings_s": timings, "notes": notes}, buildout=buildout, regret=regret)
