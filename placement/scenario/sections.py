"""The sections of a scenario file: sites, demand, serving, latency, economics, solver, objective, policy, time and rules.

Each section is a pydantic model that checks its own keys; the rules that span sections are the whole
scenario's (:mod:`placement.scenario.document`). :func:`key_value` reads a command-line value by a key's own rule.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError, create_model, field_validator, model_validator

from placement.economics.cost import EconomicsParams
from placement.network.great_circle import LatencyParams
from placement.optimize.solver import SolverOptions
from placement.scenario._section import Section
from placement.world.regions import continents, is_region_key


class DiscoverSection(Section):
    """How ``placement discover`` proposes greenfield sites where the catalog has none in reach of unserved demand."""

    min_population: int = Field(300_000, ge=0, description="the least population of a GeoNames city proposed as a site")
    spacing_km: float = Field(
        100.0, gt=0, description="the least distance from every catalog site and every other proposal (a metro of its own)"
    )
    max_candidates: int = Field(
        300, ge=1, description="proposals at most (those with the most unserved demand within near_km first)"
    )
    near_km: float = Field(
        1000.0, gt=0, description="proposals are taken in the order of the unserved demand within this distance [km]"
    )
    max_years_to_energise: float | None = Field(
        None, gt=0, description="propose only where a campus could be energized within this many years (null: anywhere)"
    )
    reach_km_per_ms: float = Field(
        100.0,
        gt=0,
        description="a first cut of reach: a city farther from every unserved population than this times the class's "
        "round-trip budget is not proposed (light in fibre covers about 100 km per ms of round trip) [km/ms]",
    )


class SitesSection(Section):
    """Where the candidate sites come from."""

    catalog: str = Field(description="CSV or GeoJSON site catalog, relative to the scenario file")
    power_price_multiplier: dict[str, float] = Field(
        default_factory=dict,
        description="what-if: multiply power prices by continent name or ISO alpha-2 country (country wins)",
    )
    mw_multiplier: float = Field(1.0, ge=0, description="what-if: multiply every site's MW available")
    exclude: list[str] = Field(default_factory=list, description="site ids to leave out")
    cooling: Literal["evaporative", "closed-loop"] = Field(
        "evaporative",
        description="how new capacity is cooled, for its on-site water (data/energy/cooling_wue.csv): evaporative, or "
        "closed-loop (next to no water); a site's own catalog wue_l_per_kwh wins",
    )
    discover: DiscoverSection | None = Field(
        None, description="settings of placement discover (greenfield proposals); a plain solve uses the catalog as it is"
    )


class DemandSection(Section):
    """How user populations and their demand are derived from GeoNames cities."""

    cities: str = Field(description="GeoNames cities CSV, relative to the scenario file")
    min_population: int = Field(15_000, ge=0, description="the least population of a city counted as demand [people]")
    adoption: float = Field(gt=0, le=1, description="share of people who use the service")
    tokens_per_user_per_day: float = Field(gt=0, description="output tokens per user per day")
    peak_factor: float = Field(2.0, ge=1, description="peak-hour demand over the daily mean")
    clusters: int | None = Field(400, ge=1, description="aggregate cities into this many clusters (null: none)")
    countries: list[str] | None = Field(None, description="ISO 3166-1 alpha-2 codes to keep (null: all)")
    growth: float = Field(1.0, gt=0, description="what-if: multiply every population's demand")
    adoption_by_region: dict[str, float] = Field(
        default_factory=dict,
        description="adoption by continent name or ISO alpha-2 country (country wins); elsewhere `adoption`",
    )
    growth_by_region: dict[str, float] = Field(
        default_factory=dict, description="multiply demand by continent name or ISO alpha-2 country (country wins)"
    )

    @model_validator(mode="after")
    def _regions_are_known(self) -> DemandSection:
        bad = []
        checks = (("adoption_by_region", self.adoption_by_region, 1.0), ("growth_by_region", self.growth_by_region, None))
        for field, values, high in checks:
            for key, value in values.items():
                if not is_region_key(key):
                    bad.append(f"{field}: {key!r} is neither an ISO alpha-2 country code nor one of {', '.join(continents())}")
                if not value > 0 or (high is not None and value > high):
                    bad.append(f"{field}.{key}: {value} must be > 0" + (f" and <= {high:g}" if high is not None else ""))
        if bad:
            raise ValueError("; ".join(bad))
        return self


class KvCacheSection(Section):
    """The KV cache as infrastructure (``serving.kv_cache``): the tier a node keeps prompt prefixes in."""

    tier: Literal["hbm", "dram", "nvme", "auto"] = Field(
        "dram",
        description="hbm: HBM only; dram: + host DRAM; nvme: + host DRAM and local NVMe (data/serving/kv_tiers.csv); "
        "auto: each site whose catalog kv_tier is blank takes the tier that serves its own load cheapest (rounds of "
        "the solve, from the tier with the most goodput over the classes)",
    )


WAN_USD_PER_GB = 0.0002
"""Default price of moving a GB between metros on a planner's own waves (``serving.cross_metro_prefill``). [USD/GB]

