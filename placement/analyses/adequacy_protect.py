"""``fault_tolerance.max_expected_unserved_share``: spare nodes until a plan's expected unserved goodput meets a target.

After the solve, the plan's adequacy is evaluated (:mod:`placement.analyses.adequacy`). While the expected unserved
share is above the target, a round adds the protection the worst outage states need: the sets of sites down that
contribute most to the expectation are taken, largest first, until what they contribute would bring the
expectation to the target; for each, the goodput it leaves unserved (re-routed on the plan's capacity, as
``placement failover`` does) is given spare nodes at the nearest surviving open site its objectives allow, sized to
its busiest slice, where the site has power for them (the next nearest takes what does not fit). Spare held for
different states is shared (each site keeps the most any one state needs): the states rarely overlap, and a state
that needs both is an overlap of two rarer ones. The plan is evaluated again; at most :data:`MAX_ROUNDS` rounds.
Spare nodes are checked against each site's power only: a carbon, water or accelerator-availability cap of the
scenario is not re-checked for them.

A state whose unserved goodput no surviving open site may take (a population with a single site in reach, or all
its sites in one domain) cannot be protected by spare nodes: it is named in the diagnosis, with the sources behind
it. Opening a new site for it is a different plan (solve with ``fault_tolerance.n_plus_one``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from placement._types import FloatArray, IntArray
from placement.analyses.adequacy import Adequacy, PlanSource, evaluate_sources, plan_sources
from placement.instance.record import Instance
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.reroute import reroute_on_capacity
from placement.optimize.solver import SolverOptions
from placement.plan.record import Plan
from placement.plan.solve import assemble_plan
from placement.results.summary import PlanSummary
from placement.scenario.sections import FaultToleranceSection, OutagesSection

__all__ = ["MAX_ROUNDS", "ProtectedPlan", "plan_with_adequacy", "protect_to_target"]

MAX_ROUNDS = 5
"""Rounds of spare nodes at most."""
NOISE_SHARE = 1e-6
"""Below this share of what a row lost, what it leaves unserved is the re-routing LPs' tolerance, not a need."""
NODE_TOLERANCE = 1e-6
"""Nodes a need may exceed a whole number by and still round down to it (the LPs hold totals to a relative 1e-9)."""
MAX_SETS_PER_ROUND = 20
"""Sets of sites down protected in one round at most."""


@dataclass(frozen=True)
class ProtectedPlan:
    """A plan with the spare nodes its adequacy target needs.

    Parameters
    ----------
    solution : PlacementSolution
        The plan with its nodes raised (the same plan when no round added any).
    adequacy : Adequacy
        Its evaluation after the last round, the rounds recorded (``iterations``).
    met : bool
        The target is met.
    diagnosis : str
        Why it is not ('' when it is).
    """

    solution: PlacementSolution
    adequacy: Adequacy
    met: bool
    diagnosis: str


def _worst_sets(adequacy: Adequacy, target_share: float) -> list[frozenset[int]]:
    """The sets that contribute most, largest first, until the rest is at most the target."""
    served = adequacy.figures["expected_unserved_tok_s"] / max(adequacy.expected_unserved_share, 1e-300)
    excess_tok_s = (adequacy.expected_unserved_share - target_share) * served
    chosen: list[frozenset[int]] = []
    removed = 0.0
    for failed, value in sorted(adequacy.by_set_tok_s.items(), key=lambda kv: (-kv[1], sorted(kv[0]))):
        if removed >= excess_tok_s or len(chosen) >= MAX_SETS_PER_ROUND or value <= 0:
            break
        chosen.append(failed)
        removed += value
    return chosen


def _spare_for(
    data: PlacementInput, solution: PlacementSolution, failed: frozenset[int], room_nodes: IntArray, options: SolverOptions
) -> tuple[IntArray, list[int]]:
    """Spare nodes per site that let the plan carry what ``failed`` leaves unserved, and the rows it cannot place."""
    reroute = reroute_on_capacity(data, solution, np.array(sorted(failed), dtype=np.int64), options=options)
    peak = reroute.unserved_tok_s.max(axis=1) if reroute.unserved_tok_s.size else np.zeros(data.n_commodities)
    m = data.n_sites
    survives = np.array(solution.open, dtype=bool)  # a copy: the plan's arrays may be read-only
    survives[list(failed)] = False
    remote = data.pair_remote_site if data.pair_remote_site is not None else np.full(len(data.pair_site), -1)
    whole = (remote < 0) & survives[data.pair_site]  # served whole at a surviving open site
    spare = np.zeros(m, dtype=np.int64)
    stranded = []
    lost = reroute.lost_tok_s.max(axis=1) if reroute.lost_tok_s.size else np.zeros(data.n_commodities)
    for row in np.flatnonzero(peak > NOISE_SHARE * lost).tolist():
        pairs = np.flatnonzero(whole & (data.pair_commodity == row))
        left_tok_s = float(peak[row])
        for p in pairs[np.argsort(data.pair_rtt_ms[pairs], kind="stable")].tolist():  # nearest first, as fits
            site, per_tok_s = int(data.pair_site[p]), float(data.pair_nodes_per_tok_s[p])
            nodes = min(math.ceil(left_tok_s * per_tok_s - NODE_TOLERANCE), int(room_nodes[site] - spare[site]))
            if nodes <= 0:
                continue
            spare[site] += nodes
            left_tok_s = max(left_tok_s - nodes / per_tok_s, 0.0)
            if left_tok_s <= NOISE_SHARE * lost[row]:
                break
        if left_tok_s > NOISE_SHARE * lost[row]:
            stranded.append(row)
    return spare, stranded


