"""From a scenario to a verified siting plan: the one pipeline the CLI and notebooks call.

``instance -> solve (all served, or exact ratio) -> verify -> tables``. Geometry and files stay
out of this module; :mod:`placement.outputs.writer` writes them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InfeasibleError, SolverError
from placement._types import FloatArray, IntArray
from placement.economics import footprint
from placement.economics.cost import HOURS_PER_YEAR, cost_per_million_tokens_usd, tokens_per_s_per_mw
from placement.instance.build import Instance, build_instance, energy_demand_tok_s, site_energy_price
from placement.optimize import failover
from placement.optimize.problem import PlacementInput, PlacementSolution, ResourceCap
from placement.optimize.protect import exposed, protect_plan
from placement.optimize.ratio import solve_ratio
from placement.optimize.rows import group_by
from placement.optimize.shortfall import diagnose_shortfall
from placement.optimize.solve import solve_placement
from placement.optimize.solver import SolverOptions, SolveStatus
from placement.plan.failover import FailoverTables, failover_tables, protection_cost, protection_shares
from placement.profiles.build import ClassProfile
from placement.profiles.cache_hits import class_hit_rates
from placement.profiles.ttft_budget import COMPONENTS, max_rtt_ms, ttft_components_ms
from placement.progress import Progress, quiet
from placement.results.class_summary import ClassSummary
from placement.results.cost_breakdown import CostBreakdown, cost_breakdown
from placement.results.headline_figures import fault_domain_coverage, ttft_headlines_ms, weighted_hit_rate, yield_figures
from placement.results.jsonio import finite_or_none
from placement.results.summary import ArrangementSummary, PlanSummary, RulePrice, dinkelbach_steps
from placement.results.textfmt import mw_text, share_text, usd_per_m_text
from placement.rules.availability import availability_rules, standing_bars
from placement.rules.residency import Regime
from placement.rules.resources import embodied_kgco2e_per_node, site_water_stress
from placement.scenario.classes import WorkloadClass
from placement.scenario.load import LoadedScenario
from placement.scenario.sections import ResidencySection, ServingSection

__all__ = ["Instance", "Plan", "PlanSummary", "build_instance", "run", "solve_instance", "summarise", "unprotectable_commodities"]


def _unreachable_message(instance: Instance, rows: IntArray, *, limit: int = 15) -> list[str]:
    table = instance.populations.table
    lines = []
    for c in rows[:limit].tolist():
        i, k = int(instance.commodity_population[c]), int(instance.commodity_class[c])
        workload = instance.profiles[k]
        ttft_ms = instance.ttft_ms(c)
        j = int(np.argmin(ttft_ms))
        where = f"{table['name'].iat[i]} ({table['country_code'].iat[i]}), class {workload.name}"
        inside = np.flatnonzero(instance.within_budget.row(c))
        if len(inside):
            names = ", ".join(str(instance.sites["name"].iat[j]) for j in inside[:6]) + (" ..." if len(inside) > 6 else "")
            unpowered = (instance.sites["mw_available"].to_numpy(float)[inside] <= 0).all()
            why = "have no power (0 MW available)" if unpowered else "are barred by residency rules or have no power"
            regime = instance.regime_of(np.array([c]))[0]
            if regime and not unpowered:
                where += f" (its {regime} part, in-bloc sites only)"
                why = f"are outside {regime}'s in-bloc sites or have no power"
            lines.append(f"{where}: the sites inside its budget ({names}) {why}")
            continue
        lines.append(
            f"{where}: nearest site {instance.sites['name'].iat[j]} has p99 TTFT {ttft_ms[j]:.1f} ms "
            f"(RTT {instance.rtt_ms[i, j]:.1f} ms) over the {workload.ttft_objective_ms:g} ms objective, "
            f"which allows at most {max_rtt_ms(workload):.1f} ms RTT"
        )
    if len(rows) > limit:
        lines.append(f"... and {len(rows) - limit} more")
    return lines


def _unprotectable_message(instance: Instance, rows: IntArray, *, limit: int = 15) -> list[str]:
    """One line per commodity that has a single site inside its objective: N+1 cannot hold for it."""
    table = instance.populations.table
    lines = []
    for c in rows[:limit].tolist():
        i, k = int(instance.commodity_population[c]), int(instance.commodity_class[c])
        j = int(np.flatnonzero(instance.allowed.row(c))[0])
        lines.append(
            f"{table['name'].iat[i]} ({table['country_code'].iat[i]}), class {instance.classes[k].name}: "
            f"only {instance.sites['name'].iat[j]} is inside its {instance.classes[k].ttft_p99_ms:g} ms objective "
            f"(p99 TTFT {float(instance.ttft_ms(c, j)):.1f} ms)"
        )
    if len(rows) > limit:
        lines.append(f"... and {len(rows) - limit} more")
    return lines


def unprotectable_commodities(instance: Instance) -> IntArray:
    """Commodities with demand that N+1 cannot protect: a single site inside their objective.

    Parameters
    ----------
    instance : Instance
        What is solved.

    Returns
    -------
    numpy.ndarray of int
        Commodity indices (empty unless the scenario asks for N+1).
    """
    if not instance.inputs.fault_tolerant:
        return np.zeros(0, dtype=np.int64)
    single = (instance.allowed.count_by_row() == 1) & (instance.commodity_mean_demand_tok_s > 0)
    return np.flatnonzero(single).astype(np.int64)


def _shortfall_message(instance: Instance, elastic: PlacementSolution, *, limit: int = 15) -> list[str]:
    data = instance.inputs
    short = np.flatnonzero(elastic.unserved_share > 1e-6)
    table = instance.populations.table
    lines = []
    mean = data.mean_demand_tok_s
    for row in short[np.argsort(-elastic.unserved_share[short] * mean[short])][:limit].tolist():
        c = int(instance.modelled[row])
        i, k = int(instance.commodity_population[c]), int(instance.commodity_class[c])
        reach = np.flatnonzero(instance.allowed.row(c))
        names = ", ".join(f"{instance.sites['name'].iat[j]} ({instance.sites['mw_available'].iat[j]:g} MW)" for j in reach[:6])
        lines.append(
            f"{table['name'].iat[i]} ({table['country_code'].iat[i]}), class {instance.classes[k].name}: "
            f"{share_text(float(elastic.unserved_share[row]))} of its {mean[row]:,.0f} tok/s cannot be served; "
            f"sites inside the budget: {names}{' ...' if len(reach) > 6 else ''}: their power is spoken for"
            + (" or N+1 cannot be met" if data.fault_tolerant else "")
        )
    return lines


def _power_totals(instance: Instance) -> tuple[float, float, float, float]:
    """MW the sites hold in total, and a lower bound on the MW the demand needs (with its node count and PUE).

    The bound is the busiest slice's node-equivalents at the lowest PUE of any site.
    """
    sites = instance.sites
    nodes_per_tok_s = np.array([p.nodes_per_tok_s for p in instance.profiles])[instance.commodity_class]
    nodes = float((instance.commodity_slice_demand_tok_s * nodes_per_tok_s[:, None]).sum(axis=0).max(initial=0.0))
    pue = float(sites["pue"].min())
    return float(sites["mw_available"].sum()), nodes * instance.node_kw * pue / 1000.0, nodes, pue


def _no_power_message(instance: Instance) -> str | None:
    """With no MW at any site every pair is barred: say it is power, not latency."""
    available, needed, nodes, pue = _power_totals(instance)
    if available > 0:
        return None
    return (
        f"no power: the {len(instance.sites)} candidate sites hold {mw_text(available)} MW in total "
        f"(sites.mw_multiplier: {instance.loaded.scenario.sites.mw_multiplier:g}), but serving the demand needs at least "
        f"{mw_text(needed)} MW ({nodes:,.1f} nodes of {instance.node_kw:g} kW at PUE {pue:g} in the busiest slice)"
        f"\nFix: raise sites.mw_multiplier or mw_available in {instance.loaded.catalog_path.name}, or add sites"
    )


@dataclass(frozen=True, kw_only=True)
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
    summary : PlanSummary
        Headline figures (see :func:`summarise`); ``summary.json`` is its JSON form.
    notes : list of str
        Diagnoses the user should read (unreachable populations, shortfalls, time limits).
    failover : FailoverTables or None
        What each loss moves where (N+1 plans): ``failover*.csv``.
    rule_prices : pandas.DataFrame or None
        What each residency rule costs, per continent (``solve --price-rules``): ``rule_prices.csv``.
    rule_price_headlines : list of RulePrice or None
        The same per rule, whole plan: ``summary.json``'s ``rule_prices``.
    arrangement : ArrangementSummary or None
        The plan against the fixed arrangement (:mod:`placement.analyses.arrangement`): ``summary.json``'s ``arrangement``.

    The writers read what was solved through the properties below, not through the instance's
    scenario.
    """

    instance: Instance
    solution: PlacementSolution
    sites: pd.DataFrame
    assignments: pd.DataFrame
    populations: pd.DataFrame
    summary: PlanSummary
    notes: list[str] = field(default_factory=list)
    failover: FailoverTables | None = None
    rule_prices: pd.DataFrame | None = None
    rule_price_headlines: list[RulePrice] | None = None
    arrangement: ArrangementSummary | None = None

    @property
    def scenario_name(self) -> str:
        """The solved scenario's ``name``."""
        return self.instance.loaded.scenario.name

    @property
    def scenario_path(self) -> Path:
        """The solved scenario's file (``summary.json``'s ``scenario_path``; copied as ``scenario.yaml``)."""
        return self.instance.loaded.path

    @property
    def classes(self) -> list[WorkloadClass]:
        """The workload classes, in the order of the instance's class indices."""
        return self.instance.classes

    @property
    def serving(self) -> ServingSection:
        """The scenario's ``serving`` section: the node the classes were planned on."""
        return self.instance.loaded.scenario.serving

    @property
    def rtt_quantile(self) -> str:
        """The round trip the TTFT budgets used (``latency.quantile``: ``p50`` or ``p90``)."""
        return self.instance.loaded.scenario.latency.quantile

    @property
    def residency(self) -> ResidencySection:
        """The scenario's ``residency`` section: where each population's traffic may be served."""
        return self.instance.loaded.scenario.residency