A leased 100 Gbit/s wavelength: TeleGeography's weighted median 10 Gbit/s lease on Frankfurt-London is $724 a
month and 100 Gbit/s costs 4.3 times 10 Gbit/s (TeleGeography, Global Bandwidth Research Service, as published on
its blog and by fastnet.news), so about $3,100 a month; carried at half its rate on average (a wave is sized for
the busiest hour; estimate), 16,400 TB a month: $0.0002 per GB. A cloud tenant without waves of its own pays the
inter-region transfer price instead, $0.02 per GB between most AWS regions (EC2 data transfer pricing), 100 times
more."""


class CrossMetroSection(Section):
    """Cross-metro prefill (``serving.cross_metro_prefill``): a prefill pool in another metro may serve a site's decode.

    The prompt goes from the decode site to the prefill site, its KV comes back over the WAN: the pair's TTFT adds
    the round trip between the two sites and the KV's transfer at ``wan_gbit_s``, and every GB is priced.
    """

    rtt_ms: list[float] = Field(
        [10.0, 25.0],
        min_length=1,
        description="round trips between a decode site and its prefill site the pools are sized for (at the scenario's "
        "latency.quantile) [ms]: each pair of sites uses the smallest that covers its round trip, the pools searched "
        "inside serving_ttft_budget_ms less it and the KV transfer; the largest is the farthest partner",
    )

    @field_validator("rtt_ms")
    @classmethod
    def _positive_ascending(cls, value: list[float]) -> list[float]:
        if any(v <= 0 for v in value):
            raise ValueError(f"every round trip must be > 0 ms, got {value}")
        return sorted(set(value))

    @property
    def max_rtt_ms(self) -> float:
        """The farthest prefill site a decode site may use. [ms]"""
        return max(self.rtt_ms)

    partners: int = Field(3, ge=1, description="candidate prefill sites per decode site and class, the cheapest prefill first")
    wan_gbit_s: float = Field(
        400.0, gt=0, description="rate at which one prompt's KV crosses the WAN (one 400G wave, or four 100G) [Gbit/s]"
    )
    wan_usd_per_gb: float = Field(
        WAN_USD_PER_GB,
        ge=0,
        description="price of each GB of KV moved between metros [USD/GB] (default: a leased wave, see the Serving model page; a "
        "cloud tenant pays about 0.02)",
    )


class ServingSection(Section):
    """The serving node: model, accelerator and how it is run."""

    model: str = Field("llama-3.1-70b", description="model id of data/serving/models.csv")
    accelerator: str = Field("h100-sxm", description="accelerator id of data/serving/accelerators.csv")
    gpus_per_node: int = Field(8, ge=1, description="accelerators in one serving node")
    precision: str = Field("fp8", description="weights and activations precision: bf16, fp8 or fp4 (as the model and part allow)")
    disaggregated: bool | Literal["auto"] = Field(
        False, description="separate prefill and decode pools; auto: per class, whichever gives more goodput"
    )
    speculative: str | None = Field(
        None,
        description="speculative decoding: a method of data/serving/speculative.csv for the model (eagle3, mtp), "
        "auto (the model's method, for the classes where it gives more goodput), or null (off)",
    )
    kv_cache: KvCacheSection | None = Field(
        None,
        description="the prefix cache as a model: classes with a prefix_reuse profile get their hit rate per site from "
        "the share of the class it serves and the tier's capacity (null: each class's fixed prefix_cache_hit_rate)",
    )
    node_ttft_ladder: list[float] | None = Field(
        None,
        min_length=1,
        description="tighter node TTFT budgets each computed interactive class may also run, as shares of its "
        "serving_ttft_budget_ms (e.g. [0.8, 0.6]): every (population, site) pair runs the loosest one its objective "
        "allows, so a far population is served at less goodput per node instead of not at all (null: one budget)",
    )
    pool_nodes: int = Field(
        1,
        ge=1,
        description="nodes whose GPUs share one prefill queue when prefill and decode are pooled (disaggregated or "
        "cross-metro): 1 sizes the pools inside each node, as an MLPerf system is measured; a site's pools span many",
    )
    cross_metro_prefill: CrossMetroSection | None = Field(
        None,
        description="a prefill pool in another metro may serve a site's decode pool, a choice of the optimizer per "
        "(population, site): the pair's TTFT adds the sites' round trip and the KV's WAN transfer, priced per GB "
        "(null: off)",
    )
    node_kw: float | None = Field(None, gt=0, description="IT power of one node [kW] (null: accelerator catalog)")
    headroom: float = Field(0.2, ge=0, lt=1, description="capacity held back for the tail (given-goodput classes)")
    idle_power_share: float = Field(1.0, ge=0, le=1, description="share of node power drawn at zero load")
    accelerators: list[str] | None = Field(
        None,
        min_length=1,
        description="fleet mix: the optimiser chooses among these accelerators per site and class (runs the build-out "
        "engine over one year unless a horizon is given)",
    )
    measurements: str | None = Field(
        None,
        description="a CSV of your own measured goodput (the columns of data/serving/measured.csv): each part's GEMM "
        "fraction is refitted on it for this scenario (placement calibrate FILE shows the fit and its held-out error)",
    )
    goodput_quantile: Literal["p10", "p50", "p90"] = Field(
        "p50",
        description="plan on this quantile of the serving model's per-node goodput band (p10: the low end the "
        "calibration's residuals allow; p50: the modelled figure)",
    )

    def arrangement_options(self) -> dict[str, Any]:
        """The arrangement options this section turns on (empty: the fixed arrangement), as ``summary.json`` names them."""
        options: dict[str, Any] = {}
        if self.speculative is not None:
            options["speculative"] = self.speculative
        if self.disaggregated == "auto":
            options["disaggregated"] = "auto"
        if self.kv_cache is not None:
            options["kv_cache"] = self.kv_cache.tier
        if self.node_ttft_ladder:
            options["node_ttft_ladder"] = sorted(self.node_ttft_ladder, reverse=True)
        if self.pool_nodes > 1:
            options["pool_nodes"] = self.pool_nodes
        if self.cross_metro_prefill is not None:
            options["cross_metro_prefill"] = self.cross_metro_prefill.model_dump()
        return options


GREAT_CIRCLE_ACCESS_MS = 8.0
"""Users' last mile of the great-circle model when the scenario gives none. [ms]"""


