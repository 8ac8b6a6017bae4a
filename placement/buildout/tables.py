"""The tables of a solved build-out: year x site x accelerator, years, scenarios, and each year as a plain plan.

Column names follow a single-year run's ``sites.csv`` and ``assignments.csv`` wherever the figure is the
same, so a year's folder can be compared with a single-year results folder.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from placement._errors import SolverError
from placement._process import take_pairs
from placement._types import FloatArray
from placement.buildout.arrays import day_mean_intensity
from placement.buildout.cross_metro import cross_metro_ttft_ms
from placement.buildout.evaluate import accelerator_goodput_tok_s
from placement.buildout.ladder import assignment_ttft_ms
from placement.buildout.protection import n_plus_one_summary, year_protection
from placement.buildout.solve import StochasticResult
from placement.buildout.tiers import tier_site_columns
from placement.economics.cost import HOURS_PER_YEAR, cost_per_million_tokens_usd, tokens_per_s_per_mw
from placement.optimize.buildout.caps import cap_use_per_year, site_energy_mwh_per_year
from placement.results.jsonio import finite_or_none


def _served(result: StochasticResult) -> np.ndarray:
    """``(M, A, Y, S)`` daily mean goodput per site and accelerator. [tokens/s]"""
    return accelerator_goodput_tok_s(result.buildout.data, result.plan)


def buildout_table(result: StochasticResult, scenario: int) -> pd.DataFrame:
    """One row per year x open site x accelerator in service (an open site with none: accelerator ``none``).

    Site costs (open site, reserved MW) are shared among a site's accelerators by MW used, so a year's
    ``cost_usd_per_h`` sums to that year's cost.

    Parameters
    ----------
    result : StochasticResult
        The solved build-out.
    scenario : int
        Which demand scenario's nodes.

    Returns
    -------
    pandas.DataFrame
        ``year, site_id, accelerator, nodes, mw_used, mw_available, mw_reserved, capex_usd, cost_usd_per_h,
        goodput_tok_s, scenario``.
    """
    b, plan, costs = result.buildout, result.plan, result.costs
    data = b.data
    mw_used = plan.nodes[..., scenario] * data.node_mw[:, :, None]  # (M, A, Y)
    served = _served(result)[..., scenario]
    records: list[dict[str, Any]] = []
    for y, year in enumerate(b.years):
        for j in np.flatnonzero(plan.first.open[:, y]).tolist():
            used = mw_used[j, :, y]
            active = [h for h in range(len(b.fleet.ids)) if plan.nodes[j, h, y, scenario] > 0]
            share = used / used.sum() if used.sum() > 0 else np.zeros_like(used)
            site_cost = float(costs.site_usd_per_h[j, y])
            base = {"year": year, "site_id": b.sites["id"].iat[j], "mw_available": float(data.site_mw_available[j, y])}
            base["mw_reserved"] = float(plan.first.mw_reserved[j, y])
            for h in active:
                records.append(
                    {
                        **base,
                        "accelerator": b.fleet.ids[h],
                        "nodes": round(plan.nodes[j, h, y, scenario]),
                        "mw_used": float(used[h]),
                        "capex_usd": float(costs.capex_usd[j, h, y, scenario]),
                        "cost_usd_per_h": float(costs.site_accelerator_usd_per_h[j, h, y, scenario] + share[h] * site_cost),
                        "goodput_tok_s": float(served[j, h, y]),
                    }
                )
            if not active:
                records.append(
                    {**base, "accelerator": "none", "nodes": 0, "mw_used": 0.0, "capex_usd": 0.0, "cost_usd_per_h": site_cost}
                    | {"goodput_tok_s": 0.0}
                )
    columns = ["year", "site_id", "accelerator", "nodes", "mw_used", "mw_available", "mw_reserved", "capex_usd", "cost_usd_per_h"]
    table = pd.DataFrame.from_records(records, columns=[*columns, "goodput_tok_s"])
    return table.assign(scenario=b.scenario_names[scenario])


def site_year_footprint(result: StochasticResult, scenario: int) -> dict[str, FloatArray]:
    """``(M, Y)`` energy, grid emissions and water of each site in each year of one scenario.

    Power is what the model bills and its caps count (:func:`~placement.optimize.buildout.caps.site_energy_mwh_per_year`):
    every node in service draws its idle share all year, and the load its load-following energy. Emissions
    are that energy at the site's grid intensity over the day, water at its water per MWh (:mod:`placement.rules.resources`);
    NaN where the catalog lacks the figure.

    Returns
    -------
    dict
        ``energy_mwh_per_year``, ``tco2e_per_year``, ``water_m3_per_year``: ``(M, Y)`` each.
    """
    b = result.buildout
    energy = site_energy_mwh_per_year(b.data, result.plan)[..., scenario]
    intensity = day_mean_intensity(b.instance)
    water = b.instance.site_water.total_m3_per_mwh if b.instance.site_water is not None else np.full(len(b.sites), np.nan)
    return {
        "energy_mwh_per_year": energy,
        "tco2e_per_year": energy * intensity[:, None] / 1000.0,
        "water_m3_per_year": energy * water[:, None],
    }


def _plan_year_total(values: FloatArray, energy: FloatArray) -> FloatArray:
    """``(Y,)`` a yearly figure over the sites: NaN where a site that draws power lacks it (no partial total)."""
    unknown = (np.isnan(values) & (energy > 0)).any(axis=0)
    return np.asarray(np.where(unknown, np.nan, np.nansum(values, axis=0)))


def year_table(result: StochasticResult, scenario: int) -> pd.DataFrame:
    """The plan's headline figures per year in one scenario.

    Returns
    -------
    pandas.DataFrame
        ``year, cost_per_million_goodput_tokens_usd, cost_usd_per_h, goodput_tok_s, demand_tok_s, unserved_share,
        mw_used, mw_reserved, sites_open, nodes, carbon_usd_per_t, energy_mwh_per_year, tco2e_per_year,
        gco2e_per_million_goodput_tokens, water_m3_per_year``, and ``nodes_<accelerator>`` per accelerator.
    """
    b, plan, costs = result.buildout, result.plan, result.costs
    nodes = plan.nodes[..., scenario]  # (M, A, Y)
    mw_used = np.einsum("may,ma->y", nodes, b.data.node_mw)
    footprint = site_year_footprint(result, scenario)
    energy = footprint["energy_mwh_per_year"]
    carbon = _plan_year_total(footprint["tco2e_per_year"], energy)
    goodput = costs.goodput_tok_s[:, scenario]
    tokens_m = goodput * HOURS_PER_YEAR * 3600.0 / 1e6
    table = pd.DataFrame(
        {
            "year": b.years,
            "cost_per_million_goodput_tokens_usd": costs.cost_per_million_tokens_usd[:, scenario],
            "cost_usd_per_h": costs.year_usd_per_h[:, scenario],
            "goodput_tok_s": costs.goodput_tok_s[:, scenario],
            "demand_tok_s": costs.demand_tok_s[:, scenario],
            "unserved_share": costs.unserved_share[:, scenario],
            "mw_used": mw_used,
            "mw_reserved": plan.first.mw_reserved.sum(axis=0),
            "sites_open": plan.first.open.sum(axis=0).astype(int),
            "nodes": np.round(nodes.sum(axis=(0, 1))).astype(int),
            "carbon_usd_per_t": b.carbon_usd_per_t,
            "energy_mwh_per_year": energy.sum(axis=0),
            "tco2e_per_year": carbon,
            "gco2e_per_million_goodput_tokens": np.where(tokens_m > 0, carbon * 1e6 / np.maximum(tokens_m, 1e-300), np.nan),
            "water_m3_per_year": _plan_year_total(footprint["water_m3_per_year"], energy),
        }
    )
    for h, name in enumerate(b.fleet.ids):
        table[f"nodes_{name}"] = np.round(nodes[:, h, :].sum(axis=0)).astype(int)
    return table


def class_accelerator_table(result: StochasticResult, scenario: int) -> pd.DataFrame:
    """Which accelerators carry each class's tokens, per year, in one scenario.

    Parameters
    ----------
    result : StochasticResult
        The solved build-out.
    scenario : int
        Scenario index.

    Returns
    -------
    pandas.DataFrame
        ``year, class, accelerator, share_of_class_tokens``: each class's served tokens (slices weighted by
        their hours) split by accelerator; the shares of a year and class sum to 1. Rows with no tokens are left out.
    """
    b = result.buildout
    served = np.einsum("mkayt,t->kay", result.plan.served_tok_s[..., scenario, :], b.data.slice_weight)  # (K, A, Y)
    total = served.sum(axis=1, keepdims=True)
    share = np.divide(served, total, out=np.zeros_like(served), where=total > 0)
    rows = [
        {"year": year, "class": cls.name, "accelerator": name, "share_of_class_tokens": float(share[k, h, y])}
        for y, year in enumerate(b.years)
        for k, cls in enumerate(b.classes)
        for h, name in enumerate(b.fleet.ids)
        if share[k, h, y] > 1e-9
    ]
    return pd.DataFrame(rows, columns=["year", "class", "accelerator", "share_of_class_tokens"])


def scenario_table(result: StochasticResult) -> pd.DataFrame:
    """Each demand scenario: probability, the adopted plan's NPV, the mean-value plan's, last year's figures."""
    b, costs = result.buildout, result.costs
    last = len(b.years) - 1
    return pd.DataFrame(
        {
            "scenario": b.scenario_names,
            "probability": b.data.probability,
            "npv_cost_usd": costs.scenario_npv_usd,
            "mean_value_plan_npv_cost_usd": result.eev_scenario_usd,
            "demand_tok_s_last_year": costs.demand_tok_s[last],
            "unserved_share_last_year": costs.unserved_share[last],
            "cost_per_million_goodput_tokens_usd_last_year": costs.cost_per_million_tokens_usd[last],
        }
    )