def _site_loads(instance: Instance, solution: PlacementSolution) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Mean goodput, peak node-equivalent load and per-pair energy cost per site."""
    data = instance.inputs
    flow = solution.pair_mean_flow_tok_s(data)
    served = np.bincount(data.pair_site, weights=flow, minlength=data.n_sites).astype(float)
    peak_load = data.site_slice_load(solution.pair_share).max(axis=1)
    energy, _ = site_energy_and_wan(instance, solution.pair_share)
    return served, peak_load, energy


def site_energy_and_wan(instance: Instance, shares: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(m,)`` load energy each site draws and ``(m,)`` WAN transport each decode site buys under the shares. [USD/h]

    A cross-metro pair's load energy is split between its decode and its prefill site; its KV's transport is the
    decode site's. Without cross-metro prefill the WAN cost is 0 everywhere.
    """
    data = instance.inputs
    m = data.n_sites
    cross = instance.cross_metro
    if cross is None or not len(cross.pairs):
        energy = np.bincount(data.pair_site, weights=shares * data.pair_cost_usd_per_h, minlength=m)
        return energy.astype(float), np.zeros(m)
    first, pairs = cross.pairs.first, cross.pairs
    energy = np.bincount(data.pair_site[:first], weights=shares[:first] * data.pair_cost_usd_per_h[:first], minlength=m)
    far = shares[first:]
    energy = energy + np.bincount(pairs.decode_site, weights=far * pairs.decode_energy_usd_per_h, minlength=m)
    energy = energy + np.bincount(pairs.prefill_site, weights=far * pairs.prefill_energy_usd_per_h, minlength=m)
    return energy.astype(float), np.bincount(pairs.decode_site, weights=far * pairs.wan_usd_per_h, minlength=m).astype(float)