class LatencySection(Section):
    """Parameters of the latency model.

    ``quantile`` defaults to ``p90``: the TTFT objectives are p99s, and a pair's modelled round trip
    is a median over paths whose real value the model misses by 10-35 % (the fitted p90/p50 ratios
    of ``data/network/calibrated.json``). That miss is systematic for a pair (the same route every
    request), not noise that averages out over requests, so a pair planned at its median fails its
    p99 for every request whenever the real path is the longer one. Budgeting the p90 keeps the
    chance of that below one in ten per pair; ``p50`` reproduces the median plan.
    """

    model: Literal["graph", "great_circle"] = Field(
        "graph", description="graph: calibrated metro/long-haul graph; great_circle: distance x route factor"
    )
    hubs: str | None = Field(None, description="graph hubs CSV (null: the bundled data/network/hubs.csv)")
    links: str | None = Field(None, description="graph links CSV (null: the bundled data/network/links.csv)")
    route_factor: float = Field(1.5, ge=1, description="great_circle only: path length over great-circle distance")
    fixed_ms: float = Field(2.0, ge=0, description="great_circle only: round trip added to every path (equipment, routing) [ms]")
    access_ms: float | None = Field(
        None,
        ge=0,
        description="users' last mile, round trip, for every country (null: the graph's per-country RIPE Atlas priors; "
        "the great_circle model then uses 8 ms)",
    )
    quantile: Literal["p50", "p90"] = Field(
        "p90",
        description="which round trip the TTFT budget uses: p50 (median path) or p90 (the model's 90th percentile)",
    )
    measurements: str | None = Field(
        None,
        description="a CSV of your own measured round trips (from, to, rtt_ms[, rtt_p90_ms, samples, path]) that "
        "corrects the graph model by world-region pair (graph model only)",
    )

    def params(self) -> LatencyParams:
        """As :class:`placement.network.great_circle.LatencyParams` (the great-circle model)."""
        access = GREAT_CIRCLE_ACCESS_MS if self.access_ms is None else self.access_ms
        return LatencyParams(route_factor=self.route_factor, fixed_ms=self.fixed_ms, access_ms=access)