def year_sites(result: StochasticResult, y: int, scenario: int) -> pd.DataFrame:
    """Year ``y`` as a single-year ``sites.csv`` (same column names where the figure is the same)."""
    b, plan, costs = result.buildout, result.plan, result.costs
    sites, data = b.sites, b.data
    nodes = plan.nodes[:, :, y, scenario]
    mw_used = (nodes * data.node_mw).sum(axis=1)
    goodput = _served(result)[:, :, y, scenario].sum(axis=1)
    cost = costs.site_usd_per_h[:, y] + costs.site_accelerator_usd_per_h[:, :, y, scenario].sum(axis=1)
    footprint = {name: values[:, y] for name, values in site_year_footprint(result, scenario).items()}
    table = pd.DataFrame(
        {
            "site_id": sites["id"],
            "name": sites["name"],
            "country_code": sites["country_code"],
            "continent": sites["continent"],
            "lat": sites["lat"],
            "lon": sites["lon"],
            "open": plan.first.open[:, y],
            "locked": data.site_locked,
            "nodes": np.round(nodes.sum(axis=1)).astype(int),
            "mw_used": mw_used,
            "mw_available": data.site_mw_available[:, y],
            "mw_reserved": plan.first.mw_reserved[:, y],
            "power_price_usd_per_mwh": sites["power_price_usd_per_mwh"],
            "pue": sites["pue"],
            "cost_usd_per_h": cost,
            "goodput_tok_s": goodput,
            "goodput_share": goodput / max(goodput.sum(), 1e-12),
            "cost_per_million_goodput_tokens_usd": np.where(goodput > 0, cost_per_million_tokens_usd(cost, goodput), np.nan),
            "tokens_per_s_per_mw": tokens_per_s_per_mw(goodput, mw_used),
            **footprint,
        }
    )
    for h, name in enumerate(b.fleet.ids):
        table[f"nodes_{name}"] = np.round(nodes[:, h]).astype(int)
    for name, values in tier_site_columns(b.tiers, plan.first.open[:, y], data.node_mw[:, 0]).items():
        table[name] = values
    return table