def _site_table(instance: Instance, solution: PlacementSolution) -> pd.DataFrame:
    data = instance.inputs
    sites = instance.sites
    served, peak_load, energy = _site_loads(instance, solution)
    _, wan = site_energy_and_wan(instance, solution.pair_share)
    node_cost = instance.node_cost.total_usd_per_h
    cost = np.where(solution.open, data.site_fixed_usd_per_h, 0.0) + solution.nodes * node_cost + energy + wan
    warmup = np.where(solution.open, instance.cache_warmup_nodes, 0)  # in the fixed cost already
    mw_used = (solution.nodes + warmup) * data.site_node_mw
    reachable = instance.within_budget.any_by_column()
    permitted = instance.allowed.any_by_column()
    reason = np.where(
        solution.open,
        "open",
        np.where(
            data.site_mw_available <= 0,
            "no power available",
            np.where(
                ~reachable,
                "no population within its latency budget",
                np.where(
                    ~permitted,
                    "residency rules bar every population within its budget",
                    "not chosen: its populations are served at lower cost elsewhere",
                ),
            ),
        ),
    )
    table = pd.DataFrame(
        {
            "site_id": sites["id"],
            "name": sites["name"],
            "country_code": sites["country_code"],
            "continent": sites["continent"],
            "lat": sites["lat"],
            "lon": sites["lon"],
            "network": sites["network"] if "network" in sites.columns else "backbone",
            "open": solution.open,
            "locked": sites["locked"],
            "nodes": solution.nodes,
            **({"kv_tier": [instance.site_tier(j) for j in range(len(sites))]} if instance.tier_names else {}),
            **({"cache_warmup_nodes": warmup} if instance.cache_warmup_nodes.any() else {}),
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
            "load_energy_usd_per_h": energy,
            **({"wan_usd_per_h": wan} if instance.cross_metro is not None else {}),
            "cost_usd_per_h": cost,
            "goodput_tok_s": served,
            "goodput_share": served / max(served.sum(), 1e-12),
            "peak_utilisation": np.where(solution.nodes > 0, peak_load / np.maximum(solution.nodes, 1), 0.0),
            # Undefined (NaN, written as null) for a closed site and for an open one that serves nothing.
            "cost_per_million_goodput_tokens_usd": np.where(
                solution.open & (served > 0), cost_per_million_tokens_usd(cost, served), np.nan
            ),
            "tokens_per_s_per_mw": tokens_per_s_per_mw(served, mw_used),
            "carbon_intensity_g_per_kwh": sites["carbon_intensity_g_per_kwh"],
            **_discovered_columns(sites),
            **_site_footprint(instance, solution, warmup),
            "reason": reason,
        }
    )
    return _with_footprint_per_million(table)


def _discovered_columns(sites: pd.DataFrame) -> dict[str, pd.Series]:
    """``discovered`` and ``years_to_energise`` where the catalog has proposals of ``placement discover``."""
    if "discovered" not in sites.columns or not sites["discovered"].astype(bool).any():
        return {}
    return {"discovered": sites["discovered"].astype(bool), "years_to_energise": sites["years_to_energise"]}


def _with_footprint_per_million(sites: pd.DataFrame) -> pd.DataFrame:
    """Each site's emissions and water per million of its goodput tokens, before ``reason`` (NaN without goodput)."""
    served = sites["goodput_tok_s"].to_numpy(float)
    columns = {
        "gco2e_per_million_goodput_tokens": ("tco2e_per_year", 1e6),
        "water_l_per_million_goodput_tokens": ("water_m3_per_year", 1e3),
    }
    at = list(sites.columns).index("reason")
    for k, (name, (source, scale)) in enumerate(columns.items()):
        if source in sites.columns:
            values = footprint.per_million_tokens(sites[source].to_numpy(float), served, scale=scale)
            sites.insert(at + k, name, values)
    return sites


def _site_footprint(instance: Instance, solution: PlacementSolution, warmup: IntArray) -> dict[str, NDArray[Any]]:
    """Each site's energy a year, the carbon intensity of what it draws and its emissions (:mod:`placement.economics.footprint`).

    With the sites' water known: the water each consumes and its basin's water stress (:mod:`placement.rules.resources`).
    """
    data = instance.inputs
    idle = instance.loaded.scenario.serving.idle_power_share
    installed = footprint.site_power_mw_by_slice(data.site_node_mw, solution.nodes, warmup, np.zeros((data.n_sites, 1)), idle)
    power = installed + _load_power_mw(instance, solution.pair_share)
    intensity = instance.carbon_intensity_g_per_kwh
    if intensity is None:
        intensity = instance.sites["carbon_intensity_g_per_kwh"].to_numpy(float)[:, None]
    energy = footprint.energy_mwh_per_year(power, data.slice_hours)
    carbon = footprint.tco2e_per_year(power, data.slice_hours, intensity)
    day_mean = (intensity * data.slice_hours).sum(axis=1) / data.slice_hours.sum()
    with np.errstate(divide="ignore", invalid="ignore"):  # t/MWh x 1e3 = g/kWh; a site that draws nothing: its day's mean
        drawn = np.where(energy > 0, carbon * 1e3 / energy, day_mean)
    figures = {"energy_mwh_per_year": energy, "gco2e_per_kwh": drawn, "tco2e_per_year": carbon}
    scenario = instance.loaded.scenario
    objective = scenario.objective
    per_node_t = embodied_kgco2e_per_node(scenario.serving.gpus_per_node) / 1000.0  # over the nodes' life
    figures["embodied_tco2e_per_year"] = (solution.nodes + warmup) * per_node_t / scenario.economics.node_life_years
    if objective.carbon_usd_per_t > 0:  # in the cost already (idle power and load energy): what of it the price charges
        figures["carbon_charge_usd_per_h"] = carbon * objective.carbon_usd_per_t / HOURS_PER_YEAR
    water = instance.site_water
    if water is not None:  # m3/MWh drawn, flat over the day
        figures["water_stress"] = site_water_stress(instance.sites)
        figures["water_l_per_kwh"] = water.total_m3_per_mwh  # m3/MWh is L/kWh
        figures["water_m3_per_year"] = energy * water.total_m3_per_mwh
        figures["water_on_site_m3_per_year"] = energy * water.on_site_m3_per_mwh
        if objective.water_usd_per_m3 > 0:
            figures["water_charge_usd_per_h"] = figures["water_m3_per_year"] * objective.water_usd_per_m3 / HOURS_PER_YEAR
    return figures


