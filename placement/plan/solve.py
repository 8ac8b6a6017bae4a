"""From a scenario to a verified siting plan: the one pipeline the CLI and notebooks call.

``instance -> solve (all served, or exact ratio) -> verify -> tables``. Geometry and files stay
out of this module; :mod:`placement.outputs.writer` writes them.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pandas as pd

from placement._errors import InfeasibleError, SolverError
from placement._process import Background
from placement.economics.cost import HOURS_PER_YEAR
from placement.instance.build import build_instance
from placement.instance.record import Instance
from placement.optimize import failover
from placement.optimize.highs_direct import solve_linear
from placement.optimize.milp import empty, solution_of
from placement.optimize.model import placement_blocks
from placement.optimize.problem import PlacementInput, PlacementSolution, ResourceCap
from placement.optimize.protect import protect_plan
from placement.optimize.ratio import solve_ratio
from placement.optimize.shortfall import diagnose_shortfall
from placement.optimize.solve import solve_placement
from placement.optimize.solver import SolverOptions, SolveStatus
from placement.optimize.verify import verify_solution
from placement.plan.cache_rounds import Solved, cache_rounds, has_miss_work, round_figures
from placement.plan.failover import failover_tables
from placement.plan.notes import (
    n_plus_one_dropped_note,
    no_power_message,
    power_totals,
    protection_notes,
    rule_notes,
    shortfall_message,
    unprotectable_notes,
    unreachable_message,
)
from placement.plan.record import Plan
from placement.plan.summarise import ratio_bound_per_million, summarise
from placement.plan.tables import assignment_table, population_table, site_table
from placement.plan.tier_rounds import chooses_tiers, tier_rounds
from placement.plan.tier_rounds import round_figures as tier_figures
from placement.progress import Progress, quiet
from placement.results.record import PlanResults
from placement.results.summary import cap_cost
from placement.results.textfmt import mw_text, usd_per_m_text
from placement.scenario.load import LoadedScenario


def least_use(data: PlacementInput, cap: ResourceCap, options: SolverOptions) -> PlacementSolution:
    """The design that serves the demand using the least of what ``cap`` counts: the model with that use as its cost.

    ``objective_usd_per_h`` of the answer is then its use and ``report.best_bound`` a proven least, with no cap in
    the model. [cap.unit/h]
    """
    return solve_placement(_use_as_cost(data, cap), options, route_nearest=False)


def _use_as_cost(data: PlacementInput, cap: ResourceCap) -> PlacementInput:
    """The arrays with what ``cap`` counts as their cost, and no caps."""
    fixed, node = cap.site_weights()
    return replace(
        data, site_fixed_usd_per_h=fixed, site_node_usd_per_h=node, pair_cost_usd_per_h=cap.pair_weights(data.pair_site),
        caps=(),
    )  # fmt: skip


def least_use_at_service(
    data: PlacementInput, cap: ResourceCap, options: SolverOptions, *, min_served_tok_s: float | None = None
) -> PlacementSolution:
    """The design using the least of what ``cap`` counts among those serving as much as a plan does.

    Parameters
    ----------
    data : PlacementInput
        The arrays (their caps are dropped: the use is the cost).
    cap : ResourceCap
        What is counted (the cap's own limit is not held).
    options : SolverOptions
        Solver settings.
    min_served_tok_s : float, optional
        Optional serving: a design serves at least this much mean goodput, and leaves the rest. None (serving all):
        every reachable token, or where no design can, the most any design serves (the elastic model's first
        objective, which a plan of the same world attains as well).

    Returns
    -------
    PlacementSolution
        ``objective_usd_per_h`` is the use [cap.unit/h]; a report without a solution when no design serves that much.
    """
    if min_served_tok_s is None:
        least = least_use(data, cap, options)
        return least if least.report.status.has_solution else diagnose_shortfall(_use_as_cost(data, cap), options)
    as_cost = _use_as_cost(data, cap)
    blocks = placement_blocks(as_cost, served_value_usd_per_tok_s=0.0, min_served_tok_s=min_served_tok_s)
    report, values = solve_linear(blocks.model, options)
    if not report.status.has_solution:
        return empty(as_cost, report)
    solution = solution_of(blocks, as_cost, values, report, None)
    broken = verify_solution(as_cost, solution, optional=True)
    if broken:
        raise SolverError("the least-use design breaks the model: " + "; ".join(broken))
    return solution


def _raise_if_a_cap_binds(data: PlacementInput, options: SolverOptions, progress: Progress) -> None:
    """An infeasible model with carbon or water caps: when a plan without them serves everything, the caps are why.

    Each cap whose limit is below the least any plan serving the demand uses is named with that least; when each
    alone can be met, the caps together are.
    """
    progress("infeasible with carbon or water caps: finding the least any plan serving the demand uses of each")
    lines = []
    for cap in data.caps:
        least = least_use(data, cap, options)
        if not least.report.status.has_solution:
            return  # infeasible without the caps as well: the shortfall diagnosis says why
        bound = least.report.best_bound * HOURS_PER_YEAR
        if bound > cap.limit_per_h * HOURS_PER_YEAR * (1 + 1e-9):
            lines.append(
                f"the {cap.name} cap of {cap.limit_per_h * HOURS_PER_YEAR:,.0f} {cap.unit} a year: the least any plan "
                f"serving the demand inside its objectives uses is at least {bound:,.0f} {cap.unit} a year (a plan found "
                f"uses {least.objective_usd_per_h * HOURS_PER_YEAR:,.0f})"
            )
    if not lines:
        lines = ["each cap alone can be met, but not all of them together: " + ", ".join(c.name for c in data.caps)]
    raise InfeasibleError(
        "the caps cannot be met while serving the demand inside its objectives:\n  - "
        + "\n  - ".join(lines)
        + "\nFix: raise the caps in objective (carbon_cap_t_per_year, water_cap_m3_per_year, regional_caps, "
        "stressed_site_water_m3_per_year) to at least those figures, or add cleaner, drier sites in reach"
    )


def assemble_plan(instance: Instance, solution: PlacementSolution, status: str, notes: list[str]) -> Plan:
    """A verified solution of the instance tabulated as a plan (sites, assignments, populations, summary, notes)."""
    sites = site_table(instance, solution)
    assignments = assignment_table(instance, solution)
    late = assignments["ttft_p99_ms"] > assignments["ttft_objective_ms"] + 1e-9
    if late.any():
        raise SolverError(f"{int(late.sum())} assignments exceed their TTFT objective; the model admitted a forbidden pair")
    populations = population_table(instance, solution, assignments)
    summary = summarise(instance, solution, sites, assignments, status)
    failover = None
    if instance.inputs.fault_tolerant and not solution.n_plus_one_dropped:
        failover = failover_tables(instance, solution)
        notes = [*notes, *protection_notes(instance, solution, summary)]
    plan_notes = [*notes, *rule_notes(instance, sites)]
    results = PlanResults(
        scenario=instance.facts.name,
        scenario_path=instance.facts.path,
        sites=sites,
        assignments=assignments,
        populations=populations,
        members=instance.populations.cities,
        summary=summary,
        notes=plan_notes,
        failover=failover,
    )
    return Plan(instance=instance, solution=solution, results=results)


def solve_instance(instance: Instance, *, msg: bool = False, progress: Progress = quiet, price_caps: bool = True) -> Plan:
    """Solve an instance and tabulate the plan.

    Parameters
    ----------
    instance : Instance
        From :func:`build_instance`.
    msg : bool, optional
        Show the solver's log.
    progress : callable, optional
        Receives one line per step.
    price_caps : bool, optional
        With carbon or water caps, solve the model without them too and say what they cost (``summary.json``'s
        ``cap_cost``), in a forked second process beside the capped solve where the machine allows; the frontier,
        which solves that plan itself, does not.

    Returns
    -------
    Plan
        The verified plan.

    Raises
    ------
    InfeasibleError
        When populations cannot be served inside their objective and the scenario's policy is
        ``stop``; the message names them and says why.
    """
    if not price_caps or not instance.inputs.caps:
        return _solve_instance(instance, msg=msg, progress=progress)
    free = replace(instance, inputs=replace(instance.inputs, caps=()))
    uncapped = Background(lambda: _solve_instance(free, msg=False, progress=quiet).summary)
    where = "in a second process, beside the capped one" if uncapped.forked else "first"
    progress(f"what the caps cost: the same model without them, solved {where}")
    plan = _solve_instance(instance, msg=msg, progress=progress)
    return plan.with_results(summary=replace(plan.summary, cap_cost=cap_cost(plan.summary, uncapped.result())))


def _solve_optional(instance: Instance, options: SolverOptions, notes: list[str]) -> Solved:
    """``policy.serving: optional``: the least $/M goodput by Dinkelbach's ratio steps.

    With N+1 on a model too large to protect exactly, the best ratio without N+1, then protected.
    """
    data = instance.inputs
    large = data.fault_tolerant and failover.failover_variable_count(data) > failover.FULL_FAILOVER_MAX_VARIABLES
    solution = solve_ratio(replace(data, fault_tolerant=False) if large else data, options,
                           min_served_share=instance.facts.policy.min_served_share)  # fmt: skip
    if not solution.report.status.has_solution:
        raise InfeasibleError(f"the solver found no placement ({solution.report.message})")
    if large:  # the exact N+1 ratio model is too large: the best ratio without N+1, then protected
        solution = replace(protect_plan(data, solution, options), iterations=solution.iterations)
        notes.append(
            "serving optional with N+1: $/M goodput was minimised without N+1 (the exact N+1 model is too large), "
            "then every served population protected on the pairs that plan uses"
        )
    last = solution.iterations[-1] if solution.iterations else {}
    bound = ratio_bound_per_million(solution)
    notes.append(
        f"serving optional: $/M goodput minimised by Dinkelbach in {len(solution.iterations)} iterations "
        f"(last MILP value {last.get('value_usd_per_h', float('nan')):.3g} $/h); proven at least "
        f"{'n/a' if bound is None else f'${usd_per_m_text(bound)}'} per million goodput tokens, gap {solution.report.gap:.2%}"
    )
    return Solved(solution, solution.report.status.value, notes)


def _solve_instance(instance: Instance, *, msg: bool, progress: Progress) -> Plan:
    """:func:`solve_instance` of the model as it stands (its caps as rows), with each free site's KV tier chosen."""
    if not chooses_tiers(instance):
        return _solve_on_tiers(instance, msg=msg, progress=progress)

    def rebuild(like: Instance, chosen: dict[str, str]) -> Instance:
        assert like.tier_choice is not None
        return build_instance(like.tier_choice.loaded, progress=progress, like=like, site_kv_tiers=chosen)

    def solve(inst: Instance) -> Plan:
        return _solve_on_tiers(inst, msg=msg, progress=progress)

    kept, rounds = tier_rounds(instance, solve, rebuild, progress=progress)
    return kept.with_results(summary=replace(kept.summary, kv_tier_rounds=tier_figures(kept, rounds)))


def _solve_on_tiers(instance: Instance, *, msg: bool, progress: Progress) -> Plan:
    """The model on its sites' KV tiers as they stand, to the cache's fixed point."""
    if not has_miss_work(instance):
        solved = _solved(instance, msg=msg, progress=progress)
        return assemble_plan(instance, solved.solution, solved.status, solved.notes)
    kept, rounds = cache_rounds(instance, lambda inst: _solved(inst, msg=msg, progress=progress), progress=progress)
    plan = assemble_plan(kept.instance, kept.solved.solution, kept.solved.status, kept.solved.notes)
    return plan.with_results(summary=replace(plan.summary, cache_rounds=round_figures(kept, rounds)))


def _solved(instance: Instance, *, msg: bool, progress: Progress) -> Solved:
    """The model as it stands solved and verified: its solution, status label and notes."""
    facts = instance.facts
    policy = facts.policy
    options = facts.solver.options(msg=msg)
    options = replace(options, progress=progress).with_deadline(time.perf_counter())  # the limit bounds the whole solve
    notes: list[str] = []
    if facts.discover and not instance.sites.get("discovered", pd.Series(False)).astype(bool).any():
        notes.append(
            "sites.discover is set: `placement discover` reads it (a baseline, proposals, a plan with them); this plan "
            "is on the catalog as it is"
        )
    no_power = no_power_message(instance)
    if no_power is not None:
        raise InfeasibleError(no_power)
    unreachable = np.flatnonzero(instance.unreachable & (instance.commodity_mean_demand_tok_s > 0))
    if len(unreachable):
        lines = unreachable_message(instance, unreachable)
        header = f"{len(unreachable)} population-class pairs have no site inside their TTFT objective"
        if policy.unreachable == "stop":
            raise InfeasibleError(
                "\n  - ".join([header + " (policy.unreachable: stop):", *lines])
                + "\nFix: add candidate sites near them, relax the objective, or set policy.unreachable: report"
            )
        notes.append(header + "; they are reported as unserved:")
        notes += [f"  - {line}" for line in lines]
    if len(instance.modelled) == 0:
        raise InfeasibleError("no population can be served by any site inside its objective")
    unprotectable = unprotectable_notes(instance, policy.unreachable)
    notes += unprotectable
    progress(
        f"solving with {options.name} (gap {options.gap:g}, node limit {options.node_limit}, "
        f"time limit {options.time_limit_s} s for the whole solve)"
    )
    if policy.serving == "optional":
        return _solve_optional(instance, options, notes)
    solution = solve_placement(instance.inputs, options)
    status = solution.report.status
    if status == SolveStatus.INFEASIBLE and instance.inputs.caps:
        _raise_if_a_cap_binds(instance.inputs, options, progress)
    if status == SolveStatus.INFEASIBLE:
        progress("infeasible: diagnosing which populations cannot be served")
        elastic = diagnose_shortfall(instance.inputs, options)
        lines = shortfall_message(instance, elastic)
        available, needed, _, _ = power_totals(instance)
        protected = " with every served population protected (N+1)" if instance.inputs.fault_tolerant else ""
        header = (
            f"the sites inside the latency budget do not have the power to serve all demand{protected} "
            f"(all sites hold {mw_text(available)} MW; the demand needs at least {mw_text(needed)} MW"
            f"{' without N+1' if protected else ''})"
        )
        if policy.unreachable == "stop":
            raise InfeasibleError(
                "\n  - ".join([header + ":", *lines]) + "\nFix: raise mw_available, add sites, or set policy.unreachable: report"
            )
        notes.append(header + "; the shortfall is reported as unserved:")
        notes += [f"  - {line}" for line in lines]
        if elastic.n_plus_one_dropped:
            notes = [n_plus_one_dropped_note(instance), *(n for n in notes if n not in unprotectable)]
        return Solved(elastic, "partial", notes)
    if not status.has_solution:
        raise InfeasibleError(f"the solver found no placement ({solution.report.message}); raise solver.time_limit_s")
    if instance.inputs.fault_tolerant and solution.without_n_plus_one is None:
        plain = solve_placement(replace(instance.inputs, fault_tolerant=False), options)  # what protection costs
        solution = replace(solution, without_n_plus_one=plain if plain.report.status.has_solution else None)
    if status == SolveStatus.FEASIBLE:
        notes.append(
            f"proven gap {solution.report.gap:.2%}: the answer is feasible, not proven optimal "
            f"({solution.report.message}; stopped by {solution.report.stopped_by.value})"
        )
    if solution.n_plus_one_dropped:
        notes = [n_plus_one_dropped_note(instance), *(n for n in notes if n not in unprotectable)]
    label = status.value if not len(unreachable) else "partial"
    return Solved(solution, label, notes)


def run(loaded: LoadedScenario, *, msg: bool = False, progress: Progress = quiet, like: Instance | None = None) -> Plan:
    """Build and solve a scenario.

    Parameters
    ----------
    loaded : LoadedScenario
        A validated scenario.
    msg : bool, optional
        Show the solver's log.
    progress : callable, optional
        Receives one line per step.
    like : Instance, optional
        The same world already built (:func:`build_instance`'s ``like``): its round trips are reused.

    Returns
    -------
    Plan
        The verified plan.
    """
    return solve_instance(build_instance(loaded, progress=progress, like=like), msg=msg, progress=progress)