class EconomicsSection(Section):
    """Cost inputs shared by every site."""

    node_capex_usd: float | None = Field(None, gt=0, description="null: the accelerator catalog's node capex")
    node_life_years: float = Field(4.0, gt=0, description="economic life a node's capex is annualised over [years]")
    facility_life_years: float = Field(15.0, gt=0, description="economic life the facility's capex is annualised over [years]")
    discount_rate: float = Field(0.08, ge=0, lt=1, description="discount rate of the annualisation (capital recovery factor)")
    opex_usd_per_node_h: float = Field(0.0, ge=0, description="operating cost of a node besides power [USD/h]")
    site_fixed_cost_usd_per_h: float = Field(
        0.0, ge=0, description="cost of an open site, whatever it serves (a catalog fixed_cost_usd_per_h wins) [USD/h]"
    )

    def params(self, catalog_node_capex_usd: float) -> EconomicsParams:
        """As :class:`placement.economics.cost.EconomicsParams`, the catalog's node capex unless one is given."""
        values = self.model_dump()
        if values["node_capex_usd"] is None:
            values["node_capex_usd"] = catalog_node_capex_usd
        return EconomicsParams(**values)


DEFAULT_NODE_LIMIT = 2000
"""Branch-and-bound nodes a solve may take by default. The bundled world and the example sweep's cases close
their gap at the root node (measured), so they stop on the gap; a harder model stops here, after the same work on
any machine, rather than on the wall clock."""


class RegionalCap(Section):
    """Caps on what the plan's sites in one region emit and consume in a year."""

    region: str = Field(min_length=1, description="a continent, ISO alpha-2 country or grid_region of the catalog")
    carbon_t_per_year: float | None = Field(None, ge=0, description="the most grid emissions there [tCO2e]; null: none")
    water_m3_per_year: float | None = Field(
        None, ge=0, description="the most water consumed there, on site and by the grid [m3]; null: none"
    )

    @model_validator(mode="after")
    def _caps_something(self) -> RegionalCap:
        if self.carbon_t_per_year is None and self.water_m3_per_year is None:
            raise ValueError(f"regional cap for {self.region!r}: give carbon_t_per_year, water_m3_per_year or both")
        return self


