"""What each column of a results folder's tables means, and its unit: one table the docs and the tests read.

The writers write the frames the plan builds; this module says what their columns are. The reference page of the
output files is generated from :data:`OUTPUT_FILES`, and a test solves a small scenario and checks that every
column written is described here and every column described here is written, so the two cannot drift apart. A
name with ``<class>`` in it stands for one column per workload class (``serving_mode_chat``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from placement.analyses.discover import RANKED_COLUMNS
from placement.analyses.tail import COLUMNS as TAIL_COLUMNS
from placement.outputs.frontier_files import COLUMNS as FRONTIER_COLUMNS
from placement.results.record import ROW_COLUMNS, SCENARIO_COLUMNS, SITE_COLUMNS

__all__ = ["OUTPUT_FILES", "Column", "OutputFile", "described", "output_file"]


@dataclass(frozen=True)
class Column:
    """One column of an output table.

    Parameters
    ----------
    name : str
        The header, ``<class>`` standing for a workload class's name.
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
        pattern = "^" + re.escape(self.name).replace(re.escape("<class>"), ".+") + "$"
        return re.match(pattern, header) is not None


@dataclass(frozen=True)
class OutputFile:
    """One table of a results folder.

    Parameters
    ----------
    name : str
        File name (``sites.csv``).
    when : str
        When it is written (``always``, ``N+1 plans``).
    description : str
        What a row is.
    columns : tuple of Column
        Its columns, in the order written.
    """

    name: str
    when: str
    description: str
    columns: tuple[Column, ...]


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


def _listed(names: list[str], described: dict[str, tuple[str, str]]) -> tuple[Column, ...]:
    """Columns in the writer's order, described by ``described`` (a name missing there has no description)."""
    return tuple(Column(name, *described.get(name, ("", ""))) for name in names)


OUTPUT_FILES: tuple[OutputFile, ...] = (
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
        "frontier.csv",
        "placement frontier",
        "one row per point of the cost-carbon (or cost-water) frontier",
        _listed(list(FRONTIER_COLUMNS), _FRONTIER),
    ),
    OutputFile(
        "discovered_sites.csv",
        "placement discover",
        "the greenfield proposals the plan opens, ranked by the unserved demand they take",
        _listed(list(RANKED_COLUMNS), _DISCOVERED),
    ),
)
"""The tables ``placement solve`` writes into a results folder, then those of ``frontier`` and ``discover``."""


def output_file(name: str) -> OutputFile:
    """The description of the table ``name`` (``sites.csv``).

    Raises
    ------
    KeyError
        No table of that name is described.
    """
    for described_file in OUTPUT_FILES:
        if described_file.name == name:
            return described_file
    raise KeyError(f"no output table {name!r} is described; the described ones are {[f.name for f in OUTPUT_FILES]}")


def described(name: str, header: str) -> Column | None:
    """The column of table ``name`` that ``header`` is, or None when it is not described."""
    return next((column for column in output_file(name).columns if column.matches(header)), None)