def _load_power_mw(instance: Instance, shares: FloatArray) -> FloatArray:
    """``(m, T)`` facility power the load draws at each site in each slice, as the cost model bills it. [MW]

    Each pair's load energy was priced as ``mw_per_tok_s * sum_t w_t * demand[c, t] * price[j, t]`` (PUE in the
    price); dividing by the sum recovers its MW per tok/s whatever the class, rung or KV tier, and a cross-metro
    pair's decode and prefill sites each take their own part.
    """
    data = instance.inputs
    m, slices = data.n_sites, len(data.slice_hours)
    pue = instance.sites["pue"].to_numpy(float)
    price = instance.energy_price_usd_per_mwh
    if price is None:
        price = site_energy_price(instance.sites, np.ones((m, slices)))
    demand = energy_demand_tok_s(data.slice_demand_tok_s, data.slice_hours, instance.loaded.scenario.demand.peak_factor)
    weights = data.slice_hours / data.slice_hours.sum()
    cross = instance.cross_metro
    first = len(data.pair_site) if cross is None or not len(cross.pairs) else cross.pairs.first
    used = np.flatnonzero(shares[:first] > 0)
    site, row, share, usd = data.pair_site[used], data.pair_commodity[used], shares[used], data.pair_cost_usd_per_h[used]
    if first < len(data.pair_site):
        assert cross is not None
        far = np.flatnonzero(shares[first:] > 0)
        pairs, far_row = cross.pairs, data.pair_commodity[first + far]
        site = np.concatenate([site, pairs.decode_site[far], pairs.prefill_site[far]])
        row = np.concatenate([row, far_row, far_row])
        share = np.concatenate([share, shares[first + far], shares[first + far]])
        usd = np.concatenate([usd, pairs.decode_energy_usd_per_h[far], pairs.prefill_energy_usd_per_h[far]])
    billed = (demand[row] * price[site] * weights).sum(axis=1)  # USD/h of 1 MW per tok/s
    mw_per_tok_s = np.divide(usd, billed, out=np.zeros(len(usd)), where=billed > 0)
    power = np.stack(
        [np.bincount(site, weights=share * mw_per_tok_s * demand[row, t], minlength=m) for t in range(slices)], axis=1
    )
    return np.asarray(power * pue[:, None])


def commodity_pairs(instance: Instance, solution: PlacementSolution) -> tuple[IntArray, IntArray, FloatArray]:
    """The solution per commodity: every member of a model row takes the row's shares.

    Parameters
    ----------
    instance : Instance
        What was solved.
    solution : PlacementSolution
        The answer.

    Returns
    -------
    tuple of numpy.ndarray
        Commodity, site and share of every (commodity, site) pair with a positive share (a commodity served at a
        site both whole and with its prefill elsewhere has a row for each).
    """
    commodity, site, share, _ = commodity_pair_rows(instance, solution)
    return commodity, site, share


def commodity_pair_rows(instance: Instance, solution: PlacementSolution) -> tuple[IntArray, IntArray, FloatArray, IntArray]:
    """:func:`commodity_pairs` and the model pair of each row (cross-metro pairs say their prefill site)."""
    data = instance.inputs
    used = np.flatnonzero(solution.pair_share > 1e-9)
    members = np.flatnonzero(instance.row_of_commodity >= 0)
    groups = group_by(instance.row_of_commodity[members], len(instance.modelled))
    counts = np.array([len(groups[r]) for r in data.pair_commodity[used].tolist()], dtype=np.int64)
    commodity = (
        np.concatenate([members[groups[r]] for r in data.pair_commodity[used].tolist()]).astype(np.int64)
        if len(used)
        else np.zeros(0, dtype=np.int64)
    )
    return (
        commodity,
        np.repeat(data.pair_site[used], counts),
        np.repeat(solution.pair_share[used], counts),
        np.repeat(used, counts),
    )


def _assignment_table(instance: Instance, solution: PlacementSolution) -> pd.DataFrame:
    commodity, site, share, pair = commodity_pair_rows(instance, solution)
    pop = instance.commodity_population[commodity]
    klass = instance.commodity_class[commodity]
    table = instance.populations.table
    rtt = instance.rtt_ms[pop, site]  # the quantile the TTFT budget uses (latency.quantile)
    frame = pd.DataFrame(
        {
            "population_id": table["population_id"].to_numpy()[pop],
            "population": table["name"].to_numpy()[pop],
            "country_code": table["country_code"].to_numpy()[pop],
            "class": [instance.classes[k].name for k in klass.tolist()],
            "site_id": instance.sites["id"].to_numpy()[site],
            "site": instance.sites["name"].to_numpy()[site],
            "goodput_tok_s": share * instance.commodity_mean_demand_tok_s[commodity],
            "peak_goodput_tok_s": share * instance.commodity_peak_demand_tok_s[commodity],
            "share_of_demand": share,
            "rtt_ms": instance.rtt_p50_ms[pop, site],
            "rtt_p90_ms": instance.rtt_p90_ms[pop, site],
            "rtt_budget_ms": rtt,
            "ttft_p99_ms": instance.ttft_ms(commodity, site),
            "ttft_objective_ms": [instance.classes[k].ttft_p99_ms for k in klass.tolist()],
        }
    )
    frame["ttft_slack_ms"] = frame["ttft_objective_ms"] - frame["ttft_p99_ms"]
    if instance.regimes:  # which regime's in-bloc part a row serves ('' for the rest)
        frame.insert(list(frame.columns).index("class") + 1, "regime", instance.regime_of(commodity))
    for name in COMPONENTS:
        frame[name] = 0.0
    # each pair's own profile: its class's, or with serving.node_ttft_ladder the rung it runs there
    option = instance.option_at(commodity, site) if instance.varies_by_pair else klass
    option_class = instance.option_class
    for o, profile in enumerate(instance.options):
        mask = option == o
        k = int(option_class[o])
        parts = ttft_components_ms(rtt[mask], profile, retrieval_extra_ms=instance.retrieval_extra_ms[k][site[mask]])
        for name in COMPONENTS:
            frame.loc[mask, name] = parts[name]
    if instance.laddered:
        budget = np.array([(w.serving_ttft_budget_ms or 0.0) for w in instance.classes])
        share = np.array([p.node_ttft_share for p in instance.options])
        frame["node_ttft_budget_ms"] = budget[klass] * share[option]
    if instance.varies_by_pair:
        frame["goodput_tok_s_per_node"] = np.array([p.goodput_tok_s_per_node for p in instance.options])[option]
    if instance.cross_metro is not None:
        _cross_metro_columns(instance, frame, pair, commodity, rtt)
    frame["pop_lat"] = table["lat"].to_numpy()[pop]
    frame["pop_lon"] = table["lon"].to_numpy()[pop]
    frame["site_lat"] = instance.sites["lat"].to_numpy()[site]
    frame["site_lon"] = instance.sites["lon"].to_numpy()[site]
    order = ["population_id", "class", "goodput_tok_s"]
    return frame.sort_values(order, ascending=[True, True, False]).reset_index(drop=True)


