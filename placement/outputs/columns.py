"""What each column of the tables the commands write means, and its unit: one table the docs and the tests read.

The writers write the frames the plan builds; this module says what their columns are, and what the top-level keys
of their JSON files are. The reference page of the output files is generated from :data:`OUTPUT_FILES`, and tests
run small scenarios and check that every column (key) written is described here and every one described here is
written, so the two cannot drift apart. A name with a ``<...>`` part stands for one column per value of it: per
workload class (``serving_mode_<class>``: ``serving_mode_chat``), continent, design, sweep axis or accelerator.
Where a module defines its columns in a tuple, the description lists them from that tuple.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from placement.analyses.discover import RANKED_COLUMNS
from placement.analyses.tail import COLUMNS as TAIL_COLUMNS
from placement.outputs.alternatives_files import SITE_COLUMNS as ALTERNATIVE_SITE_COLUMNS
from placement.outputs.exposure_files import EXPOSURE_FILES
from placement.outputs.frontier_files import COLUMNS as FRONTIER_COLUMNS
from placement.results.record import ROW_COLUMNS, SCENARIO_COLUMNS, SITE_COLUMNS
from placement.results.summary import JSON_ORDER

__all__ = ["COMMANDS", "OUTPUT_FILES", "Column", "OutputFile", "described", "nested_keys", "output_file"]


@dataclass(frozen=True)
class Column:
    """One column of an output table.

    Parameters
    ----------
    name : str
        The header (a JSON file's key); a ``<...>`` part stands for one column per value of it (``<class>``: a
        workload class's name).
    unit : str
        Its unit (``tok/s``, ``USD/h``, ``ms``); ``""`` for text, ids, flags and pure numbers.
    description : str
        What it holds, in one sentence or two.
    optional : bool
        Written only when a scenario option asks for it (the description says which).
    """

    name: str
    unit: str
    description: str
    optional: bool = False

    def matches(self, header: str) -> bool:
        """Whether ``header`` is this column (``serving_mode_chat`` is ``serving_mode_<class>``)."""
        pattern = "^" + _PLACEHOLDER.sub(".+", re.escape(self.name)) + "$"
        return re.match(pattern, header) is not None


_PLACEHOLDER = re.compile(r"<[a-z]+>")
"""A ``<...>`` part of a column's name: one column per value (``<class>``, ``<continent>``, ``<design>``)."""


@dataclass(frozen=True)
class OutputFile:
    """One file a command writes: a table and its columns, or a JSON file and its top-level keys.

    Parameters
    ----------
    name : str
        File name (``sites.csv``).
    when : str
        When it is written (``always``, ``N+1 plans``).
    description : str
        What a row is (what the file holds).
    columns : tuple of Column
        Its columns (a JSON file's top-level keys), in the order written.
    command : str
        The key of :data:`COMMANDS` naming the command and folder that write it.
    nested : tuple of (str, tuple of Column)
        Of a JSON file: the keys of an object some top-level key holds (or of each object of a list it holds), by
        that key (``summary.json``'s ``cost_breakdown_usd_per_h``: ``node_capex``, ...).
    """

    name: str
    when: str
    description: str
    columns: tuple[Column, ...]
    command: str = "solve"
    nested: tuple[tuple[str, tuple[Column, ...]], ...] = ()

    @property
    def is_json(self) -> bool:
        """Whether its entries are the keys of a JSON object rather than a table's columns."""
        return self.name.endswith(".json")


def _c(name: str, unit: str, description: str, *, optional: bool = False) -> Column:
    return Column(name, unit, description, optional)


_SITES = (
    _c("site_id", "", "the site's id in the catalog"),
    _c("name", "", "the site's name"),
    _c("country_code", "", "ISO 3166-1 alpha-2 country code"),
    _c("continent", "", "continent name"),
    _c("lat", "deg", "latitude, WGS84"),
    _c("lon", "deg", "longitude, WGS84"),
    _c("network", "", "who carries the site's packets: backbone (a cloud region) or transit (colocation, greenfield)"),
    _c(
        "accelerator",
        "",
        "the part its nodes are: the scenario's, or the part the availability rules permit there; "
        "blank: none is permitted and the site serves nothing",
    ),
    _c("open", "", "whether the plan opens the site"),
    _c("locked", "", "whether the catalog forces the site open"),
    _c("nodes", "nodes", "serving nodes installed"),
    _c("kv_tier", "", "with serving.kv_cache: the tier the site keeps prompt prefixes in (hbm, dram, nvme)", optional=True),
    _c("cache_warmup_nodes", "nodes", "with serving.kv_cache: nodes held to warm the prefix cache", optional=True),
    _c("mw_used", "MW", "IT and facility power the nodes draw at full load, PUE included"),
    _c("mw_available", "MW", "power the catalog says the site can supply"),
    _c("power_price_usd_per_mwh", "USD/MWh", "the site's power price, after the scenario's multipliers"),
    _c("pue", "", "power usage effectiveness: facility power over IT power"),
    _c("node_cost_usd_per_h", "USD/h", "all-in cost of one node-hour here (capex, idle power, opex)"),
    _c("node_capex_usd_per_h", "USD/h", "the node's purchase, annualised over its life at the discount rate, per hour"),
    _c("facility_capex_usd_per_h", "USD/h", "the facility built for one node, annualised over the facility's life, per hour"),
    _c("power_usd_per_h", "USD/h", "power one node draws at zero load (serving.idle_power_share), per hour"),
    _c("opex_usd_per_h", "USD/h", "operating cost of one node, per hour"),
    _c("fixed_cost_usd_per_h", "USD/h", "the site's fixed cost when open (economics.site_fixed_cost_usd_per_h, cache warm-up)"),
    _c("load_energy_usd_per_h", "USD/h", "energy drawn above idle by the load served, daily mean"),
    _c("wan_usd_per_h", "USD/h", "with serving.cross_metro_prefill: KV transport the site buys as a decode site", optional=True),
    _c("cost_usd_per_h", "USD/h", "the site's whole cost: fixed, nodes, load energy and WAN"),
    _c("goodput_tok_s", "tok/s", "tokens delivered inside their objectives, daily mean"),
    _c("goodput_share", "", "the site's share of the plan's goodput"),
    _c("peak_utilisation", "", "the busiest slice's node-equivalents over the nodes installed"),
    _c("cost_per_million_goodput_tokens_usd", "USD/M tok", "cost_usd_per_h over the goodput; empty when nothing is served"),
    _c("tokens_per_s_per_mw", "tok/s/MW", "goodput per MW used"),
    _c("carbon_intensity_g_per_kwh", "gCO2e/kWh", "the catalog's grid carbon intensity (empty: none given)"),
    _c("discovered", "", "with placement discover: whether the site is a greenfield proposal", optional=True),
    _c("years_to_energise", "years", "with placement discover: years until a proposal's power arrives", optional=True),
    _c("energy_mwh_per_year", "MWh/year", "electricity the site draws in a year, PUE included"),
    _c("gco2e_per_kwh", "gCO2e/kWh", "carbon intensity of what the site draws, hour by hour weighted by its load"),
    _c("tco2e_per_year", "tCO2e/year", "grid emissions of the energy drawn"),
    _c("embodied_tco2e_per_year", "tCO2e/year", "the nodes' embodied carbon spread over their life"),
    _c("carbon_charge_usd_per_h", "USD/h", "with objective.carbon_usd_per_t: the carbon price paid", optional=True),
    _c("water_stress", "", "the basin's water-stress category (catalog, else its country's)"),
    _c("water_l_per_kwh", "L/kWh", "water consumed per kWh drawn, on site and by the grid's generation"),
    _c("water_m3_per_year", "m3/year", "water consumed in a year, on site and by the grid"),
    _c("water_on_site_m3_per_year", "m3/year", "water consumed on site (cooling) in a year"),
    _c("water_charge_usd_per_h", "USD/h", "with objective.water_usd_per_m3: the water price paid", optional=True),
    _c("gco2e_per_million_goodput_tokens", "gCO2e/M tok", "grid emissions per million goodput tokens; empty without goodput"),
    _c("water_l_per_million_goodput_tokens", "L/M tok", "water per million goodput tokens; empty without goodput"),
    _c(
        "serving_mode_<class>",
        "",
        "with arrangement options: how the site serves the class (colocated, disaggregated, speculative, ...)",
        optional=True,
    ),
    _c("prefix_hit_rate_<class>", "", "with serving.kv_cache: the class's prefix-cache hit rate at the site", optional=True),
    _c("reason", "", "open, or why the site was not opened (no power, no population in reach, rules, cost)"),
)

_ASSIGNMENTS = (
    _c("population_id", "", "id of the population (a cluster of cities) in populations.csv"),
    _c("population", "", "the population's name (its largest city and how many more)"),
    _c("country_code", "", "the population's ISO alpha-2 country"),
    _c("class", "", "workload class"),
    _c("site_id", "", "the serving site"),
    _c("site", "", "the serving site's name"),
    _c("goodput_tok_s", "tok/s", "goodput served this way, daily mean"),
    _c("peak_goodput_tok_s", "tok/s", "goodput served this way in the busiest slice"),
    _c("share_of_demand", "", "share of the population-class's demand served this way"),
    _c("rtt_ms", "ms", "median round trip from the population's worst member city to the site"),
    _c("rtt_p90_ms", "ms", "90th-percentile round trip of the same path"),
    _c("rtt_budget_ms", "ms", "the round trip the TTFT budget uses (latency.quantile): placement rtt MEMBER SITE --access"),
    _c("ttft_p99_ms", "ms", "p99 time to first token: the sum of the components below"),
    _c("ttft_objective_ms", "ms", "the class's p99 TTFT objective"),
    _c("ttft_slack_ms", "ms", "objective less p99 TTFT"),
    _c("network_ms", "ms", "round trips before the first token times rtt_budget_ms"),
    _c("queue_ms", "ms", "prefill queue and admission"),
    _c("slot_wait_ms", "ms", "p99 wait for a decode slot"),
    _c("retrieval_ms", "ms", "retrieval lookup, a remote store's round trip included"),
    _c("prefill_ms", "ms", "prefill of the prompt"),
    _c("safety_tokenization_ms", "ms", "safety checks and tokenisation"),
    _c("first_decode_ms", "ms", "the first decode step"),
    _c(
        "goodput_tok_s_per_node",
        "tok/s",
        "where a pair's node is its own (a ladder's rung, its site's KV tier, its serving mode): goodput of one "
        "node serving the pair",
        optional=True,
    ),
    _c("node_ttft_budget_ms", "ms", "with serving.node_ttft_ladder: the node TTFT budget the pair runs", optional=True),
    _c(
        "serving_mode",
        "",
        "where the node varies by pair, or with cross-metro prefill: how the pair is served (colocated, disaggregated, "
        "speculative, cross-metro)",
        optional=True,
    ),
    _c(
        "prefill_site_id",
        "",
        "with serving.cross_metro_prefill: the site whose prefill pool serves the pair (blank: the serving site)",
        optional=True,
    ),
    _c("cross_metro_rtt_ms", "ms", "with serving.cross_metro_prefill: round trip between decode and prefill site", optional=True),
    _c("kv_wan_gb_per_h", "GB/h", "with serving.cross_metro_prefill: KV moved over the WAN", optional=True),
    _c("pop_lat", "deg", "the population's latitude"),
    _c("pop_lon", "deg", "the population's longitude"),
    _c("site_lat", "deg", "the site's latitude"),
    _c("site_lon", "deg", "the site's longitude"),
)

_POPULATIONS = (
    _c("population_id", "", "the population's id"),
    _c("name", "", "its largest city and how many more (Lyon +12)"),
    _c("country_code", "", "ISO alpha-2 country of its largest city"),
    _c("lat", "deg", "latitude of its demand-weighted centre"),
    _c("lon", "deg", "longitude of its demand-weighted centre"),
    _c("people", "people", "people living in its cities"),
    _c("demand_tok_s", "tok/s", "demand, daily mean"),
    _c("n_cities", "cities", "member cities"),
    _c("peak_demand_tok_s", "tok/s", "demand in its busiest slice"),
    _c("served_tok_s", "tok/s", "goodput served inside the objectives, daily mean"),
    _c("unserved_tok_s", "tok/s", "demand not served, daily mean"),
    _c("nearest_site_rtt_ms", "ms", "round trip to its nearest candidate site"),
    _c("main_site_id", "", "the site serving most of its goodput (blank: none)"),
)

_MEMBERS = (
    _c("city_id", "", "GeoNames id"),
    _c("name", "", "city name"),
    _c("country_code", "", "ISO alpha-2 country"),
    _c("lat", "deg", "latitude"),
    _c("lon", "deg", "longitude"),
    _c("population", "people", "GeoNames population"),
    _c("timezone", "", "IANA time zone (demand follows the sun by it)"),
    _c("demand_tok_s", "tok/s", "the city's demand, daily mean"),
    _c("population_id", "", "the population it is a member of"),
)

_FAILOVER_ROW = {
    "failed": ("", "the site id or fault-domain name lost"),
    "failed_kind": ("", "site or domain"),
    "population_id": ("", "the protected population"),
    "population": ("", "its name"),
    "country_code": ("", "its ISO alpha-2 country"),
    "class": ("", "workload class"),
    "slice": ("", "time slice"),
    "serving_site_id": ("", "the site serving it after the loss"),
    "prefill_site_id": ("", "that site's prefill site (blank: served whole)"),
    "goodput_tok_s": ("tok/s", "goodput it serves there after the loss"),
    "moved_tok_s": ("tok/s", "of which moved there by the loss"),
    "demand_tok_s": ("tok/s", "goodput served before the loss (a group's goodput_tok_s add up to it)"),
    "protected": ("", "whether it is re-routed in full"),
    "ttft_p99_ms": ("ms", "p99 TTFT after the loss"),
    "ttft_objective_ms": ("ms", "the class's p99 TTFT objective"),
}
_FAILOVER_SITES = {
    "failed": ("", "the site id or fault-domain name lost"),
    "failed_kind": ("", "site or domain"),
    "site_id": ("", "a surviving site that takes moved load"),
    "slice": ("", "time slice"),
    "moved_in_tok_s": ("tok/s", "goodput moved in"),
    "nodes_needed": ("nodes", "its own load plus what moved in, rounded up"),
    "nodes": ("nodes", "nodes installed"),
}
_FAILOVER_SCENARIOS = {
    "failed": ("", "the site id or fault-domain name lost"),
    "failed_kind": ("", "site or domain"),
    "site_ids": ("", "the sites lost"),
    "served_tok_s": ("tok/s", "goodput the lost sites served"),
    "moved_tok_s": ("tok/s", "goodput re-routed to other sites"),
    "unprotected_tok_s": ("tok/s", "goodput not re-routed (a single site in reach, all in the lost domain, or no power)"),
    "populations_moved": ("", "populations re-routed"),
    "to_sites": ("", "where it went: site:tok_s, largest first"),
}
_TAIL = {
    "site_id": ("", "the open site"),
    "name": ("", "its name"),
    "class": ("", "workload class"),
    "mode": ("", "how the class is served there"),
    "prefill_site_id": ("", "the prefill site of cross-metro pairs (blank: none)"),
    "node_ttft_share": ("", "the node TTFT budget as a share of the class's (a ladder's rung; 1 without one)"),
    "nodes": ("nodes", "nodes at the site"),
    "peak_slice": ("", "the site's busiest slice"),
    "class_tok_s": ("tok/s", "the class's goodput there in that slice"),
    "class_nodes": ("nodes", "node-equivalents the class uses there"),
    "load_factor": ("", "offered load over the node's planned goodput"),
    "arrival_rate_per_node_per_s": ("1/s", "requests arriving at one node"),
    "analytic_node_ttft_ms": ("ms", "the serving model's p99 node TTFT"),
    "simulated_ttft_p99_ms": ("ms", "the simulated p99 node TTFT"),
    "node_ttft_allowed_ms": ("ms", "the node TTFT the objective allows"),
    "analytic_itl_ms": ("ms", "the serving model's ITL"),
    "simulated_itl_p99_ms": ("ms", "the simulated p99 ITL"),
    "itl_objective_ms": ("ms", "the class's ITL objective"),
    "itl_metric": ("", "what the ITL objective bounds: tpot or step"),
    "simulated_tok_s_per_node": ("tok/s", "simulated goodput of one node"),
    "exceeds": ("", "whether a simulated p99 breaks an objective"),
}
_CROSS_METRO = (
    _c("decode_site_id", "", "the site that decodes"),
    _c("prefill_site_id", "", "the site whose prefill pool serves it"),
    _c("class", "", "workload class"),
    _c("goodput_tok_s", "tok/s", "goodput served this way, daily mean"),
    _c("site_rtt_ms", "ms", "round trip between the two sites"),
    _c("kv_gb_per_h", "GB/h", "KV moved over the WAN, daily mean"),
    _c("wan_usd_per_h", "USD/h", "what moving it costs (serving.cross_metro_prefill.wan_usd_per_gb)"),
    _c("why", "", "why the decode site uses a remote prefill: its power binds, or it is cheaper per token"),
)
_FRONTIER = {
    "point": ("", "the point: 0 is the plan without a cap"),
    "axis": ("", "what the caps limit: carbon or water"),
    "cap": ("tCO2e/year or m3/year", "the point's cap (blank at point 0)"),
    "tco2e_per_year": ("tCO2e/year", "the point's grid emissions"),
    "water_m3_per_year": ("m3/year", "the point's water, on site and by the grid"),
    "usd_per_million_goodput_tokens": ("USD/M tok", "the point's cost per million goodput tokens"),
    "gco2e_per_million_goodput_tokens": ("gCO2e/M tok", "grid emissions per million goodput tokens"),
    "water_l_per_million_goodput_tokens": ("L/M tok", "water per million goodput tokens"),
    "usd_per_h": ("USD/h", "the point's cost"),
    "goodput_tok_s": ("tok/s", "goodput served, daily mean"),
    "sites_open": ("sites", "sites open"),
    "unserved_share": ("", "share of demand not served"),
    "sites_opened": ("", "sites open here and not at the point before"),
    "sites_closed": ("", "sites open at the point before and not here"),
    "usd_per_t_avoided": (
        "USD/tCO2e",
        "extra cost per tonne avoided against the plan without a cap (blank when the point serves less)",
    ),
    "usd_per_m3_avoided": ("USD/m3", "extra cost per m3 of water avoided (blank when the point serves less)"),
    "plan": ("", "the point's results folder, below the frontier's folder"),
    "at_equal_service": ("", "whether the point serves the uncapped plan's goodput, within 0.1 %"),
    "unserved_usd_per_million": ("USD/M tok", "what an unserved token is worth (objective.unserved_usd_per_million)"),
    "usd_per_million_with_unserved_value": (
        "USD/M tok",
        "cost plus that value of each token left unserved, per million tokens of demand",
    ),
    "usd_per_million_dropped": (
        "USD/M tok",
        "what the tokens the point serves less cost the uncapped plan, per million (blank at equal service)",
    ),
}
_DISCOVERED = {
    "site_id": ("", "the proposal's site id"),
    "name": ("", "its city"),
    "country_code": ("", "ISO alpha-2 country"),
    "lat": ("deg", "latitude"),
    "lon": ("deg", "longitude"),
    "mw_built": ("MW", "MW the plan uses there"),
    "goodput_tok_s": ("tok/s", "goodput it serves, daily mean"),
    "unserved_taken_tok_s": ("tok/s", "goodput it serves to populations the baseline left short, up to their shortfall"),
    "entry_usd_per_mwh": ("USD/MWh", "the most a MWh could cost there for its tokens to cost no more than the baseline's $/M"),
    "usd_per_million_goodput_tokens": ("USD/M tok", "the site's own cost per million goodput tokens"),
    "years_to_energise": ("years", "years until its power could arrive"),
    "power_price_usd_per_mwh": ("USD/MWh", "its power price"),
    "populations_gaining": ("populations", "populations it serves that the baseline left short"),
    "largest_gains": ("", "the populations that gain most, with their tok/s"),
}

_DISCOVER_JSON = {
    "proposals": ("sites", "greenfield sites proposed (cities in reach of the populations the baseline left short)"),
    "proposals_opened": ("sites", "proposals the plan opens (the rows of discovered_sites.csv)"),
    "mw_built": ("MW", "MW the plan uses at the proposals it opens"),
    "unserved_share_before": ("share", "share of the mean demand the baseline (the catalog alone) leaves unserved"),
    "unserved_share_after": ("share", "the same with the proposals"),
    "goodput_tok_s_before": ("tok/s", "the baseline's goodput, daily mean"),
    "goodput_tok_s_after": ("tok/s", "the plan's goodput with the proposals, daily mean"),
    "usd_per_million_goodput_tokens_before": ("USD/M tok", "the baseline's cost per million goodput tokens"),
    "usd_per_million_goodput_tokens_after": ("USD/M tok", "the plan's, with the proposals"),
    "objective_usd_per_h_before": ("USD/h", "the baseline's all-in cost"),
    "objective_usd_per_h_after": ("USD/h", "the plan's, with the proposals"),
    "still_unserved": (
        "",
        "the populations with the most demand still unserved (at most 15), each with population, country_code, "
        "unserved_tok_s [tok/s], unserved_share and why: out of reach for which classes, or short of power",
    ),
    "notes": ("", "the plan's notes, as in its summary.json"),
}

_SUMMARY = {
    "scenario": ("", "the scenario's name"),
    "status": ("", "optimal, feasible (stopped by a limit, gap stated) or partial (some demand unserved)"),
    "objective_usd_per_h": ("USD/h", "the plan's cost: the sum of cost_breakdown_usd_per_h"),
    "cost_breakdown_usd_per_h": ("USD/h", "the cost by component (node_capex, facility_capex, idle_power, ...) and total"),
    "cost_per_million_goodput_tokens_usd": ("USD/M tok", "cost per million goodput tokens; null when nothing is served"),
    "goodput_tok_s": ("tok/s", "goodput served inside the objectives, daily mean"),
    "peak_goodput_tok_s": ("tok/s", "the assignments' goodput in their busiest slice, summed"),
    "demand_tok_s": ("tok/s", "demand, daily mean"),
    "tokens_per_s_per_mw": ("tok/s/MW", "goodput per MW used"),
    "energy_mwh_per_year": ("MWh/year", "electricity the open sites draw in a year, PUE included"),
    "tco2e_per_year": ("tCO2e/year", "grid emissions of that electricity"),
    "gco2e_per_million_goodput_tokens": ("gCO2e/M tok", "grid emissions per million goodput tokens"),
    "carbon_charge_usd_per_h": ("USD/h", "with objective.carbon_usd_per_t: what the carbon price adds to the cost"),
    "embodied_tco2e_per_year": ("tCO2e/year", "the nodes' embodied carbon spread over their life (not in tco2e_per_year)"),
    "water_m3_per_year": ("m3/year", "water consumed in a year, on site and by the grid; null where a site's is unknown"),
    "water_on_site_m3_per_year": ("m3/year", "of it, what the sites' cooling consumes"),
    "water_l_per_million_goodput_tokens": ("L/M tok", "water per million goodput tokens"),
    "water_charge_usd_per_h": ("USD/h", "with objective.water_usd_per_m3: what the water price adds to the cost"),
    "cap_cost": ("", "with carbon or water caps: the plan solved without them and the cost per tonne (m3) avoided"),
    "cache_rounds": ("", "with serving.kv_cache miss work: each round's cost and nodes added, and the round kept"),
    "kv_tier_rounds": ("", "with serving.kv_cache.tier auto: the rounds that chose each site's tier"),
    "sites_open": ("sites", "sites the plan opens"),
    "sites_candidate": ("sites", "candidate sites in the catalog"),
    "nodes": ("nodes", "serving nodes installed"),
    "mw_used": ("MW", "power the nodes draw at full load, PUE included"),
    "p99_ttft_ms_max": ("ms", "the worst p99 TTFT of the interactive assignments"),
    "p99_ttft_ms_mean": ("ms", "their demand-weighted mean p99 TTFT"),
    "p99_itl_ms": ("ms", "p99 inter-token latency of the slowest interactive class"),
    "cache_hit_rate": ("", "prefix-cache hit rate weighted by goodput; null when not modelled"),
    "node_kw": ("kW", "IT power of one node"),
    "fault_domain_coverage": ("", "share of demand with a second open site inside its budget"),
    "n_plus_one": ("", "whether the scenario asks for N+1"),
    "n_plus_one_applied": ("", "whether the plan keeps N+1 (false: no protected design was found in the time limit)"),
    "n_plus_one_protected_share": ("", "N+1 plans: share of goodput re-routed in full on every loss"),
    "unprotectable_share": ("", "N+1 plans: share of goodput with one site in reach, or all in one fault domain"),
    "n_plus_one_unprotected_share": ("", "N+1 plans: share of goodput some loss leaves without spare power in reach"),
    "fault_domains": ("", "N+1 plans with fault_tolerance.domains: the grouping and each domain's sites"),
    "n_plus_one_cost": ("", "N+1 plans: $/h and $/M with and without N+1, extra nodes, MW and standby sites"),
    "adequacy": ("", "placement adequacy (or fault_tolerance.adequacy): expected unserved share, tail figures, sources"),
    "unserved_share": ("", "share of demand not served"),
    "time_slices": ("slices", "time slices of the day solved"),
    "rtt_quantile": ("", "the round trip the TTFT budgets used (latency.quantile: p50 or p90)"),
    "populations": ("populations", "demand points after clustering the cities"),
    "cities": ("cities", "cities with demand"),
    "feasible_pairs": ("pairs", "(population, class, site) pairs inside their objectives"),
    "classes": ("", "per workload class: goodput, cost, $/M, objectives, p99 TTFT and ITL, goodput per node"),
    "dinkelbach_iterations": ("", "optional serving: each iteration's ratio, cost and goodput"),
    "solver": ("", "the MILP solver used"),
    "solver_status": ("", "the solver's status"),
    "solver_message": ("", "the solver's message"),
    "best_bound_usd_per_h": ("USD/h", "the proven lower bound of the cost"),
    "gap": ("", "relative gap between the plan's cost and the bound"),
    "gap_basis": ("", "the model the bound is of: full_resolution or aggregated"),
    "ratio_bound_usd_per_million_tokens": ("USD/M tok", "optional serving: the proven lower bound of the $/M"),
    "stopped_by": ("", "which limit ended the solve: gap, node_limit, iteration_limit, time_limit, infeasible, other"),
    "runtime_s": ("s", "solve time"),
    "build_s": ("s", "time to build the instance"),
    "notes": ("", "what the plan wants you to know, one line each: rules, unserved demand, limits reached"),
    "scenario_path": ("", "the scenario file solved (copied as scenario.yaml)"),
}
_COST_BREAKDOWN = (
    _c("node_capex", "USD/h", "the nodes' purchase, amortised"),
    _c("facility_capex", "USD/h", "the facility built for the nodes' power, amortised"),
    _c("idle_power", "USD/h", "the power the nodes draw at zero load, PUE included"),
    _c("load_energy", "USD/h", "the power that follows the load served, daily mean"),
    _c("opex", "USD/h", "staff, spares, maintenance and network"),
    _c("site_fixed", "USD/h", "having the open sites open"),
    _c("wan_transport", "USD/h", "KV moved between metros by cross-metro prefill (only when not 0)", optional=True),
    _c("total", "USD/h", "their sum: the plan's objective_usd_per_h"),
)
_N_PLUS_ONE_COST = (
    _c("usd_per_h_with", "USD/h", "the protected plan's cost"),
    _c("usd_per_h_without", "USD/h", "the same world's plan without N+1"),
    _c("usd_per_m_with", "USD/M tok", "the protected plan's cost per million goodput tokens"),
    _c("usd_per_m_without", "USD/M tok", "the plan without N+1's"),
    _c("extra_nodes", "nodes", "the spare nodes protection adds"),
    _c("extra_mw", "MW", "the MW they draw"),
    _c("standby_sites", "sites", "sites open only for protection"),
    _c("classes", "USD/M tok", "per class: usd_per_m_with and usd_per_m_without"),
)

_CLASSES = (
    _c("class", "", "the workload class"),
    _c("goodput_tok_s", "tok/s", "goodput served inside its objectives, daily mean"),
    _c("cost_usd_per_h", "USD/h", "its share of the cost: site costs split by the node-equivalents it uses, and its energy"),
    _c("cost_per_million_goodput_tokens_usd", "USD/M tok", "its cost per million goodput tokens (null: none served)"),
    _c("ttft_objective_ms", "ms", "its p99 time-to-first-token objective"),
    _c("p99_ttft_ms_max", "ms", "the worst p99 TTFT of its assignments"),
    _c("itl_objective_ms", "ms", "its p99 inter-token latency objective"),
    _c("p99_itl_ms", "ms", "the p99 inter-token latency a node achieves for it"),
    _c("goodput_tok_s_per_node", "tok/s", "goodput a node gives it inside the objectives"),
    _c("utilisation_cap", "", "share of a node's goodput the plan may use (the rest is tail headroom)"),
    _c("node_ttft_ms", "ms", "the node's part of the p99 TTFT: queue, slot_wait, prefill and first_decode"),
    _c("cache_hit_rate", "", "prefix-cache hit rate"),
    _c("goodput_from", "", "where its goodput per node comes from: the serving model, or the scenario's own figure"),
    _c("serving_load_share", "", "serving-model classes: the share of the node's capacity its goodput uses"),
    _c("speculative", "", "the speculative-decoding method its nodes run (empty: none; null: goodput from the scenario)"),
    _c("gco2e_per_million_goodput_tokens", "gCO2e/M tok", "its share of the grid emissions per million of its tokens"),
    _c("water_l_per_million_goodput_tokens", "L/M tok", "its share of the water consumed per million of its tokens"),
)
_CAP_COST = (
    _c("uncapped_usd_per_million_goodput_tokens", "USD/M tok", "the same model solved without the caps"),
    _c("uncapped_objective_usd_per_h", "USD/h", "that plan's cost"),
    _c("uncapped_goodput_tok_s", "tok/s", "its goodput, daily mean"),
    _c("uncapped_tco2e_per_year", "tCO2e/year", "its grid emissions"),
    _c("uncapped_water_m3_per_year", "m3/year", "its water"),
    _c("usd_per_t_avoided", "USD/tCO2e", "the caps' extra cost a year per tonne avoided (null: the capped plan serves less)"),
    _c("usd_per_m3_avoided", "USD/m3", "the same per cubic metre of water avoided"),
)
_CACHE_ROUNDS = (
    _c("charges_nodes_per_tok_s", "node-eq per tok/s", "site -> class -> tier: the miss work the kept round charged"),
    _c("miss_nodes_by_site", "node-eq", "each open site's node-equivalents spent on misses in its busiest slice"),
    _c("rounds", "", "each round: usd_per_h, nodes_added, valid, per_pair_miss_work"),
    _c("kept", "", "the round kept, from 1"),
    _c("tolerance", "", "the relative change in cost under which the rounds stop"),
    _c("most_rounds", "", "the most rounds run"),
)
_KV_TIER_ROUNDS = (
    _c("rounds", "", "each round: usd_per_h and the sites' tier moves"),
    _c("kept", "", "the round kept, from 1"),
    _c("most_rounds", "", "the most rounds run"),
    _c("tiers_by_site", "", "each open site's KV tier"),
    _c("chosen_by_plan", "", "the open sites whose tier the plan chose (tier auto)"),
)
_ARRANGEMENT = (
    _c("options", "", "the arrangement options the scenario turns on, as written"),
    _c("fixed_arrangement", "", "what the fixed arrangement sets them to (aggregated, no speculation, pools of one node)"),
    _c("unserved_share", "", "share of demand the plan leaves unserved"),
    _c("unserved_share_fixed_arrangement", "", "the same with the fixed arrangement"),
    _c("usd_per_million_goodput_tokens", "USD/M tok", "the plan's cost per million goodput tokens"),
    _c("usd_per_million_goodput_tokens_fixed_arrangement", "USD/M tok", "the same with the fixed arrangement"),
    _c("classes", "", "per class: its modes, $/M, goodput per node and prefix hits both ways, budgets, cache, waterfall"),
    _c("modes_by_site", "", "open site -> class -> the mode serving most of it there"),
    _c("mode_reasons", "", "open site -> class -> why, with the goodput per node of the modes compared"),
    _c(
        "cross_metro",
        "",
        "with cross-metro prefill: per class its columns, figures per allowance and share served",
        optional=True,
    ),
    _c("hit_rates_by_site", "", "open site -> class -> prefix-cache hit rate"),
    _c("cache_warmup_nodes_per_site", "nodes", "cold-cache nodes per open site (per site where tiers differ)"),
    _c("kv_tiers_by_site", "", "each open site's KV tier, where sites differ", optional=True),
    _c("option_values", "", "per option on: $/M and unserved share with it off (the others on), and what it is worth"),
)

_ADEQUACY_FIGURES = (
    _c("method", "", "exact (every combination of the outage sources) or monte-carlo (years drawn)"),
    _c("expected_unserved_tokens_per_year", "tok/year", "goodput the plan's outages leave unserved, expected a year"),
    _c("expected_unserved_tok_s", "tok/s", "the same as a rate"),
    _c("expected_unserved_share", "", "it over what the plan serves: the headline"),
    _c("std_error_share", "", "its standard error (0 when exact)"),
    _c("served_tokens_per_year", "tok/year", "goodput the plan serves a year"),
    _c("monte_carlo_share", "", "the drawn years' mean unserved share (beside the exact figure, a check)"),
    _c("monte_carlo_std_error_share", "", "its standard error"),
    _c("years", "years", "years drawn (fault_tolerance.outages.years, --years)"),
    _c("seed", "", "the draws' seed"),
    _c("events_drawn", "", "outages drawn over those years"),
    _c("threshold_share", "", "a year's unserved share the tail figures count years above"),
    _c("cvar_level", "", "the quantile of the value-at-risk and conditional value-at-risk"),
    _c("p_year_loss_above_threshold", "", "share of the drawn years whose unserved share is above the threshold"),
    _c("p_year_loss_above_threshold_std_error", "", "its standard error"),
    _c("p_year_loss_above_threshold_upper_95", "", "its one-sided 95 % upper bound (Clopper-Pearson)"),
    _c("var_share", "", "the year's unserved share at cvar_level (value at risk)"),
    _c("cvar_share", "", "the mean unserved share of the years beyond it (conditional value at risk)"),
    _c("sources", "", "outage sources that take an open site down: each site's own, and the scenario's fault domains"),
    _c("states_enumerated", "", "exact: the combinations of sources summed (null: monte-carlo)"),
    _c("dropped_probability", "", "exact: the probability of the combinations too unlikely to sum (null: monte-carlo)"),
    _c("error_bound_share", "", "exact: the most the dropped combinations can add to the share (null: monte-carlo)"),
    _c("failed_sets_solved", "", "sets of sites down whose unserved goodput was re-routed on the plan's capacity"),
    _c("top_sources", "", "the sources contributing most: unserved tokens a year each alone, and its contribution"),
    _c("top_failed_sets", "", "the sets of sites down contributing most, with their expected unserved tok/s"),
    _c(
        "iterations",
        "",
        "with fault_tolerance.max_expected_unserved_share: each protection round's share, target, nodes added and cost",
        optional=True,
    ),
)

_DINKELBACH = (
    _c("lambda_usd_per_tok_s", "USD/h per tok/s", "the ratio tried: what one mean tok/s served is worth in that step"),
    _c("cost_usd_per_h", "USD/h", "the cost of the design the step found"),
    _c("goodput_tok_s", "tok/s", "the goodput it serves"),
    _c("value_usd_per_h", "USD/h", "cost - lambda x goodput: 0 at the best ratio"),
    _c("value_bound_usd_per_h", "USD/h", "the step's MILP's proven bound on that value", optional=True),
    _c("ratio_bound_usd_per_tok_s", "USD/h per tok/s", "the least cost per goodput proven so far", optional=True),
    _c("rejected", "", "1.0 on a step whose design was discarded (a solver failure; the one before kept)", optional=True),
)
_FAULT_DOMAINS = (
    _c("grouping", "", "how sites group into fault domains: the catalog column, or the scenario's listed domains"),
    _c("domains", "", "each domain with open sites: the sites it takes down together"),
)

_RULE_PRICE_FIGURES = (
    _c("rule_id", "", "the residency rule priced"),
    _c("text", "", "its wording"),
    _c("usd_per_m_with", "USD/M tok", "the plan's $/M goodput with the rule"),
    _c("usd_per_m_without", "USD/M tok", "the same world's plan solved without it"),
    _c("mw_with", "MW", "MW used with it"),
    _c("mw_without", "MW", "MW used without it"),
    _c("sites_open_with", "sites", "sites open with it"),
    _c("sites_open_without", "sites", "sites open without it"),
    _c("unserved_share_with", "", "share of demand unserved with it"),
    _c("unserved_share_without", "", "share of demand unserved without it"),
)

_SUMMARY_OPTIONAL = {
    "rule_prices": ("", "with solve --price-rules: per rule, $/M, MW, sites open and unserved share with it and without"),
    "arrangement": ("", "with arrangement options: the plan against the fixed arrangement, per class and per option"),
}
# The files below build their rows inline (no column tuple to reuse): the tests run each command and compare.
_RULE_PRICES = {
    "rule_id": ("", "the residency rule"),
    "region": ("", "all (the whole plan) or a continent of its sites"),
    "usd_per_m_with": ("USD/M tok", "cost per million goodput tokens with the rule (blank: nothing served)"),
    "usd_per_m_without": ("USD/M tok", "the same, solved without the rule"),
    "cost_usd_per_h_with": ("USD/h", "cost with the rule"),
    "cost_usd_per_h_without": ("USD/h", "cost without it"),
    "mw_with": ("MW", "MW used with the rule"),
    "mw_without": ("MW", "MW used without it"),
    "goodput_tok_s_with": ("tok/s", "goodput with the rule, daily mean"),
    "goodput_tok_s_without": ("tok/s", "goodput without it"),
}
_ADEQUACY = {
    "source": ("", "the outage source: site:ID, or GROUPING:NAME for a fault domain (grid_region:US-PJM)"),
    "kind": ("", "site, or the domain's grouping (grid_region, campus, corridor, listed)"),
    "open_site_ids": ("", "the open sites it takes down, joined by ;"),
    "events_per_year": ("1/year", "outages a year"),
    "hours": ("h", "hours each outage lasts"),
    "unavailability": ("", "share of the year it is down"),
    "unserved_tok_s_when_down": ("tok/s", "goodput left unserved while it alone is down, after re-routing"),
    "unserved_share_when_down": ("", "that over the goodput the plan serves"),
    "alone_unserved_tokens_per_year": ("tokens/year", "unavailability times what it leaves unserved, over a year"),
    "contribution_share": ("", "its part of the sum of alone_unserved_tokens_per_year over the sources"),
}
_COMPARE = {
    "placement": ("", "optimal, then each simple arrangement: nearest-metro, cheapest-power, single-region"),
    "cost_per_million_goodput_tokens_usd": ("USD/M tok", "cost per million goodput tokens"),
    "served_share": ("", "share of demand served"),
    "tokens_per_s_per_mw": ("tok/s/MW", "goodput per MW used"),
    "mw_used": ("MW", "power used, PUE included"),
    "cost_usd_per_h": ("USD/h", "cost"),
    "goodput_tok_s": ("tok/s", "goodput served, daily mean"),
    "sites_open": ("sites", "sites open"),
}
_DIFF = {
    "a": ("", "plan A's folder"),
    "b": ("", "plan B's folder"),
    "headline": ("", "per headline figure ($/M, $/h, MW, sites, unserved share, carbon, water): a, b and delta (b - a)"),
    "classes": ("", "per class: its $/M in a, b and the delta"),
    "regions": ("", "per continent of the open sites: MW, $/h, goodput and $/M in a and b"),
    "rule_prices": ("", "each plan's rule_prices from its summary.json (empty lists without)"),
    "sites": ("", "the sites that changed: opened, closed, resized or repriced, with both plans' figures"),
    "populations_moved": ("", "the (population, class) pairs whose main serving site changed, largest first"),
    "notes": ("", "what could not be compared"),
}
_EXPOSURE = {
    "population_id": ("", "a population served by a lost site"),
    "population": ("", "its name"),
    "country_code": ("", "its ISO alpha-2 country"),
    "class": ("", "workload class"),
    "served_there_tok_s": ("tok/s", "goodput the lost sites served it, daily mean"),
    "rerouted_tok_s": ("tok/s", "of which re-routed to surviving sites inside its objective"),
    "unserved_tok_s": ("tok/s", "of which left unserved"),
    "ttft_p99_before_ms": ("ms", "its p99 TTFT before the loss"),
    "ttft_p99_after_ms": ("ms", "its p99 TTFT after the loss"),
    "ttft_objective_ms": ("ms", "the class's p99 TTFT objective"),
    "to_sites": ("", "where it went: site:tok_s, largest first, joined by ;"),
    "ttft_rise_ms": ("ms", "after less before"),
}
_EXPOSURE_SITES = {
    "site_id": ("", "a surviving site that takes moved load"),
    "site": ("", "its name"),
    "moved_in_tok_s": ("tok/s", "goodput moved in, daily mean"),
    "peak_moved_in_tok_s": ("tok/s", "goodput moved in, busiest slice"),
    "nodes": ("nodes", "nodes installed"),
    "peak_nodes_used": ("nodes", "node-equivalents used in the busiest slice after the loss"),
    "peak_utilisation_before": ("", "busiest slice's node-equivalents over the nodes, before the loss"),
    "peak_utilisation_after": ("", "the same after the loss"),
}
_EXPOSURE_HEADLINE = {
    "failed": ("", "what is lost: the site ids or the fault domain's name"),
    "failed_kind": ("", "site or domain"),
    "failed_site_ids": ("", "the sites lost"),
    "closed_site_ids": ("", "of them, those the plan opens"),
    "served_there_tok_s": ("tok/s", "goodput the lost sites served, daily mean"),
    "rerouted_tok_s": ("tok/s", "of which re-routed inside the objectives"),
    "rerouted_share": ("", "re-routed over served there (null: nothing served there)"),
    "unserved_tok_s": ("tok/s", "of which left unserved"),
    "unserved_share": ("", "unserved over served there"),
    "populations_affected": ("", "(population, class) pairs the lost sites served"),
    "populations_unserved": ("", "of them, those left with some demand unserved"),
    "receiving_sites": ("sites", "surviving sites that take moved load"),
    "peak_utilisation_after": ("", "the highest busiest-slice utilisation of a receiving site after the loss"),
    "worst_ttft_rises": ("", "the pairs whose p99 TTFT rises most against their objective: before, after, rise"),
}
_ALTERNATIVES = {
    "design": ("", "optimum, alternative_01, ..."),
    "direction": ("", "what the design was pushed towards (optimum for the optimum)"),
    "status": ("", "the solver's status, or why there is no design"),
    "usd_per_h": ("USD/h", "the design's cost"),
    "cost_over_optimum": ("", "its cost over the optimum's, less 1"),
    "usd_per_million_goodput_tokens": ("USD/M tok", "its cost per million goodput tokens"),
    "goodput_tok_s": ("tok/s", "goodput served, daily mean"),
    "sites_open": ("sites", "sites open"),
    "sites": ("", "the open sites' ids, joined by ;"),
    "mw_used": ("MW", "MW used"),
    "mw_in_<continent>": ("MW", "MW used in each continent of the catalog (mw_in_europe)"),
    "mw_not_shared": ("", "share of its and the optimum's MW not at the same site: 0 the same design, 1 no site shared"),
    "sites_not_shared": ("", "1 - shared open sites over the open sites of either, against the optimum"),
    "mw_not_shared_nearest": ("", "mw_not_shared against the nearest design before it"),
    "same_as": ("", "the first design before it with the same MW at every site (blank: none)"),
    "plan": ("", "its results folder, below the run's folder"),
}
_ALTERNATIVE_SITES = {
    "site_id": ("", "the site's id in the catalog"),
    "name": ("", "the site's name"),
    "country_code": ("", "ISO alpha-2 country"),
    "continent": ("", "continent name"),
    "lat": ("deg", "latitude"),
    "lon": ("deg", "longitude"),
    "class": ("", "must-have (every design opens it), choice (some do) or never (none)"),
    "designs_open": ("designs", "designs that open it"),
    "mw_<design>": ("MW", "MW each design uses there (mw_optimum, mw_alternative_01, ...)"),
}
# placement.sweep sits above the writers, so its RESULT_COLUMNS cannot be imported here: a test holds the two equal.
_SWEEP_RESULTS = (
    _c("case_id", "", "the case's id: scenarios/ID.yaml is its scenario, cases/ID.json its record"),
    _c("case", "", "the case's position in the expansion, from 0"),
    _c("<axis>", "", "one column per axis, named by its key path (demand.growth): the case's value (a list as JSON text)"),
    _c("status", "", "the solve's status (optimal, feasible, partial), or why there is none (error, missing)"),
    _c("error", "", "why the case failed (blank: it solved)"),
    _c("gap", "", "relative gap between the cost and the proven bound"),
    _c("runtime_s", "s", "solve time"),
    _c("wall_s", "s", "the case's wall-clock time, building included"),
    _c("cost_per_million_goodput_tokens_usd", "USD/M tok", "cost per million goodput tokens"),
    _c("goodput_tok_s", "tok/s", "goodput served, daily mean"),
    _c("mw_used", "MW", "MW used"),
    _c("sites_open", "sites", "sites open"),
    _c("objective_usd_per_h", "USD/h", "the plan's cost"),
    _c("unserved_share", "", "share of demand not served"),
    _c("p99_ttft_ms_max", "ms", "the worst p99 TTFT of the interactive assignments"),
    _c("open_sites", "", "the open sites' ids, joined by ;"),
)
_BUILDOUT_SUMMARY = {
    "scenario": ("", "the scenario's name"),
    "kind": ("", "buildout"),
    "status": ("", "optimal (gap within horizon.gap) or feasible"),
    "years_scenario": ("", "the demand scenario whose figures years and years.csv give (the base scenario)"),
    "years": ("", "per year of the base scenario: $/M, MW used and reserved, sites, goodput, unserved, nodes, carbon, water"),
    "expected_cost_usd": ("USD", "the plan's expected net present cost over the demand scenarios"),
    "scenario_costs_usd": ("USD", "its net present cost in each demand scenario"),
    "scenario_probabilities": ("", "each demand scenario's probability"),
    "value_of_stochastic_solution_usd": ("USD", "what planning for every scenario saves over planning for the mean demand"),
    "mean_value_problem_usd": ("USD", "the objective of the mean-value problem: the plan solved for the mean demand"),
    "mean_value_plan_expected_cost_usd": ("USD", "that plan's expected cost over the scenarios"),
    "mean_value_plan_scenario_costs_usd": ("USD", "that plan's cost in each scenario"),
    "recourse_problem_usd": ("USD", "the stochastic plan's objective"),
    "lower_bound_usd": ("USD", "the proven lower bound of it"),
    "gap": ("", "relative gap between the objective and the bound"),
    "adopted_plan": (
        "",
        "which plan the folder holds: rp (the stochastic plan) or eev (the mean-value plan, when it is cheaper)",
    ),
    "min_max_regret": ("", "with horizon's min-max regret asked for: the regret and each scenario's wait-and-see cost"),
    "caps": ("", "each carbon or water cap: its limit and the most the plan uses in any year and scenario"),
    "n_plus_one": ("", "with N+1: per year the spare nodes bought and in service, their MW and cost, and the NPV added"),
    "accelerators_offered": ("", "the accelerators the horizon offers"),
    "accelerators_used": ("", "those the plan buys"),
    "availability_rules": ("", "each availability rule that shaped the fleet: its effect, sites, countries, parts, nodes bought"),
    "nodes_bought_by_country": ("nodes", "nodes bought over the horizon per country and accelerator, weighted by probability"),
    "discount_rate": ("1/year", "the discount rate of the net present costs"),
    "node_life_years": ("years", "the nodes' life"),
    "unserved_penalty_usd_per_million_tokens": ("USD/M tok", "what an unserved token costs the objective"),
    "aggregation": ("", "the model's resolution: cities, populations, slices, demand rows, pairs, unreachable demand"),
    "timings_s": ("s", "the time each step took, and total_s"),
    "notes": ("", "what the plan wants you to know, one line each"),
    "scenario_path": ("", "the scenario file solved (copied as scenario.yaml)"),
}
_BUILDOUT = (
    _c("year", "", "the year"),
    _c("site_id", "", "an open site"),
    _c("accelerator", "", "an accelerator in service there (none: the site is open with no nodes)"),
    _c("nodes", "nodes", "nodes of that accelerator in service"),
    _c("mw_used", "MW", "MW they draw, PUE included"),
    _c("mw_available", "MW", "MW the site can supply that year"),
    _c("mw_reserved", "MW", "MW the plan reserves there"),
    _c("capex_usd", "USD", "what the nodes bought that year cost"),
    _c("cost_usd_per_h", "USD/h", "the year's cost there; the site's costs shared among its accelerators by MW used"),
    _c("goodput_tok_s", "tok/s", "goodput served, daily mean"),
)
_YEARS = (
    _c("year", "", "the year"),
    _c("cost_per_million_goodput_tokens_usd", "USD/M tok", "cost per million goodput tokens"),
    _c("cost_usd_per_h", "USD/h", "the year's cost"),
    _c("goodput_tok_s", "tok/s", "goodput served, daily mean"),
    _c("demand_tok_s", "tok/s", "demand, daily mean"),
    _c("unserved_share", "", "share of demand not served"),
    _c("mw_used", "MW", "MW the nodes draw"),
    _c("mw_reserved", "MW", "MW reserved"),
    _c("sites_open", "sites", "sites open"),
    _c("nodes", "nodes", "nodes in service"),
    _c("carbon_usd_per_t", "USD/tCO2e", "the carbon price that year"),
    _c("energy_mwh_per_year", "MWh/year", "electricity drawn, PUE included"),
    _c("tco2e_per_year", "tCO2e/year", "grid emissions"),
    _c("gco2e_per_million_goodput_tokens", "gCO2e/M tok", "grid emissions per million goodput tokens"),
    _c("water_m3_per_year", "m3/year", "water consumed, on site and by the grid"),
    _c("nodes_<accelerator>", "nodes", "nodes of each accelerator of the horizon in service"),
)
_SCENARIO_COLUMN = _c("scenario", "", "the demand scenario")
_CLASS_ACCELERATORS = (
    _c("year", "", "the year"),
    _c("class", "", "workload class"),
    _c("accelerator", "", "an accelerator"),
    _c("share_of_class_tokens", "", "its share of the class's served tokens that year (a year and class sum to 1)"),
)
_SCENARIOS = (
    _c("scenario", "", "the demand scenario"),
    _c("probability", "", "its probability"),
    _c("npv_cost_usd", "USD", "the adopted plan's net present cost in it"),
    _c("mean_value_plan_npv_cost_usd", "USD", "the mean-value plan's net present cost in it"),
    _c("demand_tok_s_last_year", "tok/s", "demand in the last year, daily mean"),
    _c("unserved_share_last_year", "", "share of demand not served in the last year"),
    _c("cost_per_million_goodput_tokens_usd_last_year", "USD/M tok", "cost per million goodput tokens in the last year"),
)
_AVAILABILITY_RULES = (
    _c("rule_id", "", "the availability rule"),
    _c("name", "", "its name"),
    _c("effect", "", "barred (none of the parts bought there) or licence"),
    _c("site_id", "", "a site it shapes"),
    _c("country_code", "", "the site's ISO alpha-2 country"),
    _c("accelerators", "", "the parts on offer it meets there"),
    _c("years", "", "the years it meets them"),
    _c("nodes_bought", "nodes", "nodes of those parts bought there in those years, mean over the scenarios (0 for a bar)"),
    _c("simplification", "", "what the rule leaves out of the real regulation"),
    _c("source", "", "where the rule comes from"),
)


def _listed(names: Iterable[str], described: dict[str, tuple[str, str]], *, optional: bool = False) -> tuple[Column, ...]:
    """Columns in the writer's order, described by ``described`` (a name missing there has no description)."""
    return tuple(Column(name, *described.get(name, ("", "")), optional) for name in names)


OUTPUT_FILES: tuple[OutputFile, ...] = (
    OutputFile(
        "summary.json",
        "always",
        "the plan's headline figures, its notes and the scenario solved",
        _listed((*JSON_ORDER, "notes", "scenario_path"), _SUMMARY) + _listed(_SUMMARY_OPTIONAL, _SUMMARY_OPTIONAL, optional=True),
        nested=(
            ("cost_breakdown_usd_per_h", _COST_BREAKDOWN),
            ("classes", _CLASSES),
            ("n_plus_one_cost", _N_PLUS_ONE_COST),
            ("cap_cost", _CAP_COST),
            ("cache_rounds", _CACHE_ROUNDS),
            ("kv_tier_rounds", _KV_TIER_ROUNDS),
            ("arrangement", _ARRANGEMENT),
            ("adequacy", _ADEQUACY_FIGURES),
            ("dinkelbach_iterations", _DINKELBACH),
            ("fault_domains", _FAULT_DOMAINS),
            ("rule_prices", _RULE_PRICE_FIGURES),
        ),
    ),
    OutputFile("sites.csv", "always", "every candidate site: the decision and its figures", _SITES),
    OutputFile("assignments.csv", "always", "one row per (population, class, site) the plan serves", _ASSIGNMENTS),
    OutputFile("populations.csv", "always", "the demand points (clusters of cities)", _POPULATIONS),
    OutputFile("population_members.csv", "always", "every city and the population it belongs to", _MEMBERS),
    OutputFile(
        "failover.csv",
        "N+1 plans",
        "per (loss, protected population-class, slice, serving site): where it is served after the loss",
        _listed(ROW_COLUMNS, _FAILOVER_ROW),
    ),
    OutputFile(
        "failover_sites.csv",
        "N+1 plans",
        "per (loss, surviving site that takes moved load, slice)",
        _listed(SITE_COLUMNS, _FAILOVER_SITES),
    ),
    OutputFile("failover_scenarios.csv", "N+1 plans", "one row per loss", _listed(SCENARIO_COLUMNS, _FAILOVER_SCENARIOS)),
    OutputFile(
        "tail_check.csv",
        "solve --check-tail",
        "each open site's busiest hour simulated, per class",
        _listed(TAIL_COLUMNS, _TAIL),
    ),
    OutputFile(
        "cross_metro_links.csv",
        "serving.cross_metro_prefill",
        "one row per (decode site, prefill site, class) the plan uses",
        _CROSS_METRO,
    ),
    OutputFile(
        "rule_prices.csv",
        "solve --price-rules",
        "per residency rule and region (all, then each continent): the plan with the rule against it solved without",
        _listed(_RULE_PRICES, _RULE_PRICES),
    ),
    OutputFile(
        "adequacy.csv",
        "placement adequacy, or fault_tolerance.adequacy",
        "one row per outage source touching an open site, the largest contribution first (the headline figures "
        "are summary.json's adequacy)",
        _listed(_ADEQUACY, _ADEQUACY),
    ),
    OutputFile(
        "compare.csv",
        "placement compare",
        "the optimum, then each simple arrangement of the same hardware and demand",
        _listed(_COMPARE, _COMPARE),
        "compare",
    ),
    OutputFile("diff.json", "placement diff", "what changed from plan A to plan B", _listed(_DIFF, _DIFF), "diff"),
    OutputFile(
        EXPOSURE_FILES[0],
        "placement failover",
        "per (population, class) the lost sites served: re-routed, unserved, TTFT before and after",
        _listed(_EXPOSURE, _EXPOSURE),
        "failover",
    ),
    OutputFile(
        EXPOSURE_FILES[1],
        "placement failover",
        "per surviving site that takes moved load",
        _listed(_EXPOSURE_SITES, _EXPOSURE_SITES),
        "failover",
    ),
    OutputFile(
        EXPOSURE_FILES[2],
        "placement failover",
        "the loss's headline",
        _listed(_EXPOSURE_HEADLINE, _EXPOSURE_HEADLINE),
        "failover",
    ),
    OutputFile(
        "frontier.csv",
        "placement frontier",
        "one row per point of the cost-carbon (or cost-water) frontier",
        _listed(list(FRONTIER_COLUMNS), _FRONTIER),
        "frontier",
    ),
    OutputFile(
        "discovered_sites.csv",
        "placement discover",
        "the greenfield proposals the plan opens, ranked by the unserved demand they take",
        _listed(list(RANKED_COLUMNS), _DISCOVERED),
        "discover",
    ),
    OutputFile(
        "discover.json",
        "placement discover",
        "the proposals, and the plan before and after them: goodput, unserved share, $/M and $/h, and what is still short",
        _listed(_DISCOVER_JSON, _DISCOVER_JSON),
        "discover",
    ),
    OutputFile(
        "alternatives.csv",
        "placement alternatives",
        "one row per design, the optimum first",
        _listed(_ALTERNATIVES, _ALTERNATIVES),
        "alternatives",
    ),
    OutputFile(
        "alternative_sites.csv",
        "placement alternatives",
        "every candidate site against every design",
        _listed((*ALTERNATIVE_SITE_COLUMNS, "class", "designs_open", "mw_<design>"), _ALTERNATIVE_SITES),
        "alternatives",
    ),
    OutputFile("results.csv", "placement sweep", "one row per case", _SWEEP_RESULTS, "sweep"),
    OutputFile(
        "summary.json",
        "a build-out scenario",
        "the build-out's figures: the years, the demand scenarios, expected cost and the value of the stochastic solution",
        _listed(_BUILDOUT_SUMMARY, _BUILDOUT_SUMMARY),
        "buildout",
    ),
    OutputFile(
        "buildout.csv", "a build-out scenario", "per year, open site and accelerator, in the base scenario", _BUILDOUT, "buildout"
    ),
    OutputFile(
        "buildout_scenarios.csv",
        "a build-out scenario",
        "the same in every demand scenario",
        (*_BUILDOUT, _SCENARIO_COLUMN),
        "buildout",
    ),
    OutputFile("years.csv", "a build-out scenario", "per year, in the base scenario", _YEARS, "buildout"),
    OutputFile(
        "years_scenarios.csv",
        "a build-out scenario",
        "per year, in every demand scenario",
        (*_YEARS, _SCENARIO_COLUMN),
        "buildout",
    ),
    OutputFile(
        "class_accelerators.csv",
        "a build-out scenario",
        "which accelerators carry each class's tokens, per year, in the base scenario",
        _CLASS_ACCELERATORS,
        "buildout",
    ),
    OutputFile("scenarios.csv", "a build-out scenario", "one row per demand scenario", _SCENARIOS, "buildout"),
    OutputFile(
        "availability_rules.csv",
        "a build-out scenario",
        "per availability rule and site it shaped",
        _AVAILABILITY_RULES,
        "buildout",
    ),
)
"""The files the commands write, grouped by :data:`COMMANDS` in their order."""
COMMANDS = {
    "solve": "A results folder (`placement solve`)",
    "compare": "`placement compare`",
    "diff": "`placement diff`",
    "failover": "`placement failover`",
    "frontier": "`placement frontier`",
    "discover": "`placement discover`",
    "alternatives": "`placement alternatives`",
    "sweep": "`placement sweep`",
    "buildout": "A build-out's results folder (`placement solve` of a scenario with a `horizon`)",
}
"""The commands (folders) whose files are described, in the order the reference lists them, and their headings."""


def output_file(name: str, command: str = "solve") -> OutputFile:
    """The description of the file ``name`` (``sites.csv``) that ``command`` (a key of :data:`COMMANDS`) writes.

    Raises
    ------
    KeyError
        No file of that name is described for that command.
    """
    for described_file in OUTPUT_FILES:
        if described_file.name == name and described_file.command == command:
            return described_file
    known = [f"{f.command}: {f.name}" for f in OUTPUT_FILES]
    raise KeyError(f"no output file {name!r} of {command!r} is described; the described ones are {known}")


def described(name: str, header: str, command: str = "solve") -> Column | None:
    """The column (key) of file ``name`` that ``header`` is, or None when it is not described."""
    return next((column for column in output_file(name, command).columns if column.matches(header)), None)


def nested_keys(name: str, key: str, command: str = "solve") -> tuple[Column, ...]:
    """The described keys of the object top-level ``key`` of JSON file ``name`` holds (empty: not described)."""
    return dict(output_file(name, command).nested).get(key, ())