UNSERVED_USD_PER_MILLION = 60.0
"""What a goodput token left unserved is worth by default: the dearest tokens widely sold, OpenAI o1's output list
price of $60 per million (https://openai.com/api/pricing, December 2024): a user whose token the plan does not serve
would pay at most about this elsewhere. Set your own revenue per token; a value below the marginal cost of serving
the tokens a cap drops lets the valued cost fall as service does (those tokens are then not worth serving)."""


class ObjectiveSection(Section):
    """What the plan minimises besides its cost: prices and limits on what it emits and the water it consumes."""

    carbon_usd_per_t: float = Field(
        0.0, ge=0, description="carbon price on the grid emissions of the power drawn [USD/tCO2e]; 0: none"
    )
    carbon_cap_t_per_year: float | None = Field(
        None, ge=0, description="the most grid emissions the plan may cause in a year [tCO2e]; null: no cap"
    )
    water_usd_per_m3: float = Field(
        0.0, ge=0, description="water price on the water consumed, on site and by the grid's generation [USD/m3]; 0: none"
    )
    water_cap_m3_per_year: float | None = Field(
        None, ge=0, description="the most water the plan may consume in a year, on site and by the grid [m3]; null: none"
    )
    regional_caps: list[RegionalCap] = Field(
        default_factory=list, description="caps on carbon and water per region (continent, country or grid region)"
    )
    unserved_usd_per_million: float = Field(
        UNSERVED_USD_PER_MILLION,
        gt=0,
        description="what a goodput token left unserved is worth, for the frontier drawn with --allow-unserved: its "
        "cost axis adds it per unserved token, so the curve cannot fall because service did [USD per million tokens]",
    )
    stressed_site_water_m3_per_year: float | None = Field(
        None,
        ge=0,
        description="the most water a site in an extremely-high water-stress basin may consume on site in a year (a "
        "permit; the catalog's water_stress, else its country's) [m3]; null: none",
    )

    @property
    def has_caps(self) -> bool:
        """Whether the plan is held to any carbon or water cap."""
        return (
            self.carbon_cap_t_per_year is not None
            or self.water_cap_m3_per_year is not None
            or bool(self.regional_caps)
            or self.stressed_site_water_m3_per_year is not None
        )

    @property
    def has_prices(self) -> bool:
        """Whether carbon or water carries a price."""
        return self.carbon_usd_per_t > 0 or self.water_usd_per_m3 > 0


class SolverSection(Section):
    """Which solver and when to stop."""

    name: Literal["highs", "cbc"] = Field("highs", description="the MILP solver: HiGHS (highspy) or CBC (bundled with PuLP)")
    time_limit_s: float | None = Field(
        60.0, gt=0, description="wall-clock limit of the whole solve, a safety net (null: none) [s]"
    )
    gap: float = Field(0.005, ge=0, lt=1, description="relative MIP gap at which a solve stops")
    threads: int = Field(1, ge=1, description="solver threads (1 keeps answers identical on every machine)")
    lazy_slices: bool = Field(False, description="generate time-slice capacity rows lazily (very large models)")
    node_limit: int | None = Field(
        DEFAULT_NODE_LIMIT,
        ge=0,
        description="branch-and-bound nodes after which the MIP stops: a limit reached after the same work on any "
        "machine (null: none; time_limit_s stays as a safety net)",
    )
    random_seed: int = Field(0, ge=0, description="seed of the solver's randomised choices (HiGHS)")

    def options(self, *, msg: bool = False) -> SolverOptions:
        """As :class:`placement.optimize.solver.SolverOptions`."""
        return SolverOptions(
            name=self.name,
            time_limit_s=self.time_limit_s,
            gap=self.gap,
            threads=self.threads,
            msg=msg,
            lazy_slices=self.lazy_slices,
            node_limit=self.node_limit,
            random_seed=self.random_seed,
        )


