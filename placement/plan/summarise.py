"""A plan's headline figures: cost, goodput, $/M, the classes, footprint and protection, as a PlanSummary."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from placement._types import FloatArray, IntArray
from placement.economics import footprint
from placement.instance.record import Instance
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.plan.failover import protection_cost, protection_shares
from placement.plan.tables import plan_total, site_energy_and_wan
from placement.profiles.build import ClassProfile
from placement.profiles.cache_hits import class_hit_rates
from placement.results.class_summary import ClassSummary
from placement.results.cost_breakdown import CostBreakdown, cost_breakdown
from placement.results.headline_figures import fault_domain_coverage, ttft_headlines_ms, weighted_hit_rate, yield_figures
from placement.results.jsonio import finite_or_none
from placement.results.summary import PlanSummary, dinkelbach_steps
from placement.scenario.classes import WorkloadClass


def _class_costs(
    data: PlacementInput, solution: PlacementSolution, pair_class: IntArray, n_classes: int, site_cost_usd_per_h: FloatArray
) -> FloatArray:
    """Each class's share of cost: site costs split by node-equivalent usage, plus its own energy.

    Parameters
    ----------
    data : PlacementInput
        The arrays solved.
    solution : PlacementSolution
        The answer.
    pair_class : numpy.ndarray of int
        ``(p,)`` class of each pair.
    n_classes : int
        Number of classes.
    site_cost_usd_per_h : numpy.ndarray
        ``(m,)`` cost of each site without its load-dependent energy. [USD/h]

    Returns
    -------
    numpy.ndarray
        ``(n_classes,)`` cost of each class; they add up to the plan's cost. [USD/h]
    """
    energy = np.bincount(pair_class, weights=solution.pair_share * data.pair_cost_usd_per_h, minlength=n_classes)
    return np.asarray(_class_weights(data, solution, pair_class, n_classes).T @ site_cost_usd_per_h + energy)


def _class_weights(data: PlacementInput, solution: PlacementSolution, pair_class: IntArray, n_classes: int) -> FloatArray:
    """``(m, n_classes)`` each class's share of each site's node-equivalent usage over the day (rows sum to 1 or 0)."""
    pair, site, load = data.used_entry_load(solution.pair_share)  # a cross-metro pair uses nodes at its prefill site too
    usage = (load * solution.pair_share[pair, None]) @ (data.slice_hours / data.slice_hours.sum())
    per_site_class = np.zeros((data.n_sites, n_classes))
    np.add.at(per_site_class, (site, pair_class[pair]), usage)
    totals = per_site_class.sum(axis=1, keepdims=True)
    return np.asarray(np.divide(per_site_class, totals, out=np.zeros_like(per_site_class), where=totals > 0))


def _class_footprint(
    data: PlacementInput, solution: PlacementSolution, pair_class: IntArray, n_classes: int, sites: pd.DataFrame
) -> dict[str, FloatArray]:
    """``(n_classes,)`` each class's share of the plan's emissions [tCO2e] and water [m3] a year, split as cost is.

    NaN for a figure the sites lack (a plan without water figures, an open site without an intensity).
    """
    weights = _class_weights(data, solution, pair_class, n_classes)
    out = {}
    for column in ("tco2e_per_year", "water_m3_per_year"):
        values = sites[column].to_numpy(float) if column in sites.columns else np.full(len(sites), np.nan)
        unknown = bool(np.isnan(values[sites["energy_mwh_per_year"].to_numpy(float) > 0]).any())
        out[column] = np.full(n_classes, np.nan) if unknown else np.asarray(weights.T @ np.nan_to_num(values))
    return out


def _interactive_names(classes: list[WorkloadClass]) -> list[str]:
    """Classes whose TTFT is a headline: time-shiftable classes have deadlines, not TTFT (all if none is interactive)."""
    return [c.name for c in classes if not c.time_shiftable] or [c.name for c in classes]


def _hit_rates(instance: Instance, assignments: pd.DataFrame) -> dict[str, float]:
    """Each class's hit rate: its sites' own with the cache model (``serving.kv_cache``), else its fixed figure."""
    profiles = instance.profiles
    if any(p.cache is not None for p in profiles):
        return class_hit_rates(profiles, assignments, by_site=instance.profiles_by_site)
    return {p.name: p.cache_hit_rate for p in profiles}


def _plan_cost_breakdown(instance: Instance, solution: PlacementSolution) -> CostBreakdown:
    """The solution's cost by component: the MILP's cost terms, summed per term. [USD/h]"""
    data, node_cost = instance.inputs, instance.node_cost
    energy, wan = site_energy_and_wan(instance, solution.pair_share)
    return cost_breakdown(
        solution.nodes,
        solution.open,
        node_capex_usd_per_h=node_cost.node_capex_usd_per_h,
        facility_capex_usd_per_h=node_cost.facility_capex_usd_per_h,
        idle_power_usd_per_h=node_cost.power_usd_per_h,
        opex_usd_per_h=node_cost.opex_usd_per_h,
        site_fixed_usd_per_h=data.site_fixed_usd_per_h,
        load_energy_usd_per_h=energy,
        wan_usd_per_h=wan,
    )


def _class_summaries(
    profiles: list[ClassProfile],
    assignments: pd.DataFrame,
    class_cost_usd_per_h: FloatArray,
    class_footprint: dict[str, FloatArray] | None = None,
) -> tuple[ClassSummary, ...]:
    """Each class's figures: its profile, what the plan serves of it, its share of the cost, emissions and water."""
    summaries = []
    for k, (profile, cost) in enumerate(zip(profiles, class_cost_usd_per_h.tolist(), strict=True)):
        rows = assignments[assignments["class"] == profile.name]
        worst = float(rows["ttft_p99_ms"].max()) if len(rows) else None
        served = float(rows["goodput_tok_s"].sum())
        summary = ClassSummary.of_profile(profile, goodput_tok_s=served, cost_usd_per_h=cost, p99_ttft_ms_max=worst)
        if class_footprint is not None:
            grams = footprint.per_million_tokens(class_footprint["tco2e_per_year"][k], served, scale=1e6)
            litres = footprint.per_million_tokens(class_footprint["water_m3_per_year"][k], served, scale=1e3)
            summary = replace(
                summary,
                gco2e_per_million_goodput_tokens=finite_or_none(float(grams)),
                water_l_per_million_goodput_tokens=finite_or_none(float(litres)),
            )
        summaries.append(summary)
    return tuple(summaries)


