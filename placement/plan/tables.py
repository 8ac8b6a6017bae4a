"""A solved plan's tables: the sites with their decisions and figures, the assignments, the populations."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._process import row_minimum, take_pairs
from placement._types import FloatArray, IntArray
from placement.economics import footprint
from placement.economics.cost import HOURS_PER_YEAR, cost_per_million_tokens_usd, tokens_per_s_per_mw
from placement.instance.prices import energy_demand_tok_s, site_energy_price
from placement.instance.record import Instance
from placement.optimize.problem import PlacementSolution
from placement.optimize.rows import group_by
from placement.profiles.build import mode_name
from placement.profiles.ttft_budget import COMPONENTS, ttft_components_ms
from placement.rules.resources import embodied_kgco2e_per_node, site_water_stress


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


def site_table(instance: Instance, solution: PlacementSolution) -> pd.DataFrame:
    """Every candidate site with its decision (open, nodes, MW) and its figures: ``sites.csv``."""
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
    accelerator = instance.site_accelerator()
    reason = np.where(
        solution.open,
        "open",
        np.where(
            data.site_mw_available <= 0,
            "no power available",
            np.where(
                np.array([not part for part in accelerator], dtype=bool),
                "the availability rules permit no accelerator here",
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
            "accelerator": accelerator,
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
    idle = instance.facts.serving.idle_power_share
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
    facts = instance.facts
    per_node_t = embodied_kgco2e_per_node(facts.serving.gpus_per_node) / 1000.0  # over the nodes' life
    figures["embodied_tco2e_per_year"] = (solution.nodes + warmup) * per_node_t / facts.node_life_years
    if facts.carbon_usd_per_t > 0:  # in the cost already (idle power and load energy): what of it the price charges
        figures["carbon_charge_usd_per_h"] = carbon * facts.carbon_usd_per_t / HOURS_PER_YEAR
    water = instance.site_water
    if water is not None:  # m3/MWh drawn, flat over the day
        figures["water_stress"] = site_water_stress(instance.sites)
        figures["water_l_per_kwh"] = water.total_m3_per_mwh  # m3/MWh is L/kWh
        figures["water_m3_per_year"] = energy * water.total_m3_per_mwh
        figures["water_on_site_m3_per_year"] = energy * water.on_site_m3_per_mwh
        if facts.water_usd_per_m3 > 0:
            figures["water_charge_usd_per_h"] = figures["water_m3_per_year"] * facts.water_usd_per_m3 / HOURS_PER_YEAR
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
    demand = energy_demand_tok_s(data.slice_demand_tok_s, data.slice_hours, instance.facts.peak_factor)
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


def assignment_table(instance: Instance, solution: PlacementSolution) -> pd.DataFrame:
    """One row per (population, class, site) served, with goodput, round trip, TTFT and its parts: ``assignments.csv``."""
    commodity, site, share, pair = commodity_pair_rows(instance, solution)
    pop = instance.commodity_population[commodity]
    klass = instance.commodity_class[commodity]
    table = instance.populations.table
    rtt = take_pairs(instance.rtt_ms, pop, site)  # the quantile the TTFT budget uses (latency.quantile)
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
            "rtt_ms": take_pairs(instance.rtt_p50_ms, pop, site),
            "rtt_p90_ms": take_pairs(instance.rtt_p90_ms, pop, site),
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
        frame["serving_mode"] = np.array([mode_name(p) for p in instance.options], dtype=object)[option]
    if instance.cross_metro is not None:
        _cross_metro_columns(instance, frame, pair, commodity)
    frame["pop_lat"] = table["lat"].to_numpy()[pop]
    frame["pop_lon"] = table["lon"].to_numpy()[pop]
    frame["site_lat"] = instance.sites["lat"].to_numpy()[site]
    frame["site_lon"] = instance.sites["lon"].to_numpy()[site]
    order = ["population_id", "class", "goodput_tok_s"]
    return frame.sort_values(order, ascending=[True, True, False]).reset_index(drop=True)


def _cross_metro_columns(instance: Instance, frame: pd.DataFrame, pair: IntArray, commodity: IntArray) -> None:
    """Each assignment's ``serving_mode``, ``prefill_site_id``, ``cross_metro_rtt_ms`` and ``kv_wan_gb_per_h``.

    A row served with its prefill in another metro takes the cross-metro profile's TTFT parts, and its network part
    carries the round trip between the two sites (:meth:`Instance.cross_metro_ttft_parts_ms`).
    """
    cross = instance.cross_metro
    assert cross is not None
    if "serving_mode" not in frame.columns:  # each pair's own mode where it has options, else its class's
        modes = np.array([mode_name(p) for p in instance.profiles], dtype=object)
        frame["serving_mode"] = modes[instance.commodity_class[commodity]] if len(commodity) else []
    frame["prefill_site_id"] = ""
    frame["cross_metro_rtt_ms"] = 0.0
    frame["kv_wan_gb_per_h"] = 0.0
    far = np.flatnonzero(pair >= cross.pairs.first)
    if not len(far):
        return
    q = pair[far] - cross.pairs.first
    frame.loc[far, "prefill_site_id"] = instance.sites["id"].to_numpy()[cross.pairs.prefill_site[q]]
    frame.loc[far, "cross_metro_rtt_ms"] = cross.pairs.site_rtt_ms[q]
    parts = instance.cross_metro_ttft_parts_ms(pair[far], commodity[far])
    for name in COMPONENTS:
        frame.loc[far, name] = parts[name]
    frame.loc[far, "ttft_p99_ms"] = sum(parts[name] for name in COMPONENTS)
    option = cross.pairs.option[q]
    for o in np.unique(option).tolist():
        xm = cross.options[o]
        rows = far[option == o]
        label = f"cross-metro+{xm.profile.speculative}" if xm.profile.speculative else "cross-metro"
        frame.loc[rows, "serving_mode"] = label
        frame.loc[rows, "kv_wan_gb_per_h"] = frame.loc[rows, "goodput_tok_s"].to_numpy() * xm.kv_gb_per_tok * 3600.0
    frame["ttft_slack_ms"] = frame["ttft_objective_ms"] - frame["ttft_p99_ms"]


def population_table(instance: Instance, solution: PlacementSolution, assignments: pd.DataFrame) -> pd.DataFrame:
    """Every population with its demand, goodput served and unserved: ``populations.csv``."""
    table = instance.populations.table.copy()
    commodity, _, share = commodity_pairs(instance, solution)
    served_commodity = np.bincount(
        commodity, weights=share * instance.commodity_mean_demand_tok_s[commodity], minlength=len(instance.commodity_population)
    )
    served = np.bincount(instance.commodity_population, weights=served_commodity, minlength=len(table))
    table["peak_demand_tok_s"] = instance.population_slice_demand_tok_s.max(axis=1)
    table["served_tok_s"] = served
    table["unserved_tok_s"] = np.maximum(table["demand_tok_s"].to_numpy() - served, 0.0)
    table["nearest_site_rtt_ms"] = row_minimum(instance.rtt_ms)
    main = assignments.sort_values("goodput_tok_s", ascending=False).drop_duplicates("population_id")
    main_site = table["population_id"].map(main.set_index("population_id")["site_id"])
    table["main_site_id"] = main_site.astype(object).fillna("")  # float NaN when nothing is served
    return table


def plan_total(sites: pd.DataFrame, column: str) -> float:
    """A plan's yearly figure (emissions, water): NaN when a site that draws power lacks it (no partial total)."""
    if column not in sites.columns:
        return math.nan
    drawing = sites["energy_mwh_per_year"] > 0
    return float(sites[column].sum()) if bool(sites.loc[drawing, column].notna().all()) else math.nan