def _cross_metro_columns(instance: Instance, frame: pd.DataFrame, pair: IntArray, commodity: IntArray, rtt: FloatArray) -> None:
    """Each assignment's ``serving_mode``, ``prefill_site_id``, ``cross_metro_rtt_ms`` and ``kv_wan_gb_per_h``.

    A row served with its prefill in another metro takes the cross-metro profile's TTFT parts, and its network part
    carries the round trip between the two sites.
    """
    cross = instance.cross_metro
    assert cross is not None
    klass = instance.commodity_class[commodity]
    modes = np.array([f"{p.serving_mode}+{p.speculative}" if p.speculative else p.serving_mode for p in instance.profiles])
    frame["serving_mode"] = modes[klass] if len(klass) else []
    frame["prefill_site_id"] = ""
    frame["cross_metro_rtt_ms"] = 0.0
    frame["kv_wan_gb_per_h"] = 0.0
    far = np.flatnonzero(pair >= cross.pairs.first)
    if not len(far):
        return
    q = pair[far] - cross.pairs.first
    frame.loc[far, "prefill_site_id"] = instance.sites["id"].to_numpy()[cross.pairs.prefill_site[q]]
    frame.loc[far, "cross_metro_rtt_ms"] = cross.pairs.site_rtt_ms[q]
    option = cross.pairs.option[q]
    for o in np.unique(option).tolist():
        xm = cross.options[o]
        rows = far[option == o]
        k = int(klass[rows[0]])
        extra = instance.retrieval_extra_ms[k][instance.inputs.pair_site[pair[rows]]]
        parts = ttft_components_ms(rtt[rows], xm.profile, retrieval_extra_ms=extra)
        parts["network_ms"] = parts["network_ms"] + frame.loc[rows, "cross_metro_rtt_ms"].to_numpy(float)
        for name in COMPONENTS:
            frame.loc[rows, name] = parts[name]
        frame.loc[rows, "ttft_p99_ms"] = sum(parts[name] for name in COMPONENTS)
        label = f"cross-metro+{xm.profile.speculative}" if xm.profile.speculative else "cross-metro"
        frame.loc[rows, "serving_mode"] = label
        frame.loc[rows, "kv_wan_gb_per_h"] = frame.loc[rows, "goodput_tok_s"].to_numpy() * xm.kv_gb_per_tok * 3600.0
    frame["ttft_slack_ms"] = frame["ttft_objective_ms"] - frame["ttft_p99_ms"]


def _population_table(instance: Instance, solution: PlacementSolution, assignments: pd.DataFrame) -> pd.DataFrame:
    table = instance.populations.table.copy()
    commodity, _, share = commodity_pairs(instance, solution)
    served_commodity = np.bincount(
        commodity, weights=share * instance.commodity_mean_demand_tok_s[commodity], minlength=len(instance.commodity_population)
    )
    served = np.bincount(instance.commodity_population, weights=served_commodity, minlength=len(table))
    table["peak_demand_tok_s"] = instance.population_slice_demand_tok_s.max(axis=1)
    table["served_tok_s"] = served
    table["unserved_tok_s"] = np.maximum(table["demand_tok_s"].to_numpy() - served, 0.0)
    table["nearest_site_rtt_ms"] = instance.rtt_ms.min(axis=1)
    main = assignments.sort_values("goodput_tok_s", ascending=False).drop_duplicates("population_id")
    main_site = table["population_id"].map(main.set_index("population_id")["site_id"])
    table["main_site_id"] = main_site.astype(object).fillna("")  # float NaN when nothing is served
    return table


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
    carbon, water = _plan_total(sites, "tco2e_per_year"), _plan_total(sites, "water_m3_per_year")
    class_footprint = _class_footprint(instance.inputs, solution, pair_class, len(instance.classes), sites)
    return PlanSummary(
        scenario=instance.loaded.scenario.name,
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
        rtt_quantile=instance.loaded.scenario.latency.quantile,
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
        ratio_bound_usd_per_million_tokens=_ratio_bound_per_million(solution),
        energy_mwh_per_year=float(sites["energy_mwh_per_year"].sum()),
        carbon_charge_usd_per_h=float(sites["carbon_charge_usd_per_h"].sum()) if "carbon_charge_usd_per_h" in sites else None,
        tco2e_per_year=finite_or_none(carbon),
        gco2e_per_million_goodput_tokens=finite_or_none(float(footprint.per_million_tokens(carbon, goodput, scale=1e6))),
        embodied_tco2e_per_year=float(sites["embodied_tco2e_per_year"].sum()),
        water_m3_per_year=finite_or_none(water),
        water_on_site_m3_per_year=finite_or_none(_plan_total(sites, "water_on_site_m3_per_year")),
        water_l_per_million_goodput_tokens=finite_or_none(float(footprint.per_million_tokens(water, goodput, scale=1e3))),
        water_charge_usd_per_h=float(sites["water_charge_usd_per_h"].sum()) if "water_charge_usd_per_h" in sites else None,
    )


def _plan_total(sites: pd.DataFrame, column: str) -> float:
    """A plan's yearly figure (emissions, water): NaN when a site that draws power lacks it (no partial total)."""
    if column not in sites.columns:
        return math.nan
    drawing = sites["energy_mwh_per_year"] > 0
    return float(sites[column].sum()) if bool(sites.loc[drawing, column].notna().all()) else math.nan