def _protection_figures(instance: Instance, solution: PlacementSolution, class_cost_usd_per_h: FloatArray) -> dict[str, Any]:
    """``summary.json``'s N+1 figures: shares protected, unprotectable and unprotected, domains, the cost of 24x7."""
    data = instance.inputs
    if not data.fault_tolerant or solution.n_plus_one_dropped:
        return {}
    protected, unprotectable, unprotected = protection_shares(data, solution)
    figures: dict[str, Any] = {
        "n_plus_one_protected_share": protected,
        "unprotectable_share": unprotectable,
        "n_plus_one_unprotected_share": unprotected,
    }
    if instance.failure_domain_grouping is not None:
        ids = instance.sites["id"].to_numpy()
        figures["fault_domains"] = {
            "grouping": instance.failure_domain_grouping,
            "domains": {
                name: [str(ids[j]) for j in sites.tolist()]
                for name, sites in zip(instance.failure_domain_names, data.failure_domains, strict=True)
            },
        }
    without = solution.without_n_plus_one
    if without is not None:
        pair_class = instance.commodity_class[instance.modelled][data.pair_commodity]
        node_cost = instance.node_cost.total_usd_per_h
        site_cost = np.where(without.open, data.site_fixed_usd_per_h, 0.0) + without.nodes * node_cost
        base_cost = _class_costs(data, without, pair_class, len(instance.classes), site_cost)
        names = [p.name for p in instance.profiles]
        figures["n_plus_one_cost"] = protection_cost(
            data, solution, without, class_costs=(class_cost_usd_per_h, base_cost), class_names=names,
            pair_class=pair_class, node_mw=data.site_node_mw,
        )  # fmt: skip
    return figures