def year_assignments(result: StochasticResult, y: int, scenario: int) -> pd.DataFrame:
    """Year ``y`` as a single-year ``assignments.csv``: population-class-site goodput (same column names)."""
    b, plan = result.buildout, result.plan
    instance, data = b.instance, b.data
    share = plan.pair_share[:, y, scenario]
    used = np.flatnonzero(share > 1e-9)
    row_members = pd.Series(np.arange(b.row_of_commodity.size)).groupby(b.row_of_commodity).apply(list).to_dict()
    commodity, pair = [], []
    for p in used.tolist():
        members = row_members.get(int(data.pair_row[p]), [])
        commodity += members
        pair += [p] * len(members)
    c, p_idx = np.array(commodity, dtype=np.int64), np.array(pair, dtype=np.int64)
    pop, site = instance.commodity_population[c], data.pair_site[p_idx]
    table, sites = instance.populations.table, b.sites
    # the slowest node the site may run (at its KV tier and the pair's rung), as the pairs were allowed
    ttft = assignment_ttft_ms(instance, b.rung_groups, c, site)
    cross = b.cross_metro
    far = np.zeros(len(c), dtype=bool) if cross is None else p_idx >= cross.first
    if cross is not None and far.any():  # a cross-metro column: its profile and the round trip to its prefill site
        ttft[far] = cross_metro_ttft_ms(instance, cross, c[far], p_idx[far])
    objective = np.array([k.ttft_p99_ms for k in instance.classes])[instance.commodity_class]
    if (ttft > objective[c] + 1e-9).any():  # the model only routes allowed pairs: a breach is a bug
        raise SolverError(f"{b.years[y]}: an assignment breaks its TTFT objective")
    frame = pd.DataFrame(
        {
            "population_id": table["population_id"].to_numpy()[pop],
            "population": table["name"].to_numpy()[pop],
            "country_code": table["country_code"].to_numpy()[pop],
            "class": [instance.classes[k].name for k in instance.commodity_class[c].tolist()],
            "site_id": sites["id"].to_numpy()[site],
            "site": sites["name"].to_numpy()[site],
            "goodput_tok_s": b.commodity_demand_tok_s[c, y, scenario] * share[p_idx],
            "share_of_demand": share[p_idx],
            "rtt_ms": take_pairs(instance.rtt_p50_ms, pop, site),
            "rtt_p90_ms": take_pairs(instance.rtt_p90_ms, pop, site),
            "rtt_budget_ms": take_pairs(instance.rtt_ms, pop, site),
            "ttft_p99_ms": ttft,
            "ttft_objective_ms": objective[c],
            "ttft_slack_ms": objective[c] - ttft,
            "pop_lat": table["lat"].to_numpy()[pop],
            "pop_lon": table["lon"].to_numpy()[pop],
            "site_lat": sites["lat"].to_numpy()[site],
            "site_lon": sites["lon"].to_numpy()[site],
        }
    )
    if cross is not None:  # the prefill site of a row served over a cross-metro column ('' for the rest)
        prefill = np.full(len(c), "", dtype=object)
        prefill[far] = sites["id"].to_numpy()[cross.prefill_site[p_idx[far] - cross.first]]
        frame["prefill_site_id"] = prefill
        frame["cross_metro_rtt_ms"] = np.where(far, cross.cross.site_rtt_ms[site, np.maximum(data.remote_site[p_idx], 0)], 0.0)
    if instance.regimes:  # which regime's in-bloc part a row serves ('' for the rest), as a single-year plan says
        frame.insert(4, "regime", instance.regime_of(c))
    return frame[frame["goodput_tok_s"] > 0].sort_values(
        ["population_id", "class", "goodput_tok_s"], ascending=[True, True, False]
    )