def least_use(data: PlacementInput, cap: ResourceCap, options: SolverOptions) -> PlacementSolution:
    """The design that serves the demand using the least of what ``cap`` counts: the model with that use as its cost.

    ``objective_usd_per_h`` of the answer is then its use and ``report.best_bound`` a proven least, with no cap in
    the model. [cap.unit/h]
    """
    fixed, node = cap.site_weights()
    as_cost = replace(
        data, site_fixed_usd_per_h=fixed, site_node_usd_per_h=node, pair_cost_usd_per_h=cap.pair_weights(data.pair_site),
        caps=(),
    )  # fmt: skip
    return solve_placement(as_cost, options, route_nearest=False)


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


def gap_basis(instance: Instance) -> str:
    """``full_resolution`` when every population is one city, else ``aggregated``.

    The solve bounds the model it is given: with populations clustered, that is the aggregate (each cluster
    takes its worst member's round trip, so it allows fewer pairs and leaves whole clusters unreachable), and
    its plan serves a different set of demand than the full-resolution model would; its bound says nothing
    about the full-resolution optimum. ``demand.clusters: null`` solves (and bounds) the full model.
    """
    return "full_resolution" if len(instance.populations.table) == len(instance.populations.cities) else "aggregated"


def _ratio_bound_per_million(solution: PlacementSolution) -> float | None:
    """The proven lower bound of cost per million goodput tokens, from the last Dinkelbach step that recorded one."""
    bounds = [step["ratio_bound_usd_per_tok_s"] for step in solution.iterations if "ratio_bound_usd_per_tok_s" in step]
    return None if not bounds else finite_or_none(max(bounds) * 1e6 / 3600.0)


def _assemble(instance: Instance, solution: PlacementSolution, status: str, notes: list[str]) -> Plan:
    sites = _site_table(instance, solution)
    assignments = _assignment_table(instance, solution)
    late = assignments["ttft_p99_ms"] > assignments["ttft_objective_ms"] + 1e-9
    if late.any():
        raise SolverError(f"{int(late.sum())} assignments exceed their TTFT objective; the model admitted a forbidden pair")
    populations = _population_table(instance, solution, assignments)
    summary = summarise(instance, solution, sites, assignments, status)
    failover = None
    if instance.inputs.fault_tolerant and not solution.n_plus_one_dropped:
        failover = failover_tables(instance, solution)
        notes = [*notes, *_protection_notes(instance, solution, summary)]
    plan_notes = [*notes, *rule_notes(instance, sites)]
    return Plan(
        instance=instance,
        solution=solution,
        sites=sites,
        assignments=assignments,
        populations=populations,
        summary=summary,
        notes=plan_notes,
        failover=failover,
    )


def _protection_notes(instance: Instance, solution: PlacementSolution, summary: PlanSummary, *, limit: int = 10) -> list[str]:
    """What N+1 protects and what it costs, in words; the populations left unprotected for want of power."""
    data = instance.inputs
    domains = len(data.failure_domains)
    losses = f"any one open site{f' or any one of {domains} fault domains' if domains else ''}"
    protected, unprotectable, unprotected = protection_shares(data, solution)
    lines = [
        f"N+1: {share_text(protected)} of served goodput is re-routed in full inside its objective on the loss of "
        f"{losses} (failover*.csv); {share_text(unprotectable)} has a single site in reach, or all its sites in one fault domain"
        + (f"; {share_text(unprotected)} has no spare power in reach:" if unprotected > 0 else "")
    ]
    if unprotected > 0:
        lines += [f"  - {line}" for line in _unprotected_lines(instance, solution, limit=limit)]
    lines += _domain_exposed_lines(instance, solution, limit=limit)
    cost = summary.n_plus_one_cost
    if cost is not None and cost.get("usd_per_m_with") is not None and cost.get("usd_per_m_without") is not None:
        rise = cost["usd_per_m_with"] / cost["usd_per_m_without"] - 1 if cost["usd_per_m_without"] else float("nan")
        lines.append(
            f"24x7 costs ${usd_per_m_text(cost['usd_per_m_with'])} per million goodput tokens against "
            f"${usd_per_m_text(cost['usd_per_m_without'])} without N+1 ({rise:+.1%}): {cost['extra_nodes']:,} spare nodes, "
            f"{mw_text(cost['extra_mw'])} MW, {cost['standby_sites']} standby sites"
        )
    return lines


def _domain_exposed_lines(instance: Instance, solution: PlacementSolution, *, limit: int) -> list[str]:
    """The population-classes with two or more sites in reach, all inside one fault domain, largest first."""
    data = instance.inputs
    rows = np.flatnonzero(exposed(data, solution.pair_share)) if data.failure_domains else np.zeros(0, dtype=np.int64)
    if not len(rows):
        return []
    row_share = np.bincount(data.pair_commodity, weights=solution.pair_share, minlength=data.n_commodities)
    members = np.flatnonzero(np.isin(instance.row_of_commodity, rows))
    served = row_share[instance.row_of_commodity[members]] * instance.commodity_mean_demand_tok_s[members]
    members = members[np.argsort(-served, kind="stable")]
    table = instance.populations.table
    lines = [
        f"{len(members):,} population-class pairs have every site in reach inside one fault domain, so its loss "
        "cannot be covered; they are served without a backup against it:"
    ]
    for c in members[:limit].tolist():
        i, k, r = int(instance.commodity_population[c]), int(instance.commodity_class[c]), int(instance.row_of_commodity[c])
        reach = set(data.pair_site[data.pair_commodity == r].tolist())
        domain = next(
            name
            for name, sites in zip(instance.failure_domain_names, data.failure_domains, strict=True)
            if reach <= set(np.asarray(sites).tolist())
        )
        who = f"{table['name'].iat[i]} ({table['country_code'].iat[i]}), class {instance.profiles[k].name}"
        lines.append(f"  - {who}: every site in reach is in {domain}")
    if len(members) > limit:
        lines.append(f"  - ... and {len(members) - limit:,} more")
    return lines


