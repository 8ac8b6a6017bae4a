"""From a scenario to a verified siting plan: the one pipeline the CLI and notebooks call.

``catalog + demand + scenario -> latency -> TTFT budget -> economics -> model arrays -> solve ->
tables``. Geometry and files stay out of this module; :mod:`placement.outputs` writes them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InfeasibleError, SolverError
from placement.budget import COMPONENTS, max_rtt_ms, ttft_components_ms, ttft_p99_ms
from placement.catalog import load_catalog
from placement.demand import Populations, aggregate, demand_tok_s, load_cities
from placement.economics import (
    NodeCost,
    cost_per_million_tokens_usd,
    node_cost_usd_per_h,
    tokens_per_s_per_mw,
)
from placement.latency import population_site_rtt_ms
from placement.model import PlacementInput, PlacementSolution, diagnose_shortfall, solve_placement, verify_solution
from placement.scenario import LoadedScenario, WorkloadClass
from placement.solver import SolveStatus

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


@dataclass(frozen=True)
class Instance:
    """A scenario turned into arrays, before solving.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario.
    sites : pandas.DataFrame
        The site catalog.
    populations : Populations
        Demand points and their member cities.
    rtt_ms : numpy.ndarray
        ``(n, m)`` worst member-city round trip from each population to each site. [ms]
    commodity_population, commodity_class : numpy.ndarray
        Population and class index of each commodity.
    ttft_ms : numpy.ndarray
        ``(c, m)`` p99 TTFT of each commodity at each site. [ms]
    allowed : numpy.ndarray of bool
        ``(c, m)`` pairs inside the class objective.
    node_cost : NodeCost
        All-in hourly cost of one node per site, by component.
    inputs : PlacementInput
        The model arrays (only commodities with at least one allowed site).
    modelled : numpy.ndarray of int
        Commodity index of each row of ``inputs.demand_tok_s``.
    build_s : float
        Time to build the instance. [s]
    """

    loaded: LoadedScenario
    sites: pd.DataFrame
    populations: Populations
    rtt_ms: FloatArray
    commodity_population: IntArray
    commodity_class: IntArray
    ttft_ms: FloatArray
    allowed: NDArray[np.bool_]
    node_cost: NodeCost
    inputs: PlacementInput
    modelled: IntArray
    build_s: float

    @property
    def classes(self) -> list[WorkloadClass]:
        """The workload classes."""
        return self.loaded.scenario.classes

    @property
    def commodity_demand_tok_s(self) -> FloatArray:
        """Demand of every commodity. [tokens/s]"""
        shares = np.array([c.share for c in self.classes])
        pop_demand = self.populations.table["demand_tok_s"].to_numpy(float)
        return np.asarray(pop_demand[self.commodity_population] * shares[self.commodity_class])

    @property
    def unreachable(self) -> NDArray[np.bool_]:
        """Commodities with no site inside their objective."""
        return np.asarray(~self.allowed.any(axis=1))


def _worst_member_rtt_ms(populations: Populations, sites: pd.DataFrame, loaded: LoadedScenario) -> FloatArray:
    """Round trip to each site from the farthest member city of each population (conservative)."""
    cities = populations.cities.sort_values("population_index", kind="stable")
    rtt = population_site_rtt_ms(cities["lat"], cities["lon"], sites["lat"], sites["lon"], loaded.scenario.latency.params())
    labels = cities["population_index"].to_numpy()
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    return np.asarray(np.maximum.reduceat(rtt, starts, axis=0))


def load_populations(loaded: LoadedScenario) -> Populations:
    """Cities, their demand and their aggregation, as the scenario says.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario.

    Returns
    -------
    Populations
        Demand points with member cities.
    """
    spec = loaded.scenario.demand
    cities = load_cities(loaded.cities_path, min_population=spec.min_population, countries=spec.countries)
    demand = demand_tok_s(
        cities["population"].to_numpy(float),
        adoption=spec.adoption,
        tokens_per_user_per_day=spec.tokens_per_user_per_day,
        peak_factor=spec.peak_factor,
    )
    return aggregate(cities, demand, spec.clusters)


def build_instance(loaded: LoadedScenario, *, progress: Progress = _quiet) -> Instance:
    """Turn a scenario into model arrays.

    Parameters
    ----------
    loaded : LoadedScenario
        A validated scenario.
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    Instance
        Arrays ready for :func:`solve_instance`.
    """
    start = time.perf_counter()
    scenario = loaded.scenario
    sites = load_catalog(loaded.catalog_path)
    progress(f"catalog: {len(sites)} candidate sites")
    populations = load_populations(loaded)
    progress(f"demand: {len(populations.cities)} cities in {len(populations.table)} populations")
    rtt = _worst_member_rtt_ms(populations, sites, loaded)
    n_pop, n_class = len(populations.table), len(scenario.classes)
    commodity_population = np.repeat(np.arange(n_pop, dtype=np.int64), n_class)
    commodity_class = np.tile(np.arange(n_class, dtype=np.int64), n_pop)
    ttft = np.empty((len(commodity_population), len(sites)))
    for k, workload in enumerate(scenario.classes):
        ttft[commodity_class == k] = ttft_p99_ms(rtt, workload)
    objective = np.array([c.ttft_p99_ms for c in scenario.classes])[commodity_class]
    allowed = (ttft <= objective[:, None]) & (sites["mw_available"].to_numpy(float) > 0)[None, :]

    serving = scenario.serving
    node_cost = node_cost_usd_per_h(
        scenario.economics.params(),
        node_kw=serving.node_kw,
        pue=sites["pue"],
        price_usd_per_mwh=sites["power_price_usd_per_mwh"],
        facility_capex_usd_per_mw=sites["capex_usd_per_mw"],
    )
    fixed = sites["fixed_cost_usd_per_h"].fillna(scenario.economics.site_fixed_cost_usd_per_h).to_numpy(float)
    modelled = np.flatnonzero(allowed.any(axis=1)).astype(np.int64)
    pair_row, pair_site = (a.astype(np.int64) for a in np.nonzero(allowed[modelled]))
    goodput = np.array([c.goodput_tok_s_per_node for c in scenario.classes])
    demand_all = (
        populations.table["demand_tok_s"].to_numpy(float)[commodity_population]
        * np.array([c.share for c in scenario.classes])[commodity_class]
    )
    inputs = PlacementInput(
        demand_tok_s=demand_all[modelled],
        pair_commodity=pair_row,
        pair_site=pair_site,
        pair_nodes_per_tok_s=1.0 / (goodput[commodity_class[modelled][pair_row]] * (1.0 - serving.headroom)),
        pair_rtt_ms=rtt[commodity_population[modelled][pair_row], pair_site],
        site_fixed_usd_per_h=fixed,
        site_node_usd_per_h=node_cost.total_usd_per_h,
        site_node_mw=serving.node_kw * sites["pue"].to_numpy(float) / 1000.0,
        site_mw_available=sites["mw_available"].to_numpy(float),
        site_locked=sites["locked"].to_numpy(bool),
    )
    progress(f"model: {len(modelled)} commodities, {len(pair_row)} feasible pairs of {allowed.size}")
    return Instance(
        loaded,
        sites,
        populations,
        rtt,
        commodity_population,
        commodity_class,
        ttft,
        allowed,
        node_cost,
        inputs,
        modelled,
        time.perf_counter() - start,
    )


def _unreachable_message(instance: Instance, rows: IntArray, *, limit: int = 15) -> list[str]:
    table = instance.populations.table
    lines = []
    for c in rows[:limit].tolist():
        i, k = int(instance.commodity_population[c]), int(instance.commodity_class[c])
        workload = instance.classes[k]
        j = int(np.argmin(instance.ttft_ms[c]))
        lines.append(
            f"{table['name'].iat[i]} ({table['country_code'].iat[i]}), class {workload.name}: nearest site "
            f"{instance.sites['name'].iat[j]} has p99 TTFT {instance.ttft_ms[c, j]:.1f} ms (RTT {instance.rtt_ms[i, j]:.1f} ms) "
            f"over the {workload.ttft_p99_ms:g} ms objective, which allows at most {max_rtt_ms(workload):.1f} ms RTT"
        )
    if len(rows) > limit:
        lines.append(f"... and {len(rows) - limit} more")
    return lines


def _shortfall_message(instance: Instance, elastic: PlacementSolution, *, limit: int = 15) -> list[str]:
    short = np.flatnonzero(elastic.unserved_tok_s > 1e-6 * np.maximum(1.0, instance.inputs.demand_tok_s))
    table = instance.populations.table
    lines = []
    for row in short[np.argsort(-elastic.unserved_tok_s[short])][:limit].tolist():
        c = int(instance.modelled[row])
        i, k = int(instance.commodity_population[c]), int(instance.commodity_class[c])
        reach = np.flatnonzero(instance.allowed[c])
        names = ", ".join(f"{instance.sites['name'].iat[j]} ({instance.sites['mw_available'].iat[j]:g} MW)" for j in reach[:6])
        lines.append(
            f"{table['name'].iat[i]} ({table['country_code'].iat[i]}), class {instance.classes[k].name}: "
            f"{elastic.unserved_tok_s[row]:,.0f} of {instance.inputs.demand_tok_s[row]:,.0f} tok/s cannot be served; "
            f"sites inside the budget: {names}{' ...' if len(reach) > 6 else ''} — their power is spoken for"
        )
    return lines


@dataclass(frozen=True)
class Plan:
    """A verified siting plan and the tables users read.

    Parameters
    ----------
    instance : Instance
        What was solved.
    solution : PlacementSolution
        The solver's answer (verified).
    sites : pandas.DataFrame
        Every candidate site with its decision and figures.
    assignments : pandas.DataFrame
        One row per (population, class, site) with goodput, RTT, TTFT and its components.
    populations : pandas.DataFrame
        Every population with served and unserved goodput.
    summary : dict
        Headline figures (see :func:`summarise`).
    notes : list of str
        Diagnoses the user should read (unreachable populations, shortfalls, time limits).
    """

    instance: Instance
    solution: PlacementSolution
    sites: pd.DataFrame
    assignments: pd.DataFrame
    populations: pd.DataFrame
    summary: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _site_table(instance: Instance, solution: PlacementSolution, served_by_site: FloatArray) -> pd.DataFrame:
    data = instance.inputs
    sites = instance.sites
    node_cost = instance.node_cost.total_usd_per_h
    cost = np.where(solution.open, data.site_fixed_usd_per_h, 0.0) + solution.nodes * node_cost
    mw_used = solution.nodes * data.site_node_mw
    reachable = instance.allowed.any(axis=0)
    reason = np.where(
        solution.open,
        "open",
        np.where(
            data.site_mw_available <= 0,
            "no power available",
            np.where(
                reachable,
                "not chosen: its populations are served at lower cost elsewhere",
                "no population within its latency budget",
            ),
        ),
    )
    return pd.DataFrame(
        {
            "site_id": sites["id"],
            "name": sites["name"],
            "country_code": sites["country_code"],
            "continent": sites["continent"],
            "lat": sites["lat"],
            "lon": sites["lon"],
            "open": solution.open,
            "locked": sites["locked"],
            "nodes": solution.nodes,
            "mw_used": mw_used,
            "mw_available": sites["mw_available"],
            "power_price_usd_per_mwh": sites["power_price_usd_per_mwh"],
            "pue": sites["pue"],
            "node_cost_usd_per_h": node_cost,
            "node_capex_usd_per_h": instance.node_cost.node_capex_usd_per_h,
            "facility_capex_usd_per_h": instance.node_cost.facility_capex_usd_per_h,
            "power_usd_per_h": instance.node_cost.power_usd_per_h,
            "opex_usd_per_h": instance.node_cost.opex_usd_per_h,
            "fixed_cost_usd_per_h": data.site_fixed_usd_per_h,
            "cost_usd_per_h": cost,
            "goodput_tok_s": served_by_site,
            "goodput_share": served_by_site / max(served_by_site.sum(), 1e-12),
            "cost_per_million_goodput_tokens_usd": np.where(
                solution.open, cost_per_million_tokens_usd(cost, served_by_site), np.nan
            ),
            "tokens_per_s_per_mw": tokens_per_s_per_mw(served_by_site, mw_used),
            "reason": reason,
        }
    )


def _assignment_table(instance: Instance, solution: PlacementSolution) -> pd.DataFrame:
    data = instance.inputs
    used = solution.pair_flow_tok_s > 1e-9 * np.maximum(1.0, data.demand_tok_s[data.pair_commodity])
    rows = data.pair_commodity[used]
    commodity = instance.modelled[rows]
    site = data.pair_site[used]
    pop = instance.commodity_population[commodity]
    klass = instance.commodity_class[commodity]
    table = instance.populations.table
    rtt = instance.rtt_ms[pop, site]
    frame = pd.DataFrame(
        {
            "population_id": table["population_id"].to_numpy()[pop],
            "population": table["name"].to_numpy()[pop],
            "country_code": table["country_code"].to_numpy()[pop],
            "class": [instance.classes[k].name for k in klass.tolist()],
            "site_id": instance.sites["id"].to_numpy()[site],
            "site": instance.sites["name"].to_numpy()[site],
            "goodput_tok_s": solution.pair_flow_tok_s[used],
            "share_of_demand": solution.pair_flow_tok_s[used] / data.demand_tok_s[rows],
            "rtt_ms": rtt,
            "ttft_p99_ms": instance.ttft_ms[commodity, site],
            "ttft_objective_ms": [instance.classes[k].ttft_p99_ms for k in klass.tolist()],
        }
    )
    frame["ttft_slack_ms"] = frame["ttft_objective_ms"] - frame["ttft_p99_ms"]
    for k, workload in enumerate(instance.classes):
        mask = klass == k
        parts = ttft_components_ms(rtt[mask], workload)
        for name in COMPONENTS:
            frame.loc[mask, name] = parts[name]
    frame["pop_lat"] = table["lat"].to_numpy()[pop]
    frame["pop_lon"] = table["lon"].to_numpy()[pop]
    frame["site_lat"] = instance.sites["lat"].to_numpy()[site]
    frame["site_lon"] = instance.sites["lon"].to_numpy()[site]
    return frame.sort_values(["population_id", "class", "goodput_tok_s"], ascending=[True, True, False]).reset_index(drop=True)


def _population_table(instance: Instance, served_commodity: FloatArray, assignments: pd.DataFrame) -> pd.DataFrame:
    table = instance.populations.table.copy()
    demand = instance.commodity_demand_tok_s
    served = np.bincount(instance.commodity_population, weights=served_commodity, minlength=len(table))
    table["served_tok_s"] = served
    table["unserved_tok_s"] = np.maximum(table["demand_tok_s"].to_numpy() - served, 0.0)
    table["nearest_site_rtt_ms"] = instance.rtt_ms.min(axis=1)
    main = assignments.sort_values("goodput_tok_s", ascending=False).drop_duplicates("population_id")
    table["main_site_id"] = table["population_id"].map(main.set_index("population_id")["site_id"]).fillna("")
    _ = demand
    return table


def summarise(
    instance: Instance,
    solution: PlacementSolution,
    sites: pd.DataFrame,
    assignments: pd.DataFrame,
    status: str,
) -> dict[str, Any]:
    """Headline figures of a plan.

    Parameters
    ----------
    instance : Instance
        What was solved.
    solution : PlacementSolution
        The answer.
    sites, assignments : pandas.DataFrame
        The plan's tables.
    status : str
        Status to report.

    Returns
    -------
    dict
        JSON-ready figures: cost, goodput, yield, sites, MW, TTFT, unserved share, solver report.
    """
    goodput = float(assignments["goodput_tok_s"].sum())
    demand = float(instance.commodity_demand_tok_s.sum())
    mw_used = float(sites["mw_used"].sum())
    objective = float(sites["cost_usd_per_h"].sum())
    weights = assignments["goodput_tok_s"].to_numpy()
    report = solution.report
    per_class = []
    for workload in instance.classes:
        rows = assignments[assignments["class"] == workload.name]
        per_class.append(
            {
                "class": workload.name,
                "goodput_tok_s": float(rows["goodput_tok_s"].sum()),
                "ttft_objective_ms": workload.ttft_p99_ms,
                "p99_ttft_ms_max": float(rows["ttft_p99_ms"].max()) if len(rows) else None,
                "p99_itl_ms": workload.itl_p99_ms,
                "goodput_tok_s_per_node": workload.goodput_tok_s_per_node,
            }
        )

    open_reachable = (instance.allowed & solution.open[None, :]).sum(axis=1)
    commodity_demand = instance.commodity_demand_tok_s
    coverage = float(commodity_demand[open_reachable >= 2].sum() / demand) if demand > 0 else 0.0

    def _num(value: float) -> float | None:
        return None if value is None or not math.isfinite(value) else value

    return {
        "scenario": instance.loaded.scenario.name,
        "status": status,
        "objective_usd_per_h": objective,
        "cost_per_million_goodput_tokens_usd": _num(float(cost_per_million_tokens_usd(objective, goodput))),
        "goodput_tok_s": goodput,
        "demand_tok_s": demand,
        "tokens_per_s_per_mw": float(tokens_per_s_per_mw(goodput, mw_used)),
        "sites_open": int(sites["open"].sum()),
        "sites_candidate": len(sites),
        "nodes": int(sites["nodes"].sum()),
        "mw_used": mw_used,
        "p99_ttft_ms_max": _num(float(assignments["ttft_p99_ms"].max())) if len(assignments) else None,
        "p99_ttft_ms_mean": _num(float(np.average(assignments["ttft_p99_ms"], weights=weights))) if weights.sum() > 0 else None,
        "p99_itl_ms": max(c.itl_p99_ms for c in instance.classes),
        "fault_domain_coverage": coverage,
        "unserved_share": max(0.0, 1.0 - goodput / demand) if demand > 0 else 0.0,
        "populations": len(instance.populations.table),
        "cities": len(instance.populations.cities),
        "feasible_pairs": len(instance.inputs.pair_site),
        "classes": per_class,
        "solver": report.solver,
        "solver_status": report.status.value,
        "solver_message": report.message,
        "best_bound_usd_per_h": _num(report.best_bound),
        "gap": _num(report.gap),
        "runtime_s": report.runtime_s,
        "build_s": instance.build_s,
    }


def _assemble(instance: Instance, solution: PlacementSolution, status: str, notes: list[str]) -> Plan:
    data = instance.inputs
    served_by_site = np.bincount(data.pair_site, weights=solution.pair_flow_tok_s, minlength=data.n_sites).astype(float)
    served_commodity = np.zeros(len(instance.commodity_population))
    served_commodity[instance.modelled] = np.bincount(
        data.pair_commodity, weights=solution.pair_flow_tok_s, minlength=len(instance.modelled)
    )
    sites = _site_table(instance, solution, served_by_site)
    assignments = _assignment_table(instance, solution)
    populations = _population_table(instance, served_commodity, assignments)
    late = assignments["ttft_p99_ms"] > assignments["ttft_objective_ms"] + 1e-9
    if late.any():
        raise SolverError(f"{int(late.sum())} assignments exceed their TTFT objective; the model admitted a forbidden pair")
    summary = summarise(instance, solution, sites, assignments, status)
    return Plan(instance, solution, sites, assignments, populations, summary, notes)


def solve_instance(instance: Instance, *, msg: bool = False, progress: Progress = _quiet) -> Plan:
    """Solve an instance and tabulate the plan.

    Parameters
    ----------
    instance : Instance
        From :func:`build_instance`.
    msg : bool, optional
        Show the solver's log.
    progress : callable, optional
        Receives one line per step.

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
    scenario = instance.loaded.scenario
    policy = scenario.policy.unreachable
    options = scenario.solver.options(msg=msg)
    notes: list[str] = []
    unreachable = np.flatnonzero(instance.unreachable)
    if len(unreachable):
        lines = _unreachable_message(instance, unreachable)
        header = f"{len(unreachable)} population-class pairs have no site inside their TTFT objective"
        if policy == "stop":
            raise InfeasibleError(
                "\n  - ".join([header + " (policy.unreachable: stop):", *lines])
                + "\nFix: add candidate sites near them, relax the objective, or set policy.unreachable: report"
            )
        notes.append(header + "; they are reported as unserved:")
        notes += [f"  - {line}" for line in lines]
    if len(instance.modelled) == 0:
        raise InfeasibleError("no population can be served by any site inside its objective")
    progress(f"solving with {options.name} (gap {options.gap:g}, time limit {options.time_limit_s} s)")
    solution = solve_placement(instance.inputs, options)
    status = solution.report.status
    if status == SolveStatus.INFEASIBLE:
        progress("infeasible: diagnosing which populations cannot be served")
        elastic = diagnose_shortfall(instance.inputs, options)
        violations = verify_solution(instance.inputs, elastic, elastic=True)
        if violations:
            raise SolverError("the diagnosis model returned a placement that violates constraints: " + "; ".join(violations))
        lines = _shortfall_message(instance, elastic)
        header = "the sites inside the latency budget do not have the power to serve all demand"
        if policy == "stop":
            raise InfeasibleError(
                "\n  - ".join([header + ":", *lines]) + "\nFix: raise mw_available, add sites, or set policy.unreachable: report"
            )
        notes.append(header + "; the shortfall is reported as unserved:")
        notes += [f"  - {line}" for line in lines]
        return _assemble(instance, elastic, "partial", notes)
    if not status.has_solution:
        raise InfeasibleError(f"the solver found no placement ({solution.report.message}); raise solver.time_limit_s")
    if status == SolveStatus.FEASIBLE:
        notes.append(
            f"stopped at the time limit with a proven gap of {solution.report.gap:.2%}: "
            "the answer is feasible, not proven optimal"
        )
    label = status.value if not len(unreachable) else "partial"
    return _assemble(instance, solution, label, notes)


def run(loaded: LoadedScenario, *, msg: bool = False, progress: Progress = _quiet) -> Plan:
    """Build and solve a scenario.

    Parameters
    ----------
    loaded : LoadedScenario
        A validated scenario.
    msg : bool, optional
        Show the solver's log.
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    Plan
        The verified plan.
    """
    return solve_instance(build_instance(loaded, progress=progress), msg=msg, progress=progress)