def year_summary(result: StochasticResult, y: int, scenario: int) -> dict[str, Any]:
    """Year ``y`` with a single-year ``summary.json``'s headline keys."""
    b = result.buildout
    row = year_table(result, scenario).iloc[y]
    return {
        "scenario": f"{b.scenario_name} {b.years[y]} ({b.scenario_names[scenario]} demand)",
        "status": "optimal" if result.gap <= b.horizon.gap else "feasible",
        "year": b.years[y],
        "demand_scenario": b.scenario_names[scenario],
        "objective_usd_per_h": float(row["cost_usd_per_h"]),
        "cost_per_million_goodput_tokens_usd": finite_or_none(float(row["cost_per_million_goodput_tokens_usd"])),
        "goodput_tok_s": float(row["goodput_tok_s"]),
        "demand_tok_s": float(row["demand_tok_s"]),
        "mw_used": float(row["mw_used"]),
        "mw_reserved": float(row["mw_reserved"]),
        "sites_open": int(row["sites_open"]),
        "sites_candidate": len(b.sites),
        "nodes": int(row["nodes"]),
        "unserved_share": float(row["unserved_share"]),
        "gap": result.gap,
        "energy_mwh_per_year": float(row["energy_mwh_per_year"]),
        "tco2e_per_year": finite_or_none(float(row["tco2e_per_year"])),
        "gco2e_per_million_goodput_tokens": finite_or_none(float(row["gco2e_per_million_goodput_tokens"])),
        "water_m3_per_year": finite_or_none(float(row["water_m3_per_year"])),
        **year_protection(result, y, scenario),
    }