def _room_nodes(data: PlacementInput, solution: PlacementSolution) -> IntArray:
    """Nodes each open site has power for beyond its plan's."""
    fits = np.floor(data.site_mw_available / np.maximum(data.site_node_mw, 1e-12) + 1e-9).astype(np.int64)
    return np.where(np.asarray(solution.open, dtype=bool), np.maximum(fits - solution.nodes, 0), 0)


def _diagnosis(
    stranded: dict[frozenset[int], list[int]],
    sources: Sequence[PlanSource],
    site_ids: Sequence[str],
    row_label: Callable[[int], str],
) -> str:
    """Which states cannot be protected by spare nodes, whom they leave unserved, and the sources behind them."""
    parts = []
    for failed, rows in list(stranded.items())[:5]:
        names = "+".join(site_ids[k] for k in sorted(failed))
        behind = [s.source.label for s in sources if s.open_sites <= failed]
        whom = ", ".join(row_label(r) for r in rows[:3]) + (f" and {len(rows) - 3} more" if len(rows) > 3 else "")
        parts.append(
            f"with {names} down, {whom} have no surviving open site in reach with power for spare nodes "
            f"(sources: {', '.join(behind[:5]) or 'overlapping outages'})"
        )
    return "; ".join(parts)


def protect_to_target(
    data: PlacementInput,
    solution: PlacementSolution,
    sources: Sequence[PlanSource],
    site_ids: Sequence[str],
    outages: OutagesSection,
    target_share: float,
    *,
    options: SolverOptions | None = None,
    progress: Callable[[str], None] = lambda _: None,
    row_label: Callable[[int], str] = lambda row: f"model row {row}",
) -> ProtectedPlan:
    """Add spare nodes, round by round, until the expected unserved share is at most ``target_share``.

    Parameters
    ----------
    data : PlacementInput
        The arrays the plan was solved on.
    solution : PlacementSolution
        The plan.
    sources : sequence of PlanSource
        Its outage sources (the same in every round: spare nodes open no site).
    site_ids : sequence of str
        The sites' ids.
    outages : OutagesSection
        Rates and the Monte Carlo's settings.
    target_share : float
        ``fault_tolerance.max_expected_unserved_share``.
    options : SolverOptions, optional
        For the re-routing LPs.
    progress : callable, optional
        Receives one line per round.
    row_label : callable, optional
        Names a model row in the diagnosis (its populations and class).

    Returns
    -------
    ProtectedPlan
        The plan, its adequacy with the rounds (``iterations``), whether the target is met, and why not.
    """
    options = options or SolverOptions()
    adequacy = evaluate_sources(data, solution, sources, site_ids, outages, options=options, progress=progress)
    node_usd_per_h = np.asarray(data.site_node_usd_per_h, dtype=float)
    rounds: list[dict[str, Any]] = [
        _round(0, adequacy, target_share, solution, np.zeros(data.n_sites, dtype=np.int64), [], node_usd_per_h, site_ids)
    ]
    stranded: dict[frozenset[int], list[int]] = {}
    for k in range(1, MAX_ROUNDS + 1):
        if adequacy.expected_unserved_share <= target_share:
            break
        worst = _worst_sets(adequacy, target_share)
        room = _room_nodes(data, solution)
        added = np.zeros(data.n_sites, dtype=np.int64)
        stranded = {}
        for failed in worst:
            spare, left = _spare_for(data, solution, failed, room, options)
            added = np.maximum(added, spare)
            if left:
                stranded[failed] = left
        if not added.any():
            break
        solution = replace(solution, nodes=np.asarray(solution.nodes, dtype=np.int64) + added)
        adequacy = evaluate_sources(data, solution, sources, site_ids, outages, options=options)
        rounds.append(_round(k, adequacy, target_share, solution, added, worst, node_usd_per_h, site_ids))
        progress(
            f"adequacy round {k}: +{int(added.sum()):,} spare nodes for {len(worst)} outage state(s); expected unserved "
            f"{100 * adequacy.expected_unserved_share:.4f}% (target {100 * target_share:.4f}%)"
        )
    met = adequacy.expected_unserved_share <= target_share
    diagnosis = ""
    if not met:
        why = (
            _diagnosis(stranded, sources, site_ids, row_label) if stranded else f"the last of {MAX_ROUNDS} rounds ended above it"
        )
        diagnosis = (
            f"expected unserved goodput {100 * adequacy.expected_unserved_share:.4f}% of the plan's goodput is above "
            f"fault_tolerance.max_expected_unserved_share {100 * target_share:.4f}%: {why}. Fix: add candidate sites "
            "near those populations, set fault_tolerance.n_plus_one: true, lower the sources' outage rates if the "
            "sites are better than the defaults (fault_tolerance.outages, the catalog's tier), or raise the target"
        )
        rounds[-1]["note"] = " (not met)"
    return ProtectedPlan(solution, adequacy.with_iterations(rounds), met, diagnosis)