def _unprotected_lines(instance: Instance, solution: PlacementSolution, *, limit: int) -> list[str]:
    """The protected commodities some loss leaves without a backup, largest first."""
    data = instance.inputs
    worst = np.max(list(solution.unprotected_share.values()), axis=0)
    at_risk = worst * data.mean_demand_tok_s
    rows = np.flatnonzero(at_risk > 1e-9)
    rows = rows[np.argsort(-at_risk[rows], kind="stable")]
    table = instance.populations.table
    lines = []
    for r in rows[:limit].tolist():
        c = int(instance.modelled[r])
        i, k = int(instance.commodity_population[c]), int(instance.commodity_class[c])
        sites = data.pair_site[(data.pair_commodity == r)]
        names = ", ".join(str(instance.sites["name"].iat[j]) for j in sites[:4].tolist())
        lines.append(
            f"{table['name'].iat[i]} ({table['country_code'].iat[i]}), class {instance.profiles[k].name}: "
            f"{share_text(float(worst[r]))} of it has no backup when a site it uses is lost; sites in reach: {names}"
        )
    if len(rows) > limit:
        lines.append(f"... and {len(rows) - limit} more")
    return lines


def rule_notes(instance: Instance, sites: pd.DataFrame) -> list[str]:
    """The rules that shaped the plan, in words: residency and where power binds.

    Parameters
    ----------
    instance : Instance
        The solved instance (its residency rules and the pairs they barred).
    sites : pandas.DataFrame
        The plan's site table (``open``, ``mw_used``, ``mw_available``).

    Returns
    -------
    list of str
        A header and one indented line per rule; empty when nothing shaped the plan.
    """
    residency = instance.loaded.scenario.residency
    lines = [
        f"residency: populations in {', '.join(rule.populations)} are served only from sites in {', '.join(rule.sites)}"
        for rule in residency.rules
    ]
    if residency.domestic_only_sites:
        lines.append(f"residency: sites in {', '.join(residency.domestic_only_sites)} serve only their own country")
    lines += [regime_note(regime, instance.classes) for regime in instance.regimes]
    demanded = instance.commodity_mean_demand_tok_s > 0
    barred = instance.within_budget.and_not(instance.allowed).and_columns(instance.sites["mw_available"].to_numpy(float) > 0)
    if lines:
        lines.append(f"residency barred {barred.count(demanded):,} (population-class, site) pairs inside their TTFT objective")
    open_sites = sites[sites["open"]]
    lines += _availability_notes(instance, open_sites)
    node_mw = instance.node_kw * open_sites["pue"] / 1e3
    full = open_sites[open_sites["mw_available"] - open_sites["mw_used"] < node_mw]
    if len(full):
        names = ", ".join(
            f"{site_id} {mw_text(mw)} MW" for site_id, mw in zip(full["site_id"], full["mw_available"].astype(float), strict=True)
        )
        lines.append(f"power binds at {len(full)} of {len(open_sites)} open sites (no room for one more node): {names}")
    return [RULES_HEADER, *[f"  - {line}" for line in lines]] if lines else []


def regime_note(regime: Regime, classes: list[WorkloadClass]) -> str:
    """One regime in words: whose demand, which share of each class, where, and whether its sites serve others."""
    shares = {f"{share:g}" for share in regime.share_by_class}
    if len(shares) == 1:
        share_text = f"share {shares.pop()} of every class"
    else:
        share_text = ", ".join(f"{c.name} {share:g}" for c, share in zip(classes, regime.share_by_class, strict=True))
    members = ", ".join(sorted(regime.members)) if len(regime.members) <= 6 else f"{len(regime.members)} countries"
    if len(regime.sites) <= 6:
        sites = ", ".join(sorted(regime.sites))
    else:
        sites = (
            f"the {len(regime.sites)} member countries" if regime.sites == regime.members else f"{len(regime.sites)} countries"
        )
    outsiders = "" if regime.serve_outsiders else "; sites there serve no one else"
    estimate = " (shares from the scenario)" if regime.share_from == "scenario" else ""
    return (
        f"residency: {regime.regime_id} ({regime.name}): demand of {members}, {share_text}{estimate}, "
        f"served only at sites in {sites}{outsiders}"
    )


def _availability_notes(instance: Instance, open_sites: pd.DataFrame) -> list[str]:
    """A one-accelerator plan at sites where a standing rule bars that part: said, not silently planned."""
    accelerator = instance.loaded.scenario.serving.accelerator
    codes = open_sites["country_code"].fillna("").astype(str)
    notes = []
    for rule_id, countries in standing_bars(availability_rules(instance.loaded), accelerator, codes.tolist()).items():
        ids = open_sites.loc[codes.isin(countries), "site_id"].tolist()
        notes.append(
            f"availability: {rule_id} bars {accelerator} in {', '.join(countries)}, where {len(ids)} open site"
            f"{'' if len(ids) == 1 else 's'} "
            f"({', '.join(ids)}) plan on it; a one-accelerator plan stands them for capacity the rule allows there "
            "at its goodput (an estimate); a fleet mix or a horizon buys only what may go there"
        )
    return notes


RULES_HEADER = "Rules that shaped the plan:"
"""The note that opens the rules block (:func:`rule_notes`); reports lift that block into its own section."""


def split_rules(notes: list[str]) -> tuple[list[str], list[str]]:
    """The rules block of a plan's notes (without its header) and the other notes.

    Parameters
    ----------
    notes : list of str
        A plan's notes (``summary.json``'s ``notes``).

    Returns
    -------
    tuple of list of str
        ``(rules, others)``; each rule without its ``"  - "`` indent.
    """
    if RULES_HEADER not in notes:
        return [], list(notes)
    start = notes.index(RULES_HEADER)
    end = start + 1
    while end < len(notes) and notes[end].startswith("  - "):
        end += 1
    return [n[4:] for n in notes[start + 1 : end]], [*notes[:start], *notes[end:]]


def _unprotectable_notes(instance: Instance, policy: str) -> list[str]:
    """List the populations N+1 cannot protect, or stop on them when the policy says so."""
    single = unprotectable_commodities(instance)
    if len(single) == 0:
        return []
    lines = _unprotectable_message(instance, single)
    header = f"{len(single)} population-class pairs have a single site inside their TTFT objective, so N+1 cannot protect them"
    if policy == "stop":
        raise InfeasibleError(
            "\n  - ".join([header + " (policy.unreachable: stop):", *lines])
            + "\nFix: add candidate sites near them, relax the objective, set fault_tolerance.n_plus_one: false, "
            "or set policy.unreachable: report"
        )
    return [header + "; they are served by that site without a backup:"] + [f"  - {line}" for line in lines]