def summary_dict(result: StochasticResult, *, runtime_s: float) -> dict[str, Any]:
    """``summary.json`` of a build-out: the years (of the base scenario), the scenarios, expected cost and VSS."""
    b = result.buildout
    base = b.base_index
    years = year_table(result, base)
    accelerators_used = sorted({b.fleet.ids[h] for h in range(len(b.fleet.ids)) if result.plan.nodes[:, h].sum() > 0})
    return {
        "scenario": b.scenario_name,
        "kind": "buildout",
        "status": "optimal" if result.gap <= b.horizon.gap else "feasible",
        "years_scenario": b.scenario_names[base],
        "years": [
            {
                "year": int(r["year"]),
                "cost_per_million_goodput_tokens_usd": finite_or_none(float(r["cost_per_million_goodput_tokens_usd"])),
                "mw_used": float(r["mw_used"]),
                "mw_reserved": float(r["mw_reserved"]),
                "sites_open": int(r["sites_open"]),
                "goodput_tok_s": float(r["goodput_tok_s"]),
                "unserved_share": float(r["unserved_share"]),
                "nodes": int(r["nodes"]),
                "carbon_usd_per_t": float(r["carbon_usd_per_t"]),
                "energy_mwh_per_year": float(r["energy_mwh_per_year"]),
                "tco2e_per_year": finite_or_none(float(r["tco2e_per_year"])),
                "gco2e_per_million_goodput_tokens": finite_or_none(float(r["gco2e_per_million_goodput_tokens"])),
                "water_m3_per_year": finite_or_none(float(r["water_m3_per_year"])),
            }
            for r in years.to_dict("records")
        ],
        "expected_cost_usd": result.expected_usd,
        "scenario_costs_usd": dict(zip(b.scenario_names, result.costs.scenario_npv_usd.tolist(), strict=True)),
        "scenario_probabilities": dict(zip(b.scenario_names, b.data.probability.tolist(), strict=True)),
        "value_of_stochastic_solution_usd": result.vss_usd,
        "mean_value_problem_usd": result.ev_usd,
        "mean_value_plan_expected_cost_usd": result.eev_usd,
        "mean_value_plan_scenario_costs_usd": dict(zip(b.scenario_names, result.eev_scenario_usd.tolist(), strict=True)),
        "recourse_problem_usd": result.rp_usd,
        "lower_bound_usd": result.rp_bound_usd,
        "gap": result.gap,
        "adopted_plan": result.adopted,
        "min_max_regret": result.regret,
        "caps": caps_summary(result),
        "n_plus_one": n_plus_one_summary(result),
        "accelerators_offered": b.fleet.ids,
        "accelerators_used": accelerators_used,
        "availability_rules": rules_summary(result),
        "nodes_bought_by_country": _bought_by_country(result),
        "discount_rate": b.horizon.discount_rate,
        "node_life_years": b.data.life_years,
        "unserved_penalty_usd_per_million_tokens": b.horizon.unserved_penalty_usd_per_million_tokens,
        "aggregation": aggregation(result),
        "timings_s": {**result.timings_s, "total_s": runtime_s},
        "notes": list(result.notes),
        "scenario_path": str(b.scenario_path),
    }


def caps_summary(result: StochasticResult) -> list[dict[str, Any]]:
    """Each carbon or water cap the plan is held to: its limit and the most the plan uses in any year and scenario."""
    b = result.buildout
    out = []
    for cap in b.data.caps:
        use = cap_use_per_year(b.data, result.plan, cap)  # (Y, S)
        y, s = np.unravel_index(int(np.argmax(use)), use.shape)
        out.append(
            {
                "cap": cap.name,
                "unit": cap.unit,
                "limit_per_year": cap.limit_per_year,
                "most_used_per_year": float(use[y, s]),
                "most_used_in": f"{b.years[y]} ({b.scenario_names[s]} demand)",
            }
        )
    return out