def _round(
    k: int,
    adequacy: Adequacy,
    target_share: float,
    solution: PlacementSolution,
    added: IntArray,
    worst: list[frozenset[int]],
    node_usd_per_h: FloatArray,
    site_ids: Sequence[str],
) -> dict[str, Any]:
    """One round's record in ``summary.json``'s ``adequacy.iterations``."""
    return {
        "round": k,
        "expected_unserved_share": adequacy.expected_unserved_share,
        "std_error_share": adequacy.figures["std_error_share"],
        "target_share": target_share,
        "nodes": int(np.sum(solution.nodes)),
        "added_nodes": {site_ids[j]: int(added[j]) for j in np.flatnonzero(added).tolist()},
        "added_usd_per_h": float(added @ node_usd_per_h),
        "protected_states": ["+".join(site_ids[j] for j in sorted(failed)) for failed in worst],
    }


def _merged_summary(old: PlanSummary, new: PlanSummary) -> PlanSummary:
    """The re-tabulated summary, keeping the figures only the solve's later steps set (cap cost, rounds, ...)."""
    kept = {}
    for f in fields(PlanSummary):
        value = getattr(new, f.name)
        if value is None or value == () or value == {}:
            kept[f.name] = getattr(old, f.name)
    return replace(new, **kept)


def _row_label(instance: Instance, row: int) -> str:
    """A model row by its largest population and class (``+N`` more populations that share it)."""
    members = np.flatnonzero(instance.row_of_commodity == row)
    if not len(members):
        return f"model row {row}"
    first = members[np.argmax(instance.commodity_mean_demand_tok_s[members])]
    table = instance.populations.table
    pop = int(instance.commodity_population[first])
    more = f" +{len(members) - 1}" if len(members) > 1 else ""
    klass = instance.classes[int(instance.commodity_class[first])].name
    return f"{table['name'].iloc[pop]} ({table['country_code'].iloc[pop]}){more}, class {klass}"


def plan_with_adequacy(plan: Plan, section: FaultToleranceSection, *, progress: Callable[[str], None] = lambda _: None) -> Plan:
    """A solved plan with its adequacy (``fault_tolerance.adequacy``), spare nodes added for its target if it has one.

    Parameters
    ----------
    plan : Plan
        The solved plan.
    section : FaultToleranceSection
        ``fault_tolerance``: ``outages`` and ``max_expected_unserved_share``.
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    Plan
        With ``summary.json``'s ``adequacy`` and ``adequacy.csv``; with a target, re-tabulated on the nodes added
        (its cost included) and, when the target is not met, a note saying why.
    """
    instance, solution = plan.instance, plan.solution
    options = SolverOptions(threads=instance.facts.solver.threads)
    sources = plan_sources(instance.sites, solution.open, section.outages, instance)
    site_ids = [str(s) for s in instance.sites["id"]]
    target = section.max_expected_unserved_share
    if target is None:
        adequacy = evaluate_sources(
            instance.inputs, solution, sources, site_ids, section.outages, options=options, progress=progress
        )
        return plan.with_results(summary=replace(plan.summary, adequacy=adequacy.figures), adequacy=adequacy.sources)
    protected = protect_to_target(
        instance.inputs,
        solution,
        sources,
        site_ids,
        section.outages,
        target,
        options=options,
        progress=progress,
        row_label=lambda row: _row_label(instance, row),
    )
    notes = [*plan.notes, *([f"ADEQUACY TARGET NOT MET: {protected.diagnosis}"] if protected.diagnosis else [])]
    if np.array_equal(protected.solution.nodes, solution.nodes):
        summary = replace(plan.summary, adequacy=protected.adequacy.figures)
        return plan.with_results(summary=summary, adequacy=protected.adequacy.sources, notes=notes)
    fresh = assemble_plan(instance, protected.solution, plan.summary.status, [])
    summary = replace(_merged_summary(plan.summary, fresh.summary), adequacy=protected.adequacy.figures)
    return replace(plan, solution=protected.solution).with_results(
        sites=fresh.sites,
        assignments=fresh.assignments,
        populations=fresh.populations,
        summary=summary,
        notes=notes,
        adequacy=protected.adequacy.sources,
    )