def summarise(
    instance: Instance, solution: PlacementSolution, sites: pd.DataFrame, assignments: pd.DataFrame, status: str
) -> PlanSummary:
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
    PlanSummary
        Cost and its breakdown, goodput (daily mean, inside the SLO), yield, sites, MW, TTFT,
        unserved share, fault-domain coverage, per-class figures and the solver report.
    """
    goodput = float(assignments["goodput_tok_s"].sum())
    demand = float(instance.commodity_mean_demand_tok_s.sum())
    mw_used = float(sites["mw_used"].sum())
    objective = float(sites["cost_usd_per_h"].sum())
    cost_per_million, yield_tok_s_per_mw, unserved = yield_figures(objective, goodput, demand, mw_used)
    interactive_names = _interactive_names(instance.classes)
    interactive = assignments[assignments["class"].isin(interactive_names)]
    ttft_max, ttft_mean = ttft_headlines_ms(interactive["ttft_p99_ms"], interactive["goodput_tok_s"])
    served_by_class = {str(k): float(v) for k, v in assignments.groupby("class")["goodput_tok_s"].sum().items()}
    pair_class = instance.commodity_class[instance.modelled][instance.inputs.pair_commodity]
    site_cost = (sites["cost_usd_per_h"] - sites["load_energy_usd_per_h"] - sites.get("wan_usd_per_h", 0.0)).to_numpy(float)
    class_cost = _class_costs(instance.inputs, solution, pair_class, len(instance.classes), site_cost)
    report = solution.report
    carbon, water = plan_total(sites, "tco2e_per_year"), plan_total(sites, "water_m3_per_year")
    class_footprint = _class_footprint(instance.inputs, solution, pair_class, len(instance.classes), sites)
    return PlanSummary(
        scenario=instance.facts.name,
        status=status,
        objective_usd_per_h=objective,
        cost_breakdown_usd_per_h=_plan_cost_breakdown(instance, solution),
        cost_per_million_goodput_tokens_usd=cost_per_million,
        goodput_tok_s=goodput,
        peak_goodput_tok_s=float(assignments["peak_goodput_tok_s"].sum()),
        demand_tok_s=demand,
        tokens_per_s_per_mw=yield_tok_s_per_mw,
        sites_open=int(sites["open"].sum()),
        sites_candidate=len(sites),
        nodes=int(sites["nodes"].sum()),
        mw_used=mw_used,
        p99_ttft_ms_max=ttft_max,
        p99_ttft_ms_mean=ttft_mean,
        p99_itl_ms=max(p.itl_ms for p in instance.profiles if p.name in interactive_names),
        cache_hit_rate=weighted_hit_rate(served_by_class, _hit_rates(instance, assignments)),
        node_kw=instance.node_kw,
        fault_domain_coverage=fault_domain_coverage(
            instance.allowed.and_columns(solution.open).count_by_row(), instance.commodity_mean_demand_tok_s
        ),
        n_plus_one=instance.inputs.fault_tolerant,
        n_plus_one_applied=instance.inputs.fault_tolerant and not solution.n_plus_one_dropped,
        **_protection_figures(instance, solution, class_cost),
        unserved_share=unserved,
        time_slices=len(instance.slice_hours),
        rtt_quantile=instance.facts.quantile,
        populations=len(instance.populations.table),
        cities=len(instance.populations.cities),
        feasible_pairs=len(instance.inputs.pair_site),
        classes=_class_summaries(instance.profiles, assignments, class_cost, class_footprint),
        dinkelbach_iterations=dinkelbach_steps(solution.iterations),
        solver=report.solver,
        solver_status=report.status.value,
        solver_message=report.message,
        best_bound_usd_per_h=finite_or_none(report.best_bound),
        gap=finite_or_none(report.gap),
        stopped_by=report.stopped_by.value,
        runtime_s=report.runtime_s,
        build_s=instance.build_s,
        gap_basis=gap_basis(instance),
        ratio_bound_usd_per_million_tokens=ratio_bound_per_million(solution),
        energy_mwh_per_year=float(sites["energy_mwh_per_year"].sum()),
        carbon_charge_usd_per_h=float(sites["carbon_charge_usd_per_h"].sum()) if "carbon_charge_usd_per_h" in sites else None,
        tco2e_per_year=finite_or_none(carbon),
        gco2e_per_million_goodput_tokens=finite_or_none(float(footprint.per_million_tokens(carbon, goodput, scale=1e6))),
        embodied_tco2e_per_year=float(sites["embodied_tco2e_per_year"].sum()),
        water_m3_per_year=finite_or_none(water),
        water_on_site_m3_per_year=finite_or_none(plan_total(sites, "water_on_site_m3_per_year")),
        water_l_per_million_goodput_tokens=finite_or_none(float(footprint.per_million_tokens(water, goodput, scale=1e3))),
        water_charge_usd_per_h=float(sites["water_charge_usd_per_h"].sum()) if "water_charge_usd_per_h" in sites else None,
    )


def gap_basis(instance: Instance) -> str:
    """``full_resolution`` when every population is one city, else ``aggregated``.

    The solve bounds the model it is given: with populations clustered, that is the aggregate (each cluster
    takes its worst member's round trip, so it allows fewer pairs and leaves whole clusters unreachable), and
    its plan serves a different set of demand than the full-resolution model would; its bound says nothing
    about the full-resolution optimum. ``demand.clusters: null`` solves (and bounds) the full model.
    """
    return "full_resolution" if len(instance.populations.table) == len(instance.populations.cities) else "aggregated"


def ratio_bound_per_million(solution: PlacementSolution) -> float | None:
    """The proven lower bound of cost per million goodput tokens, from the last Dinkelbach step that recorded one."""
    bounds = [step["ratio_bound_usd_per_tok_s"] for step in solution.iterations if "ratio_bound_usd_per_tok_s" in step]
    return None if not bounds else finite_or_none(max(bounds) * 1e6 / 3600.0)