def rules_table(result: StochasticResult) -> pd.DataFrame:
    """One row per availability rule and site it shaped: the parts it barred there (or that need a licence).

    Returns
    -------
    pandas.DataFrame
        ``rule_id, name, effect, site_id, country_code, accelerators, years, nodes_bought, simplification,
        source``; ``accelerators`` and ``years`` are where a part on offer met the rule, ``nodes_bought`` the
        nodes of those parts bought there in those years (0 for a bar), over every demand scenario's mean.
    """
    b = result.buildout
    sites = b.sites
    codes = sites["country_code"].fillna("").astype(str).tolist()
    buy = result.plan.buy  # (M, A, Y, S)
    weights = b.data.probability
    rows = []
    for rule in b.rules:
        for m, code in enumerate(codes):
            if not code or not rule.covers(code):
                continue
            met = [
                (a, y)
                for a, part in enumerate(b.fleet.ids)
                for y, year in enumerate(b.years)
                if b.fleet.offered[a, y] and part in rule.accelerators and rule.in_force(year)
            ]
            if not met:
                continue
            bought = float(sum((buy[m, a, y, :] * weights).sum() for a, y in met))
            rows.append(
                {
                    "rule_id": rule.rule_id,
                    "name": rule.name,
                    "effect": rule.effect,
                    "site_id": str(sites["id"].iloc[m]),
                    "country_code": code,
                    "accelerators": " ".join(sorted({b.fleet.ids[a] for a, _ in met})),
                    "years": " ".join(str(b.years[y]) for y in sorted({y for _, y in met})),
                    "nodes_bought": round(bought, 3),
                    "simplification": rule.simplification,
                    "source": rule.source,
                }
            )
    columns = ["rule_id", "name", "effect", "site_id", "country_code", "accelerators", "years", "nodes_bought"]
    return pd.DataFrame(rows, columns=[*columns, "simplification", "source"])


def _bought_by_country(result: StochasticResult) -> dict[str, dict[str, float]]:
    """Nodes bought over the horizon per site country and accelerator (probability-weighted over scenarios)."""
    b = result.buildout
    bought = np.einsum("mays,s->ma", result.plan.buy, b.data.probability)
    codes = b.sites["country_code"].fillna("").astype(str).to_numpy()
    out: dict[str, dict[str, float]] = {}
    for code in sorted(set(codes)):
        here = bought[codes == code].sum(axis=0)
        parts = {b.fleet.ids[a]: round(float(v), 3) for a, v in enumerate(here) if v > 1e-6}
        if parts:
            out[code or "unknown"] = parts
    return out


def rules_summary(result: StochasticResult) -> list[dict[str, Any]]:
    """Per rule that shaped the fleet: its effect, the sites and parts, and the nodes bought under it."""
    table = rules_table(result)
    out = []
    for rule_id, part in table.groupby("rule_id", sort=False):
        out.append(
            {
                "rule_id": str(rule_id),
                "name": str(part["name"].iloc[0]),
                "effect": str(part["effect"].iloc[0]),
                "sites": part["site_id"].tolist(),
                "countries": sorted(set(part["country_code"])),
                "accelerators": sorted({a for cell in part["accelerators"] for a in cell.split()}),
                "nodes_bought": float(part["nodes_bought"].sum()),
                "simplification": str(part["simplification"].iloc[0]),
                "source": str(part["source"].iloc[0]),
            }
        )
    return out


def aggregation(result: StochasticResult) -> dict[str, Any]:
    """How far the solved model is from full resolution."""
    b = result.buildout
    instance = b.instance
    reachable = (b.row_of_commodity >= 0) & (instance.commodity_mean_demand_tok_s > 0)
    return {
        "cities": len(instance.populations.cities),
        "populations": len(instance.populations.table),
        "time_slices": int(instance.slice_hours.size),
        "demand_rows": int(b.data.row_class.size),
        "pairs": int(b.data.pair_row.size),
        "unreachable_demand_share": float(
            1.0 - instance.commodity_mean_demand_tok_s[reachable].sum() / max(instance.commodity_mean_demand_tok_s.sum(), 1e-12)
        ),
    }