def _n_plus_one_dropped_note(instance: Instance) -> str:
    """Said first when N+1 was asked for and the plan could not keep it: never a silent drop."""
    return (
        "N+1 NOT APPLIED: fault_tolerance.n_plus_one is set, but no protected design was found within the time limit "
        f"({len(instance.inputs.pair_site):,} pairs); this plan keeps no spare capacity for the loss of a site "
        "(summary.json: n_plus_one_applied false). Fix: raise solver.time_limit_s, or set fault_tolerance.n_plus_one: false"
    )


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
        ``cap_cost``); the frontier, which solves that plan itself, does not.

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
    plan = _solve_instance(instance, msg=msg, progress=progress)
    if not price_caps or not instance.inputs.caps:
        return plan
    progress("what the caps cost: the same model without them")
    uncapped = _solve_instance(replace(instance, inputs=replace(instance.inputs, caps=())), msg=msg, progress=progress)
    return replace(plan, summary=replace(plan.summary, cap_cost=cap_cost(plan.summary, uncapped.summary)))


def cap_cost(capped: PlanSummary, uncapped: PlanSummary) -> dict[str, float | None]:
    """What a plan's caps cost against the same model without them: $/M both ways, and $ per tonne and m3 avoided.

    The extra cost a year over the tonnes (cubic metres) avoided; None where the capped plan serves less goodput
    (part of the cut is then demand left unserved, not a dearer way to serve it) or avoids none.
    """
    extra_usd_per_year = (capped.objective_usd_per_h - uncapped.objective_usd_per_h) * HOURS_PER_YEAR
    same_work = capped.goodput_tok_s >= uncapped.goodput_tok_s * (1 - 1e-6)

    def per_avoided(before: float | None, after: float | None) -> float | None:
        avoided = None if before is None or after is None else before - after
        return extra_usd_per_year / avoided if avoided is not None and avoided > 0 and same_work else None

    return {
        "uncapped_usd_per_million_goodput_tokens": uncapped.cost_per_million_goodput_tokens_usd,
        "uncapped_objective_usd_per_h": uncapped.objective_usd_per_h,
        "uncapped_goodput_tok_s": uncapped.goodput_tok_s,
        "uncapped_tco2e_per_year": uncapped.tco2e_per_year,
        "uncapped_water_m3_per_year": uncapped.water_m3_per_year,
        "usd_per_t_avoided": per_avoided(uncapped.tco2e_per_year, capped.tco2e_per_year),
        "usd_per_m3_avoided": per_avoided(uncapped.water_m3_per_year, capped.water_m3_per_year),
    }


def _solve_instance(instance: Instance, *, msg: bool, progress: Progress) -> Plan:
    """:func:`solve_instance` of the model as it stands (its caps, if any, as rows)."""
    scenario = instance.loaded.scenario
    policy = scenario.policy
    options = scenario.solver.options(msg=msg)
    options = replace(options, progress=progress).with_deadline(time.perf_counter())  # the limit bounds the whole solve
    notes: list[str] = []
    if scenario.sites.discover is not None and not instance.sites.get("discovered", pd.Series(False)).astype(bool).any():
        notes.append(
            "sites.discover is set: `placement discover` reads it (a baseline, proposals, a plan with them); this plan "
            "is on the catalog as it is"
        )
    no_power = _no_power_message(instance)
    if no_power is not None:
        raise InfeasibleError(no_power)
    unreachable = np.flatnonzero(instance.unreachable & (instance.commodity_mean_demand_tok_s > 0))
    if len(unreachable):
        lines = _unreachable_message(instance, unreachable)
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
    unprotectable = _unprotectable_notes(instance, policy.unreachable)
    notes += unprotectable
    progress(
        f"solving with {options.name} (gap {options.gap:g}, node limit {options.node_limit}, "
        f"time limit {options.time_limit_s} s for the whole solve)"
    )
    if policy.serving == "optional":
        data = instance.inputs
        large = data.fault_tolerant and failover.failover_variable_count(data) > failover.FULL_FAILOVER_MAX_VARIABLES
        solution = solve_ratio(replace(data, fault_tolerant=False) if large else data, options,
                               min_served_share=policy.min_served_share)  # fmt: skip
        if not solution.report.status.has_solution:
            raise InfeasibleError(f"the solver found no placement ({solution.report.message})")
        if large:  # the exact N+1 ratio model is too large: the best ratio without N+1, then protected
            solution = replace(protect_plan(data, solution, options), iterations=solution.iterations)
            notes.append(
                "serving optional with N+1: $/M goodput was minimised without N+1 (the exact N+1 model is too large), "
                "then every served population protected on the pairs that plan uses"
            )
        last = solution.iterations[-1] if solution.iterations else {}
        bound = _ratio_bound_per_million(solution)
        notes.append(
            f"serving optional: $/M goodput minimised by Dinkelbach in {len(solution.iterations)} iterations "
            f"(last MILP value {last.get('value_usd_per_h', float('nan')):.3g} $/h); proven at least "
            f"{'n/a' if bound is None else f'${usd_per_m_text(bound)}'} per million goodput tokens, gap {solution.report.gap:.2%}"
        )
        return _assemble(instance, solution, solution.report.status.value, notes)
    solution = solve_placement(instance.inputs, options)
    status = solution.report.status
    if status == SolveStatus.INFEASIBLE and instance.inputs.caps:
        _raise_if_a_cap_binds(instance.inputs, options, progress)
    if status == SolveStatus.INFEASIBLE:
        progress("infeasible: diagnosing which populations cannot be served")
        elastic = diagnose_shortfall(instance.inputs, options)
        lines = _shortfall_message(instance, elastic)
        available, needed, _, _ = _power_totals(instance)
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
            notes = [_n_plus_one_dropped_note(instance), *(n for n in notes if n not in unprotectable)]
        return _assemble(instance, elastic, "partial", notes)
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
        notes = [_n_plus_one_dropped_note(instance), *(n for n in notes if n not in unprotectable)]
    label = status.value if not len(unreachable) else "partial"
    return _assemble(instance, solution, label, notes)


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