class PolicySection(Section):
    """What to do when part of the demand cannot be served inside its objective."""

    unreachable: Literal["stop", "report"] = Field(
        "stop",
        description="stop: a population with no site inside its budget stops the run; report: serve the rest",
    )
    serving: Literal["all", "optional"] = Field(
        "all", description="all: serve every reachable token; optional: minimise $/M goodput exactly (Dinkelbach)"
    )
    min_served_share: float = Field(0.0, ge=0, le=1, description="with optional serving, serve at least this share")


class TimeSection(Section):
    """Follow-the-sun time slices."""

    slices: int = Field(1, ge=1, le=24, description="1: the peak hour only; 24: every UTC hour; k: k blocks of hours")
    profile: str | None = Field(None, description="diurnal demand profile by local hour (CSV local_hour,multiplier)")
    power_price_profile: str | None = Field(None, description="power price multiplier by local hour at the site (CSV)")
    carbon_intensity_profile: str | None = Field(
        None,
        description="your own grid carbon intensity by local hour (CSV area,local_hour,gco2e_per_kwh; area a site id "
        "or a country code): it replaces the catalog's figure and the modelled hourly shape where it applies",
    )


class ResidencyRule(Section):
    """Populations in these countries may only be served from sites in those."""

    populations: list[str] = Field(min_length=1, description="ISO alpha-2 codes or group names")
    sites: list[str] = Field(min_length=1, description="ISO alpha-2 codes or group names")


class RegimeChoice(Section):
    """A residency regime of the table, with the planner's own figures where given."""

    id: str = Field(min_length=1, description="a regime_id of the regimes table (data/rules/residency_regimes.csv)")
    share: float | dict[str, float] | None = Field(
        None, description="share of demand served in-bloc: one figure for every class, or {class: share} (null: the table's)"
    )
    serve_outsiders: bool | None = Field(None, description="whether in-bloc sites may serve other countries (null: the table's)")


class ResidencySection(Section):
    """Data residency: where each population's traffic may be served."""

    groups: dict[str, list[str]] = Field(default_factory=dict, description="named groups of ISO alpha-2 codes")
    rules: list[ResidencyRule] = Field(
        default_factory=list, description="whole-country rules: populations there may be served only from sites there"
    )
    domestic_only_sites: list[str] = Field(
        default_factory=list, description="sites in these countries serve only their own country's populations"
    )
    regimes: list[str | RegimeChoice] = Field(
        default_factory=list, description="residency regimes of the regimes table, by id or {id, share, serve_outsiders}"
    )
    regimes_file: str | None = Field(
        None, description="regimes CSV relative to the scenario file (null: the bundled data/rules/residency_regimes.csv)"
    )


class AvailabilitySection(Section):
    """Which accelerators may be installed where (export controls): the fleet mix and the build-out obey it."""

    file: str | None = Field(
        None, description="rules CSV relative to the scenario file (null: the bundled data/rules/accelerator_availability.csv)"
    )
    enforce: bool = Field(True, description="false: buy any part anywhere (to see what the rules cost)")
    waive: list[str] = Field(
        default_factory=list,
        description="rule ids not applied (a licence held, or to see what one rule costs: solve --price-rules waives "
        "each rule that moves a site off its accelerator in turn)",
    )


class SitesOpenSection(Section):
    """Bounds on the number of open sites."""

    min: int | None = Field(None, ge=0, description="open at least this many sites (null: no bound)")
    max: int | None = Field(None, ge=1, description="open at most this many sites (null: no bound)")


OutageGrouping = Literal["grid_region", "campus", "corridor", "listed"]
"""The fault domains an outage rate is given for: a catalog grouping column, or the scenario's listed domains."""


class OutagesSection(Section):
    """How often sites and fault domains fail, and how the year's outages are drawn (``placement adequacy``).

    Defaults and their sources: :mod:`placement.rules.outages`.
    """

    site_tier: Literal["I", "II", "III", "IV"] = Field(
        "III",
        description="Uptime Institute tier of a site the catalog gives no tier: its forced outages a year (I 28.8 h, "
        "II 22.7 h, III 1.6 h, IV 0.4 h)",
    )
    site_events_per_year: float | None = Field(
        None, ge=0, le=365, description="every site's forced outages a year, over its tier's (null: by tier) [1/year]"
    )
    site_hours: float | None = Field(
        None, gt=0, le=8760, description="every site's mean outage duration, over its tier's (null: by tier) [h]"
    )
    domain_events_per_year: dict[OutageGrouping, Annotated[float, Field(ge=0, le=365)]] = Field(
        default_factory=dict,
        description="events a year that take a whole fault domain down, by grouping (defaults: grid_region 0.02, "
        "campus 0.05, corridor 0.1, listed 0.02) [1/year]",
    )
    domain_hours: dict[OutageGrouping, Annotated[float, Field(gt=0, le=8760)]] = Field(
        default_factory=dict,
        description="mean duration of a fault domain's event, by grouping (defaults: grid_region 48, campus 12, "
        "corridor 168, listed 48) [h]",
    )
    threshold_share: float = Field(
        0.001, gt=0, lt=1, description="the year-loss share whose probability of being exceeded is reported"
    )
    cvar_level: float = Field(
        0.95, ge=0.5, lt=1, description="CVaR level: the mean year-loss share of the worst (1 - level) of the years"
    )
    years: int = Field(2000, ge=100, le=100_000, description="years drawn by the Monte Carlo")
    seed: int = Field(0, ge=0, description="seed of the Monte Carlo's random draws")
    exact_max_sources: int = Field(
        12, ge=0, le=20, description="up to this many outage sources, the expectation is enumerated exactly (2^n states)"
    )


class FaultToleranceSection(Section):
    """24x7 fault domains."""

    n_plus_one: bool = Field(False, description="survive the loss of any one site inside every budget")
    domains: str | dict[str, list[str]] | None = Field(
        None,
        description=(
            "sites that fail together, survived as well as any one site: a catalog column (grid_region, campus, "
            "corridor: sites sharing a value are one domain) or {name: [site ids]}"
        ),
    )

    adequacy: bool = Field(False, description="evaluate the plan's expected unserved goodput over a year of outages when solving")
    max_expected_unserved_share: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="add spare nodes until the expected unserved goodput is at most this share of what the plan "
        "serves in a year (null: no target)",
    )
    outages: OutagesSection = Field(default_factory=OutagesSection, description="outage rates and the Monte Carlo")

    @property
    def wants_adequacy(self) -> bool:
        """The solve evaluates adequacy: asked for, or a target set."""
        return self.adequacy or self.max_expected_unserved_share is not None

    @model_validator(mode="after")
    def _domains_need_n_plus_one(self) -> FaultToleranceSection:
        if self.domains is not None and not self.n_plus_one:
            raise ValueError("fault_tolerance.domains needs fault_tolerance.n_plus_one: true (set it, or drop domains)")
        if isinstance(self.domains, str) and not self.domains.strip():
            raise ValueError("fault_tolerance.domains is empty: name a catalog column (e.g. grid_region) or list domains")
        if isinstance(self.domains, dict):
            empty = [name for name, ids in self.domains.items() if not ids]
            if empty:
                raise ValueError(f"fault_tolerance.domains {', '.join(map(repr, empty))} list no sites: give site ids")
        return self


def key_value(section: type[BaseModel], field: str, text: str) -> Any:
    """``text`` as the value of the scenario key ``section.field``, checked by that key's own rule.

    For command-line options that override a scenario key: a value the scenario would refuse is refused where it
    is parsed, in the words the scenario's check uses.

    Raises
    ------
    ValueError
        The key's rule, as the scenario states it, and the value given.
    """
    info = section.model_fields[field]
    annotation: Any = info.annotation
    option = create_model("Option", value=(annotation, info))
    try:
        return getattr(option.model_validate({"value": text}), "value")  # noqa: B009 (a field made at run time)
    except ValidationError as exc:
        rule = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise ValueError(f"{rule} (got {text!r})") from None
